#!/bin/sh
# run-fuzz.sh - every fuzz target (tests/fuzz/fuzz-*.c) builds, replays
# its corpus (the seeds in the tree and what earlier runs found) and fuzzes
# on for FUZZ_SECONDS (default 1 here; `make fuzz` and `make check-long`
# run 60 each) without a finding: the seeds stay valid inputs and a
# regression shows up in the ordinary suite, not only in the long runs.
. "$TOP/tests/e2e/lib.sh"

sh "$TOP/tests/fuzz/run.sh" "${FUZZ_SECONDS:-1}" >"$TMP/fuzz.out" 2>&1
rc=$?
sed 's/^/    /' "$TMP/fuzz.out"
[ $rc = 0 ] || fail "tests/fuzz/run.sh: exit $rc"
grep -q '^[1-9][0-9]* passed, 0 failed$' "$TMP/fuzz.out" || fail "no fuzz target ran"
finish
