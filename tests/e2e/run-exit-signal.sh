#!/bin/sh
# run-exit-signal.sh - a program whose SIGTERM handler calls exit(), sent
# SIGTERM while it is inside malloc or free with the arena's lock held (a
# loop of 64 KiB blocks: beyond the thread cache, under the mmap
# threshold; an idle second thread, without which glibc takes no lock),
# still exits: the agent's exit path, which holds the exit
# for the tracer's last reading and, with no stats thread yet, reads the
# allocator's statistics itself, must not take the allocator's lock on a
# thread in a signal handler.  Ten runs at a rate that samples nothing
# (so no stats thread is made), each sent the signal once the loop runs
# and bounded; the profile is written, the status is the handler's
# exit(3).  Then which exit read the statistics: exit() from main must,
# exit() in the handler must not.
. "$TOP/tests/e2e/lib.sh"
need cc pkill python3
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
int main(int argc, char **argv)
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
		if (argc > 1 && i == 20000)
			return 0;	/* a normal exit */
		if (i == 10000) {	/* in the loop, at full speed */
			printf("ready\n");
			fflush(stdout);
		}
	}
}
EOF
cc -O1 -pthread -o "$TMP/exitsig" "$TMP/exitsig.c" || fail "cannot build the program"
# no sample, so no stats thread (it comes at a sample): the exit alone
# reads the allocator's statistics
NEVER=1099511627776

i=1
while [ $i -le 10 ]; do
	spawn "$TMP/run$i.out" "$TRACER" --rate $NEVER -o "$TMP/run$i.pb.gz" -- "$TMP/exitsig"
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
# which of the two exits read the allocator's statistics: exit() from
# main, with no stats thread yet, fills them in; exit() in the handler
# must not
python3 - "$TMP/run1.json" <<'PY' || check_failed "the handler's exit read the allocator"
import json, sys
a = json.load(open(sys.argv[1]))["allocator"]
print("--- exit in the handler: allocator", a.get("name"), "-", a.get("why"))
sys.exit(0 if a.get("name") == "unknown" else 1)
PY
"$TRACER" -q --rate $NEVER -o "$TMP/normal.pb.gz" -- "$TMP/exitsig" normal >/dev/null ||
	check_failed "the normal exit: status $?"
python3 - "$TMP/normal.json" <<'PY' || check_failed "a normal exit did not read the allocator"
import json, sys
d = json.load(open(sys.argv[1]))
a = d["allocator"]
print("--- exit from main:", d["end"]["reading"]["taken"], "- allocator", a.get("name"))
sys.exit(0 if a.get("name") == "glibc" and d["end"]["reading"]["taken"] == "at exit" else 1)
PY
finish
