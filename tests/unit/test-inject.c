// SPDX-License-Identifier: MIT
/*
 * test-inject.c - remote calls into a real child process.
 *
 * The child (forked, so its libc is at the same addresses as ours) has a
 * main thread looping in poll() and a second thread spinning; both count
 * their progress in shared memory.  The test borrows the main thread and
 * checks: the idle thread is the one picked, and found stopped inside its
 * poll (the spinning one, seized too, is not idle); calls return the right
 * values (strlen of bytes we wrote into its stack, getpid); a signal sent
 * during a call is delivered after it, not lost; a call that overruns its
 * timeout is reported and the thread let go to finish it and come back on
 * its own; the spinning thread never stops; the call stub is mapped once
 * and found again by later borrows; and afterwards the main thread goes
 * back to its poll loop as if nothing happened.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"
#include "elf/maps.h"
#include "tracer/attach/callstub.h"
#include "tracer/attach/inject.h"

/* Anonymous one-page r-x mappings of pid: the stub, or others like it. */
static int stub_like_pages(pid_t pid)
{
	struct proc_maps *pm;
	size_t i;
	int n = 0;

	CHECK_EQ_INT(proc_maps__read(pid, &pm), 0);
	for (i = 0; i < pm->count; i++)
		n += !pm->entries[i].path[0] &&
		     pm->entries[i].end - pm->entries[i].start == CALLSTUB_PAGE &&
		     pm->entries[i].prot == (MAPS_PROT_READ | MAPS_PROT_EXEC);
	proc_maps__free(pm);
	return n;
}

struct shared {
	volatile long polls;
	volatile long spins;
	volatile int usr1;
	volatile int stop;
	volatile pid_t main_tid;
	volatile int hold, in_handler;	/* SIGUSR2: wait in the handler */
	volatile int stale, in_stale;	/* poll beside a stale restorer */
	volatile uint64_t restorer;	/* the one the tracer found */
	volatile uint64_t handler_ret;	/* where a handler returns to */
};

static struct shared *sh;

static void on_usr1(int sig)
{
	(void)sig;
	sh->usr1++;
}

/* a handler that waits in poll, as a crash handler that sleeps does */
static void on_usr2(int sig)
{
	(void)sig;
	sh->handler_ret = (uint64_t)(uintptr_t)__builtin_return_address(0);
	sh->in_handler = 1;
	while (sh->hold)
		poll(NULL, 0, 20);
	sh->in_handler = 0;
}

/* poll with the restorer's address in a buffer on the stack, as a
 * buffer nobody cleared may hold it: no signal frame */
__attribute__((noinline)) static void stale_poll(void)
{
	volatile uint64_t buf[64];
	int i;

	for (i = 0; i < 64; i++)
		buf[i] = sh->restorer;
	sh->in_stale = 1;
	while (sh->stale)
		poll(NULL, 0, 20);
	sh->in_stale = buf[0] == 0;
}

static void *spinner(void *arg)
{
	(void)arg;
	while (!sh->stop)
		sh->spins++;
	return NULL;
}

static void child(void)
{
	pthread_t t;

	prctl(PR_SET_PDEATHSIG, SIGKILL);	/* a failed test leaves no spinner */
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	sh->main_tid = (pid_t)syscall(SYS_gettid);
	pthread_create(&t, NULL, spinner, NULL);
	while (!sh->stop) {
		if (sh->stale)
			stale_poll();
		poll(NULL, 0, 20);
		sh->polls++;
	}
	pthread_join(t, NULL);
	_exit(0);
}

static void wait_polls(long n)
{
	long start = sh->polls;
	int i;

	for (i = 0; i < 500 && sh->polls < start + n; i++)
		usleep(10000);
	CHECK(sh->polls >= start + n);
}

int main(void)
{
	struct remote r;
	const char *why = NULL;
	uint64_t ret, args[2], at, sc, restorer;
	long spins, polls;
	pid_t pid, tid;
	int pages, tries;
	int status;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid)
		child();
	wait_polls(3);
	CHECK_EQ_INT(callstub__gadgets(pid, &sc, &restorer), 0);

	/* the one in poll; on a busy machine it may be on a run queue
	 * between two polls (-EBUSY), so ask again then */
	for (tries = 0; tries < 200; tries++) {
		tid = remote__pick_thread(pid, restorer);
		if (tid != -EBUSY)
			break;
		usleep(5000);
	}
	CHECK_EQ_INT(tid, sh->main_tid);
	CHECK_EQ_INT(remote__pick_thread(999999999, restorer), -ESRCH);

	CHECK_EQ_INT(callstub__find(pid, &at), -ENOENT);
	pages = stub_like_pages(pid);
	CHECK_EQ_INT(remote__seize(&r, pid, tid, 2000, &why), 0);
	CHECK(remote__idle(&r, restorer));	/* stopped inside its poll */
	spins = sh->spins;

	/* arguments written on the thread's stack, below the red zone */
	at = remote__scratch(&r, 16);
	CHECK(at < mregs__sp(&r.saved) - 128);
	CHECK_EQ_INT(remote__write(&r, at, "hello, target", 14), 0);
	args[0] = at;
	CHECK_EQ_INT(remote__call(&r, (uintptr_t)strlen, args, 1, &ret, 2000,
				  &why), 0);
	CHECK_EQ_INT(ret, 13);
	CHECK_EQ_INT(remote__call(&r, (uintptr_t)getpid, NULL, 0, &ret, 2000,
				  &why), 0);
	CHECK_EQ_INT(ret, pid);
	CHECK(r.stub != 0);
	CHECK_EQ_INT(callstub__find(pid, &at), 0);
	CHECK_EQ_INT(at, r.stub);
	CHECK_EQ_INT(stub_like_pages(pid), pages + 1);

	/* a signal during a call: kept, delivered after release */
	args[0] = 300000;
	{
		pid_t killer = fork();

		if (!killer) {
			usleep(100000);
			syscall(SYS_tgkill, pid, tid, SIGUSR1);
			_exit(0);
		}
		CHECK_EQ_INT(remote__call(&r, (uintptr_t)usleep, args, 1, &ret,
					  3000, &why), 0);
		waitpid(killer, &status, 0);
	}
	CHECK_EQ_INT(ret, 0);		/* usleep was not interrupted */
	CHECK_EQ_INT(sh->usr1, 0);	/* not yet */

	/* a call that overruns its timeout is reported */
	args[0] = 2000000;
	polls = sh->polls;
	CHECK_EQ_INT(remote__call(&r, (uintptr_t)usleep, args, 1, &ret, 200,
				  &why), -ETIMEDOUT);
	CHECK(why != NULL);
	CHECK(!r.seized);		/* let go: it finishes the sleep */
	CHECK_EQ_INT(sh->polls, polls);

	CHECK(sh->spins > spins);	/* the other thread ran all along */
	CHECK_EQ_INT(remote__release(&r), 0);
	CHECK(r.longest_stop_ns > 0);

	/* after release: the signal arrives, the poll loop goes on */
	wait_polls(5);
	CHECK_EQ_INT(sh->usr1, 1);

	/* and it can be borrowed again */
	tid = remote__pick_thread(pid, restorer);
	CHECK_EQ_INT(remote__seize(&r, pid, tid, 2000, &why), 0);
	CHECK_EQ_INT(remote__call(&r, (uintptr_t)getpid, NULL, 0, &ret, 2000,
				  &why), 0);
	CHECK_EQ_INT(ret, pid);
	CHECK_EQ_INT(remote__release(&r), 0);
	CHECK_EQ_INT(stub_like_pages(pid), pages + 1);	/* the same stub */
	wait_polls(3);

	/* the spinning thread stops in user code, in no system call: not
	 * idle, and let go untouched */
	{
		char path[64];
		struct dirent *d;
		pid_t spinner_tid = 0;
		DIR *dir;

		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
		dir = opendir(path);
		CHECK(dir != NULL);
		while ((d = readdir(dir)))
			if (atoi(d->d_name) > 0 && atoi(d->d_name) != sh->main_tid)
				spinner_tid = atoi(d->d_name);
		closedir(dir);
		CHECK(spinner_tid > 0);
		CHECK_EQ_INT(remote__seize(&r, pid, spinner_tid, 2000, &why), 0);
		CHECK(!remote__idle(&r, restorer));
		CHECK_EQ_INT(remote__release(&r), 0);
		spins = sh->spins;
		usleep(20000);
		CHECK(sh->spins > spins);
		wait_polls(2);
	}

	/* the same poll inside a signal handler, which may have interrupted
	 * the allocator: not picked, not idle once seized (without the
	 * restorer to look for, it would be) */
	sh->hold = 1;
	CHECK_EQ_INT((int)syscall(SYS_tgkill, pid, sh->main_tid, SIGUSR2), 0);
	for (int i = 0; i < 500 && !sh->in_handler; i++)
		usleep(10000);
	CHECK(sh->in_handler);
	/* the restorer the tracer found is the one handlers return to */
	CHECK(sh->handler_ret == restorer);
	usleep(50000);			/* into its poll */
	{
		int found = 0, picked_in_handler = 0;

		/* found when it is in its poll (not waiting for a CPU) */
		for (int k = 0; k < 200 && !found; k++) {
			found = remote__pick_thread(pid, 0) == sh->main_tid;
			if (!found)
				usleep(5000);
		}
		CHECK(found);
		for (int k = 0; k < 20; k++) {
			picked_in_handler += remote__pick_thread(pid, restorer) ==
					     sh->main_tid;
			usleep(5000);
		}
		CHECK_EQ_INT(picked_in_handler, 0);
	}
	CHECK_EQ_INT(remote__seize(&r, pid, sh->main_tid, 2000, &why), 0);
	CHECK(!remote__idle(&r, restorer));
	CHECK_EQ_INT(remote__release(&r), 0);
	sh->hold = 0;
	for (int i = 0; i < 500 && sh->in_handler; i++)
		usleep(10000);
	CHECK(!sh->in_handler);
	wait_polls(2);

	/* the restorer's address in a buffer is no handler: picked */
	sh->restorer = restorer;
	sh->stale = 1;
	for (int i = 0; i < 500 && !sh->in_stale; i++)
		usleep(10000);
	CHECK(sh->in_stale);
	{
		int found = 0;

		for (int k = 0; k < 200 && !found; k++) {
			found = remote__pick_thread(pid, restorer) == sh->main_tid;
			if (!found)
				usleep(5000);
		}
		CHECK(found);
	}
	sh->stale = 0;
	wait_polls(2);

	sh->stop = 1;
	CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_SUMMARY("test-inject");
	return 0;
}
