#!/bin/sh
# tests/run.sh BUILD_DIR - run the whole suite: every unit test binary
# (build/tests/unit/test-*) and every end-to-end script (tests/e2e/run-*.sh).
#
# Each test is one program: exit 0 is a pass, anything else a failure (a test
# that cannot run here fails; nothing is skipped silently).  Output of a
# failing test is shown; passing tests print one line.  The last line is
# "N passed, N failed" and the exit status is non-zero if anything failed.
# TESTS="pattern" runs only the tests whose name contains pattern.
set -u
B=$(cd "${1:-build}" && pwd) || exit 2
TOP=$(cd "$(dirname "$0")/.." && pwd)
export BUILD="$B" TOP
export TRACER="$B/pprof-alloc" AGENT="$B/libpprof-alloc.so"
export WORKLOADS="$B/tests/workloads"
LOGS="$B/test-logs"
rm -rf "$LOGS"; mkdir -p "$LOGS"

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
		echo "FAIL $name (exit $rc); last lines of $log:"
		tail -n 25 "$log" | sed 's/^/    /'
	fi
}

for t in "$B"/tests/unit/test-*; do
	[ -x "$t" ] || continue
	run_one "unit/$(basename "$t")" "$t"
done
for t in "$TOP"/tests/e2e/run-*.sh; do
	[ -f "$t" ] || continue
	run_one "e2e/$(basename "$t" .sh)" sh "$t"
done

[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
