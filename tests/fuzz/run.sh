#!/bin/sh
# tests/fuzz/run.sh [SECONDS] - build every tests/fuzz/fuzz-NAME.c with
# clang's libFuzzer, ASan and UBSan, and run each for SECONDS (default
# $FUZZ_SECONDS, else 60) on its seed corpus tests/fuzz/NAME/.
#
# The tracer's library is built for it in build-fuzz/ (make B=build-fuzz
# CC=clang SANITIZE=fuzzer-no-link,address,undefined), so the code under
# test is instrumented for coverage.  The corpus grows in
# build-fuzz/corpus/NAME (the seeds in the tree are never written to); a
# finding is saved as build-fuzz/crash-NAME-* and fails the run - turn it
# into a seed (a regression test) once fixed.  Ends with "N passed, N
# failed" and exits non-zero on any failure.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
SECONDS_EACH=${1:-${FUZZ_SECONDS:-60}}
FB="$TOP/build-fuzz"
SAN=fuzzer-no-link,address,undefined
passed=0 failed=0

case "$SECONDS_EACH" in ''|*[!0-9]*) echo "fuzz: SECONDS must be a number" >&2; exit 2 ;; esac
command -v clang >/dev/null 2>&1 || { echo "fuzz: clang is not installed (contrib/install-deps.sh --fuzz)" >&2; exit 1; }
make -s -j"$(nproc)" -C "$TOP" B=build-fuzz CC=clang SANITIZE=$SAN build-fuzz/libtracer.a ||
	{ echo "fuzz: building the instrumented library failed" >&2; exit 1; }

for src in "$TOP"/tests/fuzz/fuzz-*.c; do
	name=$(basename "$src" .c)
	corpus=${name#fuzz-}
	bin="$FB/fuzz/$name"
	mkdir -p "$FB/fuzz" "$FB/corpus/$corpus"
	if ! clang -std=gnu11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-I"$TOP/include" -I"$TOP" -I"$FB" -I"$FB/proto" \
		"$src" "$FB/libtracer.a" -ldw -lelf -lprotobuf-c -ldeflate -lz -liberty \
		-lpthread -lm -o "$bin"; then
		echo "FAIL $name (build)"
		failed=$((failed + 1))
		continue
	fi
	[ -d "$TOP/tests/fuzz/$corpus" ] || { echo "FAIL $name: no seed corpus tests/fuzz/$corpus/"; failed=$((failed + 1)); continue; }
	log="$FB/$name.log"
	if (cd "$FB" && "$bin" -max_total_time="$SECONDS_EACH" -timeout=10 \
		-rss_limit_mb=2048 -artifact_prefix="$FB/crash-$corpus-" \
		-print_final_stats=1 "$FB/corpus/$corpus" "$TOP/tests/fuzz/$corpus") \
		>"$log" 2>&1; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
		echo "PASS $name (${SECONDS_EACH}s, ${runs:-?} inputs)"
		passed=$((passed + 1))
	else
		echo "FAIL $name; last lines of $log:"
		tail -n 25 "$log" | sed 's/^/    /'
		failed=$((failed + 1))
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
