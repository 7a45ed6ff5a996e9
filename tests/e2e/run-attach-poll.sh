#!/bin/sh
# run-attach-poll.sh - attach to a single-threaded program that sits
# blocked in one system call (tests/workloads/attach-idle.c: poll, read on
# a pipe, nanosleep, epoll_wait), profile the allocations it makes on
# command (some commands written to its pipe, some sent as signals, so its
# handler runs while attached), detach, and check that it carries on:
# back in the same system call, still obeying commands, finishing with its
# own check of its data.  At --rate 1 the attached part is exact.
. "$(dirname "$0")/lib.sh"
need go python3
attach_init

W="$WORKLOADS/attach-idle"
K=6	# commands by pipe while attached, and as many by signal

# syscall_nr PID: the number of the system call the main thread waits in.
syscall_nr() {
	cut -d' ' -f1 "/proc/$1/syscall" 2>/dev/null
}

# send_signal PID SIG DONE: send SIG, wait for "done DONE".
send_signal() {
	kill -s "$2" "$1" || fail "kill -$2 $1"
	wait_for "$TMP/$mode.out" "^done $3\$" 10 ||
		fail "$mode: the program did not handle signal $2 (no 'done $3')"
}

for mode in poll read nanosleep epoll; do
	note "$mode"
	rm -f "$TMP/cmd"
	mkfifo "$TMP/cmd" || fail "mkfifo"
	spawn "$TMP/$mode.out" "$W" $mode "$TMP/cmd"
	target=$spawned_pid
	wait_for "$TMP/$mode.out" "^attach-idle $mode: ready" 10 ||
		fail "$mode: attach-idle did not start: $(cat "$TMP/$mode.out.err")"
	sleep 0.05	# let it settle into its system call
	before=$(syscall_nr "$target")

	# epoll: detach on --duration rather than SIGTERM (longer than the
	# commands take, on a slower machine too)
	if [ $mode = epoll ]; then
		attach_bg "$target" "$TMP/$mode.pb.gz" "$TMP/$mode.err" --rate 1 \
			--duration $((2 * TIME_SCALE))
	else
		attach_bg "$target" "$TMP/$mode.pb.gz" "$TMP/$mode.err" --rate 1
	fi
	grep -q "attached to process $target" "$TMP/$mode.err" ||
		fail "$mode: the tracer did not inject the agent: $(cat "$TMP/$mode.err")"
	# K commands through the pipe, then K signals, one at a time
	# (signals of one kind do not queue).
	i=0
	while [ $i -lt $K ]; do printf a >"$TMP/cmd"; i=$((i + 1)); done
	wait_for "$TMP/$mode.out" "^done $K\$" 10 ||
		fail "$mode: the program did not carry out $K commands while attached"
	while [ $i -lt $((2 * K)) ]; do
		i=$((i + 1))
		send_signal "$target" USR1 $i
	done
	# Detach only once the program waits in its system call again (the
	# tracer borrows an idle thread to unhook; a thread caught running,
	# or still in restart_syscall after the attach, is not one).
	n=200
	while [ "$(syscall_nr "$target")" != "$before" ] && [ $n -gt 0 ]; do
		sleep 0.01
		n=$((n - 1))
	done
	if [ $mode = epoll ]; then
		running "$tracer_pid" ||
			fail "$mode: the tracer had detached (--duration) before the commands were done"
		reap "$tracer_pid" 30
		tracer_rc=$reaped_rc
	else
		stop_tracer
	fi
	sed 's/^/    tracer: /' "$TMP/$mode.err"
	[ "$tracer_rc" = 0 ] || fail "$mode: the tracer exited $tracer_rc, want 0"
	grep -q "process $target was detached" "$TMP/$mode.err" ||
		fail "$mode: the tracer did not say it detached"
	running "$target" || fail "$mode: the target died: $(cat "$TMP/$mode.out.err")"

	# Handed back as it was: waiting in the same system call (or in
	# restart_syscall, 219, which is how the kernel resumes a poll or a
	# sleep interrupted by a ptrace stop with its time left).
	# (nanosleep wakes every 20 ms: look a few times)
	n=100
	after=$(syscall_nr "$target")
	while [ "$after" != "$before" ] && [ "$after" != 219 ] && [ $n -gt 0 ]; do
		sleep 0.01
		after=$(syscall_nr "$target")
		n=$((n - 1))
	done
	[ "$before" = "$after" ] || [ "$after" = 219 ] ||
		check_failed "$mode: before the attach the program waited in system call $before, after the detach in $after"

	# And it goes on: more commands, a free of everything, and the end.
	printf aaa >"$TMP/cmd"
	wait_for "$TMP/$mode.out" "^done $((2 * K + 3))\$" 10 ||
		fail "$mode: the program does not obey commands after the detach"
	kill -HUP "$target"
	wait_for "$TMP/$mode.out" "^done $((2 * K + 4))\$" 10 ||
		fail "$mode: the program does not handle signals after the detach"
	printf q >"$TMP/cmd"
	reap "$target" 10
	tail -n 1 "$TMP/$mode.out"
	[ "$reaped_rc" = 0 ] || fail "$mode: attach-idle exited $reaped_rc, want 0: $(cat "$TMP/$mode.out.err")"
	n=$((2 * K + 3))
	grep -qx "attach-idle $mode: $n allocations, $n freed, 0 kept, check ok" "$TMP/$mode.out" ||
		check_failed "$mode: wrong final line: $(tail -n 1 "$TMP/$mode.out") (want $n allocations, $n freed, 0 kept, check ok)"

	pprof_sum "$TMP/$mode.pb.gz" leaf >"$TMP/leaf.txt"
	cat "$TMP/leaf.txt"
	check_no_loss "$TMP/leaf.txt"
	check_no_negative "$TMP/raw.txt"
	n=$((2 * K))
	check_site "$TMP/leaf.txt" tick_keep $n $((n * 4000)) $n $((n * 4000))
	check_site "$TMP/leaf.txt" tick_churn $n $((n * 100)) 0 0
	check_absent "$TMP/leaf.txt" release_all
done
finish
