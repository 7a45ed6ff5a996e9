#!/bin/sh
# run-exact-churn.sh - --rate 1 never loses a record, on every path.
#
# tests/workloads/exact-churn.c churns on several threads (mixed sizes,
# calloc, realloc chains, blocks freed by another thread) and prints, per
# site, what it allocated and still holds.  Each profile must give every
# site's alloc_objects, alloc_space, inuse_objects and inuse_space exactly,
# and say that nothing was lost:
#   - launched, with the default ring and with the smallest (64 KiB);
#   - --unwind dwarf with the smallest ring: every allocation is a record
#     with a stack copy, far more than the tracer unwinds in the time the
#     program makes them, so producers must wait for room (back-pressure)
#     rather than drop;
#   - attached (--pid) to a process waiting to start, and served (serve
#     --pid), its profile fetched after it ended;
#   - preloaded on its own (PPROF_ALLOC_RATE=1, no tracer), then read from
#     its core (--core): the sites' counters are in the memfd the core holds.
#     With PPROF_ALLOC_UNWIND=dwarf, whose stack copies no tracer would
#     unwind: the agent counts those at their frame-pointer stacks instead.
# The profile's total allocations must also agree with the agent's own
# hook counters, which count from the agent's load (a few more: its start).
. "$(dirname "$0")/lib.sh"
need python3 curl go
attach_init
trap 'core_pattern_give; attach_cleanup' EXIT

W="$WORKLOADS/exact-churn"

# check_truth OUT PROFILE NAME: every "truth" line of OUT against PROFILE
check_truth() {
	pprof_sum "$2" leaf >"$TMP/$3.sum"
	check_no_loss "$TMP/$3.sum"
	n=0
	while read -r _ site a b c d; do
		check_site "$TMP/$3.sum" "$site" "$a" "$b" "$c" "$d"
		n=$((n + 1))
	done <<EOT
$(grep '^truth ' "$1")
EOT
	[ "$n" = 5 ] || check_failed "$3: the workload printed $n truth lines, want 5"
	grep -q "^exact-churn: .*checksum [0-9]*$" "$1" ||
		check_failed "$3: the workload's own check failed: $(tail -n 1 "$1")"
	grep '^# exact' "$TMP/$3.sum" | sed 's/^/    /'
}

# agree NAME: the profile's allocations against the agent's hook counters
agree() {
	total=$(awk '!/^#/ { s += $2 } END { print s + 0 }' "$TMP/$1.sum")
	calls=$(sed -n 's/^# exact.* hooks counted \([0-9]*\) calls that allocate.*/\1/p' "$TMP/$1.sum")
	[ -n "$calls" ] || { check_failed "$1: no hook counts in the exact comment"; return; }
	if [ "$total" -gt "$calls" ] || [ $((calls - total)) -gt 16 ]; then
		check_failed "$1: the profile has $total allocations, the agent's hooks counted $calls calls"
	else
		note "$1: $total allocations in the profile, $calls allocating calls counted by the hooks"
	fi
}

run_bare "$TMP/bare.out" "$W" 2 200000
[ "$bare_rc" = 0 ] || fail "bare run failed (exit $bare_rc)"

# --- launched, default ring
trace "$TMP/launch.out" "$TMP/launch.pb.gz" --rate 1 -- "$W" 2 200000
[ "$trace_rc" = 0 ] || fail "traced run exited $trace_rc"
same_output "$TMP/bare.out" "$TMP/launch.out"
check_truth "$TMP/launch.out" "$TMP/launch.pb.gz" launch
agree launch
grep -q "records LOST" "$TMP/launch.out.err" && check_failed "launch: the tracer said records were lost"

# --- the smallest ring, 4 threads
trace "$TMP/small.out" "$TMP/small.pb.gz" --rate 1 --ring-size 64K -- "$W" 4 50000
[ "$trace_rc" = 0 ] || fail "small ring: traced run exited $trace_rc"
check_truth "$TMP/small.out" "$TMP/small.pb.gz" small
agree small

# --- every allocation through the smallest ring: back-pressure
trace "$TMP/dwarf.out" "$TMP/dwarf.pb.gz" --rate 1 --unwind dwarf \
	--ring-size 64K -- "$W" 2 3000
[ "$trace_rc" = 0 ] || fail "dwarf: traced run exited $trace_rc"
check_truth "$TMP/dwarf.out" "$TMP/dwarf.pb.gz" dwarf
waited=$(sed -n 's/^# exact.*; \([0-9]*\) records waited for room.*/\1/p' "$TMP/dwarf.sum")
if [ "${waited:-0}" -gt 0 ]; then
	note "dwarf: $waited records waited for room in the ring"
else
	check_failed "dwarf: no record waited for room (the premise: the ring must fill)"
fi
ring=$(sed -n 's/^# exact.* \([0-9]*\) allocations recorded through the ring.*/\1/p' "$TMP/dwarf.sum")
[ "${ring:-0}" -gt 20000 ] || check_failed "dwarf: only '$ring' allocations went through the ring"

# --- attached to a process that waits to start
spawn "$TMP/attach.out" "$W" 2 100000 "wait=$TMP/go"
target=$spawned_pid
wait_for "$TMP/attach.out" '^waiting$' 10 || fail "attach: the target did not start"
attach_bg "$target" "$TMP/attach.pb.gz" "$TMP/attach.err" --rate 1
: >"$TMP/go"
reap "$target" 60
[ "$reaped_rc" = 0 ] || check_failed "attach: the target exited $reaped_rc"
reap "$tracer_pid" 60
[ "$reaped_rc" = 0 ] || { sed 's/^/    tracer: /' "$TMP/attach.err"; fail "attach: the tracer exited $reaped_rc"; }
check_truth "$TMP/attach.out" "$TMP/attach.pb.gz" attach

# --- serve on a process that waits to start; the profile after it ended
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
rm -f "$TMP/go"
spawn "$TMP/serve.out" "$W" 2 100000 "wait=$TMP/go"
target=$spawned_pid
wait_for "$TMP/serve.out" '^waiting$' 10 || fail "serve: the target did not start"
spawn "$TMP/srv.out" "$TRACER" serve --listen "127.0.0.1:$port" --pid "$target" --rate 1
srv=$spawned_pid
wait_for "$TMP/srv.out.err" '(attached to|connected to the agent in) process' 20 ||
	{ cat "$TMP/srv.out.err" >&2; fail "serve did not attach"; }
: >"$TMP/go"
reap "$target" 60
[ "$reaped_rc" = 0 ] || check_failed "serve: the target exited $reaped_rc"
# the target's end is seen within a poll; its last counts are read then
wait_for "$TMP/srv.out.err" 'has exited; serving its final profile' 20 ||
	{ cat "$TMP/srv.out.err" >&2; fail "serve did not see the target end"; }
curl -s -o "$TMP/serve.pb.gz" "http://127.0.0.1:$port/debug/pprof/heap" ||
	fail "serve: no profile"
kill -TERM "$srv"
reap "$srv" 30
check_truth "$TMP/serve.out" "$TMP/serve.pb.gz" serve

# --- preloaded alone, read from its core
core_pattern_take
rm -rf "$TMP/dump"; mkdir "$TMP/dump"
(cd "$TMP/dump" && ulimit -c unlimited &&
	exec env LD_PRELOAD="$AGENT" PPROF_ALLOC_RATE=1 PPROF_ALLOC_UNWIND=dwarf \
	"$W" 2 50000 abort) \
	>"$TMP/core.out" 2>/dev/null
core=$(ls "$TMP"/dump/core* 2>/dev/null | head -n 1)
[ -n "$core" ] || fail "no core was dumped"
"$TRACER" --core "$core" -o "$TMP/core.pb.gz" --no-debuginfod 2>"$TMP/core.err" ||
	{ sed 's/^/    stderr: /' "$TMP/core.err"; fail "--core failed"; }
check_truth "$TMP/core.out" "$TMP/core.pb.gz" core

finish
