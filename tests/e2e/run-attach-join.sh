# No thread idles in poll or sleep: the main thread waits in pthread_join
# (futex), the worker allocates flat out.  The tracer must borrow the
# waiting thread, profile the worker, detach, and leave the program to
# finish normally.
. "$(dirname "$0")/lib.sh"
need go python3

"$WORKLOADS/attach-join" >"$TMP/out" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$TMP"' EXIT
wait_for "$TMP/out" ready 10 || fail "attach-join did not get ready"
# 0.3 s of samples, longer on a slower machine (fewer bytes a second)
timeout 60 "$TRACER" --pid $pid --duration "$(awk -v s=$TIME_SCALE 'BEGIN { print 0.3 * s }')" -o "$TMP/j.pb.gz" \
	2>"$TMP/err" || { cat "$TMP/err"; fail "the tracer failed"; }
cat "$TMP/err"
grep -q "was detached" "$TMP/err" || fail "not detached"
pprof_sum "$TMP/j.pb.gz" leaf >"$TMP/sum.txt"
cat "$TMP/sum.txt"
[ "$(value spin_site 1 <"$TMP/sum.txt")" -gt 0 ] || fail "spin_site not sampled"
kill -TERM $pid
wait $pid || fail "the program failed after the tracer left (status $?)"
grep -q "attach-join: done" "$TMP/out" || fail "the program did not finish"
