# The tracer is killed with SIGKILL while attached: the target runs on
# unharmed (the agent keeps recording, dropping what nobody drains), and a
# later pprof-alloc --pid connects to the agent, takes over, and detaches.
. "$TOP/tests/e2e/lib.sh"
need go python3

"$WORKLOADS/attach-join" >"$TMP/out" &
pid=$!
trap 'kill $pid $tracer 2>/dev/null; rm -rf "$TMP"' EXIT
wait_for "$TMP/out" ready 10 || fail "attach-join did not get ready"
"$TRACER" --pid $pid -o "$TMP/first.pb.gz" 2>"$TMP/first.err" &
tracer=$!
wait_for "$TMP/first.err" "attached to process" 10 ||
	{ cat "$TMP/first.err"; fail "first tracer did not attach"; }
sleep 0.3
kill -KILL $tracer
wait $tracer 2>/dev/null
sleep 1
kill -0 $pid 2>/dev/null || fail "the target died with its tracer"

timeout 30 "$TRACER" --pid $pid --duration 0.5 -o "$TMP/second.pb.gz" \
	2>"$TMP/second.err" || { cat "$TMP/second.err"; fail "second tracer failed"; }
cat "$TMP/second.err"
grep -q "connected to the agent" "$TMP/second.err" ||
	fail "the second tracer did not take over the running agent"
grep -q "was detached" "$TMP/second.err" || fail "not detached"
pprof_sum "$TMP/second.pb.gz" leaf >"$TMP/sum.txt"
[ "$(value spin_site 1 <"$TMP/sum.txt")" -gt 0 ] || fail "spin_site not sampled"
kill -TERM $pid
wait $pid || fail "the target failed after all this (status $?)"
grep -q "attach-join: done" "$TMP/out" || fail "the target did not finish"
