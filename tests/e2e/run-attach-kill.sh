# The tracer is killed with SIGKILL while attached: the target runs on
# unharmed, and its agent turns itself off within a second (agent/orphan.c:
# its stats thread finds the tracer gone, every 250 ms): stats says so, and
# the sample count read a second after the kill does not move in the next
# second while the target keeps allocating.  A later pprof-alloc --pid
# says what happened, attaches again, records and detaches - and then
# unloads the agent: the target's maps, threads and descriptors are what
# they were before the first attach.
. "$(dirname "$0")/lib.sh"
need go python3

"$WORKLOADS/attach-join" >"$TMP/out" &
pid=$!
trap 'kill $pid $tracer 2>/dev/null; rm -rf "$TMP"' EXIT
wait_for "$TMP/out" ready 10 || fail "attach-join did not get ready"
# snap NAME: maps (permissions and file), thread names, descriptor targets
snap() {
	{ awk '{ print $2, ($6 == "" ? "[anon]" : $6) }' "/proc/$pid/maps" | sort
	  cat /proc/$pid/task/*/comm | sort
	  for f in /proc/$pid/fd/*; do readlink "$f"; done | sed 's/[0-9][0-9]*/N/g' | sort
	} >"$TMP/$1.snap"
}
snap before
"$TRACER" --pid $pid -o "$TMP/first.pb.gz" 2>"$TMP/first.err" &
tracer=$!
wait_for "$TMP/first.err" "attached to process" 10 ||
	{ cat "$TMP/first.err"; fail "first tracer did not attach"; }
sleep 0.3
kill -KILL $tracer
wait $tracer 2>/dev/null
t0=$(date +%s%N)
# samples: the agent's count, from stats
samples() { sed -n 's/^  agent: \([0-9]*\) samples.*/\1/p' "$1"; }
i=0
until "$TRACER" stats --pid $pid >"$TMP/stats1.out" 2>"$TMP/stats1.err" &&
	grep -q "turned itself off: its tracer (process $tracer) ended without detaching" "$TMP/stats1.out"; do
	[ $i -lt 100 ] || { cat "$TMP/stats1.out" "$TMP/stats1.err"; fail "the agent did not turn itself off"; }
	sleep 0.1; i=$((i + 1))
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
note "the agent was seen off $ms ms after the kill"
[ "$ms" -le $(( (1000 + 1000) * ${TIME_SCALE:-1} )) ] ||
	check_failed "the agent turned itself off only $ms ms after its tracer died"
# a second after the kill (scaled), then a second later: no sample since
left=$(( 1000 * ${TIME_SCALE:-1} - ($(date +%s%N) - t0) / 1000000 ))
[ "$left" -le 0 ] || sleep "$(awk -v ms="$left" 'BEGIN { print ms / 1000 }')"
"$TRACER" stats --pid $pid >"$TMP/stats1.out" 2>&1 || fail "stats failed: $(cat "$TMP/stats1.out")"
s1=$(samples "$TMP/stats1.out")
sleep 1
"$TRACER" stats --pid $pid >"$TMP/stats2.out" 2>&1 || fail "stats failed: $(cat "$TMP/stats2.out")"
s2=$(samples "$TMP/stats2.out")
note "samples: $s1 a second after the kill, then $s2 a second later"
[ -n "$s1" ] && [ "$s1" = "$s2" ] || check_failed "the agent went on sampling with no tracer: $s1, then $s2"
kill -0 $pid 2>/dev/null || fail "the target died with its tracer"

timeout 30 "$TRACER" --pid $pid --duration 0.5 -o "$TMP/second.pb.gz" \
	2>"$TMP/second.err" || { cat "$TMP/second.err"; fail "second tracer failed"; }
cat "$TMP/second.err"
grep -q "note: the agent in process $pid had turned itself off: its tracer (process $tracer) ended without detaching" "$TMP/second.err" ||
	check_failed "the second tracer does not say the agent had turned itself off"
grep -q "re-attached to process" "$TMP/second.err" ||
	fail "the second tracer did not attach again"
grep -q "was detached" "$TMP/second.err" || fail "not detached"
grep -q "unloaded the agent from process $pid " "$TMP/second.err" ||
	check_failed "the second tracer did not unload the agent"
snap after
cmp -s "$TMP/before.snap" "$TMP/after.snap" ||
	check_failed "the target is not as it was before the first attach: $(diff "$TMP/before.snap" "$TMP/after.snap" | grep '^[<>]' | tr '\n' ';')"
pprof_sum "$TMP/second.pb.gz" leaf >"$TMP/sum.txt"
[ "$(value spin_site 1 <"$TMP/sum.txt")" -gt 0 ] || fail "spin_site not sampled"
kill -TERM $pid
wait $pid || fail "the target failed after all this (status $?)"
grep -q "attach-join: done" "$TMP/out" || fail "the target did not finish"
finish
