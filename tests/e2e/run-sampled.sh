#!/bin/sh
# run-sampled.sh - at the default rate (512 KiB) the profile's values are
# estimates; with thousands of samples per site they must land within 10%
# of the truth (a site with n samples has a relative standard error near
# 1/sqrt(n): ~2% here, so 10% is a bound a correct sampler never misses
# and a biased weight formula does).
#
# tests/workloads/sampled.c, 4 threads: big_churn allocates and frees
# 16384 x 64 KiB = 1 GiB, big_keep keeps 16384 x 64 KiB = 1 GiB (never
# touched, so it is cheap), small_churn allocates and frees
# 8 Mi x 128 B = 1 GiB.  Expected samples: 1 GiB / 512 KiB ~ 2000 a site.
. "$(dirname "$0")/lib.sh"
need go python3

T=4 BIG=4096 SMALL=2097152
W="$WORKLOADS/sampled"
GiB=1073741824

trace "$TMP/traced.out" "$TMP/sampled.pb.gz" -- "$W" $T $BIG $SMALL
[ "$trace_rc" = 0 ] || fail "traced run exited $trace_rc, want 0"
pprof_sum "$TMP/sampled.pb.gz" leaf >"$TMP/leaf.txt"
cat "$TMP/leaf.txt"
check_no_loss "$TMP/leaf.txt"
rate=$(comment_number "$TMP/leaf.txt" "sampling rate")
[ "$rate" = 524288 ] || check_failed "the profile's sampling rate is '$rate', want the default 524288"
grep -q '^Period: 524288$' "$TMP/raw.txt" || check_failed "the profile's Period is not 524288"

# within10 SITE FIELD WANT
within10() {
	_v=$(value "$1" "$2" <"$TMP/leaf.txt")
	if within "$_v" "$3" 10; then
		note "$1 field $2: $_v, want $3 +-10%"
	else
		check_failed "$1 field $2 (1 alloc_objects, 2 alloc_space, 3 inuse_objects, 4 inuse_space) = $_v, want $3 +-10%"
	fi
}
# exactly SITE FIELD WANT
exactly() {
	_v=$(value "$1" "$2" <"$TMP/leaf.txt")
	[ "$_v" = "$3" ] || check_failed "$1 field $2 = $_v, want exactly $3"
}

nbig=$((T * BIG)) nsmall=$((T * SMALL))
within10 big_churn 2 $((nbig * 65536))
within10 big_churn 1 $nbig
exactly big_churn 3 0
exactly big_churn 4 0
within10 big_keep 4 $((nbig * 65536))
within10 big_keep 3 $nbig
within10 big_keep 2 $((nbig * 65536))
within10 small_churn 2 $((nsmall * 128))
within10 small_churn 1 $nsmall
exactly small_churn 4 0
# Nothing kept was freed: in use equals allocated at big_keep.
[ "$(value big_keep 2 <"$TMP/leaf.txt")" = "$(value big_keep 4 <"$TMP/leaf.txt")" ] ||
	check_failed "big_keep: alloc_space != inuse_space, but nothing there is freed"
finish
