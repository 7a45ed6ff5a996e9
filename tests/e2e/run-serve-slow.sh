#!/bin/sh
# run-serve-slow.sh - `pprof-alloc serve` stays available to everyone while
# one local client holds connections open without finishing a request.
#
# serve runs on tests/workloads/service with --header-timeout 2.  First a
# few connections of each kind, under the per-client limit: slowloris ones
# (a request header trickled a byte every 0.25 s, never finished) and idle
# ones (nothing sent) must each be closed by serve 2 s after it opened -
# not before, not at the 60 s inactivity timeout, however it trickles; ones
# that asked to be kept alive, 2 s after their response at the latest.
# Then a flood from the same address: 1000 idle connections at once plus
# 100 slowloris ones, for 3 header timeouts (6 s), opened again as they are cut while fewer
# than 60 are open (under the per-client limit: serve sheds the rest of
# the 100, then they meet the header timeout, again and again).  Within
# 1 s, before any header timeout, all but about the per-client limit (64)
# of the idle ones must be closed; by the end, all of them; no slowloris
# connection may live past the timeout.  Among the first of them, after
# every second idle and every fifth slowloris one, a prompt connection
# sends a whole request as it connects: serve gets to those late, behind
# the flood, yet must answer every one (200) - the flood is what it
# sheds.  Throughout, a separate process fetches /healthz and /metrics (a
# new connection each, from 127.0.0.1 too) every 50 ms: every fetch must
# answer 200 within 1.5 s (times TIME_SCALE, as the timeouts' slack: the
# sanitized build under the whole suite), and serve's threads must stay few.  Last,
# /metrics counts what was closed and why, a profile is still served and
# SIGTERM stops serve.
. "$(dirname "$0")/lib.sh"

need curl python3
SVC="$WORKLOADS/service"
# the header timeout; longer for a slower build (TIME_SCALE: tests/run.sh
# gives 2 to the sanitized one, which runs beside the plain one)
TIMEOUT=$((2 * ${TIME_SCALE:-1}))
# the service, serve, the prober and the clients measure time: ahead of
# the tests running beside this one (tests/run.sh), which would starve them
NICE="nice -n -10"
bg=""
cleanup() { for p in $bg; do kill -9 "$p" 2>/dev/null; done; rm -rf "$TMP"; }
trap cleanup EXIT

$NICE "$SVC" 60 2 >"$TMP/svc.out" 2>&1 &
svc=$!
bg="$bg $svc"
i=0
until grep -qs ready "$TMP/svc.out" || [ $i -ge 100 ]; do sleep 0.05; i=$((i + 1)); done
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$port"
$NICE "$TRACER" serve -q --pid "$svc" --listen "127.0.0.1:$port" --header-timeout $TIMEOUT \
	>"$TMP/srv.out" 2>"$TMP/srv.err" &
srv=$!
bg="$bg $srv"
i=0
until [ "$(curl -s "$URL/healthz" 2>/dev/null)" = ok ]; do
	kill -0 $srv 2>/dev/null && [ $i -lt 200 ] || { cat "$TMP/srv.err" >&2; fail "serve did not start"; }
	sleep 0.05; i=$((i + 1))
done

# --- the prober: its own process, so that the clients below cannot slow it
cat >"$TMP/probe.py" <<'EOF'
import http.client, re, sys, time
port, srv, seconds, bound = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
n = 0; bad = []; worst = 0.0; threads = 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    path = ("/healthz", "/metrics")[n % 2]
    n += 1
    t = time.monotonic()
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=bound * 3)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        c.close()
        took = time.monotonic() - t
        if r.status != 200:
            bad.append("%s: %d" % (path, r.status))
        elif took > bound:
            bad.append("%s: took %.2f s" % (path, took))
        elif path == "/metrics" and b"pprof_alloc_serve_connections " not in body:
            bad.append("/metrics without pprof_alloc_serve_connections")
    except Exception as e:
        took = time.monotonic() - t
        bad.append("%s: %r after %.2f s" % (path, e, took))
    worst = max(worst, took)
    try:
        with open("/proc/%s/status" % srv) as f:
            threads = max(threads, int(re.search(r"Threads:\s*(\d+)", f.read()).group(1)))
    except (OSError, AttributeError):
        pass
    time.sleep(0.05)
print("fetches %d failed %d slowest %.3f threads %d" % (n, len(bad), worst, threads))
for b in bad[:10]:
    print("  ", b)
EOF

# --- the clients
cat >"$TMP/clients.py" <<'EOF'
import resource, select, socket, sys, time
port, T = int(sys.argv[1]), float(sys.argv[2])
# how late serve may close at its timeout: scheduling on a loaded machine,
# more for a slower build (the sanitized one, under the whole suite)
SLACK = 1.5 * float(sys.argv[3])
ADDR = ("127.0.0.1", port)
failures = 0
def check(ok, msg):
    global failures
    if not ok:
        failures += 1
        print("FAIL: " + msg, flush=True)
def note(msg):
    print("--- " + msg, flush=True)

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
want = 2048
if soft < want:
    if hard != resource.RLIM_INFINITY and hard < want:
        print("FAIL: the limit on open files (%d) is too low for this test" % hard)
        sys.exit(1)
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))

HEAD = b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
WHOLE = HEAD + b"Connection: close\r\n\r\n"

class Conn:
    """A client connection; at is when serve's clock for it started.
    A "prompt" one sends a whole request at once and keeps what comes."""
    def __init__(self, kind, block=True):
        self.kind = kind
        self.got = b""
        self.s = socket.socket()
        if block:
            self.s.connect(ADDR)
            if kind == "prompt":
                self.s.sendall(WHOLE)
        else:
            self.s.setblocking(False)
            try:
                self.s.connect(ADDR)
            except BlockingIOError:
                pass
        self.s.setblocking(False)
        self.at = time.monotonic()
        self.closed = None  # when serve was seen to close it
        self.sent = 0
    def gone(self, now):
        if self.closed is None:
            self.closed = now - self.at
            self.s.close()
    def poll(self, now):
        """See whether serve closed it; True if so."""
        if self.closed is not None:
            return True
        try:
            d = self.s.recv(65536)
            if not d:
                self.gone(now)
            elif self.kind == "prompt":
                self.got += d
        except BlockingIOError:
            pass
        except OSError:
            self.gone(now)
        return self.closed is not None
    def trickle(self, now):
        """One more header byte (the request line first, at once)."""
        if self.closed is not None:
            return
        try:
            if self.sent == 0:
                self.s.send(HEAD)
            else:
                self.s.send(b"X" if self.sent % 40 else b"\r\nX-Slow: ")
            self.sent += 1
        except BlockingIOError:
            pass
        except OSError:
            self.gone(now)

def keep_alive():
    """One request answered on a kept-alive connection, then nothing."""
    c = Conn("keep")
    c.s.setblocking(True)
    c.s.settimeout(5)
    c.s.sendall(HEAD + b"\r\n")
    data = b""
    while b"\r\n\r\nok\n" not in data:
        d = c.s.recv(4096)
        check(d, "keep-alive: the connection closed before the response")
        if not d:
            break
        data += d
    check(data.startswith(b"HTTP/1.1 200"), "keep-alive: %r" % data[:40])
    c.s.setblocking(False)
    c.at = time.monotonic()
    return c

SLOW_OPEN = 60

def run(conns, until, replace=0):
    """Trickle and watch until the monotonic time until (or all closed).
    With replace, each slowloris connection serve closes is opened again
    while fewer than SLOW_OPEN are open (at most replace of them, 50 every
    0.25 s, as a slowloris client would); returns those."""
    extra = []
    cut = 0
    last_trickle = 0.0
    while True:
        now = time.monotonic()
        if now >= until:
            return extra
        live = [c for c in conns + extra if c.closed is None]
        if not live and not replace:
            return extra
        if now - last_trickle >= 0.25:
            last_trickle = now
            n = min(cut, 50, replace - len(extra),
                    SLOW_OPEN - sum(1 for c in live if c.kind == "slow"))
            n = max(n, 0)
            extra += [Conn("slow") for _ in range(n)]
            cut -= n
            for c in live:
                if c.kind == "slow":
                    c.trickle(now)
        p = select.poll()
        by_fd = {}
        for c in live:
            p.register(c.s, select.POLLIN)
            by_fd[c.s.fileno()] = c
        for fd, _ in p.poll(50):
            c = by_fd[fd]
            c.poll(time.monotonic())
            if c.closed is not None and c.kind == "slow":
                cut += 1

def lifetimes(conns, kind):
    t = [c.closed for c in conns if c.kind == kind]
    return t, [x for x in t if x is not None]

# --- below the per-client limit: the header timeout alone closes them
conns = [Conn("slow") for _ in range(20)] + [Conn("idle") for _ in range(20)]
conns += [keep_alive() for _ in range(10)]
run(conns, time.monotonic() + T + 3)
for kind in ("slow", "idle", "keep"):
    t, closed = lifetimes(conns, kind)
    note("%s: %d of %d closed by serve, after %s s" % (kind, len(closed), len(t),
         "%.2f..%.2f" % (min(closed), max(closed)) if closed else "-"))
    check(len(closed) == len(t), "%s: %d of %d connections still open %.1f s after the header timeout" %
          (kind, len(t) - len(closed), len(t), 3))
    # serve closes a connection after its response (see tracer/serve/http.c):
    # a kept-alive one may end at once
    early = [x for x in closed if x < T * 0.75 and kind != "keep"]
    late = [x for x in closed if x > T + SLACK]
    check(not early, "%s: %d closed before the header timeout (after %.2f s)" %
          (kind, len(early), min(early) if early else 0))
    check(not late, "%s: %d closed late (after %.2f s, timeout %.1f)" %
          (kind, len(late), max(late) if late else 0, T))

# --- a flood from the same address, with a prompt request (a whole one,
# sent at once) after every second idle and every fifth slowloris
# connection: serve reads those late, behind the flood, but must answer
# every one
t0 = time.monotonic()
flood, slow, prompt = [], [], []
for i in range(1000):
    flood.append(Conn("idle", block=False))
    if i % 2:
        prompt.append(Conn("prompt"))
for i in range(100):
    slow.append(Conn("slow"))
    if i % 5 == 4:
        prompt.append(Conn("prompt"))
note("opened 1000 idle, 100 slowloris and %d prompt connections in %.2f s" %
     (len(prompt), time.monotonic() - t0))
# (looked at 3/4 of the header timeout after the first was opened: the
# limit, not the timeout, closed them; a loaded machine - the sanitized
# build beside the plain one - needs most of that)
extra = run(flood + slow + prompt, t0 + T * 0.75, 1000)
_, closed = lifetimes(flood, "idle")
note("after %.1f s: %d of the 1000 idle connections closed by serve" % (T * 0.75, len(closed)))
check(len(closed) >= 900, "after %.1f s (before any header timeout) only %d of the 1000 idle connections were closed; the per-client limit should leave about 64" % (T * 0.75, len(closed)))
extra += run(flood + slow + prompt + extra, t0 + 3 * T, 1000)
now = time.monotonic()
for c in flood + slow + prompt + extra:
    c.poll(now)
bad = [c for c in prompt if not (c.closed is not None and
       c.got.startswith(b"HTTP/1.1 200 ") and c.got.endswith(b"\r\n\r\nok\n"))]
note("prompt requests: %d of %d answered 200, the slowest closed after %.2f s" %
     (len(prompt) - len(bad), len(prompt),
      max([c.closed for c in prompt if c.closed is not None] + [0])))
check(not bad, "%d of %d connections that sent a whole request at once were not answered (evicted?): %s" %
      (len(bad), len(prompt), "; ".join("%r after %s s" % (c.got[:20],
       "%.2f" % c.closed if c.closed is not None else "-") for c in bad[:5])))
_, closed = lifetimes(flood, "idle")
note("after %.0f s: %d of the 1000 idle connections closed by serve" % (3 * T, len(closed)))
check(len(closed) == 1000, "after %.0f s, %d idle connections still open" % (3 * T, 1000 - len(closed)))
allslow = slow + extra
# serve starts a connection's header timeout when it accepts it; behind the
# flood, on a loaded machine, that is after the client's connect() by as
# much as serve was late in answering a prompt request (measured above).
# A trickle that restarted the timeout would keep the first of them open
# to the end (3 T), past this bound while the lag stays under T
lag = max([c.closed for c in prompt if c.closed is not None] + [0])
bound = T + SLACK + min(lag, T - SLACK / 2)
over = [now - c.at for c in allslow if c.closed is None and now - c.at > bound]
over += [x for x in lifetimes(allslow, "slow")[1] if x > bound]
note("slowloris connections: %d opened, the longest-lived %.2f s (bound %.2f s: serve's lag %.2f s)" %
     (len(allslow), max([x for x in lifetimes(allslow, "slow")[1]] + [0]), bound, lag))
check(not over, "%d slowloris connections lived longer than the header timeout (%.2f s, bound %.2f s)" %
      (len(over), max(over) if over else 0, bound))
for c in allslow + flood + prompt:
    if c.closed is None:
        c.s.close()
sys.exit(1 if failures else 0)
EOF

PROBE_MAX=$(awk -v s="${TIME_SCALE:-1}" 'BEGIN { print 1.5 * s }')
$NICE python3 "$TMP/probe.py" "$port" "$srv" 14 "$PROBE_MAX" >"$TMP/probe.out" 2>&1 &
probe=$!
bg="$bg $probe"
sleep 0.3
$NICE python3 "$TMP/clients.py" "$port" $TIMEOUT "${TIME_SCALE:-1}" >"$TMP/clients.out" 2>&1
rc=$?
cat "$TMP/clients.out"
[ $rc = 0 ] || check_failed "the slow and idle clients: $(grep -c '^FAIL' "$TMP/clients.out") check(s) failed (exit $rc)"
wait $probe
cat "$TMP/probe.out"
read -r _ fetches _ failed _ slowest _ threads <"$TMP/probe.out"
[ -n "$fetches" ] && [ "$fetches" -ge 100 ] || check_failed "the prober made only '$fetches' fetches"
[ "$failed" = 0 ] || check_failed "$failed fetches of /healthz or /metrics failed or took over $PROBE_MAX s"
[ -n "$threads" ] && [ "$threads" -le 300 ] ||
	check_failed "serve had up to '$threads' threads, want at most 300"

# --- what serve says it did; it still serves profiles and stops cleanly
curl -s "$URL/metrics" >"$TMP/metrics.txt"
timeouts=$(sed -n 's/^pprof_alloc_serve_connections_closed_total{reason="header_timeout"} //p' "$TMP/metrics.txt")
evicted=$(sed -n 's/^pprof_alloc_serve_connections_closed_total{reason="evicted"} //p' "$TMP/metrics.txt")
open=$(sed -n 's/^pprof_alloc_serve_connections //p' "$TMP/metrics.txt")
note "/metrics: closed at the header timeout $timeouts, evicted $evicted, open $open"
[ -n "$timeouts" ] && [ "$timeouts" -ge 50 ] || check_failed "/metrics counts '$timeouts' header timeouts, want at least 50"
[ -n "$evicted" ] && [ "$evicted" -ge 900 ] || check_failed "/metrics counts '$evicted' evicted connections, want at least 900"
[ -n "$open" ] && [ "$open" -le 3 ] || check_failed "/metrics says '$open' connections are open after the clients left"
[ "$(curl -s -o "$TMP/h.pb.gz" -w '%{http_code}' --max-time 10 "$URL/debug/pprof/heap")" = 200 ] &&
	gzip -t "$TMP/h.pb.gz" || check_failed "no heap profile after the flood"
kill -TERM $srv
i=0
while kill -0 $srv 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
kill -0 $srv 2>/dev/null && check_failed "serve did not stop within 10 s of SIGTERM"
wait $srv
rc=$?
[ $rc = 0 ] || check_failed "serve exited $rc on SIGTERM"
kill -TERM "$svc"; wait "$svc"

finish
