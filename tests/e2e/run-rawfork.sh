# A child forked with a raw system call (no atfork handlers) frees its
# copies of the parent's blocks; the parent's in-use must stay exact.
. "$(dirname "$0")/lib.sh"
need go python3

"$TRACER" -q --rate 1 -o "$TMP/r.pb.gz" -- "$WORKLOADS/rawfork" ||
	fail "rawfork exited with status $?"
pprof_sum "$TMP/r.pb.gz" leaf >"$TMP/sum.txt"
cat "$TMP/sum.txt"
[ "$(value parent_keeps 3 <"$TMP/sum.txt")" = 100 ] ||
	fail "parent_keeps in-use objects: want 100"
[ "$(value parent_keeps 4 <"$TMP/sum.txt")" = 100000 ] ||
	fail "parent_keeps in-use bytes: want 100000"
