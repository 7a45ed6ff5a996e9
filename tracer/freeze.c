// SPDX-License-Identifier: MIT
/*
 * freeze.c - stop every thread of a process for a moment, and let go.
 *
 * Patching code another thread may be executing is only safe while no
 * thread runs: each thread is seized (PTRACE_SEIZE, no options) and
 * interrupted, and the task list read again until a pass finds no thread
 * it has not stopped - a thread created meanwhile by one still running is
 * caught by the next pass.  A thread that was about to take a signal stops
 * in its signal-delivery-stop instead; the signal is delivered when it is
 * let go.  Threads gone meanwhile are simply left out.  Registers are read
 * at the stop, so the caller can check where each thread stands.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include "freeze.h"
#include "inject.h"

#define FREEZE_PASSES	16
#define FREEZE_STOP_MS	1000

static bool known(const struct freeze *f, pid_t tid)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (f->t[i].tid == tid)
			return true;
	return false;
}

/* Seize and stop tid; 0, 1 (gone), or -errno with why. */
static int stop_one(struct freeze *f, pid_t tid, char *why, size_t size)
{
	struct frozen *t;
	int status, err;

	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		struct frozen *m = realloc(f->t, cap * sizeof(*m));

		if (!m)
			return -ENOMEM;
		f->t = m;
		f->cap = cap;
	}
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL)) {
		err = -errno;
		if (err == -ESRCH)
			return 1;
		snprintf(why, size, "cannot seize thread %d: %s", (int)tid,
			 strerror(-err));
		return err;
	}
	t = &f->t[f->n++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) ||
	    remote__wait_thread(tid, &status, FREEZE_STOP_MS) ||
	    !WIFSTOPPED(status)) {
		err = errno == ESRCH ? 1 : -ETIMEDOUT;
		if (err == 1) {
			f->n--;		/* gone: the kernel let it go */
			return 1;
		}
		snprintf(why, size, "thread %d did not stop in time", (int)tid);
		t->running = true;
		return err;
	}
	if ((status >> 16) != PTRACE_EVENT_STOP)
		t->sig = WSTOPSIG(status);
	if (ptrace(PTRACE_GETREGS, tid, NULL, &t->regs)) {
		err = -errno;
		snprintf(why, size, "cannot read thread %d's registers: %s",
			 (int)tid, strerror(-err));
		return err;
	}
	return 0;
}

int freeze__all(pid_t pid, struct freeze *f, char *why, size_t size)
{
	char path[64];
	int pass, err = 0;

	memset(f, 0, sizeof(*f));
	f->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	for (pass = 0; pass < FREEZE_PASSES; pass++) {
		struct dirent *de;
		bool found = false;
		DIR *d = opendir(path);

		if (!d) {
			err = -errno;
			snprintf(why, size, "cannot list process %d's threads: %s",
				 (int)pid, strerror(-err));
			goto out_thaw;
		}
		while ((de = readdir(d))) {
			char *end;
			long tid = strtol(de->d_name, &end, 10);

			if (de->d_name[0] < '1' || de->d_name[0] > '9' || *end ||
			    tid <= 0 || known(f, (pid_t)tid))
				continue;
			found = true;
			err = stop_one(f, (pid_t)tid, why, size);
			if (err < 0)
				break;
			err = 0;
		}
		closedir(d);
		if (err)
			goto out_thaw;
		if (!found)
			return f->n ? 0 : -ESRCH;
	}
	err = -EAGAIN;
	snprintf(why, size, "process %d makes threads faster than they can be stopped",
		 (int)pid);
out_thaw:
	freeze__thaw(f);
	return err;
}

void freeze__thaw(struct freeze *f)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		remote__detach_thread(f->t[i].tid, f->t[i].sig);
	free(f->t);
	memset(f, 0, sizeof(*f));
}
