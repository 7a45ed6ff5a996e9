#!/bin/sh
# run-loss.sh - when records are lost, the tracer says why and what would
# help, and what it says is true.
#
# tests/workloads/churn.c (threads allocating and freeing as fast as they
# can), sampled at --rate 16, so that nearly every allocation (16..4111
# bytes) is a sample - but sampled: --rate 1 never drops (its producers
# wait for room instead: run-exact-churn.sh, run-exact-stall.sh):
#
# 1. each with a 16 KiB stack copy to unwind (--unwind dwarf): the tracer
#    takes microseconds a record and cannot keep up whatever the ring.  It
#    must say so - not "try a larger --ring-size" - and suggest sampling
#    less often; and it is true: a ring 8 times larger loses records all
#    the same.
# 2. a 64 KiB ring with frame-pointer stacks: bursts fill it while the
#    tracer waits between drains.  It must say to try a larger ring; and it
#    is true: the default ring (8 MiB) loses nothing in the same run.
# The profile's comments carry the same explanation.
. "$(dirname "$0")/lib.sh"
need go

W="$WORKLOADS/churn"

# lost ERR: the number of records the summary line says were lost (0: none)
lost() {
	sed -n 's/.* \([0-9][0-9]*\) records LOST: .*/\1/p' "$1" | head -n 1 | grep . || echo 0
}

# ---- 1. the tracer cannot keep up
trace "$TMP/dwarf.out" "$TMP/dwarf.pb.gz" --rate 16 --unwind dwarf --ring-size 32M -- "$W" 2 300000 0
[ "$trace_rc" = 0 ] || check_failed "dwarf: the tracer exited $trace_rc"
n=$(lost "$TMP/dwarf.out.err")
note "dwarf, 32 MiB ring: $n records lost"
[ "$n" -gt 0 ] || fail "dwarf: no record was lost (the test's premise)"
grep -q "records LOST: the program made records faster than the tracer can take them (.*); a larger --ring-size would not help: sample less often (a --rate above 16), or --unwind fp" "$TMP/dwarf.out.err" ||
	check_failed "dwarf: the summary does not say the tracer cannot keep up and to sample"
grep -q "try a larger --ring-size" "$TMP/dwarf.out.err" &&
	check_failed "dwarf: the summary suggests a larger ring"
go tool pprof -comments "$TMP/dwarf.pb.gz" 2>&1 |
	grep -q "^records lost: the program made records faster than the tracer can take them" ||
	check_failed "dwarf: the profile's comments do not explain the loss"
# true: 8 times the ring, still losing
trace "$TMP/big.out" "$TMP/big.pb.gz" --rate 16 --unwind dwarf --ring-size 256M -- "$W" 2 300000 0
big=$(lost "$TMP/big.out.err")
note "dwarf, 256 MiB ring: $big records lost"
[ "$big" -gt $((n / 4)) ] ||
	check_failed "dwarf: a 256 MiB ring lost $big records, against $n with 32 MiB: a larger ring did help"
grep -q "a larger --ring-size would not help" "$TMP/big.out.err" ||
	check_failed "dwarf, 256 MiB: the summary does not say a larger ring would not help"

# ---- 2. a ring too small for the bursts
trace "$TMP/small.out" "$TMP/small.pb.gz" --rate 16 --unwind fp --ring-size 64K -- "$W" 4 100000 0
small=$(lost "$TMP/small.out.err")
note "64 KiB ring: $small records lost"
[ "$small" -gt 0 ] || fail "64 KiB ring: no record was lost (the test's premise)"
grep -q "records LOST: the ring (64 KiB) filled while the tracer waited between drains (.*): try a larger --ring-size" "$TMP/small.out.err" ||
	check_failed "64 KiB ring: the summary does not say to try a larger ring"
grep -q "would not help" "$TMP/small.out.err" &&
	check_failed "64 KiB ring: the summary says a larger ring would not help"
go tool pprof -comments "$TMP/small.pb.gz" 2>&1 |
	grep -q "^records lost: the ring (64 KiB) filled while the tracer waited" ||
	check_failed "64 KiB ring: the profile's comments do not explain the loss"
# true: the default ring (128 times larger) loses next to nothing - none
# on an idle machine; a sanitized tracer on a busy one may fall behind
# the four threads, so "a larger ring helped" is the check: at most half
# the small ring's losses (a tenth failed on a slow 2-core machine:
# 136,491 against 535,665)
trace "$TMP/default.out" "$TMP/default.pb.gz" --rate 16 --unwind fp -- "$W" 4 100000 0
d=$(lost "$TMP/default.out.err")
note "default ring: $d records lost (64 KiB: $small)"
[ "$((d * 2))" -le "$small" ] ||
	check_failed "the default ring lost $d records against $small with 64 KiB: a larger ring did not help"
finish
