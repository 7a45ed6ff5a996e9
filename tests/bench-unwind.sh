#!/bin/sh
# tests/bench-unwind.sh BUILD_DIR - what the agent's unwind tables cost
# (the targets of issue 20), as ratios to a bare run in the same run.
#
#   - the tables and the walk (tests/tools/unwind-bench): each module's
#     table as the agent builds it (rows, KiB, ms), and the cost per frame
#     of the walk by the tables against the frame-pointer walk;
#   - python3's start-up (`python3 -c pass`, 21 runs each): bare, with the
#     agent preloaded alone at the default --unwind auto (its first samples
#     build the tables), and at fp;
#   - stock sqlite3 (a 200,000-row insert and index, timed by its own
#     .timer) and python3 (lists and bytearrays, timed by the script),
#     launched bare, under the tracer at the default rate with auto and
#     with fp, and at --rate 1 with each: the ratios to bare, the samples,
#     the stack copies (none, with auto), and the cost per sample at
#     --rate 1 over bare.  Target: the default rate within 1.05x bare;
#   - bench-mixed at --rate 1, built without frame pointers and walked by
#     the tables against built with them and walked by frame pointers: the
#     cost per sample over each one's bare run.
#
# Runs are interleaved, each figure the median of ROUNDS (default 5).
set -eu
B=$(cd "${1:-build}" && pwd)
ROUNDS=${ROUNDS:-5}
T="$B/pprof-alloc"
PY=/usr/bin/python3.11
SQLITE=/usr/bin/sqlite3
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
LIBS=/usr/lib/x86_64-linux-gnu

echo "unwind tables (tests/tools/unwind-bench):"
"$B/tests/tools/unwind-bench" "$LIBS/libsqlite3.so.0" \
	"$LIBS/libpython3.11.so.1.0" "$LIBS/libstdc++.so.6"

# --- python3's start-up
for v in bare auto fp; do : >"$TMP/start.$v"; done
i=0
while [ $i -lt 21 ]; do
	for v in bare auto fp; do
		t0=$(date +%s%N)
		case $v in
		bare)	"$PY" -c pass ;;
		*)	PPROF_ALLOC_UNWIND=$v LD_PRELOAD="$B/libpprof-alloc.so" "$PY" -c pass ;;
		esac
		echo $(( ($(date +%s%N) - t0) / 1000 )) >>"$TMP/start.$v"
	done
	i=$((i + 1))
done
bare=$(median "$TMP/start.bare")
echo "python3 -c pass: median of 21 interleaved runs (wall, us)"
for v in bare auto fp; do
	m=$(median "$TMP/start.$v")
	printf '  %-32s %7s us  %sx\n' \
		"$([ $v = bare ] && echo bare || echo "agent preloaded, --unwind $v")" \
		"$m" "$(awk -v a="$m" -v b="$bare" 'BEGIN { printf "%.3f", a / b }')"
done

# --- stock programs, by their own timers
cat >"$TMP/work.py" <<'EOF'
import time
t = time.perf_counter()
keep = []
for i in range(200):
    keep.append([str(j) * 10 for j in range(20000)])
    keep.append(bytearray(100000))
    if len(keep) > 20:
        keep.pop(0)
print("seconds %.4f" % (time.perf_counter() - t))
EOF
SQL="create table t(a text, b int);
with recursive c(x) as (select 1 union all select x + 1 from c where x < 200000)
  insert into t select hex(randomblob(40)), x from c;
create index i on t(a);"
printf '.timer on\n%s\n' "$SQL" >"$TMP/work.sql"

# run PROGRAM VARIANT: its seconds on stdout; the profile in $TMP/p.pb.gz
run() {
	prog=$1 v=$2
	case $prog in
	python3) set -- "$PY" "$TMP/work.py" ;;
	sqlite3) set -- "$SQLITE" :memory: ;;	# .timer times stdin only
	esac
	case $v in
	bare)		"$@" ;;
	auto)		"$T" -q -o "$TMP/p.pb.gz" -- "$@" ;;
	fp)		"$T" -q --unwind fp -o "$TMP/p.pb.gz" -- "$@" ;;
	rate1-auto)	"$T" -q --rate 1 -o "$TMP/p.pb.gz" -- "$@" ;;
	rate1-fp)	"$T" -q --rate 1 --unwind fp -o "$TMP/p.pb.gz" -- "$@" ;;
	esac <"$TMP/work.sql" | case $prog in
	sqlite3) awk '/^Run Time: real/ { s += $4 } END { printf "%.4f\n", s }' ;;
	*)	 sed -n 's/^seconds \([0-9.]*\)$/\1/p' ;;
	esac
}
# comment PATTERN: the number a profile comment gives (sed capture)
comment() {
	go tool pprof -comments "$TMP/p.pb.gz" 2>/dev/null | sed -n "$1" | head -n 1
}

variants="bare auto fp rate1-auto rate1-fp"
for prog in sqlite3 python3; do
	for v in $variants; do : >"$TMP/$prog.$v"; done
	i=0
	while [ $i -lt "$ROUNDS" ]; do
		for v in $variants; do
			s=$(run $prog $v)
			[ -n "$s" ] || { echo "bench-unwind: $prog under $v printed no time" >&2; exit 1; }
			echo "$s" >>"$TMP/$prog.$v"
			[ $v = bare ] && continue
			comment 's/^sampling rate .* \([0-9]*\) samples taken by the agent.*/\1/p' >"$TMP/$prog.$v.samples"
			comment 's/^unwind [a-z]*: \([0-9]*\) samples with a stack copy.*/\1/p' >"$TMP/$prog.$v.copies"
		done
		i=$((i + 1))
	done
	bare=$(median "$TMP/$prog.bare")
	echo "stock $prog: median of $ROUNDS interleaved runs (its own timer)"
	printf '  %-22s %8s s  %s\n' bare "$bare" 1.000x
	for v in $variants; do
		[ $v = bare ] && continue
		m=$(median "$TMP/$prog.$v")
		samples=$(cat "$TMP/$prog.$v.samples")
		copies=$(cat "$TMP/$prog.$v.copies")
		ratio=$(awk -v a="$m" -v b="$bare" 'BEGIN { printf "%.3f", a / b }')
		extra=
		case $v in
		auto)	extra=$(awk -v r="$ratio" 'BEGIN { print (r <= 1.05) ? "(target <= 1.05x: met)" : "(target <= 1.05x: MISSED)" }') ;;
		rate1-*) extra=$(awk -v a="$m" -v b="$bare" -v n="${samples:-0}" \
			'BEGIN { if (n > 0) printf "%.2f us a sample over bare", (a - b) * 1e6 / n }') ;;
		esac
		printf '  %-22s %8s s  %sx  %s samples, %s stack copies  %s\n' \
			"${v}" "$m" "$ratio" "${samples:-?}" "${copies:-0}" "$extra"
	done
done

# --- --rate 1, per sample: the tables on bench-mixed built without frame
# pointers (nofp-bench-mixed, --unwind auto) against the frame-pointer walk
# on bench-mixed built with them (--unwind fp); each over its own bare run
W="$B/tests/workloads"
for v in fp-bare fp-rate1 nofp-bare nofp-rate1; do : >"$TMP/m.$v"; done
i=0
while [ $i -lt "$ROUNDS" ]; do
	for v in fp-bare fp-rate1 nofp-bare nofp-rate1; do
		case $v in
		fp-bare)	"$W/bench-mixed" 2 ;;
		fp-rate1)	"$T" -q --rate 1 --unwind fp -o "$TMP/p.pb.gz" -- "$W/bench-mixed" 2 ;;
		nofp-bare)	"$W/nofp-bench-mixed" 2 ;;
		nofp-rate1)	"$T" -q --rate 1 -o "$TMP/p.pb.gz" -- "$W/nofp-bench-mixed" 2 ;;
		esac | sed -n 's/^seconds \([0-9.]*\).*/\1/p' >>"$TMP/m.$v"
		case $v in
		*rate1) comment 's/^sampling rate .* \([0-9]*\) samples taken by the agent.*/\1/p' >"$TMP/m.$v.samples" ;;
		esac
	done
	i=$((i + 1))
done
echo "bench-mixed 2 at --rate 1: median of $ROUNDS interleaved runs (its own timer)"
for b in fp nofp; do
	bare=$(median "$TMP/m.$b-bare")
	m=$(median "$TMP/m.$b-rate1")
	n=$(cat "$TMP/m.$b-rate1.samples")
	case $b in
	fp)	label="frame pointers, --unwind fp" ;;
	nofp)	label="no frame pointers, tables" ;;
	esac
	printf '  %-30s bare %s s, --rate 1 %s s: %s samples, %s us a sample over bare\n' \
		"$label" "$bare" "$m" "${n:-?}" \
		"$(awk -v a="$m" -v b="$bare" -v n="${n:-0}" 'BEGIN { if (n > 0) printf "%.3f", (a - b) * 1e6 / n; else print "?" }')"
done
