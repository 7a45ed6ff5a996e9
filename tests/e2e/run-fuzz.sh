#!/bin/sh
# run-fuzz.sh - every fuzz target (tests/fuzz/fuzz-*.c) builds and runs
# FUZZ_SECONDS (default 10 here; `make fuzz` runs 60) on its seeds without
# a finding: the seeds stay valid inputs and a regression shows up in the
# ordinary suite, not only when someone runs `make fuzz`.
. "$TOP/tests/e2e/lib.sh"

sh "$TOP/tests/fuzz/run.sh" "${FUZZ_SECONDS:-10}" >"$TMP/fuzz.out" 2>&1
rc=$?
sed 's/^/    /' "$TMP/fuzz.out"
[ $rc = 0 ] || fail "tests/fuzz/run.sh: exit $rc"
grep -q '^[1-9][0-9]* passed, 0 failed$' "$TMP/fuzz.out" || fail "no fuzz target ran"
finish
