#!/bin/sh
# tests/bench.sh BUILD_DIR - agent overhead, as ratios to a bare run.
#
# Runs build/tests/workloads/bench-alloc (2 threads, allocation-heavy) bare,
# under pprof-alloc at the default rate, under pprof-alloc --rate 1, and
# under heaptrack when it is installed.  Runs are interleaved (bare, default,
# rate 1, heaptrack, bare, ...) so drift hits every variant alike, and each
# variant's figure is the median of ROUNDS runs of the workload's own timer.
# Targets (issue 2): default rate <= 1.05x bare, --rate 1 <= 3x bare.
set -eu
B=$(cd "${1:-build}" && pwd)
ROUNDS=${ROUNDS:-7}
THREADS=${THREADS:-2}
OPS=${OPS:-3000000}
W="$B/tests/workloads/bench-alloc"
T="$B/pprof-alloc"
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT

secs() { sed -n 's/^seconds \([0-9.]*\).*/\1/p'; }

run() {
	case "$1" in
	bare)     "$W" "$THREADS" "$OPS" ;;
	default)  "$T" -q -o "$TMP/d.pb.gz" -- "$W" "$THREADS" "$OPS" ;;
	rate1)    "$T" -q --rate 1 -o "$TMP/r.pb.gz" -- "$W" "$THREADS" "$OPS" ;;
	heaptrack) heaptrack -o "$TMP/ht" "$W" "$THREADS" "$OPS" 2>/dev/null ;;
	esac
}

variants="bare default rate1"
command -v heaptrack >/dev/null 2>&1 && variants="$variants heaptrack"
for v in $variants; do : >"$TMP/$v"; done

i=0
while [ $i -lt "$ROUNDS" ]; do
	for v in $variants; do
		s=$(run $v | secs)
		[ -n "$s" ] || { echo "bench: $v run printed no time" >&2; exit 1; }
		echo "$s" >>"$TMP/$v"
	done
	i=$((i + 1))
done

median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
bare=$(median "$TMP/bare")
echo "bench-alloc: $THREADS threads x $OPS ops, median of $ROUNDS interleaved runs"
printf '  %-22s %9s s  %s\n' "bare" "$bare" "1.000x"
for v in $variants; do
	[ "$v" = bare ] && continue
	m=$(median "$TMP/$v")
	case $v in
	default) label="pprof-alloc (default)" ; target="target <= 1.05x" ;;
	rate1)   label="pprof-alloc --rate 1" ; target="target <= 3x" ;;
	heaptrack) label="heaptrack" ; target="peer" ;;
	esac
	printf '  %-22s %9s s  %sx  (%s)\n' "$label" "$m" \
		"$(awk -v a="$m" -v b="$bare" 'BEGIN { printf "%.3f", a / b }')" "$target"
done
