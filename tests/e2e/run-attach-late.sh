# A tracer that comes late: the program ran with the agent preloaded and no
# tracer, at rate 1, and made far more records than the agent's ring holds.
# Connecting (no injection), the tracer must find every block still live,
# with its stack, in the agent's live and stack tables - and count none
# twice when a block's record is also still in the ring.
. "$(dirname "$0")/lib.sh"
need go python3

LD_PRELOAD="$AGENT" PPROF_ALLOC_RATE=1 "$WORKLOADS/late" >"$TMP/out" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$TMP"' EXIT
wait_for "$TMP/out" ready 10 || fail "late did not get ready"
timeout 30 "$TRACER" --pid $pid --duration 0.3 -o "$TMP/l.pb.gz" \
	2>"$TMP/err" || { cat "$TMP/err"; fail "the tracer failed"; }
cat "$TMP/err"
grep -q "connected to the agent" "$TMP/err" || fail "it injected instead of connecting"
grep -q "live samples from before we came" "$TMP/err" || fail "no seeding said"
pprof_sum "$TMP/l.pb.gz" leaf >"$TMP/sum.txt"
cat "$TMP/sum.txt"
[ "$(value kept_early 3 <"$TMP/sum.txt")" = 20000 ] ||
	fail "kept_early: want 20000 objects in use"
[ "$(value kept_early 4 <"$TMP/sum.txt")" = 2000000 ] ||
	fail "kept_early: want 2000000 bytes in use"
[ "$(value churn_early 3 <"$TMP/sum.txt")" = 0 ] ||
	fail "churn_early: nothing of it is live"
kill -TERM $pid
wait $pid || fail "the program failed after the tracer left"
grep -q "late: 20000" "$TMP/out" || fail "the program's own check failed"
