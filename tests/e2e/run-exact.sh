#!/bin/sh
# run-exact.sh - at --rate 1 every allocation is recorded, so the per-site
# totals of a multi-threaded workload (tests/workloads/sites.c) must equal
# what the workload is known to allocate, exactly: requested sizes (not
# usable sizes), calloc as n*s, realloc as a free of the old block plus an
# allocation of the new size at the realloc's own stack.
. "$(dirname "$0")/lib.sh"
need go python3

T=4 N=20000 R=50
W="$WORKLOADS/sites"

run_bare "$TMP/bare.out" "$W" $T $N $R
[ "$bare_rc" = 0 ] || fail "bare run of sites failed (exit $bare_rc)"
trace "$TMP/traced.out" "$TMP/sites.pb.gz" --rate 1 -- "$W" $T $N $R
[ "$trace_rc" = 0 ] || fail "traced run exited $trace_rc, want 0"
same_output "$TMP/bare.out" "$TMP/traced.out"

pprof_sum "$TMP/sites.pb.gz" leaf >"$TMP/leaf.txt"
pprof_sum "$TMP/sites.pb.gz" cum >"$TMP/cum.txt"
cat "$TMP/leaf.txt"
check_no_loss "$TMP/leaf.txt"

# The formulas of sites.c's header comment.
# site_keep: sizes 24, 100, 1000, 5000 in turn, all kept.
keep_objs=$((T * N)) keep_bytes=$((T * N / 4 * (24 + 100 + 1000 + 5000)))
check_site "$TMP/leaf.txt" site_keep $keep_objs $keep_bytes $keep_objs $keep_bytes
# site_churn: 32 + 16 * (i % 8), all freed.
churn_bytes=$((T * N / 8 * (8 * 32 + 16 * (0 + 1 + 2 + 3 + 4 + 5 + 6 + 7))))
check_site "$TMP/leaf.txt" site_churn $((T * N)) $churn_bytes 0 0
# site_calloc: (i % 4 + 1) x 48, odd i kept (i % 4 = 1 or 3: 2 and 4 elements).
calloc_bytes=$((T * N / 4 * 48 * (1 + 2 + 3 + 4)))
calloc_kept=$((T * N / 4 * 48 * (2 + 4)))
check_site "$TMP/leaf.txt" site_calloc $((T * N)) $calloc_bytes $((T * N / 2)) $calloc_kept
# site_realloc: NULL -> 16 -> 100 -> 1000 -> 10000 -> 40000 -> 20000, kept.
check_site "$TMP/leaf.txt" site_realloc $((T * R * 6)) \
	$((T * R * (16 + 100 + 1000 + 10000 + 40000 + 20000))) $((T * R)) $((T * R * 20000))
# A constructor of the program runs before main: recorded from the start.
check_site "$TMP/leaf.txt" ctor_site 1 12345 1 12345

# The stacks go on past the leaf: every site is reached from worker_main,
# which allocates nothing itself.
want_objs=$((T * N * 3 + T * R * 6))
got_objs=$(value worker_main 1 <"$TMP/cum.txt")
[ "$got_objs" = "$want_objs" ] ||
	fail "alloc_objects under worker_main (cumulative) = $got_objs, want $want_objs"
got_objs=$(value start_thread 1 <"$TMP/cum.txt")
[ "$got_objs" -ge "$want_objs" ] ||
	fail "alloc_objects under start_thread = $got_objs, want >= $want_objs"
finish
