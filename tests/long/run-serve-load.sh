#!/bin/sh
# run-serve-load.sh - 50 clients fetching profiles and metrics from
# `pprof-alloc serve` for LOAD_SECONDS (default 30) while the program
# churns: no request may fail.  The program's throughput (loops done) is
# reported beside a bare run of the same length, run first.
. "$(dirname "$0")/../e2e/lib.sh"
need python3 curl

S=${LOAD_SECONDS:-30}
CLIENTS=${LOAD_CLIENTS:-50}
SVC="$WORKLOADS/service"
# the service at full speed (tests/workloads/service.c): its throughput is
# the measure
SERVICE_BATCH=4096
export SERVICE_BATCH

"$SVC" "$S" 2 >"$TMP/bare.out" 2>&1 || fail "the bare run failed"
bare=$(sed -n 's/^ops //p' "$TMP/bare.out")

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$SVC" "$S" 2 >"$TMP/svc.out" 2>&1 &
svc=$!
trap 'kill -9 $svc $srv 2>/dev/null; rm -rf "$TMP"' EXIT
i=0
until grep -q ready "$TMP/svc.out" || [ $i -ge 100 ]; do sleep 0.05; i=$((i + 1)); done
"$TRACER" serve -q --pid $svc --listen "127.0.0.1:$port" 2>"$TMP/srv.err" &
srv=$!
i=0
until [ "$(curl -s "http://127.0.0.1:$port/healthz" 2>/dev/null)" = ok ]; do
	kill -0 $srv 2>/dev/null && [ $i -lt 200 ] || { cat "$TMP/srv.err" >&2; fail "serve did not start"; }
	sleep 0.05; i=$((i + 1))
done

python3 - "$port" "$CLIENTS" "$((S - 2))" >"$TMP/load.out" 2>&1 <<'PY'
import sys, threading, time, urllib.request, gzip
port, clients, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
paths = ["/debug/pprof/heap", "/debug/pprof/allocs", "/metrics", "/debug/pprof/heap"]
ok = [0] * clients
bad = []
end = time.time() + seconds
def run(k):
    n = 0
    while time.time() < end:
        path = paths[n % len(paths)]
        n += 1
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=30) as r:
                body = r.read()
                if r.status != 200 or not body:
                    raise Exception("status %d, %d bytes" % (r.status, len(body)))
                if path != "/metrics":
                    gzip.decompress(body)
            ok[k] += 1
        except Exception as e:
            bad.append("%s: %s" % (path, e))
threads = [threading.Thread(target=run, args=(k,)) for k in range(clients)]
for t in threads: t.start()
for t in threads: t.join()
print("requests", sum(ok), "failed", len(bad))
for b in bad[:10]: print("  ", b)
PY
wait $svc
served=$(sed -n 's/^ops //p' "$TMP/svc.out")
kill -TERM $srv
wait $srv
rc=$?
cat "$TMP/load.out" | sed 's/^/    /'
req=$(sed -n 's/^requests \([0-9]*\) failed.*/\1/p' "$TMP/load.out")
failed=$(sed -n 's/^requests [0-9]* failed \([0-9]*\)/\1/p' "$TMP/load.out")
note "$CLIENTS clients, ${S} s: $req requests, $failed failed; program throughput $served loops against $bare bare ($(awk -v a="$served" -v b="$bare" 'BEGIN { printf "%.3f", a / b }')x)"
[ "$failed" = 0 ] || check_failed "$failed requests failed"
[ "${req:-0}" -gt "$CLIENTS" ] || check_failed "only $req requests"
[ -n "$served" ] && [ "$served" -gt 0 ] || check_failed "the program printed no throughput"
[ $rc = 0 ] || check_failed "serve exited $rc"
finish
