#!/bin/sh
# run-attach-exact.sh - attach at --rate 1 to a running multi-threaded
# service (tests/workloads/attach-sites.c) that idles in poll() until told
# to work; while attached it does one round of work on 4 threads at known
# sites; then the tracer is stopped with SIGTERM, detaches and writes.
# The allocations made while attached are exact in the profile, per site.
# Blocks allocated before the attach (pre_site) and freed while attached
# never show: not as allocations, not as in-use, and nothing is negative.
# The service then works another round unprofiled and exits with its own
# check of every block it kept.
. "$(dirname "$0")/lib.sh"
need go python3
attach_init

T=4 N=8000 R=200 PRE=1000
W="$WORKLOADS/attach-sites"
mkfifo "$TMP/cmd" || fail "mkfifo"

spawn "$TMP/target.out" "$W" "$TMP/cmd" $T $N $R $PRE
target=$spawned_pid
wait_for "$TMP/target.out" '^attach-sites: ready' 10 ||
	fail "attach-sites did not start: $(cat "$TMP/target.out.err")"

attach_bg "$target" "$TMP/exact.pb.gz" "$TMP/tracer.err" --rate 1
sed 's/^/    tracer: /' "$TMP/tracer.err"
grep -q "attached to process $target" "$TMP/tracer.err" ||
	fail "the tracer did not inject the agent (want 'attached to process $target')"

printf w >"$TMP/cmd"
wait_for "$TMP/target.out" '^work done 1$' 30 || fail "the first round of work did not finish"
stop_tracer
sed 's/^/    tracer: /' "$TMP/tracer.err"
[ "$tracer_rc" = 0 ] || fail "the tracer exited $tracer_rc after SIGTERM, want 0"
grep -q "process $target was detached" "$TMP/tracer.err" ||
	fail "the tracer did not say it detached from process $target"
running "$target" || fail "the target died with the tracer"

# After the detach the service works on, unprofiled, and checks its data.
printf wq >"$TMP/cmd"
reap "$target" 30
cat "$TMP/target.out"
[ "$reaped_rc" = 0 ] || fail "attach-sites exited $reaped_rc after the detach, want 0"
grep -qx 'attach-sites: 2 rounds, check ok' "$TMP/target.out" ||
	fail "attach-sites did not finish its two rounds with its data intact"

pprof_sum "$TMP/exact.pb.gz" leaf >"$TMP/leaf.txt"
cp "$TMP/raw.txt" "$TMP/exact.raw"
pprof_sum "$TMP/exact.pb.gz" cum >"$TMP/cum.txt"
cat "$TMP/leaf.txt"
check_no_loss "$TMP/leaf.txt"
check_no_negative "$TMP/exact.raw"

# The formulas of attach-sites.c's header comment, for one round.
check_attach_round "$TMP/leaf.txt" $T $N $R
# Made before the attach: not in the profile, whether allocated or freed.
check_absent "$TMP/leaf.txt" pre_site
check_absent "$TMP/leaf.txt" pre_free
check_absent "$TMP/leaf.txt" verify_free
# Nothing is in use but what the work kept (no stray pre-attach blocks,
# no negative in-use anywhere).
want_io=$((T * N + T * N / 2 + T * R))
got_io=$(value worker_main 3 <"$TMP/cum.txt")
[ "$got_io" = "$want_io" ] ||
	check_failed "inuse_objects under worker_main = $got_io, want $want_io"
awk '$1 !~ /^#/ && ($4 < 0 || $5 < 0) { bad = 1; print "FAIL: negative in use: " $0 }
	END { exit bad }' "$TMP/leaf.txt" >&2 || check_failed "negative in-use sums"
# Every stack goes on from the site to the thread's entry.
want_ao=$((T * N * 4 + T * R * 4))
got_ao=$(value worker_main 1 <"$TMP/cum.txt")
[ "$got_ao" = "$want_ao" ] ||
	check_failed "alloc_objects under worker_main (cumulative) = $got_ao, want $want_ao"
finish
