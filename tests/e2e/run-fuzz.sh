#!/bin/sh
# run-fuzz.sh - every fuzz target (tests/fuzz/fuzz-*.c) replays its seed
# corpus, and what earlier fuzzing found (build-fuzz/corpus/NAME, when
# there is one), without a finding: the seeds stay valid inputs and a
# regression in a parser shows up in the ordinary suite, not only in the
# long runs.  The targets are the build's own (BUILD/tests/fuzz/replay-NAME,
# tests/fuzz/replay.c): in make test's sanitized pass, under ASan and
# UBSan.  Fuzzing for new inputs (clang's libFuzzer, 60 s a target) is
# `make fuzz` and `make check-long` (tests/fuzz/run.sh).
. "$(dirname "$0")/lib.sh"

n=0
for src in "$TOP"/tests/fuzz/fuzz-*.c; do
	name=$(basename "$src" .c)
	corpus=${name#fuzz-}
	bin="$BUILD/tests/fuzz/replay-$corpus"
	[ -x "$bin" ] || { check_failed "$bin is not built (make test-bins)"; continue; }
	[ -d "$TOP/tests/fuzz/$corpus" ] && [ -n "$(ls -A "$TOP/tests/fuzz/$corpus")" ] ||
		{ check_failed "$name has no seed corpus tests/fuzz/$corpus/"; continue; }
	found="$TOP/build-fuzz/corpus/$corpus"
	[ -d "$found" ] || found=
	timeout 300 "$bin" "$TOP/tests/fuzz/$corpus" $found >"$TMP/$corpus.out" 2>&1
	rc=$?
	if [ $rc = 0 ] && grep -q '^replay: [1-9][0-9]* inputs$' "$TMP/$corpus.out"; then
		note "$name: $(sed -n 's/^replay: \([0-9]* inputs\)$/\1/p' "$TMP/$corpus.out")"
		n=$((n + 1))
	else
		tail -n 30 "$TMP/$corpus.out" | sed 's/^/    /'
		grep '^replay: input ' "$TMP/$corpus.out" | tail -n 1 | sed 's/^/    the last /'
		check_failed "$name: exit $rc replaying tests/fuzz/$corpus${found:+ and $found}"
	fi
done
[ $n -gt 0 ] || check_failed "no fuzz target replayed anything"
note "$n targets replayed their corpora"
finish
