#!/bin/sh
# run-dlopen.sh - a library loaded with dlopen after the program started
# (tests/workloads/dlsite.c, built here as a shared object; loaded by
# tests/workloads/dlopener.c) allocates; at --rate 1 the profile names the
# library's functions, in the library's mapping, with exact totals.  Twice:
# once with the program lingering 300 ms after using the library, and once
# exiting right away (short-lived programs are the common case, and the
# library must not be missed because the program ended quickly).
. "$(dirname "$0")/lib.sh"
need python3 go

N=1000
W="$WORKLOADS/dlopener"
LIB="$TMP/libdlsite.so"
${CC:-cc} -shared -fPIC -O1 -g -fno-omit-frame-pointer -DDLSITE_LIBRARY \
	-Wall -Wextra -Werror -o "$LIB" "$TOP/tests/workloads/dlsite.c" ||
	fail "cannot build $LIB"

run_bare "$TMP/bare.out" "$W" "$LIB" $N
[ "$bare_rc" = 0 ] || { cat "$TMP/bare.out.err" >&2; fail "bare run of dlopener failed (exit $bare_rc)"; }

for pause in 300 0; do
	note "dlopener, $pause ms after using the library"
	trace "$TMP/traced.out" "$TMP/dl-$pause.pb.gz" --rate 1 -- "$W" "$LIB" $N $pause
	[ "$trace_rc" = 0 ] || fail "traced run exited $trace_rc, want 0"
	same_output "$TMP/bare.out" "$TMP/traced.out"
	pprof_sum "$TMP/dl-$pause.pb.gz" leaf >"$TMP/leaf.txt"
	python3 "$TOP/tests/e2e/pprof_sum.py" frames <"$TMP/raw.txt" >"$TMP/frames.txt"
	cat "$TMP/leaf.txt"
	check_no_loss "$TMP/leaf.txt"
	before=$failures
	check_site "$TMP/leaf.txt" before_dlopen 1 777 1 777
	check_site "$TMP/leaf.txt" dlsite_keep $N $((N * 3000)) $N $((N * 3000))
	check_site "$TMP/leaf.txt" dlsite_churn $N $((N * 500)) 0 0
	for f in dlsite_keep dlsite_churn dlsite_run; do
		grep -q -x "$f $LIB" "$TMP/frames.txt" ||
			check_failed "$f is not in the stacks as a function of $LIB"
	done
	grep -q '^?? ' "$TMP/leaf.txt" &&
		check_failed "samples with an unsymbolized leaf: $(grep '^?? ' "$TMP/leaf.txt")"
	build_id=$(readelf -n "$LIB" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
	sed -n '/^Mappings/,$p' "$TMP/raw.txt" | grep -q " $LIB $build_id" ||
		check_failed "no mapping of $LIB with its build ID $build_id in the profile"
	[ $failures = "$before" ] || note "FAILED with the program exiting $pause ms after using the library"
done
finish
