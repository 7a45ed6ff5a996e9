#!/bin/sh
# run-signals.sh - signal handlers that allocate (tests/workloads/signals.c:
# SIGALRM every 200 us from an interval timer, SIGUSR1 every 300 us from a
# helper thread, on an alternate stack) while the main thread allocates,
# for about a second, at --rate 1.  The program completes with the output
# of a bare run, the profile loads, the main thread's sites are exact, and
# the handlers' sites are there, balanced (each handler frees what it
# allocates), and never counted more often than the handlers ran.
# plain build only: signal handlers against the agent's producers, which are never sanitized; the tracer's consumer is sanitized in run-loss, run-exact-churn and run-hostile
. "$(dirname "$0")/lib.sh"
need go python3

N=3000000
W="$WORKLOADS/signals"

run_bare "$TMP/bare.out" "$W" $N
[ "$bare_rc" = 0 ] || { cat "$TMP/bare.out.err" >&2; fail "bare run of signals failed (exit $bare_rc)"; }
# a ring that holds the whole run: exactness must not depend on how fast
# the tracer drains (under ASan it drains several times slower)
trace "$TMP/traced.out" "$TMP/signals.pb.gz" --rate 1 --ring-size 512M -- "$W" $N
[ "$trace_rc" = 0 ] || fail "traced run exited $trace_rc, want 0"
same_output "$TMP/bare.out" "$TMP/traced.out"

pprof_sum "$TMP/signals.pb.gz" leaf >"$TMP/leaf.txt"
cat "$TMP/leaf.txt"
check_no_loss "$TMP/leaf.txt"

kept=$(( (N + 999) / 1000 ))
check_site "$TMP/leaf.txt" main_loop_site $N $((N * 48)) 0 0
check_site "$TMP/leaf.txt" main_keep_site $kept $((kept * 1000)) $kept $((kept * 1000))

alrm=$(sed -n 's/^signals: handled alrm=\([0-9]*\) usr1=\([0-9]*\)$/\1/p' "$TMP/traced.out.err")
usr1=$(sed -n 's/^signals: handled alrm=\([0-9]*\) usr1=\([0-9]*\)$/\2/p' "$TMP/traced.out.err")
[ -n "$alrm" ] && [ -n "$usr1" ] || fail "the workload did not report its handler counts"
# handler_site FUNC SIZE HANDLED
handler_site() {
	_ao=$(value "$1" 1 <"$TMP/leaf.txt") _as=$(value "$1" 2 <"$TMP/leaf.txt")
	_io=$(value "$1" 3 <"$TMP/leaf.txt") _is=$(value "$1" 4 <"$TMP/leaf.txt")
	note "$1: $_ao allocations recorded, handler ran $3 times"
	[ "$_ao" -gt 0 ] || check_failed "$1: no allocation recorded from the handler ($3 runs)"
	[ "$_ao" -le "$3" ] || check_failed "$1: $_ao allocations recorded, but the handler ran only $3 times"
	[ "$_as" = $((_ao * $2)) ] || check_failed "$1: alloc_space $_as, want $_ao x $2"
	[ "$_io" = 0 ] && [ "$_is" = 0 ] ||
		check_failed "$1: in use ($_io objects, $_is bytes) but the handler frees all it allocates"
}
handler_site alrm_site 96 "$alrm"
handler_site usr1_site 200 "$usr1"

# --- every allocation a stack copy through a small ring, so producers wait
# for room (--rate 1's back-pressure) while handlers interrupt them, also
# between a record's claim and its commit: a handler on top of its own
# thread's open record must never wait for the tracer, which waits for
# that record.  Nothing lost, no wait given up on, the main sites exact.
N=300000
start=$(date +%s)
trace "$TMP/bp.out" "$TMP/bp.pb.gz" --rate 1 --unwind dwarf --ring-size 256K -- "$W" $N
[ "$trace_rc" = 0 ] || fail "back-pressure: traced run exited $trace_rc, want 0"
note "back-pressure: $(($(date +%s) - start)) s"
pprof_sum "$TMP/bp.pb.gz" leaf >"$TMP/bp.txt"
check_no_loss "$TMP/bp.txt"
grep '^# exact' "$TMP/bp.txt" | sed 's/^/    /'
grep -q '^# exact.*records waited for room' "$TMP/bp.txt" ||
	check_failed "back-pressure: no record waited for room (the premise)"
grep -q '^# exact.*stopped waiting' "$TMP/bp.txt" &&
	check_failed "back-pressure: the agent gave up waiting for a tracer that was reading"
kept=$(( (N + 999) / 1000 ))
check_site "$TMP/bp.txt" main_loop_site $N $((N * 48)) 0 0
check_site "$TMP/bp.txt" main_keep_site $kept $((kept * 1000)) $kept $((kept * 1000))
finish
