# Coroutines on stacks that are unmapped while the thread lives: the
# program must run exactly as it does without the agent (it once died of
# SIGSEGV in the stack walk), and the profile must load.
. "$(dirname "$0")/lib.sh"
need go python3

W="$WORKLOADS/coroutines"
bare=$("$W") || fail "the workload fails on its own"
out=$("$TRACER" -q --rate 1 -o "$TMP/c.pb.gz" -- "$W") ||
	fail "under the tracer it exited with status $?"
[ "$out" = "$bare" ] || fail "output differs: '$out' vs '$bare'"
pprof_sum "$TMP/c.pb.gz" leaf >"$TMP/sum.txt"
grep -q . "$TMP/sum.txt" || fail "empty profile"
echo "ok: $out"
