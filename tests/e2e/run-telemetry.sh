#!/bin/sh
# run-telemetry.sh - the readings beside the profile, on this machine.
#
# A memory cgroup of its own is made for the test (cgroup v1's memory
# hierarchy, or v2 when its root delegates the memory controller), and
# tests/workloads/telemetry.c runs in it under the tracer:
#
# 1. hold: 200 MiB in 1 MiB blocks, every page touched, held 3 s, with
#    --interval 0.5.  PROFILE.json (parsed by python's json) shows it in
#    VmRSS, in the cgroup's usage (the version and path read are ours), in
#    glibc's mallinfo2 (mmapped), in the agent's malloc counters, and in
#    the sampled heap; the profile has hold_block at 200 MiB in use and
#    the readings' summary in its comments; PROFILE.timeline.jsonl has one
#    line per interval.
# 2. wave: the heap grows 10 MiB every 300 ms for 5 steps, then shrinks
#    the same way, with --interval 0.1: the timeline's lines are 0.1 s
#    apart, as many as its span says, and the sampled in-use heap rises to
#    about 50 MiB and falls back.
#    PROFILE.json also has how the run ended (not OOM-killed) and a final
#    cgroup reading taken after the exit.
# 3. `pprof-alloc stats` on a launched program (agent there), as text,
#    JSON and Prometheus text (checked by promtool), with the agent's
#    memfd size (charged to the cgroup as shmem; the larger ring and
#    tables of --rate 1 too) and the cgroup's oom_kill counter; on a
#    program without an agent (allocator unknown, with the reason); run as
#    nobody on root's program (the agent is there but cannot be read: said
#    so, never "none"; and readable in nobody's own program); on a zombie
#    (refused: it has no memory or cgroup left); on one linked with
#    jemalloc (its mallctl stats); then an attached run's readings (the
#    stats thread starts with the attach); and the errors.
. "$(dirname "$0")/lib.sh"
readable_build	# (run as nobody)
need python3 pgrep cc go
attach_init

W="$WORKLOADS/telemetry"
MiB=1048576
need promtool

# ---- a memory cgroup of our own
CG_NAME="pprof-alloc-test-$$"
if [ -d /sys/fs/cgroup/memory ] && grep -q ':memory:' /proc/self/cgroup; then
	CG="/sys/fs/cgroup/memory/$CG_NAME" CG_VERSION=1
elif grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
	CG="/sys/fs/cgroup/$CG_NAME" CG_VERSION=2
else
	fail "no memory cgroup controller to test with (neither v1 nor v2 delegating memory)"
fi
mkdir "$CG" || fail "cannot make the test cgroup $CG (root needed)"
PARENT_PROCS=$(dirname "$CG")/cgroup.procs
cleanup_cg() {
	attach_cleanup
	for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do
		echo "$p" >"$PARENT_PROCS" 2>/dev/null
	done
	rmdir "$CG" 2>/dev/null
}
trap cleanup_cg EXIT
note "cgroup v$CG_VERSION: $CG"
# in_cg CMD...: run CMD inside the test cgroup
in_cg() {
	sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "$@"
}

json() {	# FILE EXPR: python3 expression over d (the parsed file)
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

# ---- 1. hold 200 MiB
in_cg "$TRACER" --interval 0.5 -o "$TMP/hold.pb.gz" -- "$W" hold 200 3 \
	>"$TMP/hold.out" 2>"$TMP/hold.err"
rc=$?
sed 's/^/    stderr: /' "$TMP/hold.err"
[ $rc = 0 ] || fail "the traced run exited $rc"
[ -s "$TMP/hold.json" ] || fail "no hold.json beside hold.pb.gz"
python3 -m json.tool "$TMP/hold.json" >/dev/null || fail "hold.json is not JSON"
at_least() {	# WHAT VALUE MIN
	if python3 -c "import sys; sys.exit(not (float(sys.argv[1]) >= float(sys.argv[2])))" "$2" "$3" 2>/dev/null; then
		note "$1: $2 (>= $3)"
	else
		check_failed "$1 is $2, want at least $3"
	fi
}
between() {	# WHAT VALUE MIN MAX
	if python3 -c "import sys; v=float(sys.argv[1]); sys.exit(not (float(sys.argv[2]) <= v <= float(sys.argv[3])))" "$2" "$3" "$4" 2>/dev/null; then
		note "$1: $2 (in $3..$4)"
	else
		check_failed "$1 is $2, want $3..$4"
	fi
}
H="$TMP/hold.json"
at_least "VmRSS" "$(json "$H" "d['process']['status']['VmRSS']")" $((200 * MiB))
at_least "smaps_rollup Anonymous" "$(json "$H" "d['process']['smaps_rollup']['Anonymous']")" $((200 * MiB))
[ "$(json "$H" "d['cgroup']['version']")" = "$CG_VERSION" ] ||
	check_failed "cgroup version $(json "$H" "d['cgroup']['version']"), want $CG_VERSION"
[ "$(json "$H" "d['cgroup']['path']")" = "/$CG_NAME" ] ||
	check_failed "cgroup path $(json "$H" "d['cgroup']['path']"), want /$CG_NAME"
at_least "cgroup usage" "$(json "$H" "d['cgroup']['common']['usage']")" $((200 * MiB))
at_least "cgroup anon" "$(json "$H" "d['cgroup']['common']['anon']")" $((200 * MiB))
[ "$(json "$H" "d['allocator']['name']")" = glibc ] ||
	check_failed "allocator $(json "$H" "d['allocator']"), want glibc"
at_least "mallinfo2 hblkhd (mmapped)" "$(json "$H" "d['allocator']['mallinfo2']['hblkhd']")" $((200 * MiB))
at_least "malloc_info mmap bytes" "$(json "$H" "d['allocator']['arenas_total']['mmap_bytes']")" $((200 * MiB))
at_least "agent malloc calls" "$(json "$H" "d['agent']['hooks']['malloc']['calls']")" 200
# each thread adds its counts to the header at its samples: what it
# allocated since its last one (a few MiB here) may not be there yet
at_least "agent malloc bytes" "$(json "$H" "d['agent']['hooks']['malloc']['bytes']")" $((190 * MiB))
between "sampled heap in use" "$(json "$H" "d['heap']['inuse_bytes']")" $((180 * MiB)) $((220 * MiB))
[ "$(json "$H" "d['pid']")" -gt 0 ] || check_failed "no pid in hold.json"
[ "$(json "$H" "d['end']['oom_killed']")" = False ] ||
	check_failed "hold.json: end says OOM-killed: $(json "$H" "d['end']")"
[ "$(json "$H" "d['end']['target']")" = "exited with status 0" ] ||
	check_failed "hold.json: end.target is $(json "$H" "d['end']['target']")"
[ "$(json "$H" "d['final']['after_exit'] and d['final']['cgroup']['path'] == '/$CG_NAME' and d['final']['unix_ns'] >= d['unix_ns']")" = True ] ||
	check_failed "hold.json: no final reading of our cgroup after the exit: $(json "$H" "d['final']")"

pprof_sum "$TMP/hold.pb.gz" leaf >"$TMP/hold.sum"
# (it exits holding everything: allocated and in use)
between "profile hold_block alloc_space" "$(value hold_block 2 <"$TMP/hold.sum")" $((180 * MiB)) $((220 * MiB))
grep -q '^# readings at .*RSS' "$TMP/hold.sum" ||
	check_failed "the profile's comments have no readings summary"
grep -q "^# cgroup v$CG_VERSION /$CG_NAME: usage" "$TMP/hold.sum" ||
	check_failed "the profile's comments do not name the cgroup"
grep -q '^# allocator glibc: in use' "$TMP/hold.sum" ||
	check_failed "the profile's comments have no allocator line"

lines=$(wc -l <"$TMP/hold.timeline.jsonl")
# at least the 3 s it holds, at 0.5 s, however long the 200 MiB took to
# fault in on a busy machine; the readings 0.5 s apart (the median gap:
# the reading at exit comes when it comes)
at_least "hold timeline lines (3 s at 0.5 s)" "$lines" 6
gap=$(python3 -c 'import json, sys
t = [json.loads(l)["unix_ns"] for l in open(sys.argv[1])]
g = sorted(b - a for a, b in zip(t, t[1:]))
print(g[len(g) // 2] / 1e9 if g else 0)' "$TMP/hold.timeline.jsonl")
between "hold timeline: median seconds between readings" "$gap" 0.45 0.6
python3 - "$TMP/hold.timeline.jsonl" <<'PY' || check_failed "a timeline line is not a complete reading"
import json, sys
for n, line in enumerate(open(sys.argv[1]), 1):
    d = json.loads(line)
    for k in ("time", "process", "cgroup", "allocator", "agent", "heap"):
        assert k in d, "line %d lacks %s" % (n, k)
PY

# ---- 2. the wave
in_cg "$TRACER" --interval 0.1 -o "$TMP/wave.pb.gz" -- "$W" wave 5 10 300 \
	>"$TMP/wave.out" 2>"$TMP/wave.err"
rc=$?
sed 's/^/    stderr: /' "$TMP/wave.err"
[ $rc = 0 ] || fail "the wave run exited $rc"
python3 - "$TMP/wave.timeline.jsonl" <<'PY' >"$TMP/wave.check" 2>&1
import json, sys
# the last line is the reading at exit, off the grid
rows = [json.loads(l) for l in open(sys.argv[1])][:-1]
t = [r["unix_ns"] / 1e9 for r in rows]
heap = [r["heap"]["inuse_bytes"] / 1048576 for r in rows]
gaps = sorted(b - a for a, b in zip(t, t[1:]))
span = t[-1] - t[0]
print("lines %d over %.2f s, median gap %.3f s" % (len(rows), span, gaps[len(gaps) // 2]))
print("heap MiB: " + " ".join("%.0f" % h for h in heap))
ok = True
# a tick the reader was too late for on a loaded machine is skipped, not
# doubled: a tenth of the lines may be missing or extra, no more
want = round(span / 0.1) + 1
if abs(len(rows) - want) > max(1, want // 10):
    print("FAIL: %d lines for a span of %.2f s at 0.1 s" % (len(rows), span)); ok = False
if not 0.08 <= gaps[len(gaps) // 2] <= 0.12:
    print("FAIL: the median gap is not 0.1 s"); ok = False
# at least the 3 s the program runs; longer when a busy machine slows
# it (the span check above holds the count to the time it took)
if len(rows) < 20:
    print("FAIL: %d lines for a 3 s program at 0.1 s" % len(rows)); ok = False
peak = max(range(len(heap)), key=lambda i: heap[i])
if not 35 <= heap[peak] <= 65:
    print("FAIL: the in-use heap peaks at %.0f MiB, want about 50" % heap[peak]); ok = False
if not (0 < peak < len(heap) - 1) or heap[0] > 15 or heap[-1] > 15:
    print("FAIL: the heap does not rise from and fall back to near 0"); ok = False
rising = sum(1 for a, b in zip(heap[:peak], heap[1:peak + 1]) if b < a - 1)
falling = sum(1 for a, b in zip(heap[peak:], heap[peak + 1:]) if b > a + 1)
if rising or falling:
    print("FAIL: %d drops while growing, %d rises while shrinking" % (rising, falling)); ok = False
sys.exit(0 if ok else 1)
PY
rc=$?
sed 's/^/    /' "$TMP/wave.check"
[ $rc = 0 ] || check_failed "the wave's timeline is wrong (above)"

# ---- 3. pprof-alloc stats
spawn "$TMP/live.out" in_cg "$TRACER" -q -o "$TMP/live.pb.gz" -- "$W" hold 50 30
wait_for "$TMP/live.out" '^ready$' 20 || fail "the workload did not get ready"
child=
for p in $(cat "$CG/cgroup.procs"); do
	[ "$(cat /proc/$p/comm 2>/dev/null)" = telemetry ] && child=$p
done
[ -n "$child" ] || fail "cannot find the workload's pid"
"$TRACER" stats --pid "$child" >"$TMP/stats.txt" 2>"$TMP/stats.err" ||
	check_failed "stats --pid exited $? ($(cat "$TMP/stats.err"))"
grep -q "allocator: glibc" "$TMP/stats.txt" || check_failed "stats text: no glibc allocator line"
grep -q "cgroup v$CG_VERSION /$CG_NAME" "$TMP/stats.txt" || check_failed "stats text: not our cgroup"
grep -Eq "^    malloc +[0-9]+ calls" "$TMP/stats.txt" || check_failed "stats text: no malloc counter"
grep -Eq "^    memfd +[0-9.]+ [KM]iB resident of 1[0-9]\.[0-9] MiB \(shared memory\)" "$TMP/stats.txt" ||
	check_failed "stats text: no memfd line of 10..20 MiB"
grep -Eq "^    oom_kill +0$" "$TMP/stats.txt" || check_failed "stats text: no cgroup oom_kill 0"
"$TRACER" stats --pid "$child" --json >"$TMP/stats.json" || check_failed "stats --json failed"
python3 -m json.tool "$TMP/stats.json" >/dev/null || check_failed "stats --json is not JSON"
at_least "stats --json VmRSS" "$(json "$TMP/stats.json" "d['process']['status']['VmRSS']")" $((50 * MiB))
at_least "stats --json agent samples (50 x 1 MiB at 512 KiB: ~43)" "$(json "$TMP/stats.json" "d['agent']['samples']")" 25
memfd=$(json "$TMP/stats.json" "d['agent']['memfd_bytes']")
between "stats --json agent memfd_size (default rate)" "$(json "$TMP/stats.json" "d['agent']['memfd_size']")" $((10 * MiB)) $((20 * MiB))
between "stats --json agent memfd_bytes (resident)" "$memfd" 4096 $((20 * MiB))
at_least "stats --json cgroup shmem (the memfd, charged to the cgroup)" "$(json "$TMP/stats.json" "d['cgroup']['common']['shmem']")" "$memfd"
[ "$(json "$TMP/stats.json" "d['cgroup']['common']['oom_kill']")" = 0 ] ||
	check_failed "stats --json: cgroup oom_kill is $(json "$TMP/stats.json" "d['cgroup']['common']['oom_kill']"), want 0"
"$TRACER" stats --pid "$child" --prometheus >"$TMP/stats.prom" || check_failed "stats --prometheus failed"
promtool check metrics <"$TMP/stats.prom" >"$TMP/promtool.out" 2>&1 ||
	{ cat "$TMP/promtool.out"; check_failed "promtool check metrics refuses the output"; }
grep -q '^pprof_alloc_agent_calls_total{hook="malloc"} [1-9]' "$TMP/stats.prom" ||
	check_failed "no malloc calls in the Prometheus output"
grep -q "^pprof_alloc_cgroup_usage_bytes [1-9]" "$TMP/stats.prom" ||
	check_failed "no cgroup usage in the Prometheus output"
grep -q '^pprof_alloc_allocator_info{allocator="glibc"' "$TMP/stats.prom" ||
	check_failed "no allocator info in the Prometheus output"
grep -q "^pprof_alloc_agent_memfd_bytes $memfd\$" "$TMP/stats.prom" ||
	check_failed "no pprof_alloc_agent_memfd_bytes $memfd in the Prometheus output"
grep -q "^pprof_alloc_cgroup_oom_kill_total 0\$" "$TMP/stats.prom" ||
	check_failed "no pprof_alloc_cgroup_oom_kill_total in the Prometheus output"
note "$(wc -l <"$TMP/stats.prom") Prometheus lines, promtool: ok"

# as nobody: the agent is there but cannot be read (root's process): said
# so, and why, never "none"
chmod 711 "$TMP"
mkdir -m 777 "$TMP/open"
NOBODY="setpriv --reuid=nobody --regid=nogroup --clear-groups"
$NOBODY "$TRACER" stats --pid "$child" >"$TMP/nobody.txt" 2>"$TMP/nobody.err" ||
	check_failed "stats as nobody exited $? ($(cat "$TMP/nobody.err"))"
grep '^  agent' "$TMP/nobody.txt"
grep -q "^  agent: cannot be read (cannot list /proc/$child/fd: Permission denied; run stats as root or as the process's user)" "$TMP/nobody.txt" ||
	check_failed "stats as nobody: the agent is not said to be unreadable: $(grep agent "$TMP/nobody.txt")"
grep -q "agent: none" "$TMP/nobody.txt" && check_failed "stats as nobody: says agent: none"
$NOBODY "$TRACER" stats --pid "$child" --json >"$TMP/nobody.json" 2>/dev/null ||
	check_failed "stats --json as nobody failed"
[ "$(json "$TMP/nobody.json" "d['agent'] is None and d['agent_unreadable'] and 'Permission denied' in d['agent_why']")" = True ] ||
	check_failed "stats --json as nobody: agent $(json "$TMP/nobody.json" "d['agent'], d.get('agent_unreadable'), d.get('agent_why')")"
kill -INT "$child"
# nobody's own program: readable (the check above is about permissions)
spawn "$TMP/nbw.out" $NOBODY "$TRACER" -q -o "$TMP/open/nb.pb.gz" -- "$W" hold 20 30
wait_for "$TMP/nbw.out" '^ready$' 20 || fail "nobody's workload did not get ready"
nb_child=$(pgrep -u nobody -x telemetry | head -n 1)
[ -n "$nb_child" ] || fail "cannot find nobody's workload"
$NOBODY "$TRACER" stats --pid "$nb_child" >"$TMP/nb.txt" 2>"$TMP/nb.err" ||
	check_failed "stats as nobody on nobody's program exited $? ($(cat "$TMP/nb.err"))"
grep -Eq "^  agent: [0-9]+ samples" "$TMP/nb.txt" ||
	check_failed "stats as nobody cannot read the agent of nobody's program: $(grep agent "$TMP/nb.txt")"
kill -INT "$nb_child"

# --rate 1: the larger ring and tables make a larger memfd (~193 MB), of
# which what the agent touched is resident, charged to the cgroup as shmem
spawn "$TMP/r1.out" in_cg "$TRACER" -q --rate 1 -o "$TMP/r1.pb.gz" -- "$W" hold 20 30
wait_for "$TMP/r1.out" '^ready$' 20 || fail "the --rate 1 workload did not get ready"
r1=
for p in $(cat "$CG/cgroup.procs"); do
	[ "$(cat /proc/$p/comm 2>/dev/null)" = telemetry ] && r1=$p
done
[ -n "$r1" ] || fail "cannot find the --rate 1 workload's pid"
"$TRACER" stats --pid "$r1" --json >"$TMP/r1.json" || check_failed "stats (--rate 1) failed"
memfd1=$(json "$TMP/r1.json" "d['agent']['memfd_bytes']")
between "--rate 1: agent memfd_size" "$(json "$TMP/r1.json" "d['agent']['memfd_size']")" $((180 * 1000 * 1000)) $((200 * 1000 * 1000))
between "--rate 1: agent memfd_bytes (resident)" "$memfd1" 4096 $((20 * MiB))
at_least "--rate 1: cgroup shmem" "$(json "$TMP/r1.json" "d['cgroup']['common']['shmem']")" "$memfd1"
kill -INT "$r1"

# a zombie: refused (procfs would give the root cgroup as its)
python3 - "$TRACER" >"$TMP/zombie.out" 2>&1 <<'PY'
import subprocess, sys, time
z = subprocess.Popen(["true"])
time.sleep(0.2)          # exited, not reaped: a zombie
s = subprocess.run([sys.argv[1], "stats", "--pid", str(z.pid)],
                   capture_output=True, text=True)
print("exit %d" % s.returncode)
print("stdout [%s]" % s.stdout)
print("stderr [%s]" % s.stderr.strip())
z.wait()
PY
cat "$TMP/zombie.out"
grep -q '^exit 1$' "$TMP/zombie.out" || check_failed "stats on a zombie: not exit 1"
grep -q '^stdout \[\]$' "$TMP/zombie.out" || check_failed "stats on a zombie printed a reading"
grep -q "is a zombie: it has exited" "$TMP/zombie.out" || check_failed "stats on a zombie: no message saying so"

# a process without an agent: kernel and cgroup readings, allocator unknown
spawn "$TMP/sleep.out" sleep 30
"$TRACER" stats --pid "$spawned_pid" --json >"$TMP/plain.json" ||
	check_failed "stats on a process without the agent exited $?"
[ "$(json "$TMP/plain.json" "d['allocator']['name']")" = unknown ] ||
	check_failed "allocator of a process without the agent: $(json "$TMP/plain.json" "d['allocator']")"
json "$TMP/plain.json" "d['allocator']['why']" | grep -q "no pprof-alloc agent" ||
	check_failed "no reason for the unknown allocator"
[ "$(json "$TMP/plain.json" "d['agent_unreadable']")" = False ] ||
	check_failed "a process without the agent: agent_unreadable is not false"
"$TRACER" stats --pid "$spawned_pid" >"$TMP/plain.txt"
grep -q "^  agent: none (no pprof-alloc agent in the process)" "$TMP/plain.txt" ||
	check_failed "stats text without an agent: $(grep agent "$TMP/plain.txt")"
[ "$(json "$TMP/plain.json" "d['agent']")" = None ] || check_failed "agent counters without an agent"

# jemalloc in the process (linked in, as services do): its mallctl stats
JE=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
need "$JE"
cc -O1 -o "$TMP/telemetry-je" "$TOP/tests/workloads/telemetry.c" "$JE" ||
	fail "cannot build the workload against jemalloc"
spawn "$TMP/je.out" "$TRACER" -q -o "$TMP/je.pb.gz" -- "$TMP/telemetry-je" hold 50 30
wait_for "$TMP/je.out" '^ready$' 20 || fail "the jemalloc workload did not get ready"
je_child=$(pgrep -P "$spawned_pid" -x telemetry-je | head -n 1)
"$TRACER" stats --pid "$je_child" --json >"$TMP/je.json" || check_failed "stats (jemalloc) failed"
[ "$(json "$TMP/je.json" "d['allocator']['name']")" = jemalloc ] ||
	check_failed "allocator with jemalloc linked in: $(json "$TMP/je.json" "d['allocator']")"
at_least "jemalloc stats.allocated" "$(json "$TMP/je.json" "d['allocator']['jemalloc']['allocated']")" $((50 * MiB))
[ "$(json "$TMP/je.json" "'mallinfo2' in d['allocator']")" = False ] ||
	check_failed "glibc's mallinfo2 reported for a jemalloc process"
kill -INT "$je_child"

# attached (--pid): the agent's stats thread starts with the attach
spawn "$TMP/att.out" "$W" hold 20 30
att=$spawned_pid
wait_for "$TMP/att.out" '^ready$' 20 || fail "the attach workload did not get ready"
"$TRACER" --pid "$att" --duration 1.2 --interval 0.3 -o "$TMP/att.pb.gz" 2>"$TMP/att.err" ||
	{ cat "$TMP/att.err"; check_failed "the attached run failed"; }
[ "$(json "$TMP/att.json" "d['allocator']['name']")" = glibc ] ||
	check_failed "attached: allocator $(json "$TMP/att.json" "d['allocator']")"
at_least "attached: VmRSS at the end" "$(json "$TMP/att.json" "d['process']['status']['VmRSS']")" $((20 * MiB))
between "attached: timeline lines (1.2 s at 0.3 s)" "$(wc -l <"$TMP/att.timeline.jsonl")" 4 7
# (the allocator above came from that thread; the detach ended it, with
# the rest of the agent)
grep -qx pprof-alloc /proc/$att/task/*/comm &&
	check_failed "the agent's stats thread outlived the detach"

# errors
"$TRACER" stats --pid 999999999 >/dev/null 2>"$TMP/e1"; rc=$?
[ $rc = 1 ] && grep -q "no process 999999999" "$TMP/e1" ||
	check_failed "stats on no process: exit $rc, $(cat "$TMP/e1")"
"$TRACER" stats >/dev/null 2>"$TMP/e2"; rc=$?
[ $rc = 2 ] && grep -q "give --pid" "$TMP/e2" || check_failed "stats without --pid: exit $rc"
"$TRACER" stats --pid 1 --json --prometheus >/dev/null 2>"$TMP/e3"; rc=$?
[ $rc = 2 ] || check_failed "stats --json --prometheus: exit $rc, want 2"
"$TRACER" --interval 0 -- true >/dev/null 2>"$TMP/e4"; rc=$?
[ $rc = 2 ] && grep -q "invalid --interval" "$TMP/e4" || check_failed "--interval 0: exit $rc"
finish
