#!/bin/sh
# run-exit-signal.sh - a program whose SIGTERM handler calls exit(), sent
# SIGTERM while it is inside malloc or free with the arena's lock held (a
# loop of 64 KiB blocks: beyond the thread cache, under the mmap
# threshold; an idle second thread, without which glibc takes no lock),
# still exits: the agent's exit path, which holds the exit for the
# tracer's last reading, must not take the allocator's lock on that
# thread (an exit path that read the allocator's statistics itself hung
# 4 runs in 10), and the stats thread, which may wait for that lock, is
# asked with a timeout.  Ten runs, each sent the signal once the loop
# runs, bounded; the profile is written, the status is the handler's
# exit(3).
. "$(dirname "$0")/lib.sh"
need cc pkill
attach_init
# a program hung in its exit outlives its tracer, killed by reap
trap 'pkill -KILL -f "^$TMP/exitsig" 2>/dev/null; attach_cleanup' EXIT

cat >"$TMP/exitsig.c" <<'EOF'
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
static void on_term(int sig) { (void)sig; exit(3); }
/* a second thread: glibc's malloc takes its arena's lock only then */
static void *idle(void *arg) { for (;;) pause(); return arg; }
int main(void)
{
	struct sigaction sa;
	void *volatile p;
	pthread_t th;
	sigset_t term;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	/* the signal for the allocating thread, not the idle one */
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &term, NULL);
	pthread_create(&th, NULL, idle, NULL);
	pthread_sigmask(SIG_UNBLOCK, &term, NULL);
	for (unsigned long i = 0;; i++) {
		p = malloc(65536);
		free(p);
		if (i == 10000) {	/* in the loop, at full speed */
			printf("ready\n");
			fflush(stdout);
		}
	}
}
EOF
cc -O1 -pthread -o "$TMP/exitsig" "$TMP/exitsig.c" || fail "cannot build the program"

i=1
while [ $i -le 10 ]; do
	spawn "$TMP/run$i.out" "$TRACER" -o "$TMP/run$i.pb.gz" -- "$TMP/exitsig"
	tracer=$spawned_pid
	wait_for "$TMP/run$i.out" '^ready$' 20 || fail "run $i: the program did not start"
	# ours only: the sanitized build runs this test at the same time
	pkill -TERM -x -P "$tracer" exitsig || fail "run $i: no program to signal"
	reap "$tracer" 30	# fails the test if the program hangs in its exit
	[ "$reaped_rc" = 3 ] ||
		{ cat "$TMP/run$i.out.err"; check_failed "run $i: status $reaped_rc, want 3"; }
	[ -s "$TMP/run$i.pb.gz" ] || check_failed "run $i: no profile"
	i=$((i + 1))
done
finish
