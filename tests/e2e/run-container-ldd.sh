#!/bin/sh
# run-container-ldd.sh - the agent in a container whose root holds only its
# program and the files `ldd` lists for it (the usual multi-stage image):
# libc.so.6 and ld.so, and no libpthread.so.0, libdl.so.2 or libm.so.6,
# where glibc < 2.34 keeps what the agent once linked (docs/design.md
# "The glibc baseline").  The container is a real one (tests/tools/ctr-run:
# user, mount, PID, UTS, IPC, cgroup namespaces, pivot_root), root there
# host uid 100000.
#   1. Stock Debian memcached (libevent, libssl, libcrypto, libsasl2, libc):
#      `--pid` injects the agent from the host; a client's sets and gets
#      while attached are sampled, in frames named from the container's
#      libevent; the stats thread answers (glibc's pthread_create, found
#      at run time); memcached still serves what was stored.
#   2. The same memcached with the agent preloaded inside (a copy in the
#      image), on its own; `--pid` connects to it: samples again (a tracer
#      that connects starts no stats thread: none is asked for).
#   3. tests/workloads/attach-sites (libc.so.6 alone): `--pid --rate 1`
#      over a round, every site exact, and its own check of every block it
#      kept after the detach.
. "$(dirname "$0")/lib.sh"
need memcached ldd python3 go
attach_init
readable_build

MC=/usr/bin/memcached
chmod 755 "$TMP"	# the container's root, host uid 100000, goes through it

# ldd_root DIR PROG AS: a root with PROG at AS and exactly what ldd lists
# for it (the libraries and the dynamic loader), /proc and /tmp; and the
# files without which nothing runs as a user (/etc/passwd, /etc/group)
ldd_root() {
	mkdir -p "$1/proc" "$1/tmp" "$1/etc" "$1$(dirname "$3")" &&
		chmod 1777 "$1/tmp" && cp -L "$2" "$1$3" ||
		fail "cannot make the root $1"
	echo 'root:x:0:0:root:/:/nonexistent' >"$1/etc/passwd"
	echo 'root:x:0:' >"$1/etc/group"
	ldd "$2" >"$TMP/ldd.txt" || fail "ldd $2 failed"
	for _lib in $(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' "$TMP/ldd.txt"); do
		mkdir -p "$1$(dirname "$_lib")" && cp -L "$_lib" "$1$_lib" ||
			fail "cannot copy $_lib into $1"
	done
	# the root must prove something: none of what the agent once needed
	_extra=$(find "$1" -name 'libpthread.so*' -o -name 'libdl.so*' -o -name 'libm.so*' | tr '\n' ' ')
	[ -z "$_extra" ] || fail "the root has $_extra: $2 needs them, and the test proves nothing"
	[ -e "$1/lib/$MULTIARCH/libc.so.6" ] || fail "no libc.so.6 in $1 from ldd $2"
	note "root $1: $(cd "$1" && find . -name '*.so*' | sort | tr '\n' ' ')"
}

# start_ctr OUT [CTR-RUN ARGS] -- PROG...: a container; its host pid in
# $hostpid once ctr-run said it
start_ctr() {
	_o=$1; shift
	spawn "$_o" "$CTR" "$@"
	wait_for "$_o" '^hostpid ' 10 || fail "ctr-run did not start: $(cat "$_o.err")"
	hostpid=$(sed -n 's/^hostpid //p' "$_o")
}

port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# client PORT WHAT: connects (waiting up to 10 s for memcached to listen),
# then WHAT: "load" opens 64 connections and sets 2000 values on them,
# printing "load done"; "check" gets 20 of them back, printing "check ok"
client() {
	python3 - "$@" <<'PY'
import socket, sys, time
port, what = int(sys.argv[1]), sys.argv[2]
def conn():
    t = time.monotonic() + 10
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=10)
        except OSError:
            if time.monotonic() > t:
                raise
            time.sleep(0.01)
def value(i):
    return (b"v%d-" % i) * (20 + i % 200)
def reply(s, end):
    b = b""
    while not b.endswith(end):
        c = s.recv(65536)
        if not c:
            sys.exit("memcached closed the connection")
        b += c
    return b
socks = [conn()]
if what == "load":
    socks += [conn() for _ in range(63)]
    for i in range(2000):
        s, v = socks[i % len(socks)], value(i)
        s.sendall(b"set k%d 0 0 %d\r\n%s\r\n" % (i, len(v), v))
        r = reply(s, b"\r\n")
        if r != b"STORED\r\n":
            sys.exit("set k%d: %r" % (i, r))
    print("load done", flush=True)
else:
    for i in range(0, 2000, 100):
        socks[0].sendall(b"get k%d\r\n" % i)
        r = reply(socks[0], b"END\r\n")
        v = value(i)
        if r != b"VALUE k%d 0 %d\r\n%s\r\nEND\r\n" % (i, len(v), v):
            sys.exit("get k%d: %r" % (i, r[:80]))
    print("check ok", flush=True)
PY
}

# memcached_profile NAME PROFILE ERR [stats]: what every memcached
# profile shows; with stats, allocator statistics too
memcached_profile() {
	sed 's/^/    tracer: /' "$3"
	_n=$(sed -n 's/.*wrote .* (\([0-9]*\) samples).*/\1/p' "$3")
	[ "${_n:-0}" -gt 0 ] || check_failed "$1: no samples ('${_n:-no wrote line}')"
	go tool pprof -traces "$2" >"$TMP/$1.traces" 2>"$TMP/$1.traces.err" ||
		{ cat "$TMP/$1.traces.err"; fail "$1: go tool pprof cannot read $2"; }
	# frames named from the container's libevent, below memcached's own
	# (stripped: unnamed)
	grep -Eq '^ +(event_base_loop|evmap_io_add_|event_add)$' "$TMP/$1.traces" ||
		check_failed "$1: no allocating stack names libevent's frames: $(head -30 "$TMP/$1.traces")"
	go tool pprof -raw "$2" 2>/dev/null | sed -n '/^Mappings/,$p' >"$TMP/$1.maps"
	grep -q " /lib/$MULTIARCH/libevent-2.1.so.7 " "$TMP/$1.maps" ||
		check_failed "$1: no mapping of the container's libevent at its path there"
	# the stats thread answered: glibc's pthread_create, found at run time
	[ "${4:-}" != stats ] || grep -q "allocator glibc: in use" "$TMP/$1.traces" ||
		check_failed "$1: no allocator statistics (the stats thread did not answer)"
}

# --- 1. memcached, attached from the host
R="$TMP/mc"
ldd_root "$R" "$MC" /app/memcached
p=$(port)
start_ctr "$TMP/mc.out" --uid 100000 "$R" /app/memcached -u root -l 127.0.0.1 -p "$p" -c 1024
mc=$spawned_pid mcpid=$hostpid
client "$p" check >/dev/null 2>&1 &&
	fail "memcached on port $p answers before anything was stored: another one?"
[ "$(awk '$1 == "NSpid:" { print NF }' "/proc/$mcpid/status")" = 3 ] ||
	fail "memcached ($mcpid) is not in a PID namespace of its own"
note "1. memcached in the container (host pid $mcpid), --pid"
attach_bg "$mcpid" "$TMP/mc1.pb.gz" "$TMP/mc1.err" --rate 1
grep -q "memfd:pprof-alloc-agent.so" "/proc/$mcpid/maps" ||
	check_failed "the agent is not mapped from its memfd"
client "$p" load >"$TMP/load1.out" || check_failed "memcached: the load failed"
stop_tracer
[ "$tracer_rc" = 0 ] || check_failed "the tracer exited $tracer_rc"
grep -q "unloaded the agent from process $mcpid " "$TMP/mc1.err" ||
	check_failed "the agent was not unloaded at the detach"
agent_mapped "$mcpid" && check_failed "the agent is still mapped after the detach"
memcached_profile mc1 "$TMP/mc1.pb.gz" "$TMP/mc1.err" stats
client "$p" check >"$TMP/check1.out" && grep -qx "check ok" "$TMP/check1.out" ||
	check_failed "memcached does not serve what was stored after the detach"
running "$mcpid" || check_failed "memcached died"
kill -KILL "$mc"
reap "$mc" 10

# --- 2. memcached with the agent preloaded in the container; --pid connects
note "2. memcached with the agent preloaded inside, --pid connects"
mkdir -p "$R/opt/pprof" && cp "$AGENT" "$R/opt/pprof/libpprof-alloc.so" ||
	fail "cannot put the agent into the container's image"
p=$(port)
# (ctr-run itself, on the host, has no /opt/pprof: the loader says so
# there and goes on)
spawn "$TMP/mc2.out" env LD_PRELOAD=/opt/pprof/libpprof-alloc.so PPROF_ALLOC_RATE=1 \
	"$CTR" --uid 100000 "$R" /app/memcached -u root -l 127.0.0.1 -p "$p" -c 1024
mc=$spawned_pid
wait_for "$TMP/mc2.out" '^hostpid ' 10 || fail "ctr-run did not start: $(cat "$TMP/mc2.out.err")"
mcpid=$(sed -n 's/^hostpid //p' "$TMP/mc2.out")
client "$p" check >/dev/null 2>&1	# listening: the agent is started
grep -q "/opt/pprof/libpprof-alloc.so" "/proc/$mcpid/maps" ||
	fail "the agent is not preloaded in memcached: $(cat "$TMP/mc2.out.err")"
attach_bg "$mcpid" "$TMP/mc2.pb.gz" "$TMP/mc2.err"
grep -q "connected to the agent in process $mcpid" "$TMP/mc2.err" ||
	check_failed "the tracer did not connect to the preloaded agent"
client "$p" load >"$TMP/load2.out" || check_failed "memcached (preloaded): the load failed"
stop_tracer
[ "$tracer_rc" = 0 ] || check_failed "the tracer exited $tracer_rc"
memcached_profile mc2 "$TMP/mc2.pb.gz" "$TMP/mc2.err"
client "$p" check >"$TMP/check2.out" && grep -qx "check ok" "$TMP/check2.out" ||
	check_failed "memcached (preloaded) does not serve what was stored"
kill -KILL "$mc"
reap "$mc" 10

# --- 3. attach-sites, exact
note "3. attach-sites, --pid --rate 1"
R="$TMP/as"
ldd_root "$R" "$WORKLOADS/attach-sites" /app/attach-sites
mkfifo "$R/cmd" && chmod 666 "$R/cmd" || fail "mkfifo"
T=2 N=4000 R_=100 PRE=100
start_ctr "$TMP/as.out" --uid 100000 "$R" /app/attach-sites /cmd $T $N $R_ $PRE
as=$spawned_pid aspid=$hostpid
wait_for "$TMP/as.out" '^attach-sites: ready' 20 ||
	fail "attach-sites did not start in the container: $(cat "$TMP/as.out.err")"
attach_bg "$aspid" "$TMP/as.pb.gz" "$TMP/as.err" --rate 1
send "$R/cmd" w
wait_for "$TMP/as.out" '^work done 1$' 30 || fail "the round did not finish"
stop_tracer
sed 's/^/    tracer: /' "$TMP/as.err"
[ "$tracer_rc" = 0 ] || check_failed "the tracer exited $tracer_rc"
pprof_sum "$TMP/as.pb.gz" leaf >"$TMP/as.sum"
check_no_loss "$TMP/as.sum"
check_attach_round "$TMP/as.sum" $T $N $R_
send "$R/cmd" wq
reap "$as" 30
cat "$TMP/as.out"
[ "$reaped_rc" = 0 ] && grep -qx 'attach-sites: 2 rounds, check ok' "$TMP/as.out" ||
	check_failed "attach-sites did not end well ($reaped_rc) after the detach"
finish
