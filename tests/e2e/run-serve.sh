#!/bin/sh
# run-serve.sh - `pprof-alloc serve` on a running program (tests/workloads/
# service.c): go tool pprof reads /debug/pprof/heap and /allocs (and a
# ?seconds delta) over HTTP and finds the program's sites; /metrics passes
# promtool, has the version (the file VERSION's) in pprof_alloc_build_info,
# and a real Prometheus server, started here on loopback with a
# 1 s scrape interval, has the series (read back through its query API);
# wrong paths, methods and query values get 404/405/400, and so does a NUL
# in the request target, escaped or raw; a huge header and a client that
# never finishes its request do not stop others; --every
# writes files and keeps --keep; the systemd unit's command line (--pid-file)
# works, and a PID file naming no process is refused saying so; when the
# program exits the final profile is still served and /metrics says it is
# gone; SIGTERM detaches and the program runs on.
. "$(dirname "$0")/lib.sh"

need go curl promtool prometheus python3
SVC="$WORKLOADS/service"
# nothing of ours outlives the test, whatever fails
bg=""
cleanup() { for p in $bg; do kill -9 "$p" 2>/dev/null; done; rm -rf "$TMP"; }
trap cleanup EXIT

# start_service NAME SECONDS [ARGS]: the program, its pid in $svc (it
# lives SECONDS, longer on a slower machine, where the test takes longer)
start_service() {
	"$SVC" $(($2 * TIME_SCALE)) 2 ${3:-} >"$TMP/$1.out" 2>&1 &
	svc=$!
	bg="$bg $svc"
	i=0
	until grep -q ready "$TMP/$1.out" || [ $i -ge 100 ]; do sleep 0.05; i=$((i + 1)); done
}
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# start_serve NAME ARGS...: serve on a free port; $srv its pid, $port, $URL
start_serve() {
	_n=$1; shift
	port=$(free_port)
	URL="http://127.0.0.1:$port"
	"$TRACER" serve --listen "127.0.0.1:$port" "$@" >"$TMP/$_n.srv.out" 2>"$TMP/$_n.srv.err" &
	srv=$!
	bg="$bg $srv"
	i=0
	until [ "$(curl -s "$URL/healthz" 2>/dev/null)" = ok ]; do
		kill -0 $srv 2>/dev/null && [ $i -lt 200 ] ||
			{ cat "$TMP/$_n.srv.err" >&2; fail "$_n: serve did not start"; }
		sleep 0.05; i=$((i + 1))
	done
}
code_of() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
top_of() {	# URL [pprof options]: go tool pprof -top, functions only
	_u=$1; shift
	go tool pprof -top "$@" "$_u" 2>"$TMP/pprof.err" | awk 'f { print $NF } /flat%/ { f = 1 }'
}

# --- the endpoints
start_service main 60
start_serve main --pid "$svc"
[ "$(curl -s "$URL/healthz")" = ok ] || check_failed "/healthz did not say ok"
sleep 1
top_of "$URL/debug/pprof/allocs" -sample_index=alloc_space >"$TMP/allocs.top"
grep -qx site_request "$TMP/allocs.top" && grep -qx site_cache "$TMP/allocs.top" ||
	check_failed "allocs: go tool pprof -top shows $(tr '\n' ' ' <"$TMP/allocs.top"), want site_request and site_cache ($(cat "$TMP/pprof.err"))"
top_of "$URL/debug/pprof/heap" >"$TMP/heap.top"
head -n 1 "$TMP/heap.top" | grep -qx site_cache ||
	check_failed "heap: the top in-use site is '$(head -n 1 "$TMP/heap.top")', want site_cache"
hdr=$(curl -s -D - -o "$TMP/h.pb.gz" "$URL/debug/pprof/heap" | tr -d '\r')
echo "$hdr" | grep -qi '^content-type: application/octet-stream' ||
	check_failed "heap: wrong Content-Type: $hdr"
gzip -t "$TMP/h.pb.gz" || check_failed "heap: not gzip"
go tool pprof -raw "$TMP/h.pb.gz" >/dev/null 2>&1 || check_failed "heap: go tool pprof cannot read it"
# a delta: what was allocated in the next 2 s only
t0=$(date +%s.%N)
curl -s -o "$TMP/d.pb.gz" "$URL/debug/pprof/allocs?seconds=2" || check_failed "allocs?seconds=2 failed"
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
curl -s -o "$TMP/c.pb.gz" "$URL/debug/pprof/allocs"
d=$(pprof_sum "$TMP/d.pb.gz" | value site_request 2)
c=$(pprof_sum "$TMP/c.pb.gz" | value site_request 2)
note "delta over 2 s: site_request $d bytes (cumulative $c), took $took s"
awk -v t="$took" 'BEGIN { exit !(t >= 1.9 && t < 10) }' || check_failed "allocs?seconds=2 took $took s"
awk -v d="$d" -v c="$c" 'BEGIN { exit !(d > 0 && d < c) }' ||
	check_failed "delta site_request $d not between 0 and the cumulative $c"

# --- /metrics: valid exposition, the readings and serve's own
curl -s "$URL/metrics" >"$TMP/metrics.txt"
promtool check metrics <"$TMP/metrics.txt" >"$TMP/promtool.out" 2>&1 ||
	{ cat "$TMP/promtool.out" >&2; check_failed "promtool check metrics failed"; }
for m in 'pprof_alloc_target_up 1' 'pprof_alloc_process_status_bytes{key="VmRSS"}' \
	 'pprof_alloc_serve_samples_total' 'pprof_alloc_agent_calls_total{hook="malloc"}'; do
	grep -qF "$m" "$TMP/metrics.txt" || check_failed "/metrics has no '$m'"
done
# the version, the file VERSION's, as a build-info gauge
v=$(cat "$TOP/VERSION")
grep -q '^# HELP pprof_alloc_build_info .' "$TMP/metrics.txt" ||
	check_failed "/metrics has no HELP line for pprof_alloc_build_info"
for m in '# TYPE pprof_alloc_build_info gauge' "pprof_alloc_build_info{version=\"$v\"} 1"; do
	grep -qxF "$m" "$TMP/metrics.txt" || check_failed "/metrics has no line '$m'"
done

# --- a real Prometheus scrapes it
pport=$(free_port)
cat >"$TMP/prom.yml" <<EOF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: pprof-alloc
    static_configs:
      - targets: ['127.0.0.1:$port']
EOF
prometheus --config.file="$TMP/prom.yml" --storage.tsdb.path="$TMP/prom-data" \
	--web.listen-address="127.0.0.1:$pport" >"$TMP/prom.log" 2>&1 &
prom=$!
bg="$bg $prom"
got=
i=0
while [ $i -lt 40 ]; do
	sleep 0.5
	got=$(curl -s "http://127.0.0.1:$pport/api/v1/query?query=pprof_alloc_serve_samples_total" |
		python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "")' 2>/dev/null)
	[ -n "$got" ] && break
	i=$((i + 1))
done
up=$(curl -s "http://127.0.0.1:$pport/api/v1/query?query=pprof_alloc_target_up" |
	python3 -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")' 2>/dev/null)
note "prometheus: pprof_alloc_serve_samples_total = $got, pprof_alloc_target_up = $up"
[ -n "$got" ] && [ "${got%%.*}" -gt 0 ] && [ "$up" = 1 ] ||
	{ tail -5 "$TMP/prom.log" >&2; check_failed "Prometheus did not scrape the series"; }
kill $prom; wait $prom 2>/dev/null

# --- what is not served
[ "$(code_of "$URL/nothing")" = 404 ] || check_failed "/nothing is not a 404"
[ "$(code_of "$URL/debug/pprof/heap/../../etc/passwd")" = 404 ] || check_failed "a path with .. is not a 404"
[ "$(code_of -X POST "$URL/debug/pprof/heap")" = 405 ] || check_failed "POST is not a 405"
[ "$(code_of -X DELETE "$URL/metrics")" = 405 ] || check_failed "DELETE is not a 405"
for q in seconds=abc seconds=-1 seconds=99999 'seconds=1%2e5'; do
	[ "$(code_of "$URL/debug/pprof/allocs?$q")" = 400 ] || check_failed "?$q is not a 400"
done
[ "$(code_of -I "$URL/debug/pprof/heap")" = 200 ] || check_failed "HEAD is not a 200"
# a NUL in the target, escaped (libmicrohttpd would hand the route a C
# string cut short at it: /healthz), a malformed escape, and query
# parameters the profiles do not take
for u in '/healthz%00/x' '/healthz%00' '/metrics%00.txt' '/debug/pprof/heap?seconds=%00' \
	 '/debug/pprof/allocs?seconds=1%00' '/debug/pprof/heap?seconds=%001' \
	 '/debug/pprof/heap?seconds%00=1' '/healthz?x=%00' '/healthz%zz' '/healthz%4' \
	 '/debug/pprof/heap?seconds' '/debug/pprof/heap?seconds=1&seconds=1' \
	 '/debug/pprof/heap?debug=1'; do
	c=$(code_of "$URL$u")
	[ "$c" = 400 ] || check_failed "$u got $c, want 400"
done
# ... and what is still fine: an escape of a plain character, an empty
# seconds, a query on the other routes
for u in '/heal%74hz' '/debug/pprof/heap?seconds=' '/debug/pprof/allocs?seconds=0' \
	 '/metrics?x=1' '/healthz?'; do
	c=$(code_of "$URL$u")
	[ "$c" = 200 ] || check_failed "$u got $c, want 200"
done
# a raw NUL byte in the target, which curl cannot send
python3 - "$port" >"$TMP/nul.out" 2>&1 <<'EOF'
import socket, sys
for target in (b"/healthz\0/x", b"/healthz\0", b"/healthz\0HTTP/1.1", b"/metrics?\0",
               b"/debug/pprof/heap?seconds=1\0x", b"/healthz"):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
    s.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    reply = b""
    while b"\r\n" not in reply:
        d = s.recv(4096)
        if not d:
            break
        reply += d
    s.close()
    status = reply.split(b" ")[1].decode() if reply.startswith(b"HTTP/1.1 ") else "none"
    print(status, repr(target)[2:-1])
EOF
note "raw NUL targets: $(tr '\n' ';' <"$TMP/nul.out")"
[ "$(grep -c '^40[04] .*\\x00' "$TMP/nul.out")" = 5 ] ||
	check_failed "a NUL byte in the target was not refused: $(grep -v '^40[04]' "$TMP/nul.out" | tr '\n' ';')"
grep -qx '200 /healthz' "$TMP/nul.out" || check_failed "the raw /healthz control: $(tail -n 1 "$TMP/nul.out")"
# a huge header: refused, and the next request is fine
big=$(head -c 100000 /dev/zero | tr '\0' a)
c=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Big: $big" "$URL/healthz")
note "100 KB header: $c"
[ "$c" = 431 ] || [ "$c" = 413 ] || [ "$c" = 000 ] || check_failed "a 100 KB header got $c"
[ "$(code_of "$URL/healthz")" = 200 ] || check_failed "after a huge header, /healthz failed"
# delta profiles wait in threads of their own: a few at once, then 503s,
# and the others are served meanwhile
curls=""
for k in 1 2 3 4 5 6; do
	curl -s -o /dev/null -w '%{http_code}\n' "$URL/debug/pprof/allocs?seconds=3" >>"$TMP/deltas" &
	curls="$curls $!"
done
sleep 0.5
[ "$(code_of --max-time 2 "$URL/metrics")" = 200 ] || check_failed "/metrics blocked by waiting deltas"
for p in $curls; do wait $p; done
ok=$(grep -c 200 "$TMP/deltas") busy=$(grep -c 503 "$TMP/deltas")
note "6 deltas at once: $ok answered, $busy refused (503)"
[ "$ok" = 4 ] && [ "$busy" = 2 ] || check_failed "6 deltas at once: $ok 200, $busy 503; want 4 and 2"
# a client that sends half a request and waits: others are served meanwhile
python3 - "$port" >"$TMP/slow.out" 2>&1 <<'EOF' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
time.sleep(4)
EOF
slow=$!
sleep 0.3
[ "$(code_of --max-time 3 "$URL/healthz")" = 200 ] || check_failed "a slow client blocked the others"
[ "$(code_of --max-time 5 "$URL/debug/pprof/heap")" = 200 ] || check_failed "a slow client blocked a profile"
kill $slow 2>/dev/null	# (it would wait out its 4 s)
wait $slow

# --- the program exits: the last profile stays, /metrics says it is gone
kill -TERM "$svc"
wait "$svc"
sleep 0.5
m=$(curl -s "$URL/metrics")
echo "$m" | grep -qx 'pprof_alloc_target_up 0' || check_failed "after the exit, pprof_alloc_target_up is not 0"
[ "$(code_of "$URL/debug/pprof/heap")" = 200 ] || check_failed "no profile after the exit"
top_of "$URL/debug/pprof/allocs" -sample_index=alloc_space | grep -qx site_request ||
	check_failed "the final profile lost site_request"
kill -TERM $srv
wait $srv
rc=$?
[ $rc = 0 ] || check_failed "serve exited $rc on SIGTERM after the target's exit"

# --- --every/--out-dir/--keep, --pid-file, SIGTERM detaches
start_service rot 60
echo "$svc" >"$TMP/svc.pid"
mkdir "$TMP/out"
start_serve rot --pid-file "$TMP/svc.pid" --every 1 --out-dir "$TMP/out" --keep 3 -q
# wait until a fifth profile has been written (names carry the time), so
# that two were rotated out; at most 30 s
i=0
until [ "$(cat "$TMP/out.seen" 2>/dev/null | sort -u | wc -l)" -ge 5 ] || [ $i -ge 150 ]; do
	ls "$TMP/out" | grep '^pprof-alloc\.[0-9]*\.[0-9T]*\.[0-9]*Z\.pb\.gz$' >>"$TMP/out.seen"
	sleep 0.2; i=$((i + 1))
done
# looked at once serve has stopped: while it runs, a profile being written
# (a temporary file) or rotated out may be caught in passing
kill -TERM $srv
wait $srv
rc=$?
[ $rc = 0 ] || check_failed "serve exited $rc on SIGTERM"
n=$(ls "$TMP/out" | grep -c '^pprof-alloc\.[0-9]*\.[0-9T]*\.[0-9]*Z\.pb\.gz$')
note "--every 1 --keep 3 after $(sort -u "$TMP/out.seen" | wc -l) profiles seen in $((i / 5)) s: $n files: $(ls "$TMP/out" | tr '\n' ' ')"
[ "$(sort -u "$TMP/out.seen" | wc -l)" -ge 5 ] ||
	check_failed "--every 1: fewer than 5 profiles written in 30 s"
[ "$n" = 3 ] || check_failed "--keep 3: $n files in the out dir"
ls "$TMP/out" | grep -q tmp && check_failed "a temporary file was left in the out dir"
for f in "$TMP"/out/*; do
	go tool pprof -raw "$f" >/dev/null 2>&1 || check_failed "$f is not a profile"
done
grep -q 'detached' "$TMP/rot.srv.err" && check_failed "-q printed: $(cat "$TMP/rot.srv.err")"
kill -0 "$svc" 2>/dev/null || check_failed "the program did not survive serve's SIGTERM"
# detached: the program runs on at full speed, to its normal end
kill -TERM "$svc"
wait "$svc"
rc=$?
grep -q '^ops [0-9]' "$TMP/rot.out" && [ $rc = 0 ] || check_failed "the program after serve: exit $rc, '$(cat "$TMP/rot.out")'"

# --- the systemd unit's command line, with a PID file (%i = the test)
unit="$TOP/contrib/pprof-alloc@.service"
[ -f "$unit" ] || fail "no $unit"
start_service unit 60
echo "$svc" >"$TMP/unit.pid"
exec_line=$(sed -n 's/^ExecStart=//p' "$unit")
[ -n "$exec_line" ] || fail "no ExecStart in $unit"
port=$(free_port)
printf 'PIDFILE=%s\nLISTEN=127.0.0.1:%s\n' "$TMP/unit.pid" "$port" >"$TMP/unit.env"
# systemd would read the EnvironmentFile, put %i and turn $$ into $; the
# shell does it here
cmd=$(printf '%s' "$exec_line" |
	sed "s|%i|test|g; s|/usr/local/bin/pprof-alloc|$TRACER|g; s|\\$\\$|\\$|g")
(set -a; . "$TMP/unit.env"; set +a; eval "exec $cmd") >"$TMP/unit.srv.out" 2>"$TMP/unit.srv.err" &
srv=$!
bg="$bg $srv"
i=0
until [ "$(curl -s "http://127.0.0.1:$port/healthz" 2>/dev/null)" = ok ] ||
      [ $i -ge 200 ] || ! kill -0 $srv 2>/dev/null; do
	sleep 0.05; i=$((i + 1))
done
[ "$(curl -s "http://127.0.0.1:$port/healthz")" = ok ] ||
	check_failed "the unit's ExecStart did not serve: $(cat "$TMP/unit.srv.err")"
kill -TERM $srv; wait $srv
kill -TERM "$svc"; wait "$svc"

# --- a port in use: refused before the target is touched
start_service busy 30
# the holder takes a port of its own choosing (one found free and bound
# later may be taken meanwhile by another program); serve gets 20 s
python3 -c 'import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
print(s.getsockname()[1], flush=True); time.sleep(30)' >"$TMP/holder.port" &
holder=$!
bg="$bg $holder"
i=0
until [ -s "$TMP/holder.port" ] || [ $i -ge 100 ]; do sleep 0.05; i=$((i + 1)); done
nc_port=$(cat "$TMP/holder.port")
timeout 20 "$TRACER" serve --pid "$svc" --listen "127.0.0.1:$nc_port" >/dev/null 2>"$TMP/busy.err"
rc=$?
[ $rc = 1 ] || check_failed "serve on a port in use: exit $rc"
grep -q "cannot listen" "$TMP/busy.err" || check_failed "port in use: '$(cat "$TMP/busy.err")'"
grep -q libpprof-alloc /proc/$svc/maps && check_failed "serve on a port in use attached to the target anyway"
kill $holder 2>/dev/null
kill -TERM "$svc"; wait "$svc"

# --- libmicrohttpd is loaded when serve starts, not linked: without it
# (hidden in a mount namespace of this command alone), serve says so and
# touches no target; every other command runs without it.
mhd=$(ldconfig -p | awk '$1 == "libmicrohttpd.so.12" { print $NF; exit }')
[ -n "$mhd" ] || fail "ldconfig knows no libmicrohttpd.so.12"
! ldd "$TRACER" | grep -q microhttpd || check_failed "pprof-alloc is linked with libmicrohttpd"
start_service nomhd 30
unshare -m sh -c 'mount --bind /dev/null "$1" && shift && exec "$@"' sh "$mhd" \
	"$TRACER" serve --pid "$svc" --listen "127.0.0.1:$(free_port)" >/dev/null 2>"$TMP/nomhd.err"
rc=$?
[ $rc = 1 ] || check_failed "serve without libmicrohttpd: exit $rc, want 1"
grep -q "cannot load libmicrohttpd.so.12" "$TMP/nomhd.err" ||
	check_failed "serve without libmicrohttpd: '$(cat "$TMP/nomhd.err")'"
grep -q libpprof-alloc /proc/$svc/maps && check_failed "serve without libmicrohttpd attached to the target anyway"
kill -TERM "$svc"; wait "$svc"

# --- usage errors: refused before anything is attached
for args in "" "--pid 1 --pid-file $TMP/unit.pid" "--pid x" "--pid 1 --every 1" \
	    "--pid 1 --out-dir $TMP" "--pid 1 --listen nonsense" "--pid-file /nonexistent" \
	    "--pid 1 --every 1 --out-dir /nonexistent" "--pid 1 --max-stacks 0" \
	    "--pid 1 --header-timeout 0" "--pid 1 --header-timeout x"; do
	"$TRACER" serve $args >/dev/null 2>"$TMP/usage.err"
	rc=$?
	[ $rc = 2 ] || check_failed "serve $args: exit $rc, want 2"
	[ -s "$TMP/usage.err" ] || check_failed "serve $args: no message"
done
"$TRACER" serve --pid 1 --listen nonsense >/dev/null 2>"$TMP/usage.err"
grep -q 'listen' "$TMP/usage.err" || check_failed "--listen nonsense: '$(cat "$TMP/usage.err")'"

# --- a PID file the service controls: a FIFO is refused, not waited on; a
# file owned by a user may name only that user's processes (here: pid 1)
mkfifo "$TMP/fifo.pid"
timeout 10 "$TRACER" serve --pid-file "$TMP/fifo.pid" >/dev/null 2>"$TMP/usage.err"
rc=$?
[ $rc = 2 ] || check_failed "serve --pid-file FIFO: exit $rc, want 2"
grep -q 'not a regular file' "$TMP/usage.err" || check_failed "FIFO pid file: '$(cat "$TMP/usage.err")'"
echo 1 >"$TMP/nobody.pid"
chown nobody "$TMP/nobody.pid"
"$TRACER" serve --pid-file "$TMP/nobody.pid" >/dev/null 2>"$TMP/usage.err"
rc=$?
[ $rc = 2 ] || check_failed "serve --pid-file naming init, owned by nobody: exit $rc, want 2"
grep -q 'names a process of another user than the file.s owner' "$TMP/usage.err" ||
	check_failed "nobody's pid file: '$(cat "$TMP/usage.err")'"
ln -s "$TMP/fifo.pid" "$TMP/link.pid"
"$TRACER" serve --pid-file "$TMP/link.pid" >/dev/null 2>"$TMP/usage.err"
grep -q 'a symbolic link' "$TMP/usage.err" || check_failed "symlinked pid file: '$(cat "$TMP/usage.err")'"
# root's file naming init, in a directory nobody owns (who could have put
# it there): judged as nobody's
mkdir "$TMP/nobodydir"
echo 1 >"$TMP/nobodydir/root.pid"
chown nobody "$TMP/nobodydir"
"$TRACER" serve --pid-file "$TMP/nobodydir/root.pid" >/dev/null 2>"$TMP/usage.err"
grep -q 'names a process of another user' "$TMP/usage.err" ||
	check_failed "root's pid file in nobody's directory: '$(cat "$TMP/usage.err")'"
# a PID file naming a process that has exited: said so, not "No such file"
sh -c 'exit 0' &
dead=$!
wait $dead
echo "$dead" >"$TMP/dead.pid"
"$TRACER" serve --pid-file "$TMP/dead.pid" >/dev/null 2>"$TMP/usage.err"
rc=$?
[ $rc = 2 ] || check_failed "serve --pid-file naming a dead process: exit $rc, want 2"
grep -qF "PID file $TMP/dead.pid names process $dead, which does not exist" "$TMP/usage.err" &&
	! grep -q 'No such file' "$TMP/usage.err" ||
	check_failed "pid file naming a dead process: '$(cat "$TMP/usage.err")'"
for text in "12x" "" "-5" "99999999999"; do
	printf '%s' "$text" >"$TMP/bad.pid"
	"$TRACER" serve --pid-file "$TMP/bad.pid" >/dev/null 2>"$TMP/usage.err"
	grep -q 'not a PID file' "$TMP/usage.err" || check_failed "pid file '$text': '$(cat "$TMP/usage.err")'"
done

finish
