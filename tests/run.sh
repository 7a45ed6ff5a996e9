#!/bin/sh
# tests/run.sh BUILD_DIR [BUILD_DIR...] - run the whole suite for each build:
# every unit test binary (BUILD/tests/unit/test-*) and every end-to-end
# script (tests/e2e/run-*.sh) against that build's tracer and agent.
#
# `make test` passes two: build (plain) and build-san (the tracer, the
# parsers and the unit tests under ASan and UBSan; the agent, which runs
# inside other processes, is never sanitized - see the Makefile).  Tests of
# a build other than the first are named after it: "san/e2e/run-exact".
# run-fuzz runs in the first build only: it builds its own sanitized
# fuzzers (build-fuzz/), the same whichever build asks.
#
# Each test is one program: exit 0 is a pass, anything else a failure (a test
# that cannot run here fails; nothing is skipped silently).  Output of a
# failing test is shown; passing tests print one line.  The last line is
# "N passed, N failed" over every build, and the exit status is non-zero if
# anything failed.  TESTS="pattern" runs only the tests whose name contains
# pattern.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
export TOP
[ $# -gt 0 ] || set -- build
pass=0 fail=0 failed=""
run_one() {
	name=$1; shift
	case "$name" in *"${TESTS:-}"*) ;; *) return ;; esac
	log="$LOGS/$name.log"
	mkdir -p "$(dirname "$log")"
	start=$(date +%s)
	if (cd "$LOGS" && "$@") >"$log" 2>&1; then
		pass=$((pass + 1))
		echo "PASS $name ($(( $(date +%s) - start ))s)"
	else
		rc=$?
		fail=$((fail + 1)); failed="$failed $name"
		echo "FAIL $name (exit $rc); its FAIL lines, then the last lines of $log:"
		grep '^FAIL' "$log" | head -n 20 | sed 's/^/    /'
		echo "    ..."
		tail -n 25 "$log" | sed 's/^/    /'
	fi
}

first=1
for dir in "$@"; do
	B=$(cd "$dir" && pwd) || exit 2
	export BUILD="$B"
	export TRACER="$B/pprof-alloc" AGENT="$B/libpprof-alloc.so"
	export WORKLOADS="$B/tests/workloads"
	LOGS="$B/test-logs"
	rm -rf "$LOGS"; mkdir -p "$LOGS"
	prefix=
	[ $first = 1 ] || { prefix=$(basename "$B"); prefix="${prefix#build-}/"; }
	for t in "$B"/tests/unit/test-*; do
		[ -x "$t" ] || continue
		run_one "${prefix}unit/$(basename "$t")" "$t"
	done
	for t in "$TOP"/tests/e2e/run-*.sh; do
		[ -f "$t" ] || continue
		[ $first = 0 ] && [ "$(basename "$t")" = run-fuzz.sh ] && continue
		run_one "${prefix}e2e/$(basename "$t" .sh)" sh "$t"
	done
	first=0
done

[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
