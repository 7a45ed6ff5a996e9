#!/bin/sh
# run-attach-refuse.sh - every case `pprof-alloc --pid` must refuse: the
# tracer exits non-zero with one line on stderr saying why, and the target
# is untouched: still running (or still stopped, if it was), no agent
# mapped, no tracer left attached, and it still does what it is told.
#
#   no such process            a pid that has just exited
#   not permitted              the tracer run as nobody against a root
#                              process; another tracer (strace) attached
#   statically linked          tests/workloads/attach-idle.c built -static
#   not this architecture      a 32-bit i386 (or, on aarch64, A32) program
#                              (assembled here)
#   stopped                    a target stopped with SIGSTOP
#   seccomp                    a target under a seccomp filter that kills at
#                              memfd_create (the agent's, not its own); the
#                              same filter on a second thread only (the
#                              main thread shows none); a filter that makes
#                              memfd_create fail (the agent's ring needs it)
#   agent not readable         PPROF_ALLOC_AGENT names a copy of the agent
#                              the target's user (nobody) cannot read: the
#                              file's mode, or a directory it cannot enter
#                              (refused up front, as not readable, rather
#                              than found out by a failing dlopen in the
#                              target)
. "$(dirname "$0")/lib.sh"
readable_build	# (run as nobody)
need python3
attach_init

W="$WORKLOADS/attach-idle"
CC=${CC:-cc}
chmod 755 "$TMP"	# the targets run as nobody must reach the agent copies
# the profiles go where a tracer run as nobody may write them: refused for
# the target, not for its output
mkdir "$TMP/out" && chmod 777 "$TMP/out" || fail "mkdir"

# start_target NAME CMD...: start a target (attach-idle waiting in poll on
# an anonymous pipe, driven by signals) and wait for its "ready"; its pid
# is in $target.
start_target() {
	_name=$1; shift
	spawn "$TMP/$_name.out" "$@"
	target=$spawned_pid
	wait_for "$TMP/$_name.out" '^attach-idle .*: ready' 10 ||
		fail "$_name: the target did not start: $(cat "$TMP/$_name.out.err")"
	sleep 0.05
}

# refused NAME PID REGEX [ENV=VALUE...] [CMD...]: run the tracer against
# PID (bounded in time), through env with these variables, and through
# CMD if given (setpriv ...); it must exit non-zero with one line of
# stderr matching REGEX (grep -Ei), and write no profile.
refused() {
	_name=$1 _pid=$2 _re=$3; shift 3
	timeout -s KILL 30 env "$@" "$TRACER" --pid "$_pid" --duration 1 \
		-o "$TMP/out/$_name.pb.gz" >"$TMP/$_name.tracer.out" 2>"$TMP/$_name.tracer.err"
	_rc=$?
	sed "s/^/    $_name: tracer: /" "$TMP/$_name.tracer.err"
	[ "$_rc" != 0 ] || check_failed "$_name: the tracer exited 0, want a refusal"
	[ "$_rc" != 137 ] || check_failed "$_name: the tracer hung (killed after 30 s)"
	[ "$(wc -l <"$TMP/$_name.tracer.err")" = 1 ] ||
		check_failed "$_name: want one line on stderr, got $(wc -l <"$TMP/$_name.tracer.err")"
	grep -Eiq -- "$_re" "$TMP/$_name.tracer.err" ||
		check_failed "$_name: the message does not say why (want /$_re/): $(head -n 1 "$TMP/$_name.tracer.err")"
	[ ! -e "$TMP/out/$_name.pb.gz" ] || check_failed "$_name: a profile was written"
}

# untouched NAME PID [stopped]: no agent, no tracer, and it runs (or is
# still stopped).
untouched() {
	if [ "${3:-}" = stopped ]; then
		_st=$(sed 's/.*) //' "/proc/$2/stat" | cut -c1)
		[ "$_st" = T ] || check_failed "$1: the stopped target is now in state '$_st', want still stopped (T)"
	else
		running "$2" || { check_failed "$1: the target is gone"; return; }
	fi
	agent_mapped "$2" &&
		check_failed "$1: the agent is mapped in the target: $(grep pprof-alloc "/proc/$2/maps" | head -n 1)"
	ls -l "/proc/$2/fd" 2>/dev/null | grep -q 'memfd:pprof-alloc' &&
		check_failed "$1: the target has an agent memfd"
	_tp=$(sed -n 's/^TracerPid:[[:space:]]*//p' "/proc/$2/status")
	[ "$_tp" = 0 ] || [ "${4:-}" = "$_tp" ] ||
		check_failed "$1: process $_tp is left ptrace-attached to the target"
}

# obeys NAME PID N: the target still handles a command (SIGUSR1 -> "done N").
obeys() {
	kill -USR1 "$2"
	wait_for "$TMP/$1.out" "^done $3\$" 10 ||
		check_failed "$1: the target does not handle commands any more"
}

# finish_target NAME PID N: SIGUSR2 makes it check its data and exit 0.
finish_target() {
	kill -USR2 "$2"
	reap "$2" 10
	[ "$reaped_rc" = 0 ] || check_failed "$1: the target exited $reaped_rc, want 0"
	grep -q "^attach-idle .*: $3 allocations, 0 freed, $3 kept, check ok\$" "$TMP/$1.out" ||
		check_failed "$1: wrong last line from the target: $(tail -n 1 "$TMP/$1.out")"
}

# ---- no such process -----------------------------------------------------
note "no such process"
sh -c 'exit 0' &
gone=$!
wait $gone
running $gone && fail "pid $gone still exists"
refused nosuch $gone "no (such )?process"

# ---- not permitted: another user's process ------------------------------
note "not permitted: the tracer as nobody, the target as root"
need setpriv
start_target perm "$W" poll -
refused perm $target "CAP_SYS_PTRACE" -- \
	setpriv --reuid=nobody --regid=nogroup --clear-groups
untouched perm $target
obeys perm $target 1
finish_target perm $target 1

# ---- not permitted: another tracer is attached --------------------------
note "not permitted: strace is attached"
need strace
start_target traced "$W" poll -
spawn "$TMP/strace.out" strace -p $target -o /dev/null
strace_pid=$spawned_pid
wait_for "/proc/$target/status" "^TracerPid:[[:space:]]*$strace_pid\$" 10 ||
	fail "strace did not attach to the target"
refused traced $target "another tracer|already (being )?traced|permi"
untouched traced $target "" $strace_pid
kill -TERM $strace_pid
reap $strace_pid 10
obeys traced $target 1
untouched traced $target
finish_target traced $target 1

# ---- statically linked ---------------------------------------------------
note "statically linked"
$CC -static -O1 -D_GNU_SOURCE -o "$TMP/attach-idle-static" "$TOP/tests/workloads/attach-idle.c" ||
	fail "cannot build a static program (is the static libc, libc6-dev's libc.a, installed?)"
start_target static "$TMP/attach-idle-static" poll -
refused static $target "static"
untouched static $target
obeys static $target 1
finish_target static $target 1

# ---- not this architecture ---------------------------------------------------
# a 32-bit program of this machine's: i386 on x86-64, A32 on aarch64
if [ "$(uname -m)" = aarch64 ]; then
	arch32=arm32 AS32="arm-linux-gnueabihf-as" LD32="arm-linux-gnueabihf-ld"
	cat >"$TMP/$arch32.s" <<'EOF'
	.globl _start
	.text
	.arm
_start:
	mov r7, #4		@ write(1, ready, len)
	mov r0, #1
	ldr r1, =ready
	ldr r2, =len
	svc #0
1:	mov r7, #162		@ nanosleep(&ts, 0), for ever
	ldr r0, =ts
	mov r1, #0
	svc #0
	b 1b
	.data
ts:	.long 1, 0
ready:	.ascii "attach-idle arm32: ready\n"
	len = . - ready
	.section .note.GNU-stack,"",%progbits
EOF
else
	arch32=i386 AS32="as --32" LD32="ld -m elf_i386"
	cat >"$TMP/$arch32.s" <<'EOF'
	.globl _start
	.text
_start:
	movl $4, %eax		# write(1, ready, len)
	movl $1, %ebx
	leal ready, %ecx
	movl $len, %edx
	int $0x80
1:	movl $162, %eax		# nanosleep(&ts, 0), for ever
	leal ts, %ebx
	xorl %ecx, %ecx
	int $0x80
	jmp 1b
	.data
ts:	.long 1, 0
ready:	.ascii "attach-idle i386: ready\n"
	len = . - ready
	.section .note.GNU-stack,"",@progbits
EOF
fi
note "a 32-bit ($arch32) program"
{ $AS32 -o "$TMP/$arch32.o" "$TMP/$arch32.s" &&
	$LD32 -o "$TMP/$arch32" "$TMP/$arch32.o"; } ||
	fail "cannot assemble a 32-bit $arch32 program ($AS32: binutils for it needed)"
# a kernel built without 32-bit emulation runs no 32-bit program at all:
# there, no such target can exist to be refused
# (execv itself: a shell would take ENOEXEC for a script's and run it so)
timeout -s KILL $((2 * TIME_SCALE)) python3 -c 'import os, sys
try:
	os.execv(sys.argv[1], sys.argv[1:])
except OSError as e:
	print(os.strerror(e.errno))' "$TMP/$arch32" >"$TMP/$arch32.probe" 2>&1
if grep -q ready "$TMP/$arch32.probe"; then
	start_target $arch32 "$TMP/$arch32"
	refused $arch32 $target "$(uname -m)|architecture|32-bit"
	untouched $arch32 $target
elif grep -q 'Exec format error' "$TMP/$arch32.probe"; then
	note "this kernel runs no 32-bit programs (no 32-bit emulation): no $arch32 target can exist"
else
	fail "$arch32: the program neither ran nor was refused by the kernel: $(cat "$TMP/$arch32.probe")"
fi

# ---- stopped -----------------------------------------------------------
note "stopped with SIGSTOP"
start_target stopped "$W" poll -
kill -STOP $target
wait_for "/proc/$target/stat" '\) T ' 10 || fail "the target did not stop"
refused stopped $target "stopped"
untouched stopped $target stopped
kill -CONT $target
wait_for "/proc/$target/stat" '\) S ' 10 || check_failed "stopped: the target did not resume on SIGCONT"
obeys stopped $target 1
finish_target stopped $target 1

# ---- seccomp -----------------------------------------------------------
note "under a seccomp filter"
start_target seccomp "$W" poll - seccomp
grep -q '^Seccomp:[[:space:]]*2' "/proc/$target/status" || fail "the target is not under a seccomp filter"
refused seccomp $target "seccomp filter may kill it at memfd_create"
untouched seccomp $target
obeys seccomp $target 1
finish_target seccomp $target 1

note "a seccomp filter on another thread than the main one"
start_target seccomp-thread "$W" poll - seccomp-thread
grep -q '^Seccomp:[[:space:]]*0' "/proc/$target/status" || fail "the main thread is under a filter: the test proves nothing"
refused seccomp-thread $target "seccomp filter may kill it at memfd_create"
untouched seccomp-thread $target
obeys seccomp-thread $target 1
finish_target seccomp-thread $target 1

note "a seccomp filter that makes memfd_create fail"
start_target seccomp-errno "$BUILD/tests/tools/seccomp-run" no-memfd "$W" poll -
refused seccomp-errno $target "forbids memfd_create"
untouched seccomp-errno $target
obeys seccomp-errno $target 1
finish_target seccomp-errno $target 1

# ---- the agent not readable by the target's user ------------------------
# The tracer runs as root (it may read the file); the target as nobody.
note "the agent not readable by the target's user"
mkdir "$TMP/closed-file" "$TMP/closed-dir" || fail "mkdir"
cp "$AGENT" "$TMP/closed-file/libpprof-alloc.so" &&
	chmod 755 "$TMP/closed-file" && chmod 600 "$TMP/closed-file/libpprof-alloc.so" ||
	fail "cannot copy the agent"
cp "$AGENT" "$TMP/closed-dir/libpprof-alloc.so" &&
	chmod 700 "$TMP/closed-dir" && chmod 644 "$TMP/closed-dir/libpprof-alloc.so" ||
	fail "cannot copy the agent"
for how in file dir; do
	name=unreadable-$how
	start_target $name setpriv --reuid=nobody --regid=nogroup --clear-groups "$W" poll -
	[ "$(sed -n 's/^Uid:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$target/status")" != 0 ] ||
		fail "$name: the target does not run as nobody"
	refused $name $target "not readable" \
		PPROF_ALLOC_AGENT="$TMP/closed-$how/libpprof-alloc.so"
	untouched $name $target
	obeys $name $target 1
	finish_target $name $target 1
done
finish
