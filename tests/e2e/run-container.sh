#!/bin/sh
# run-container.sh - attach from the host to processes in a real container:
# user, mount, PID, UTS, IPC and cgroup namespaces (tests/tools/ctr-run),
# pivot_root'ed into a root assembled here (glibc's libraries, the
# programs copied in, its own /proc, no agent), root there mapped to host
# uid 100000, in a memory cgroup of its own with a 512 MiB limit.
#
# tests/workloads/attach-sites.c, at /app (a path the host does not
# have), waits on a FIFO for rounds of work at known sites:
#   1. `--pid HOSTPID --rate 1 --duration` over a round: every site exact;
#      the mappings named as the container sees them (/app/attach-sites,
#      /lib/x86_64-linux-gnu/libc.so.6) and symbolized from its files; the
#      readings are the container's cgroup with its limit.
#      The agent is loaded from a memfd made there, and unloaded at the
#      detach: nothing of it is left in the container's process.
#   2. attached again (injected again, from a memfd), a round, detached.
#   3. serve on it: /debug/pprof/heap after a round, then detached;
#      stats reads the container's cgroup, and no agent left there.
#   then it checks every block it kept, unprofiled: exit 0, "check ok".
# Stock Debian python3.11, copied in at /opt/python (not a host path),
# attached at --rate 1: its frames named from its ELF symbols.
# A core dumped in the container by tests/workloads/die.c (the agent in its
# image, preloaded) names /app/die: --core symbolizes it with --sysroot
# the container's root, and cannot without.
# Under a seccomp filter of Docker's default profile's shape
# (tests/tools/seccomp-run.c: errors, never kills, for what it forbids)
# the attach works, exact; one that forbids memfd_create is refused.
# Refused in one line, untouched: a container without /proc; a tracer
# that may not ptrace the container (nobody, not its owner); a seccomp
# filter that forbids memfd_create.
. "$(dirname "$0")/lib.sh"
need python3 curl
attach_init

need go
readable_build	# (the tracer run as nobody, refused)
MiB=1048576
LIMIT=$((512 * MiB))
PY=/usr/bin/python3
CG_NAME="pprof-alloc-ctr-$$"
memory_cgroup "$CG_NAME" $LIMIT
trap 'memory_cgroup_remove; core_pattern_give; attach_cleanup' EXIT
[ ! -e /app/attach-sites ] || fail "the host has /app/attach-sites: the test proves nothing"

json() {	# FILE EXPR: python3 expression over d (the parsed file)
	$PY -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

# refused NAME PID WORDS [AS...]: the tracer (run through AS..., e.g.
# setpriv) refuses PID, in one line with WORDS; no agent was loaded, and
# the target still runs
refused() {
	_n=$1 _p=$2 _w=$3; shift 3
	if "$@" timeout 30 "$TRACER" --pid "$_p" --duration 0.3 \
		-o "$TMP/out/$_n.pb.gz" 2>"$TMP/$_n.err"; then
		fail "$_n: attached: $(cat "$TMP/$_n.err")"
	fi
	cat "$TMP/$_n.err"
	[ "$(grep -c . "$TMP/$_n.err")" = 1 ] || check_failed "$_n: the refusal is not one line"
	grep -q "$_w" "$TMP/$_n.err" || check_failed "$_n: the refusal does not say '$_w'"
	agent_mapped "$_p" && check_failed "$_n: the agent was loaded anyway"
	running "$_p" || check_failed "$_n: the target died"
}

chmod 755 "$TMP"	# the container's root, host uid 100000, goes through it
mkdir "$TMP/out" && chmod 777 "$TMP/out" || fail "mkdir"	# nobody's output
R="$TMP/root"
container_root "$R"
copy_in "$R" "$WORKLOADS/attach-sites" /app/attach-sites
mkfifo "$R/cmd" && chmod 666 "$R/cmd" || fail "mkfifo"

# start_ctr OUT [CTR-RUN ARGS] -- PROG...: a container in the cgroup; its
# host pid in $hostpid once PROG printed its first line
start_ctr() {
	_o=$1; shift
	# not through in_cg, a function: backgrounded, it would be a subshell,
	# and $! not ctr-run's pid
	spawn "$_o" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "$CTR" "$@"
	wait_for "$_o" '^hostpid ' 10 || fail "ctr-run did not start: $(cat "$_o.err")"
	hostpid=$(sed -n 's/^hostpid //p' "$_o")
}

T=4 N=8000 R_=200 PRE=1000
start_ctr "$TMP/ctr.out" --uid 100000 "$R" /app/attach-sites /cmd $T $N $R_ $PRE
ctr=$spawned_pid
wait_for "$TMP/ctr.out" '^attach-sites: ready' 20 ||
	fail "attach-sites did not start in the container: $(cat "$TMP/ctr.out.err")"

# --- is it a container?
nspid=$(awk '$1 == "NSpid:" { print $NF, NF }' "/proc/$hostpid/status")
[ "$nspid" = "1 3" ] || fail "NSpid of $hostpid is '$nspid': not PID 1 of a PID namespace of its own"
[ "$(awk 'NR == 1 { print $1, $2 }' "/proc/$hostpid/uid_map")" = "0 100000" ] ||
	fail "root in the container is not host uid 100000: $(cat "/proc/$hostpid/uid_map")"
[ "$(stat -c %u "/proc/$hostpid")" = 100000 ] || fail "the container's process is not host uid 100000"
[ "$(readlink "/proc/$hostpid/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] ||
	fail "the container shares our mount namespace"
[ -e "/proc/$hostpid/root$AGENT" ] && fail "the agent is visible in the container: the test proves nothing"
grep -q ":/$CG_NAME\$" "/proc/$hostpid/cgroup" || fail "the container is not in $CG_NAME"
note "container: host pid $hostpid, PID 1 inside, uid 0 = host 100000, cgroup v$CG_VERSION /$CG_NAME"

sites() {	# SUMS: the five sites of one round (attach-sites.c's formulas)
	check_site "$1" work_keep $((T * N)) $((T * N / 4 * 960)) $((T * N)) $((T * N / 4 * 960))
	check_site "$1" work_churn $((T * N)) $((T * N / 4 * 208)) 0 0
	check_site "$1" work_calloc $((T * N)) $((T * N * 100)) $((T * N / 2)) $((T * N * 50))
	check_site "$1" work_realloc $((T * R_ * 4)) $((T * R_ * 3310)) $((T * R_)) $((T * R_ * 100))
	check_site "$1" work_handoff $((T * N)) $((T * N * 72)) 0 0
}

# --- 1. --pid --duration, exact, container paths, the container's cgroup
note "1. --pid $hostpid --rate 1 --duration"
# 5 s: a round of work and more, on a slower machine too
D=$((5 * TIME_SCALE))
"$TRACER" --pid "$hostpid" --rate 1 --duration $D -o "$TMP/c1.pb.gz" >/dev/null 2>"$TMP/c1.err" &
t1=$!
spawned="$spawned $t1"
wait_for "$TMP/c1.err" "attached to process $hostpid" 30 ||
	{ cat "$TMP/c1.err"; fail "the tracer did not attach to the container's process"; }
send "$R/cmd" w
wait_for "$TMP/ctr.out" '^work done 1$' 30 || fail "the first round did not finish"
grep -q "memfd:pprof-alloc-agent.so" "/proc/$hostpid/maps" ||
	check_failed "the agent is not mapped from its memfd"
reap $t1 60
sed 's/^/    tracer: /' "$TMP/c1.err"
[ "$reaped_rc" = 0 ] || fail "the tracer exited $reaped_rc"
# at its --duration: D s, and the detach's own time after it (5.1 s
# sanitized with the suite beside it, more on a busy machine: 5 s more
# per TIME_SCALE is allowed), never earlier
took=$(sed -n "s/.*process $hostpid was detached after \([0-9.]*\) s.*/\1/p" "$TMP/c1.err")
awk -v t="${took:-0}" -v s="${TIME_SCALE:-1}" -v d=$D 'BEGIN { exit !(t >= d && t <= d + 5 * s) }' ||
	check_failed "the tracer did not end at its --duration, detached (after ${took:-?} s)"
pprof_sum "$TMP/c1.pb.gz" leaf >"$TMP/c1.sum"
check_no_loss "$TMP/c1.sum"
sites "$TMP/c1.sum"
go tool pprof -raw "$TMP/c1.pb.gz" 2>/dev/null | sed -n '/^Mappings/,$p' >"$TMP/c1.maps"
sed 's/^/    /' "$TMP/c1.maps"
grep -q " /app/attach-sites [0-9a-f]\{40\} \[FN\]" "$TMP/c1.maps" ||
	check_failed "no mapping /app/attach-sites (the container's path) with a build ID and functions"
grep -q " /lib/$MULTIARCH/libc.so.6 [0-9a-f]\{40\} " "$TMP/c1.maps" ||
	check_failed "no mapping of the container's libc at its path there"
grep -q "$TMP/root" "$TMP/c1.maps" && check_failed "a mapping is named by its host path"
cg=$(json "$TMP/c1.json" "d['cgroup']['path'], d['cgroup']['version'], d['cgroup']['common']['limit']")
[ "$cg" = "/$CG_NAME $CG_VERSION $LIMIT" ] ||
	check_failed "the readings' cgroup (path, version, limit) is $cg, want /$CG_NAME $CG_VERSION $LIMIT"
grep -q "unloaded the agent from process $hostpid " "$TMP/c1.err" ||
	check_failed "the agent was not unloaded at the detach"
agent_mapped "$hostpid" && check_failed "the agent is still mapped after the detach"
[ -e "/proc/$hostpid/root$AGENT" ] && check_failed "the agent was written into the container"

# --- 2. again: the agent injected again
note "2. attached again"
attach_bg "$hostpid" "$TMP/c2.pb.gz" "$TMP/c2.err" --rate 1
send "$R/cmd" w
wait_for "$TMP/ctr.out" '^work done 2$' 30 || fail "the second round did not finish"
stop_tracer
sed 's/^/    tracer: /' "$TMP/c2.err"
grep -q "process $hostpid was detached" "$TMP/c2.err" || check_failed "the second attach did not detach"
pprof_sum "$TMP/c2.pb.gz" leaf >"$TMP/c2.sum"
check_no_loss "$TMP/c2.sum"
check_site "$TMP/c2.sum" work_keep $((T * N)) $((T * N / 4 * 960)) $((T * N)) $((T * N / 4 * 960))
check_site "$TMP/c2.sum" work_handoff $((T * N)) $((T * N * 72)) 0 0

# --- 3. serve
note "3. serve"
port=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$TRACER" serve --listen "127.0.0.1:$port" --pid "$hostpid" --rate 1 >"$TMP/srv.out" 2>"$TMP/srv.err" &
srv=$!
spawned="$spawned $srv"
n=0
until curl -s "http://127.0.0.1:$port/healthz" 2>/dev/null | grep -q ok; do
	[ $n -lt 400 ] && running $srv || fail "serve did not start: $(cat "$TMP/srv.err")"
	sleep 0.05; n=$((n + 1))
done
# up before it attaches (profiles are 503 until then)
wait_for "$TMP/srv.err" "attached to process $hostpid" 30 ||
	fail "serve did not attach: $(cat "$TMP/srv.err")"
send "$R/cmd" w
wait_for "$TMP/ctr.out" '^work done 3$' 30 || fail "the third round did not finish"
sleep 0.5	# serve answers from its last drain (every 20 ms, sites every 50)
curl -s -o "$TMP/srv.pb.gz" "http://127.0.0.1:$port/debug/pprof/heap" ||
	check_failed "serve: /debug/pprof/heap failed"
pprof_sum "$TMP/srv.pb.gz" leaf >"$TMP/srv.sum"
check_site "$TMP/srv.sum" work_keep $((T * N)) $((T * N / 4 * 960)) $((T * N)) $((T * N / 4 * 960))
curl -s "http://127.0.0.1:$port/metrics" >"$TMP/srv.prom"
grep -q "cgroup=\"/$CG_NAME\"" "$TMP/srv.prom" || grep -q "/$CG_NAME" "$TMP/srv.prom" ||
	check_failed "serve: /metrics does not name the container's cgroup"
kill -TERM $srv
reap $srv 30
sed 's/^/    serve: /' "$TMP/srv.err"
grep -q "detached" "$TMP/srv.err" || check_failed "serve did not say it detached"

# --- stats: the container's cgroup, and no agent left there (unloaded)
"$TRACER" stats --pid "$hostpid" --json >"$TMP/stats.json" 2>"$TMP/stats.err" ||
	check_failed "stats --pid failed: $(cat "$TMP/stats.err")"
cg=$(json "$TMP/stats.json" "d['cgroup']['path'], d['cgroup']['common']['limit'], d['agent'] is not None")
[ "$cg" = "/$CG_NAME $LIMIT False" ] ||
	check_failed "stats: (cgroup, limit, agent read) is $cg, want /$CG_NAME $LIMIT False"

# --- after the detach: its own check, unprofiled
send "$R/cmd" wq
reap $ctr 60
cat "$TMP/ctr.out"
[ "$reaped_rc" = 0 ] || check_failed "attach-sites exited $reaped_rc after the detach, want 0"
grep -qx 'attach-sites: 4 rounds, check ok' "$TMP/ctr.out" ||
	check_failed "attach-sites did not finish its rounds with its data intact"

# --- a stock binary: python3.11 at /opt/python, its frames named
note "python3 in the container"
PYR="$TMP/pyroot"
container_root "$PYR"
copy_in "$PYR" /usr/bin/python3.11 /opt/python/python3.11
mkdir -p "$PYR/usr/lib" && tar -C /usr/lib -cf - --exclude=test --exclude=__pycache__ \
	--exclude=idlelib --exclude=tkinter --exclude=lib2to3 --exclude=ensurepip \
	--exclude=pydoc_data --exclude='config-3*' python3.11 | tar -C "$PYR/usr/lib" -xf - ||
	fail "cannot copy python's library into the container"
cat >"$PYR/app/hold.py" <<'EOF'
import time
def hold_site():
    return [bytearray(4096) for _ in range(256)]
print("ready", flush=True)
while True:
    x = hold_site()
    time.sleep(0.005)
EOF
export PYTHONHOME=/usr
start_ctr "$TMP/py.out" --uid 100000 "$PYR" /opt/python/python3.11 -u /app/hold.py
unset PYTHONHOME
wait_for "$TMP/py.out" '^ready' 20 || fail "python3 did not start in the container: $(cat "$TMP/py.out.err")"
timeout 60 "$TRACER" --pid "$hostpid" --rate 1 --duration 1 -o "$TMP/py.pb.gz" 2>"$TMP/py.err" ||
	{ cat "$TMP/py.err"; fail "attaching to python3 in the container failed"; }
sed 's/^/    tracer: /' "$TMP/py.err"
go tool pprof -raw "$TMP/py.pb.gz" 2>/dev/null | sed -n '/^Mappings/,$p' >"$TMP/py.maps"
grep -q " /opt/python/python3.11 [0-9a-f]\{40\} \[FN\]" "$TMP/py.maps" ||
	check_failed "no mapping /opt/python/python3.11 with functions: $(cat "$TMP/py.maps")"
go tool pprof -top -nodecount=200 "$TMP/py.pb.gz" 2>/dev/null >"$TMP/py.top"
grep -Eq ' (PyByteArray_Resize|bytearray_(init|new|alloc)[a-z_]*|_PyObject_Malloc|PyObject_Malloc|_?PyMem_[A-Za-z]*)$' "$TMP/py.top" ||
	check_failed "python's allocating functions are not named: $(head -20 "$TMP/py.top")"
kill -KILL $spawned_pid 2>/dev/null

# --- a core dumped in the container: --core with --sysroot
note "--core of a core dumped in the container, --sysroot"
copy_in "$R" "$WORKLOADS/die" /app/die
# its DWARF apart, beside it in the image (/app/.debug/die.debug): found
# through its debuglink under the sysroot, not on the host
mkdir -p "$R/app/.debug" &&
	objcopy --only-keep-debug "$R/app/die" "$R/app/.debug/die.debug" &&
	objcopy --strip-debug --add-gnu-debuglink="$R/app/.debug/die.debug" "$R/app/die" ||
	fail "cannot split die's debug info"
mkdir -p "$R/opt/pprof" "$R/work" && cp "$AGENT" "$R/opt/pprof/" && chmod 777 "$R/work" ||
	fail "cannot put the agent into the container's image"
core_pattern_take
export LD_PRELOAD=/opt/pprof/libpprof-alloc.so PPROF_ALLOC_RATE=1
# (ctr-run under ASan, in the sanitized suite, would lower RLIMIT_CORE
# to 0 for the container too)
(ulimit -c unlimited && ASAN_OPTIONS=disable_coredump=0 \
	exec "$CTR" --uid 100000 --cwd /work "$R" /app/die segv) >"$TMP/die.out" 2>&1
unset LD_PRELOAD PPROF_ALLOC_RATE
core=$(ls "$R"/work/core* 2>/dev/null | head -n 1)
core_pattern_give
[ -n "$core" ] || fail "no core was dumped in the container: $(cat "$TMP/die.out")"
for how in without with; do
	set -- --no-debuginfod
	[ $how = without ] || set -- --no-debuginfod --sysroot "$R"
	"$TRACER" --core "$core" -o "$TMP/core-$how.pb.gz" "$@" 2>"$TMP/core-$how.err" ||
		{ cat "$TMP/core-$how.err"; fail "--core $how --sysroot failed"; }
	sed 's/^/    stderr: /' "$TMP/core-$how.err"
	# (without the files, the mappings are left unsymbolized, and pprof
	# would go looking for /app/die itself: not asked to here)
	pprof_sum "$TMP/core-$how.pb.gz" leaf -symbolize=none >"$TMP/core-$how.sum"
done
check_site "$TMP/core-with.sum" die_keep 8 $((8 * MiB)) 8 $((8 * MiB))
check_site "$TMP/core-with.sum" die_freed 2 $((512 * 1024)) 0 0
check_absent "$TMP/core-without.sum" die_keep
grep -q "not on this machine (/app/die.*--sysroot DIR" "$TMP/core-without.err" ||
	check_failed "without --sysroot, nothing says the core's files are a container's"
grep -q "not on this machine" "$TMP/core-with.err" &&
	check_failed "with --sysroot, files are still said to be missing"
go tool pprof -raw "$TMP/core-with.pb.gz" 2>/dev/null | grep -q " /app/die [0-9a-f]\{40\} \[FN\]" ||
	check_failed "the core's profile does not name /app/die, symbolized"
go tool pprof -raw "$TMP/core-with.pb.gz" 2>/dev/null | grep -q " die_keep .*die\.c:[0-9]" ||
	check_failed "die_keep has no file and line (its debuglink under the sysroot)"

# --- seccomp: Docker's shape attaches, exact; no memfd_create is refused
note "seccomp: Docker's default profile's shape"
copy_in "$R" "$BUILD/tests/tools/seccomp-run" /app/seccomp-run
mkfifo "$R/cmd3" "$R/cmd4" && chmod 666 "$R/cmd3" "$R/cmd4" || fail "mkfifo"
start_ctr "$TMP/sd.out" --uid 100000 "$R" /app/seccomp-run docker /app/attach-sites /cmd3 $T $N $R_ $PRE
sd=$spawned_pid sdpid=$hostpid
wait_for "$TMP/sd.out" '^attach-sites: ready' 20 ||
	fail "attach-sites did not start under the filter: $(cat "$TMP/sd.out.err")"
grep -q '^Seccomp:[[:space:]]*2' "/proc/$sdpid/status" || fail "the container's process is not under a filter"
attach_bg "$sdpid" "$TMP/sd.pb.gz" "$TMP/sd.err" --rate 1
send "$R/cmd3" w
wait_for "$TMP/sd.out" '^work done 1$' 30 || fail "the round under the filter did not finish"
stop_tracer
sed 's/^/    tracer: /' "$TMP/sd.err"
pprof_sum "$TMP/sd.pb.gz" leaf >"$TMP/sd.sum"
check_no_loss "$TMP/sd.sum"
check_site "$TMP/sd.sum" work_keep $((T * N)) $((T * N / 4 * 960)) $((T * N)) $((T * N / 4 * 960))
check_site "$TMP/sd.sum" work_handoff $((T * N)) $((T * N * 72)) 0 0
send "$R/cmd3" wq
reap $sd 60
[ "$reaped_rc" = 0 ] && grep -qx 'attach-sites: 2 rounds, check ok' "$TMP/sd.out" ||
	check_failed "under the filter, attach-sites did not end well ($reaped_rc): $(tail -2 "$TMP/sd.out")"

note "refused: a seccomp filter that forbids memfd_create"
start_ctr "$TMP/sm.out" --uid 100000 "$R" /app/seccomp-run no-memfd /app/attach-sites /cmd4 1 4 1 1
sm=$spawned_pid smpid=$hostpid
wait_for "$TMP/sm.out" '^attach-sites: ready' 20 || fail "the no-memfd container did not start"
refused no-memfd "$smpid" "forbids memfd_create"
send "$R/cmd4" wq
reap $sm 30
[ "$reaped_rc" = 0 ] && grep -qx 'attach-sites: 1 rounds, check ok' "$TMP/sm.out" ||
	check_failed "after the refusal, attach-sites did not end well ($reaped_rc): $(tail -2 "$TMP/sm.out")"

# --- refused in one line, untouched: no /proc there
note "refused: no /proc in the container"
mkfifo "$R/cmd2" && chmod 666 "$R/cmd2" || fail "mkfifo"
start_ctr "$TMP/np.out" --uid 100000 --no-proc "$R" /app/attach-sites /cmd2 1 4 1 1
np=$hostpid
wait_for "$TMP/np.out" '^attach-sites: ready' 20 || fail "the /proc-less container did not start"
refused no-proc "$np" "no /proc"

# --- refused in one line, untouched: a tracer that may not ptrace it
note "refused: ptrace not permitted (nobody, not the container's owner)"
refused not-permitted "$np" CAP_SYS_PTRACE setpriv --reuid=65534 --regid=65534 --clear-groups
finish
