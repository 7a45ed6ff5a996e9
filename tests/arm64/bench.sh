#!/bin/sh
# tests/arm64/bench.sh BUILD_DIR - inside the emulated aarch64 machine
# (`make bench-arm64`): what pprof-alloc costs there, as ratios against a
# bare run in the same machine.  EMULATED: qemu's TCG translates every
# instruction, so the ratios say how the agent's paths compare with the
# program's own on aarch64 code, not what real Arm hardware would time.
#
# Rows: tight-churn (1 thread, malloc+free of 16..256 bytes, its own loop
# timer), stock sqlite3 (an in-memory insert and index) and stock python3
# (dicts of strings), the last two timed from exec to exit by
# tests/tools/span.  Variants: bare, the default rate, --unwind fp and
# --rate 1, interleaved ROUNDS times (default 3); a cell is the median's
# ratio to bare's median, then the lowest and highest per-round ratios.
# A run that fails, or prints another checksum than bare's, fails the
# bench (exit 1) after every row has printed.
set -u
B=$(cd "${1:-build/arm64/out}" && pwd)
ROUNDS=${ROUNDS:-3}
T="$B/pprof-alloc"
SPAN="$B/tests/tools/span"
W="$B/tests/workloads/tight-churn"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
bad=0

for need in "$T" "$SPAN" "$W" /usr/bin/sqlite3 /usr/bin/python3; do
	[ -x "$need" ] || { echo "bench-arm64: $need is missing" >&2; exit 1; }
done
cat >"$TMP/dicts.py" <<'EOF'
d = {}
for i in range(60000):
    d[str(i) * 3] = [str(i)] * 3
print(sum(len(k) for k in sorted(d)))
EOF
SQL="create table t(a, b); insert into t select value, hex(randomblob(20)) from generate_series(1, 60000); create index i on t(b); select count(*) from t;"

# span's file, which its watcher writes shortly after the program's exit
span_s() {
	_n=0
	while [ ! -s "$TMP/span" ] && [ $_n -lt 600 ]; do sleep 0.05; _n=$((_n + 1)); done
	cat "$TMP/span"
}

# one VARIANT ROW: "seconds checksum" on stdout, or nothing if it failed
one() {
	rm -f "$TMP/span"
	case $1 in
	bare) pre= ;;
	default) pre="$T -q -o $TMP/p.pb.gz --" ;;
	fp) pre="$T -q --unwind fp -o $TMP/p.pb.gz --" ;;
	rate1) pre="$T -q --rate 1 -o $TMP/p.pb.gz --" ;;
	esac
	case $2 in
	churn)
		# shellcheck disable=SC2086
		$pre "$W" 1 2000000 2>/dev/null |
			awk '/^seconds/ { print $2, $6 }' ;;
	sqlite)
		# shellcheck disable=SC2086
		$pre "$SPAN" "$TMP/span" /usr/bin/sqlite3 :memory: "$SQL" >"$TMP/out" 2>/dev/null &&
			echo "$(span_s) $(cat "$TMP/out")" ;;
	python)
		# shellcheck disable=SC2086
		$pre "$SPAN" "$TMP/span" /usr/bin/python3 "$TMP/dicts.py" >"$TMP/out" 2>/dev/null &&
			echo "$(span_s) $(cat "$TMP/out")" ;;
	esac
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "bench-arm64: EMULATED (qemu TCG, $(nproc) CPUs): ratios to bare in the same machine, medians of $ROUNDS interleaved rounds (lowest-highest)"
for row in churn sqlite python; do
	: >"$TMP/bare"
	for v in default fp rate1; do : >"$TMP/$v"; : >"$TMP/$v.r"; done
	r=0
	while [ $r -lt "$ROUNDS" ]; do
		# shellcheck disable=SC2046
		set -- $(one bare $row)
		[ $# -ge 2 ] || { echo "bench-arm64: $row bare failed" >&2; bad=1; break; }
		b=$1 sum=$2
		echo "$b" >>"$TMP/bare"
		for v in default fp rate1; do
			# shellcheck disable=SC2046
			set -- $(one $v $row)
			if [ $# -lt 2 ] || [ "$2" != "$sum" ]; then
				echo "bench-arm64: $row $v failed (or printed ${2:-nothing}, bare $sum)" >&2
				bad=1
				continue
			fi
			echo "$1" >>"$TMP/$v"
			awk -v a="$1" -v b="$b" 'BEGIN { printf "%.3f\n", a / b }' >>"$TMP/$v.r"
		done
		r=$((r + 1))
	done
	[ -s "$TMP/bare" ] || continue
	mb=$(median <"$TMP/bare")
	line=$(printf '%-7s bare %.3f s' "$row" "$mb")
	for v in default fp rate1; do
		if [ -s "$TMP/$v" ]; then
			line="$line; $v $(awk -v a="$(median <"$TMP/$v")" -v b="$mb" \
				-v l="$(sort -g "$TMP/$v.r" | head -n 1)" \
				-v h="$(sort -g "$TMP/$v.r" | tail -n 1)" \
				'BEGIN { printf "%.2fx (%.2f-%.2f)", a / b, l, h }')"
		else
			line="$line; $v failed"
		fi
	done
	echo "$line"
done
exit $bad
