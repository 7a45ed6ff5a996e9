#!/bin/sh
# run-fork.sh - a multi-threaded program forks (no exec) 50 times while
# its other threads allocate (tests/workloads/forker.c).  Each child
# allocates at child_site, checks its data and exits with a known status,
# which the parent checks.  At --rate 1 the profile has the parent's sites,
# exactly, and nothing of the children's; the output equals a bare run's.
. "$(dirname "$0")/lib.sh"
need go python3

WK=3 N=100000 F=50
W="$WORKLOADS/forker"

run_bare "$TMP/bare.out" "$W" $WK $N $F
[ "$bare_rc" = 0 ] || { cat "$TMP/bare.out.err" >&2; fail "bare run of forker failed (exit $bare_rc)"; }
trace "$TMP/traced.out" "$TMP/fork.pb.gz" --rate 1 -- "$W" $WK $N $F
[ "$trace_rc" = 0 ] || fail "traced run exited $trace_rc, want 0 (a child failed its checks or exited with the wrong status?)"
same_output "$TMP/bare.out" "$TMP/traced.out"

pprof_sum "$TMP/fork.pb.gz" leaf >"$TMP/leaf.txt"
pprof_sum "$TMP/fork.pb.gz" cum >"$TMP/cum.txt"
cat "$TMP/leaf.txt"
check_no_loss "$TMP/leaf.txt"

kept=$(( (N + 3) / 4 ))
check_site "$TMP/leaf.txt" parent_worker_site $((WK * N)) $((WK * N * 256)) $((WK * kept)) $((WK * kept * 256))
check_site "$TMP/leaf.txt" parent_after_fork $F $((F * 4096)) $F $((F * 4096))
check_absent "$TMP/leaf.txt" child_site
check_absent "$TMP/cum.txt" child_site
finish
