#!/bin/sh
# run-attach-soak.sh - attach to and detach from a busy 4-thread program
# (tests/workloads/attach-soak.c: every thread allocates, reallocates and
# frees without a pause, checking the checksum of every block before it
# lets go of it) SOAK_CYCLES times (25; make check-long: 400), each for a
# short --duration.  Every session injects the agent, detaches cleanly and
# unloads it; the program never crashes, finds none of its data corrupt,
# and has the same mappings (permissions and files, but for its anonymous
# data), descriptors and threads after the last session as before the
# first.  The last profile
# is valid and shows the program's sites.
. "$(dirname "$0")/lib.sh"
need go python3
attach_init

CYCLES=${SOAK_CYCLES:-25} T=4
W="$WORKLOADS/attach-soak"
mkfifo "$TMP/cmd" || fail "mkfifo"
spawn "$TMP/soak.out" "$W" "$TMP/cmd" $T
target=$spawned_pid
wait_for "$TMP/soak.out" '^attach-soak: ready' 10 || fail "attach-soak did not start"

nfd() { ls "/proc/$target/fd" | wc -l; }
ntask() { ls "/proc/$target/task" | wc -l; }
# (its big blocks are mmapped and unmapped all along: anonymous data
# mappings come and go; run-detach compares those on quieter programs)
maps() {
	awk '{ print $2, ($6 == "" ? "[anon]" : $6) }' "/proc/$target/maps" |
		grep -Ev '^(rw-p|---p) \[anon\]$' | sort
}
fd0=$(nfd) task0=$(ntask)
maps >"$TMP/maps0"
note "before: $fd0 descriptors, $task0 threads"

start=$(date +%s)
i=1
while [ $i -le $CYCLES ]; do
	timeout -s KILL 20 "$TRACER" --pid "$target" --duration 0.05 --rate 65536 \
		-o "$TMP/soak.pb.gz" >/dev/null 2>"$TMP/cycle.err"
	rc=$?
	if [ $rc != 0 ] || ! grep -q "process $target was detached" "$TMP/cycle.err"; then
		sed 's/^/    tracer: /' "$TMP/cycle.err"
		running "$target" || fail "cycle $i: the target died ($(cat "$TMP/soak.out.err"))"
		fail "cycle $i: the tracer exited $rc or did not detach cleanly"
	fi
	running "$target" || fail "cycle $i: the target died ($(cat "$TMP/soak.out.err"))"
	[ $i = 1 ] && sed 's/^/    tracer: /' "$TMP/cycle.err"
	if ! grep -q "^pprof-alloc: attached to process $target" "$TMP/cycle.err" ||
	   ! grep -q "unloaded the agent from process $target " "$TMP/cycle.err"; then
		sed 's/^/    tracer: /' "$TMP/cycle.err"
		check_failed "cycle $i did not inject the agent, or did not unload it"
	fi
	i=$((i + 1))
done
fdN=$(nfd) taskN=$(ntask)
note "after cycle $CYCLES: $fdN descriptors, $taskN threads ($(($(date +%s) - start)) s)"
[ "$fdN" = "$fd0" ] ||
	check_failed "descriptor leak: $fd0 descriptors before, $fdN after cycle $CYCLES ($(ls -l /proc/$target/fd | tail -n +2 | sed 's/.* -> //' | sort | uniq -c | tr '\n' ';'))"
[ "$taskN" = "$task0" ] ||
	check_failed "thread leak: $task0 threads before, $taskN after cycle $CYCLES"
maps >"$TMP/mapsN"
cmp -s "$TMP/maps0" "$TMP/mapsN" ||
	check_failed "the mappings changed: $(diff "$TMP/maps0" "$TMP/mapsN" | grep '^[<>]' | tr '\n' ';')"

# The last profile is valid and has the program's sites, below the
# workers' entry point.
pprof_sum "$TMP/soak.pb.gz" cum >"$TMP/cum.txt"
check_no_negative "$TMP/raw.txt"
for f in soak_malloc worker_main; do
	[ "$(value $f 1 <"$TMP/cum.txt")" -gt 0 ] ||
		check_failed "the last profile has no allocation under $f"
done

printf q >"$TMP/cmd"
reap "$target" 30
cat "$TMP/soak.out"
[ "$reaped_rc" = 0 ] || check_failed "attach-soak exited $reaped_rc, want 0 (no corruption, no failed allocation)"
grep -Eq "^attach-soak: $T threads, [1-9][0-9]* operations, [0-9]+ blocks checked, 0 corrupt$" "$TMP/soak.out" ||
	check_failed "attach-soak did not report its data intact"
finish
