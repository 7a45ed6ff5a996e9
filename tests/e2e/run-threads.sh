#!/bin/sh
# run-threads.sh - 1600 short-lived threads (200 rounds of 8, started and
# joined; default, 64 KiB and program-provided stacks in turn), each
# allocating at known sites, some blocks freed by the main thread after the
# join (tests/workloads/threads.c).  At --rate 1 the totals are exact: each
# new thread gets fresh sampler state and finds its own stack bounds, and
# its stacks reach back to the thread's start.
. "$(dirname "$0")/lib.sh"
need go python3

R=200 P=8 N=300
W="$WORKLOADS/threads"

run_bare "$TMP/bare.out" "$W" $R $P $N
[ "$bare_rc" = 0 ] || { cat "$TMP/bare.out.err" >&2; fail "bare run of threads failed (exit $bare_rc)"; }
# a ring that holds the whole run: exactness must not depend on how fast
# the tracer drains (under ASan it drains several times slower)
trace "$TMP/traced.out" "$TMP/threads.pb.gz" --rate 1 --ring-size 512M -- "$W" $R $P $N
[ "$trace_rc" = 0 ] || fail "traced run exited $trace_rc, want 0"
same_output "$TMP/bare.out" "$TMP/traced.out"

pprof_sum "$TMP/threads.pb.gz" leaf >"$TMP/leaf.txt"
pprof_sum "$TMP/threads.pb.gz" cum >"$TMP/cum.txt"
cat "$TMP/leaf.txt"
check_no_loss "$TMP/leaf.txt"

T=$((R * P))
check_site "$TMP/leaf.txt" thr_keep $((T * N)) $((T * N * 48)) $((T * N)) $((T * N * 48))
check_site "$TMP/leaf.txt" thr_churn $((T * N)) $((T * N / 3 * (64 + 128 + 192))) 0 0
check_site "$TMP/leaf.txt" thr_handoff $((T * N)) $((T * N * 200)) 0 0

want=$((3 * T * N))
for f in worker_main start_thread; do
	got=$(value $f 1 <"$TMP/cum.txt")
	[ "$got" -ge "$want" ] ||
		check_failed "alloc_objects with $f on the stack = $got, want >= $want (stacks cut short?)"
done
finish
