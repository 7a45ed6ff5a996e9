#!/bin/sh
# run-serve-memory.sh - `pprof-alloc serve`'s memory stays flat over time
# while the program keeps making new stacks (tests/workloads/service.c
# "stacks": a chain of 20 calls chosen by a counter, a new stack almost
# every loop) past the cap (--max-stacks 500): the rest folds into
# [other], counted in /metrics.  The tracer's VmRSS (/proc) after a warm-up
# must not grow by more than 10% + 2 MiB to the end of MEMORY_SECONDS
# (default 60).
. "$(dirname "$0")/../e2e/lib.sh"
need python3 curl

S=${MEMORY_SECONDS:-60}
# under ASan, freed memory waits in a quarantine that grows RSS by design
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1"
WARM=$((S / 4))
# the service at full speed (tests/workloads/service.c): as many new stacks
# as it can make
SERVICE_BATCH=4096
export SERVICE_BATCH
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$WORKLOADS/service" "$((S + 5))" 2 stacks >"$TMP/svc.out" 2>&1 &
svc=$!
trap 'kill -9 $svc $srv 2>/dev/null; rm -rf "$TMP"' EXIT
i=0
until grep -q ready "$TMP/svc.out" || [ $i -ge 100 ]; do sleep 0.05; i=$((i + 1)); done
"$TRACER" serve -q --pid $svc --listen "127.0.0.1:$port" --max-stacks 500 --rate 65536 2>"$TMP/srv.err" &
srv=$!
rss() { awk '/^VmRSS:/ { print $2 }' /proc/$srv/status; }
sleep "$WARM"
curl -s -o /dev/null "http://127.0.0.1:$port/debug/pprof/heap"
warm=$(rss)
t=$WARM
: >"$TMP/rss"
while [ $t -lt "$S" ]; do
	sleep 5; t=$((t + 5))
	curl -s -o /dev/null "http://127.0.0.1:$port/debug/pprof/heap"
	echo "$t $(rss)" >>"$TMP/rss"
done
end=$(rss)
curl -s "http://127.0.0.1:$port/metrics" >"$TMP/metrics"
kill -TERM $srv; wait $srv
rc=$?
kill -TERM $svc; wait $svc
stacks=$(awk '$1 == "pprof_alloc_serve_stacks" { print $2 }' "$TMP/metrics")
folded=$(awk '$1 == "pprof_alloc_serve_folded_samples_total" { print $2 }' "$TMP/metrics")
samples=$(awk '$1 == "pprof_alloc_serve_samples_total" { print $2 }' "$TMP/metrics")
note "VmRSS after ${WARM} s: $warm KiB; then $(awk '{ printf "%s s %s KiB, ", $1, $2 }' "$TMP/rss")"
note "$samples samples, $stacks stacks kept, $folded samples folded into [other]"
[ "$rc" = 0 ] || check_failed "serve exited $rc"
[ "${stacks%.*}" -le 501 ] || check_failed "$stacks stacks kept with --max-stacks 500"
awk -v f="$folded" -v s="$samples" 'BEGIN { exit !(f > 0 && f < s) }' ||
	check_failed "folded $folded of $samples samples: the cap did not act"
[ "$end" -le $((warm * 110 / 100 + 2048)) ] ||
	check_failed "VmRSS grew from $warm KiB to $end KiB after the warm-up"
finish
