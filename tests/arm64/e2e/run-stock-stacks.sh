#!/bin/sh
# run-stock-stacks.sh - aarch64: whole stacks of stock Debian arm64
# programs, at the default rate and at --rate 1, with every --unwind.
#
# Debian's arm64 python3.11 (building lists and holding bytearrays) and
# sqlite3 (filling an in-memory table and its index), launched.  Each
# profile passes the zoo's measure (zoo_check in tests/e2e/lib.sh): at
# least 95% of the allocated bytes on stacks that reach main or a
# thread's entry, no unnamed frame in a file with a symbol table, and
# python's allocating functions among the biggest leaves (PyMem_Malloc,
# PyList_Append: Debian's arm64 build leaves PyByteArray_Resize's
# allocation to a static function the stripped file does not name);
# sqlite3's leaf is such a function too, so sqlite3Malloc must be on the
# stacks of at least 60% of the allocated bytes (77-79% at the default
# rate, 90% at --rate 1: the shell's own allocations are the rest).  With --unwind dwarf the tracer unwinds the agent's
# stack copies of aarch64 registers with libdwfl, and the profile says
# how many it unwound to the outermost frame: all of them must get there
# or end where frame records take over, and at least 95% of the copies
# must be unwound.  The report of one names the allocating function.
[ -n "${TOP:-}" ] || TOP=$(cd "$(dirname "$0")/../../.." && pwd)
. "$TOP/tests/e2e/lib.sh"
PY=/usr/bin/python3.11
SQLITE=/usr/bin/sqlite3
need go python3 "$PY" "$SQLITE"
[ "$(uname -m)" = aarch64 ] || fail "an aarch64 test, on $(uname -m)"

cat >"$TMP/heap.py" <<'PYEOF'
def blocks(n):
    return [bytearray(100000) for _ in range(n)]
def churn(n):
    return [[str(j) * 10 for j in range(200)] for _ in range(n)]
keep = blocks(100)
work = churn(50)
PYEOF
SQL="create table t(a, b); insert into t select value, hex(randomblob(40)) from generate_series(1, 20000); create index i on t(b); select count(*) from t;"

for unwind in fp auto dwarf; do
	for rate in default 1; do
		r=
		[ $rate = default ] || r="--rate $rate"
		label="$unwind-$rate"
		# shellcheck disable=SC2086
		"$TRACER" $r --unwind $unwind -q -o "$TMP/py-$label.pb.gz" -- \
			"$PY" "$TMP/heap.py" || fail "python3 $label: the tracer failed"
		zoo_check "$TMP/py-$label.pb.gz" "python3 $label" launch \
			PyByteArray_Resize PyMem_Malloc PyList_Append
		# shellcheck disable=SC2086
		"$TRACER" $r --unwind $unwind -q -o "$TMP/sq-$label.pb.gz" -- \
			"$SQLITE" :memory: "$SQL" >"$TMP/sq.out" ||
			fail "sqlite3 $label: the tracer failed"
		[ "$(cat "$TMP/sq.out")" = 20000 ] || check_failed "sqlite3 $label printed $(cat "$TMP/sq.out")"
		zoo_check "$TMP/sq-$label.pb.gz" "sqlite3 $label" launch
		cum=$(go tool pprof -top -cum -sample_index=alloc_space \
			"$TMP/sq-$label.pb.gz" 2>/dev/null |
			awk '$NF == "sqlite3Malloc" { sub(/%/, "", $5); print int($5) }')
		[ "${cum:-0}" -ge 60 ] ||
			check_failed "sqlite3 $label: sqlite3Malloc is on the stacks of ${cum:-0}% of the bytes"
	done
done
# the copies of --unwind dwarf were unwound, not left to frame records
for f in "$TMP/py-dwarf-1.pb.gz" "$TMP/sq-dwarf-1.pb.gz"; do
	line=$(go tool pprof -raw "$f" 2>/dev/null | grep -o 'unwind dwarf: [0-9]* samples with a stack copy: [0-9]* unwound to the outermost frame[^;]*' | head -n 1)
	note "$(basename "$f"): $line"
	copies=$(echo "$line" | sed -n 's/.*: \([0-9]*\) samples with a stack copy.*/\1/p')
	whole=$(echo "$line" | sed -n 's/.*copy: \([0-9]*\) unwound to the outermost.*/\1/p')
	[ -n "$copies" ] && [ "$copies" -gt 0 ] ||
		{ check_failed "$(basename "$f"): no stack copies counted"; continue; }
	[ $((whole * 100)) -ge $((copies * 95)) ] ||
		check_failed "$(basename "$f"): $whole of $copies copies unwound to the outermost frame"
done
# the report of one: the page is written and holds the profile's data
"$TRACER" report "$TMP/sq-auto-1.pb.gz" -o "$TMP/sq.html" ||
	check_failed "report: the tracer failed"
grep -q sqlite3Malloc "$TMP/sq.html" ||
	check_failed "report: the page does not name sqlite3Malloc"
finish
