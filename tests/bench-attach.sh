#!/bin/sh
# tests/bench-attach.sh BUILD_DIR - what attaching costs a running service.
#
# bench-mixed runs 9 s in timed mode (2 threads, printing its operation
# count every 100 ms).  At 3 s pprof-alloc --pid attaches for 3 s, then
# detaches.  Reported, as medians over ROUNDS rounds:
#   - time from starting pprof-alloc --pid to its first record
#     (target: within 100 ms), and the longest time the borrowed thread was
#     stopped, attach and detach (target: at most 10 ms) - both as the
#     tracer measured them;
#   - the target's throughput (median of its 100 ms rates) during the
#     attach and after the detach, as ratios to before it (target after:
#     within 2% of before).
# With heaptrack installed, its gdb-based attach (heaptrack -p, stopped
# with SIGINT after 3 s) is measured the same way, once: time to its
# "injection finished", the longest stretch in which the target made no
# progress at all (gdb stops every thread), and throughput during/after.
set -eu
B=$(cd "${1:-build}" && pwd)
ROUNDS=${ROUNDS:-3}
T="$B/pprof-alloc"
W="$B/tests/workloads/bench-mixed"
TMP=$(mktemp -d); trap 'rm -rf "$TMP"; kill $WPID 2>/dev/null || true' EXIT
WPID=

# median rate (ops/s) of the 100 ms intervals whose end lies in [lo, hi) ms
window() {
	awk -v lo="$2" -v hi="$3" '
		NF == 2 && prev_t != "" && $1 >= lo && $1 < hi {
			r[++n] = ($2 - prev_ops) / ($1 - prev_t) * 1000
		}
		NF == 2 { prev_t = $1; prev_ops = $2 }
		END {
			if (!n) { print 0; exit }
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
				if (r[j] < r[i]) { x = r[i]; r[i] = r[j]; r[j] = x }
			print r[int((n + 1) / 2)]
		}' "$1"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

i=0
: >"$TMP/first"; : >"$TMP/stop"; : >"$TMP/during"; : >"$TMP/after"
while [ $i -lt "$ROUNDS" ]; do
	"$W" 2 0 9 >"$TMP/w.out" &
	WPID=$!
	sleep 3
	"$T" --pid "$WPID" --duration 3 -o "$TMP/a.pb.gz" 2>"$TMP/t.err" ||
		{ cat "$TMP/t.err" >&2; exit 1; }
	wait "$WPID"
	WPID=
	first=$(sed -n 's/.*first record \([0-9.-]*\) ms.*/\1/p' "$TMP/t.err")
	first=${first:--1}	# no record at all: a miss, not 0
	stop=$(sed -n 's/.*longest thread stop \([0-9.]*\) ms.*/\1/p' "$TMP/t.err")
	before=$(window "$TMP/w.out" 500 2900)
	during=$(window "$TMP/w.out" 3600 5800)
	after=$(window "$TMP/w.out" 6700 8900)
	echo "$first" >>"$TMP/first"
	echo "$stop" >>"$TMP/stop"
	awk -v a="$during" -v b="$before" 'BEGIN { print a / b }' >>"$TMP/during"
	awk -v a="$after" -v b="$before" 'BEGIN { print a / b }' >>"$TMP/after"
	i=$((i + 1))
done

first=$(median <"$TMP/first")
stop=$(median <"$TMP/stop")
during=$(median <"$TMP/during")
after=$(median <"$TMP/after")
echo "attach to bench-mixed (2 threads), median of $ROUNDS rounds"
awk -v f="$first" -v s="$stop" -v d="$during" -v a="$after" 'BEGIN {
	printf "  first record after      %7.1f ms   %s target <= 100 ms\n", f, (f >= 0 && f <= 100) ? "meets" : "MISSES"
	printf "  longest thread stop     %7.2f ms   %s target <= 10 ms\n", s, s <= 10 ? "meets" : "MISSES"
	printf "  throughput while attached %5.3fx of before\n", d
	d2 = a - 1; if (d2 < 0) d2 = -d2
	printf "  throughput after detach   %5.3fx of before   %s target within 2%%\n", a, d2 <= 0.02 ? "meets" : "MISSES"
}'

command -v heaptrack >/dev/null 2>&1 || exit 0
"$W" 2 0 9 >"$TMP/h.out" &
WPID=$!
sleep 3
start=$(date +%s%N)
# (in $TMP: with -p, heaptrack writes its file to the current directory)
(cd "$TMP" && timeout -s INT 3 heaptrack -p "$WPID" -o "$TMP/ht" 2>&1) |
	while IFS= read -r line; do
		echo "$(( ($(date +%s%N) - start) / 1000000 )) $line"
	done >"$TMP/h.err"
wait "$WPID"
WPID=
inject=$(sed -n 's/^\([0-9]*\) injection finished.*/\1/p' "$TMP/h.err")
stall=$(awk 'NF == 2 { if (p != "" && $2 == po) { run += $1 - p; if (run > max) max = run } else run = 0; p = $1; po = $2 }
	END { printf "%.0f", max }' "$TMP/h.out")
hb=$(window "$TMP/h.out" 500 2900)
hd=$(window "$TMP/h.out" 3600 5800)
ha=$(window "$TMP/h.out" 6700 8900)
echo "heaptrack -p (gdb injection), one round"
awk -v i="${inject:-?}" -v s="$stall" -v d="$hd" -v a="$ha" -v b="$hb" 'BEGIN {
	printf "  injection finished after %7s ms\n", i
	printf "  target made no progress for at least %s ms (all threads stopped; 100 ms resolution)\n", s
	printf "  throughput while attached %5.3fx, after heaptrack exited %5.3fx of before\n", d / b, a / b
}'
