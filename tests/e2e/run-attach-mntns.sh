# The target lives in its own mount namespace, where the agent's directory
# is hidden under a tmpfs: injection must be refused up front, with a line
# saying so, and the target left untouched and running.
. "$TOP/tests/e2e/lib.sh"

command -v unshare >/dev/null || fail "unshare (util-linux) is missing"
AGENT_DIR=$(dirname "$AGENT")
cp "$WORKLOADS/attach-join" "$TMP/" || fail "copy"	# outside the hidden dir
unshare -m --propagation private sh -c \
	"mount -t tmpfs none '$AGENT_DIR' && exec '$TMP/attach-join'" \
	>"$TMP/out" 2>"$TMP/unshare.err" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$TMP"' EXIT
wait_for "$TMP/out" ready 10 || fail "target did not start"
[ -e "/proc/$pid/root$AGENT" ] && fail "the agent is visible in the target's namespace: the test proves nothing"
if timeout 30 "$TRACER" --pid $pid --duration 0.3 -o "$TMP/x.pb.gz" 2>"$TMP/err"; then
	cat "$TMP/err"
	fail "the tracer attached"
fi
cat "$TMP/err"
grep -q "not visible at that path in process $pid's mount namespace" "$TMP/err" ||
	fail "the refusal does not say why"
grep -q libpprof-alloc "/proc/$pid/maps" && fail "the agent was loaded anyway"
kill -0 $pid || fail "the target died"
