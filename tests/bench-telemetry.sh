#!/bin/sh
# tests/bench-telemetry.sh BUILD_DIR - what the readings cost the tracer.
#
# The readings (smaps_rollup, status, the cgroup's files, the agent's
# allocator statistics, one JSON line) are meant to run at --interval 1
# for hours: the target is the tracer's own CPU for them under 1% of one
# core.  Measured on a target holding MB MiB of touched heap (default 200:
# smaps_rollup's cost grows with the resident pages), attached with --pid
# for SECONDS (default 10) each time, interleaved, ROUNDS times (default
# 3):
#
#   baseline   --no-readings          (draining the ring, nothing else)
#   every 1 s  --interval 1
#   every 0.1 s --interval 0.1        (ten times the readings, to see the
#                                      cost per reading above the noise)
#
# The tracer's CPU (user + system, from the kernel's accounting of the
# finished child) is taken per run; the readings' share is the difference
# from the baseline of the same round, as a percentage of one core over
# the run, and per reading.  A missed target is printed, not an error.
set -eu
B=$(cd "${1:-build}" && pwd)
ROUNDS=${ROUNDS:-3}
SECONDS_EACH=${SECONDS_EACH:-10}
MB=${MB:-200}
T="$B/pprof-alloc"
W="$B/tests/workloads/telemetry"
TMP=$(mktemp -d)
target=
trap '[ -n "$target" ] && kill "$target" 2>/dev/null; rm -rf "$TMP"' EXIT
[ -x "$W" ] || { echo "bench-telemetry: $W is missing (make B=$B $W)" >&2; exit 1; }

"$W" hold "$MB" 100000 >"$TMP/w.out" &
target=$!
i=0
until grep -q ready "$TMP/w.out" 2>/dev/null; do
	i=$((i + 1)); [ $i -lt 500 ] || { echo "bench-telemetry: workload not ready" >&2; exit 1; }
	sleep 0.02
done

cpu_of() {	# ARGS...: run the tracer, print its CPU seconds (user + sys)
	python3 -c '
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
if r.returncode:
    sys.stderr.write(r.stderr.decode()); sys.exit(1)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.4f" % (u.ru_utime + u.ru_stime))' "$@"
}

: >"$TMP/base"; : >"$TMP/one"; : >"$TMP/tenth"
r=1
while [ $r -le "$ROUNDS" ]; do
	cpu_of "$T" -q --pid "$target" --duration "$SECONDS_EACH" --no-readings -o "$TMP/a.pb.gz" >>"$TMP/base"
	cpu_of "$T" -q --pid "$target" --duration "$SECONDS_EACH" --interval 1 -o "$TMP/b.pb.gz" >>"$TMP/one"
	cpu_of "$T" -q --pid "$target" --duration "$SECONDS_EACH" --interval 0.1 -o "$TMP/c.pb.gz" >>"$TMP/tenth"
	r=$((r + 1))
done
rss=$(awk '/^VmRSS/ { print $2 / 1024 }' "/proc/$target/status")
lines_one=$(wc -l <"$TMP/b.timeline.jsonl")
lines_tenth=$(wc -l <"$TMP/c.timeline.jsonl")
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
base=$(median <"$TMP/base")
d1=$(paste "$TMP/base" "$TMP/one" | awk '{ printf "%.4f\n", $2 - $1 }' | median)
d10=$(paste "$TMP/base" "$TMP/tenth" | awk '{ printf "%.4f\n", $2 - $1 }' | median)
awk -v s="$SECONDS_EACH" -v rss="$rss" -v n="$ROUNDS" -v b="$base" \
	-v m1="$d1" -v m10="$d10" -v n1="$lines_one" -v n10="$lines_tenth" 'BEGIN {
	printf "readings on a target with %.0f MiB resident, %d s attached each, %d rounds (tracer CPU, median)\n", rss, s, n
	printf "  baseline (--no-readings)       %.3f s of CPU in %d s\n", b, s
	printf "  --interval 1   (%2d readings)   %+.4f s: %.3f%% of one core\n", n1, m1, m1 / s * 100
	printf "  --interval 0.1 (%3d readings)  %+.4f s: %.3f ms per reading\n", n10, m10, m10 / n10 * 1000
	pct = m10 / n10 * 100	# one reading a second, from the amplified run
	printf "  one reading a second costs %.3f%% of one core: %s target < 1%%\n", pct, pct < 1 ? "meets" : "MISSES"
}'
