#!/bin/sh
# run-death.sh - a program that dies while traced still gives its heap.
#
# tests/workloads/die.c keeps 8 x 1 MiB (die_keep) and 4 x 64 KiB
# (die_keep_small), frees 2 x 256 KiB (die_freed), then dies: SIGSEGV,
# abort() (SIGABRT), SIGKILL from the test (as the OOM killer sends), or
# _exit(7) without destructors.  Under the tracer at --rate 1 each time
# the profile is written, holds exactly what the program held at its death
# as in use (a leak report at exit), says in its comments how the program
# ended, and the tracer says so on stderr and exits with the program's
# status as a shell would report it (128+N for signal N); none of these
# is called an OOM kill.  Attached to a program that is then killed, the
# tracer says how it ended too.
. "$(dirname "$0")/lib.sh"
need python3 pgrep go
attach_init

W="$WORKLOADS/die"
MiB=1048576

check_heap() {	# NAME
	pprof_sum "$TMP/$1.pb.gz" leaf >"$TMP/$1.sum"
	check_site "$TMP/$1.sum" die_keep 8 $((8 * MiB)) 8 $((8 * MiB))
	check_site "$TMP/$1.sum" die_keep_small 4 $((256 * 1024)) 4 $((256 * 1024))
	check_site "$TMP/$1.sum" die_freed 2 $((512 * 1024)) 0 0
	check_no_loss "$TMP/$1.sum"
}

# expect NAME RC ENDED: the tracer's status and how it says the program
# ended - and none of these deaths is an OOM kill (run-oom.sh has those)
expect() {
	[ "$trace_rc" = "$2" ] || check_failed "$1: the tracer exited $trace_rc, want $2"
	grep -q "$3" "$TMP/$1.out.err" || check_failed "$1: stderr does not say '$3'"
	grep -q "^# target $3" "$TMP/$1.sum" || check_failed "$1: the profile's comments do not say 'target $3'"
	grep -q "OOM-killed" "$TMP/$1.out.err" "$TMP/$1.sum" &&
		check_failed "$1: said to be OOM-killed: $(grep -h OOM "$TMP/$1.out.err" "$TMP/$1.sum")"
}

for case in "segv 139 was killed by signal 11 (Segmentation fault)" \
	    "abort 134 was killed by signal 6 (Aborted)" \
	    "exit 7 exited with status 7"; do
	set -- $case
	mode=$1 rc=$2
	shift 2
	note "$mode"
	trace "$TMP/$mode.out" "$TMP/$mode.pb.gz" --rate 1 -- "$W" $mode
	[ -s "$TMP/$mode.pb.gz" ] || { check_failed "$mode: no profile written"; continue; }
	check_heap $mode
	expect $mode $rc "$*"
done

note kill
spawn "$TMP/kill.out" "$TRACER" --rate 1 -o "$TMP/kill.pb.gz" -- "$W" kill
tracer=$spawned_pid
wait_for "$TMP/kill.out" '^ready$' 20 || fail "the program did not get ready"
child=$(pgrep -P "$tracer" -x die | head -n 1)
[ -n "$child" ] || fail "cannot find the traced program"
kill -KILL "$child"
i=0
while kill -0 "$tracer" 2>/dev/null && [ $i -lt 1000 ]; do sleep 0.01; i=$((i + 1)); done
wait "$tracer"
trace_rc=$?
sed 's/^/    stderr: /' "$TMP/kill.out.err"
[ -s "$TMP/kill.pb.gz" ] || fail "kill: no profile written"
check_heap kill
expect kill 137 "was killed by signal 9 (Killed)"
# attached, then killed: the tracer is not its parent, but reads how it
# ended from the zombie (the parent here, python, reaps only at wait())
note "kill while attached"
python3 - "$W" "$TRACER" "$TMP/att.pb.gz" >"$TMP/att.err" 2>&1 <<'PY' ||
import os, signal, subprocess, sys, time
w, tracer, out = sys.argv[1:]
p = subprocess.Popen([w, "kill"], stdout=subprocess.PIPE)
assert p.stdout.readline() == b"ready\n"
t = subprocess.Popen([tracer, "--pid", str(p.pid), "-o", out], stderr=subprocess.PIPE)
while b"attached to process" not in t.stderr.readline():
    pass
os.kill(p.pid, signal.SIGKILL)
err = t.communicate(timeout=20)[1].decode()
sys.stdout.write(err)
p.wait()
sys.exit(t.returncode)
PY
	check_failed "attached: the tracer exited $?"
sed 's/^/    stderr: /' "$TMP/att.err"
grep -q "was killed by signal 9 (Killed) while attached" "$TMP/att.err" ||
	check_failed "attached: stderr does not say the target was killed by signal 9"
grep -q "OOM-killed" "$TMP/att.err" && check_failed "attached: a kill -9 said to be an OOM kill"
[ -s "$TMP/att.pb.gz" ] || check_failed "attached: no profile written"

# never a half-written file: nothing but the outputs in the directory
[ -z "$(ls "$TMP" | grep '\.tmp\.')" ] || check_failed "a temporary file was left: $(ls "$TMP")"
finish
