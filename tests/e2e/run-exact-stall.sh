#!/bin/sh
# run-exact-stall.sh - at --rate 1 a tracer that stops reading (SIGSTOP for
# 10 s; 4 s in the second case, enough past the 1 s bound) never stops the
# target for longer than the documented bound.
#
#   - default (--unwind auto): the agent counts every allocation at its
#     sites and needs the ring for nothing, so the target runs to its end
#     while the tracer is stopped, and the profile is still exact, with
#     nothing lost;
#   - --unwind dwarf on the smallest ring: every allocation needs the ring
#     (a stack copy for the tracer to unwind), which fills; producers wait
#     for room, and when the tail has not moved for PA_PRESSURE_MAX_MS
#     (1 s) they stop waiting for that tracer and count what they
#     allocate at its frame-pointer stack instead.  The target still ends
#     during the stall, the profile says the agent stopped waiting, and
#     the counts are still exact, nothing lost.
. "$(dirname "$0")/lib.sh"
need pgrep go python3
attach_init

W="$WORKLOADS/exact-churn"

# stalled NAME SECONDS ITERATIONS TRACER-OPTIONS...: launch the workload
# under the tracer, stop the tracer for SECONDS before the workload
# starts, let the workload run; $ran_s is how long it took (it must end
# during the stall).
stalled() {
	_name=$1 STALL=$2 _n=$3; shift 3
	rm -f "$TMP/go"
	spawn "$TMP/$_name.out" "$TRACER" -o "$TMP/$_name.pb.gz" --rate 1 "$@" \
		-- "$W" 2 "$_n" "wait=$TMP/go"
	_tracer=$spawned_pid
	wait_for "$TMP/$_name.out" '^waiting$' 20 || fail "$_name: the workload did not start"
	_target=$(pgrep -P "$_tracer" | head -n 1)
	[ -n "$_target" ] || fail "$_name: no target under the tracer"
	kill -STOP "$_tracer"
	_t0=$(date +%s%N)
	: >"$TMP/go"
	_left=$((STALL * 100))
	while running "$_target" && [ $_left -gt 0 ]; do
		sleep 0.01
		_left=$((_left - 1))
	done
	ran_s=$(awk -v a="$_t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
	running "$_target" && check_failed "$_name: the target was still running after $STALL s with its tracer stopped"
	note "$_name: the target ended $ran_s s after it started, its tracer stopped"
	sleep $((_left / 100))
	kill -CONT "$_tracer"
	reap "$_tracer" 60
	[ "$reaped_rc" = 0 ] || { sed 's/^/    tracer: /' "$TMP/$_name.out.err"; check_failed "$_name: the tracer exited $reaped_rc"; }
	sed 's/^/    tracer: /' "$TMP/$_name.out.err"
}

# exact NAME: every site of the profile as the workload counted, nothing lost
exact() {
	pprof_sum "$TMP/$1.pb.gz" leaf >"$TMP/$1.sum"
	check_no_loss "$TMP/$1.sum"
	while read -r _ site a b c d; do
		check_site "$TMP/$1.sum" "$site" "$a" "$b" "$c" "$d"
	done <<EOT
$(grep '^truth ' "$TMP/$1.out")
EOT
	grep -q "records LOST" "$TMP/$1.out.err" && check_failed "$1: the tracer said records were lost"
	grep '^# exact' "$TMP/$1.sum" | sed 's/^/    /'
}

# --- default: nothing needs the ring, so the stopped tracer costs the
# target nothing more than a running one does (--rate 1's own cost, at
# most 3x bare here; 4x leaves room for a loaded machine)
: >"$TMP/go"
t0=$(date +%s%N)
"$W" 2 300000 "wait=$TMP/go" >/dev/null || fail "bare run failed"
bare_s=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
stalled auto 10 300000
exact auto
awk -v s="$ran_s" -v b="$bare_s" 'BEGIN { exit !(s <= 4 * b + 0.3) }' ||
	check_failed "auto: the target took $ran_s s with its tracer stopped, $bare_s s bare"
note "auto: $ran_s s with the tracer stopped, $bare_s s bare"

# --- every allocation through the ring: the agent gives up after 1 s (the
# stall and the time the work may take beside the wait scale with
# TIME_SCALE; the 1 s does not)
S=${TIME_SCALE:-1}
stalled dwarf $((4 * S)) 3000 --unwind dwarf --ring-size 64K
awk -v s="$ran_s" -v k="$S" 'BEGIN { exit !(s < 1 + 2.5 * k) }' ||
	check_failed "dwarf: the target took $ran_s s with its tracer stopped; the bound is 1 s of waiting"
exact dwarf
grep -q "^# exact.*the tracer did not read for 1000 ms (1 time) and the agent stopped waiting" "$TMP/dwarf.sum" ||
	check_failed "dwarf: the profile does not say that the agent stopped waiting"
ring=$(sed -n 's/^# exact.* \([0-9]*\) allocations recorded through the ring.*/\1/p' "$TMP/dwarf.sum")
[ "${ring:-0}" -gt 0 ] || check_failed "dwarf: no allocation went through the ring (the premise)"

finish
