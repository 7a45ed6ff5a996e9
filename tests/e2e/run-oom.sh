#!/bin/sh
# run-oom.sh - a program killed by its memory cgroup's OOM killer is said
# to be OOM-killed, and only then.
#
# A memory cgroup of its own with a 200 MiB limit (no swap) is made for
# the test: cgroup v1's memory hierarchy when the machine has it, else
# cgroup v2 where its root delegates the memory controller.  The tracer
# runs inside it with the program, as under systemd-run -p MemoryMax= or
# in a container, so the tracer and the agent's memfd are charged to it
# too (the memfd shows as the cgroup's shmem).  tests/workloads/oom.c:
#
# 1. grow until killed: exit 137; the cgroup's own oom_kill counter moved
#    by one; the tracer's summary line and the profile's comments (`go
#    tool pprof -comments`) say OOM-killed, naming the counter; the top
#    in-use site is oom_grow_block, at close to the limit; PROFILE.json
#    says so in "end", has a "final" cgroup reading taken after the death
#    and after the last reading of the process, with the peak at the limit
#    and oom_kill moved, and the agent's memfd size, all of it charged as
#    the cgroup's shmem.
# 2. a normal exit, a plain `kill -9` of the program from outside, and a
#    child of the program OOM-killed while the program itself exits 0 are
#    not reported as the program's OOM kill (the last says the cgroup
#    killed another process).
# 3. attached from outside the cgroup to a program in it that then grows:
#    the tracer reads the death from the zombie and says OOM-killed; the
#    memfd is then the tracer's to charge (it fills it), not the cgroup's.
. "$(dirname "$0")/lib.sh"
need go python3
attach_init

W="$WORKLOADS/oom"
MiB=1048576
LIMIT=$((200 * MiB))

# ---- a memory cgroup of our own, 200 MiB, no swap
CG_NAME="pprof-alloc-oom-$$"
memory_cgroup "$CG_NAME" $LIMIT
trap 'memory_cgroup_remove; attach_cleanup' EXIT
if [ $CG_VERSION = 1 ]; then
	oom_kills() { awk '$1 == "oom_kill" { print $2 }' "$CG/memory.oom_control"; }
else
	oom_kills() { awk '$1 == "oom_kill" { print $2 }' "$CG/memory.events"; }
fi
[ -n "$(oom_kills)" ] || fail "the test cgroup has no oom_kill counter (kernel older than 4.13?)"
note "cgroup v$CG_VERSION: $CG, limit 200 MiB, oom_kill $(oom_kills)"
json() {	# FILE EXPR: python3 expression over d (the parsed file)
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}
check_json() {	# FILE WHAT EXPR: EXPR over d must be true
	if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not ($3))" "$1"; then
		note "$2: yes"
	else
		check_failed "$2: no ($3, in $1)"
	fi
}
no_oom() {	# NAME: neither stderr nor the profile nor the JSON says OOM-killed
	grep -q 'OOM-killed' "$TMP/$1.err" &&
		check_failed "$1: stderr says OOM-killed: $(grep OOM "$TMP/$1.err")"
	go tool pprof -comments "$TMP/$1.pb.gz" >"$TMP/$1.comments" 2>&1 ||
		check_failed "$1: go tool pprof cannot read the profile"
	grep -q '^target .*OOM-killed' "$TMP/$1.comments" &&
		check_failed "$1: the profile says the target was OOM-killed"
	check_json "$TMP/$1.json" "$1: end.oom_killed is false" "d['end']['oom_killed'] is False"
}

# ---- 1. grow until the OOM killer kills it
before=$(oom_kills)
in_cg "$TRACER" -o "$TMP/grow.pb.gz" -- "$W" grow >"$TMP/grow.out" 2>"$TMP/grow.err"
rc=$?
after=$(oom_kills)
sed 's/^/    stderr: /' "$TMP/grow.err"
note "exit $rc; the cgroup's oom_kill went from $before to $after"
[ $rc = 137 ] || check_failed "grow: the tracer exited $rc, want 137 (SIGKILL)"
[ "$after" = $((before + 1)) ] ||
	fail "grow: the cgroup's oom_kill went from $before to $after: the kernel did not OOM-kill once (the test's premise)"
grep -q "was killed by signal 9 (Killed); OOM-killed (memory cgroup /$CG_NAME: memory[.a-z_]* oom_kill went from $before to $after)" "$TMP/grow.err" ||
	check_failed "grow: the summary line does not say OOM-killed with the counter"
go tool pprof -comments "$TMP/grow.pb.gz" >"$TMP/grow.comments" 2>&1 ||
	fail "grow: go tool pprof cannot read the profile: $(cat "$TMP/grow.comments")"
sed 's/^/    comment: /' "$TMP/grow.comments"
grep -q "^target was killed by signal 9 (Killed); OOM-killed (memory cgroup /$CG_NAME: memory[.a-z_]* oom_kill went from $before to $after)" "$TMP/grow.comments" ||
	check_failed "grow: the profile's comments do not say OOM-killed"
grep -q "^cgroup v$CG_VERSION /$CG_NAME after the target ended (.*): usage .*, peak .*, limit 200.0 MiB, oom_kill $after" "$TMP/grow.comments" ||
	check_failed "grow: the comments have no cgroup reading after the end"
grep -q "^agent memfd [0-9.]* [KM]iB resident of 1[0-9]\.[0-9] MiB of shared memory (the cgroup's shmem: [1-9]" "$TMP/grow.comments" ||
	check_failed "grow: the comments do not give the agent's memfd"
pprof_sum "$TMP/grow.pb.gz" leaf >"$TMP/grow.sum"
top=$(awk '!/^#/ && $5 > max { max = $5; f = $1 } END { print f, max }' "$TMP/grow.sum")
note "top in-use site: $top"
set -- $top
[ "$1" = oom_grow_block ] || check_failed "grow: the top in-use site is $1, want oom_grow_block"
# the program had up to 200 MiB less the tracer's and the memfd's share
[ "${2:-0}" -ge $((120 * MiB)) ] && [ "${2:-0}" -le $((210 * MiB)) ] ||
	check_failed "grow: oom_grow_block holds $2 bytes in use, want 120..210 MiB"
G="$TMP/grow.json"
check_json "$G" "end.oom_killed" "d['end']['oom_killed'] is True"
check_json "$G" "end.oom_kill has the counter's before and after" \
	"d['end']['oom_kill']['before'] == $before and d['end']['oom_kill']['after'] == $after"
check_json "$G" "end.target says OOM-killed" "'OOM-killed' in d['end']['target']"
check_json "$G" "a final cgroup reading, after the exit" "d['final']['after_exit'] is True"
check_json "$G" "the final reading comes after the last reading of the process" \
	"d['final']['unix_ns'] > d['unix_ns']"
check_json "$G" "the final reading is of our cgroup" \
	"d['final']['cgroup']['path'] == '/$CG_NAME' and d['final']['cgroup']['version'] == $CG_VERSION"
check_json "$G" "the final reading's oom_kill is $after" \
	"d['final']['cgroup']['common']['oom_kill'] == $after"
check_json "$G" "the final reading's peak is at the limit" \
	"d['final']['cgroup']['common']['peak'] >= $LIMIT - 16 * $MiB"
memfd=$(json "$G" "d['agent']['memfd_bytes']")
note "the agent's memfd: $memfd bytes"
check_json "$G" "the memfd is 10..20 MiB at the default rate, some of it resident" \
	"10 * $MiB <= d['agent']['memfd_size'] <= 20 * $MiB and 0 < d['agent']['memfd_bytes'] <= d['agent']['memfd_size']"
check_json "$G" "the cgroup is charged the memfd as shmem" \
	"d['cgroup']['common']['shmem'] >= d['agent']['memfd_bytes']"

# ---- 2. not OOM-killed: a normal exit
in_cg "$TRACER" -o "$TMP/exit.pb.gz" -- "$W" exit 50 >"$TMP/exit.out" 2>"$TMP/exit.err"
rc=$?
[ $rc = 0 ] || check_failed "exit: the tracer exited $rc, want 0"
grep -q "exited with status 0; wrote" "$TMP/exit.err" || check_failed "exit: no summary line"
no_oom exit

# a plain kill -9 from outside
before=$(oom_kills)
spawn "$TMP/kill.out" in_cg "$TRACER" -o "$TMP/kill.pb.gz" -- "$W" hold 50
tracer=$spawned_pid
wait_for "$TMP/kill.out" '^ready$' 20 || fail "kill: the program did not get ready"
child=
for p in $(cat "$CG/cgroup.procs"); do
	[ "$(cat /proc/$p/comm 2>/dev/null)" = oom ] && child=$p
done
[ -n "$child" ] || fail "kill: cannot find the traced program"
kill -KILL "$child"
reap "$tracer" 30
cp "$TMP/kill.out.err" "$TMP/kill.err"
sed 's/^/    stderr: /' "$TMP/kill.err"
[ "$reaped_rc" = 137 ] || check_failed "kill: the tracer exited $reaped_rc, want 137"
grep -q "was killed by signal 9 (Killed); wrote" "$TMP/kill.err" ||
	check_failed "kill: the summary line does not say killed by signal 9"
[ "$(oom_kills)" = "$before" ] || check_failed "kill: the cgroup's oom_kill moved"
no_oom kill

# a child OOM-killed, the program itself exits 0
before=$(oom_kills)
in_cg "$TRACER" -o "$TMP/child.pb.gz" -- "$W" child >"$TMP/child.out" 2>"$TMP/child.err"
rc=$?
after=$(oom_kills)
sed 's/^/    stderr: /' "$TMP/child.err"
cat "$TMP/child.out"
[ $rc = 0 ] || check_failed "child: the tracer exited $rc, want 0"
grep -q "child killed by signal 9" "$TMP/child.out" ||
	fail "child: the program's child was not killed by SIGKILL (the test's premise)"
[ "$after" -gt "$before" ] || fail "child: the cgroup's oom_kill did not move (the test's premise)"
no_oom child
grep -q "^the memory cgroup's OOM killer killed $((after - before)) process.* during the run, not the target" "$TMP/child.comments" ||
	check_failed "child: the comments do not say the cgroup killed another process"

# ---- 3. attached from outside the cgroup
before=$(oom_kills)
python3 - "$W" "$TRACER" "$TMP/att.pb.gz" "$CG" "$TMP/go" >"$TMP/att.err" 2>&1 <<'PY'
import os, subprocess, sys
w, tracer, out, cg, go = sys.argv[1:]
def into_cg():
    with open(cg + "/cgroup.procs", "w") as f:
        f.write(str(os.getpid()))
p = subprocess.Popen([w, "wait-grow", go], stdout=subprocess.PIPE,
                     preexec_fn=into_cg)
assert p.stdout.readline() == b"ready\n"
t = subprocess.Popen([tracer, "--pid", str(p.pid), "-o", out],
                     stderr=subprocess.PIPE)
while b"attached to process" not in t.stderr.readline():
    pass
open(go, "w").close()
err = t.communicate(timeout=60)[1].decode()
sys.stdout.write(err)
p.wait()                 # reaped only now: the tracer read the zombie
sys.exit(t.returncode)
PY
rc=$?
after=$(oom_kills)
sed 's/^/    stderr: /' "$TMP/att.err"
[ $rc = 0 ] || check_failed "attached: the tracer exited $rc, want 0"
[ "$after" = $((before + 1)) ] || fail "attached: the cgroup's oom_kill went from $before to $after (the test's premise)"
grep -q "was killed by signal 9 (Killed) while attached; OOM-killed (memory cgroup /$CG_NAME:" "$TMP/att.err" ||
	check_failed "attached: the summary line does not say OOM-killed"
go tool pprof -comments "$TMP/att.pb.gz" 2>&1 | grep -q '^target .*while attached; OOM-killed' ||
	check_failed "attached: the profile's comments do not say OOM-killed"
check_json "$TMP/att.json" "attached: end.oom_killed" "d['end']['oom_killed'] is True"
# the agent touched what of the memfd is resident: the target's cgroup is
# charged for it (docs/readings.md says whose cgroup is)
check_json "$TMP/att.json" "attached: the memfd is the target cgroup's shmem" \
	"d['cgroup']['common']['shmem'] >= d['agent']['memfd_bytes'] / 2"
finish
