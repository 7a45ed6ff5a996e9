#!/bin/sh
# run-small-ring.sh - a ring far too small for what the program allocates
# (--ring-size 64K, 4 threads churning, sampled at --rate 16 so that nearly
# every allocation is a sample, each with a stack copy): records are
# dropped, never waited for (only --rate 1 waits: run-exact-churn.sh).
# The program must still run correctly (its checksum equals a bare
# run's), the tracer exits with the program's status, and the loss is
# reported both in the profile's comments and on stderr.
. "$(dirname "$0")/lib.sh"
need go python3

T=4 N=100000 STATUS=5
W="$WORKLOADS/churn"

run_bare "$TMP/bare.out" "$W" $T $N $STATUS
[ "$bare_rc" = $STATUS ] || fail "bare run of churn exited $bare_rc, want $STATUS"
grep -q checksum "$TMP/bare.out" || fail "bare run printed no checksum"
trace "$TMP/traced.out" "$TMP/churn.pb.gz" --rate 16 --unwind dwarf --ring-size 64K -- "$W" $T $N $STATUS
[ "$trace_rc" = $STATUS ] || fail "the tracer exited $trace_rc, want the program's status $STATUS"
same_output "$TMP/bare.out" "$TMP/traced.out"

pprof_sum "$TMP/churn.pb.gz" leaf >"$TMP/leaf.txt"
cat "$TMP/leaf.txt"
lost=$(comment_number "$TMP/leaf.txt" "lost records")
[ -n "$lost" ] || fail "the profile has no 'lost records N' comment"
[ "$lost" -gt 0 ] || check_failed "the profile reports $lost lost records; a 64K ring cannot hold $((T * N)) allocations"
grep -i 'lost' "$TMP/traced.out.err" | grep -q -v '^churn' ||
	check_failed "the tracer's stderr does not say that records were lost"

# What did arrive is consistent: something was recorded at the site, and
# no value is negative or more in use than allocated (estimates: a sample
# of s bytes stands for 1 / (1 - exp(-s / 16)) allocations, at most 4.5).
ao=$(value churn_alloc 1 <"$TMP/leaf.txt") io=$(value churn_alloc 3 <"$TMP/leaf.txt")
[ "$ao" -gt 0 ] || check_failed "nothing recorded at churn_alloc"
[ "$ao" -le $((T * N * 9 / 2)) ] || check_failed "churn_alloc: $ao allocations recorded, the program made $((T * N))"
[ "$io" -ge 0 ] && [ "$io" -le "$ao" ] || check_failed "churn_alloc: inuse_objects $io out of [0, $ao]"
awk '!/^#/ { for (i = 2; i <= 5; i++) if ($i < 0) bad = 1 } END { exit bad }' "$TMP/leaf.txt" ||
	check_failed "negative values in the profile"
finish
