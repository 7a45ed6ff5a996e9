// SPDX-License-Identifier: MIT
/*
 * freeze.c - stop every thread of a process for a moment, and let go.
 *
 * Patching code another thread may be executing is only safe while no
 * thread runs: every thread of the task list is seized (PTRACE_SEIZE, no
 * options) and interrupted, then each one's stop is collected, and the
 * task list read again until a pass finds no thread it has not stopped - a
 * thread created meanwhile by one still running is caught by the next
 * pass; a thread that exits meanwhile is dropped.  A thread that was about to take a signal stops
 * in its signal-delivery-stop instead; the signal is delivered when it is
 * let go.  Threads gone meanwhile are simply left out.  Registers are read
 * at the stop, so the caller can check where each thread stands.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include "freeze.h"
#include "inject.h"
#include "machine.h"
#include "pa_clock.h"

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

/* Seize and interrupt tid (its stop is collected later); 0, 1 (gone), or
 * -errno with why. */
static int seize_one(struct freeze *f, pid_t tid, char *why, size_t size)
{
	struct frozen *t;
	int err;

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
	t->running = true;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) && errno == ESRCH) {
		f->n--;		/* gone: the kernel let it go */
		return 1;
	}
	return 0;
}

/* Collect the stop of every thread seized since index from; threads that
 * exited meanwhile are dropped.  0 or -errno with why. */
static int collect(struct freeze *f, size_t from, char *why, size_t size)
{
	size_t i = from;

	while (i < f->n) {
		struct frozen *t = &f->t[i];
		struct iovec iov;
		int status, err;

		err = remote__wait_thread(t->tid, &status, FREEZE_STOP_MS);
		if (!err && (WIFEXITED(status) || WIFSIGNALED(status))) {
			f->t[i] = f->t[--f->n];	/* it exited: nothing to hold */
			continue;
		}
		if (err == -ECHILD || err == -ESRCH) {
			f->t[i] = f->t[--f->n];
			continue;
		}
		if (err || !WIFSTOPPED(status)) {
			snprintf(why, size, "thread %d did not stop in time",
				 (int)t->tid);
			return err ? err : -ETIMEDOUT;
		}
		t->running = false;
		if ((status >> 16) != PTRACE_EVENT_STOP)
			t->sig = WSTOPSIG(status);
		/* a thread in 32-bit code (WoW64) gives the 32-bit layout,
		 * shorter: refused, not read as the 64-bit one */
		iov = (struct iovec){ &t->regs, sizeof(t->regs) };
		if (ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_PRSTATUS,
			   &iov)) {
			err = -errno;
			snprintf(why, size, "cannot read thread %d's registers: %s",
				 (int)t->tid, strerror(-err));
			return err;
		}
		if (iov.iov_len != sizeof(t->regs)) {
			snprintf(why, size, "thread %d runs 32-bit code: its registers are not the 64-bit set",
				 (int)t->tid);
			return -EIO;
		}
		i++;
	}
	return 0;
}

int freeze__all(pid_t pid, struct freeze *f, char *why, size_t size)
{
	return freeze__others(pid, 0, f, why, size);
}

int freeze__others(pid_t pid, pid_t except, struct freeze *f, char *why,
		   size_t size)
{
	char path[64];
	int pass, err = 0;

	memset(f, 0, sizeof(*f));
	f->pid = pid;
	f->start_ns = pa_now_ns();
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	for (pass = 0; pass < FREEZE_PASSES; pass++) {
		struct dirent *de;
		size_t from = f->n;
		bool found = false;
		DIR *d = opendir(path);

		if (!d) {
			err = -errno;
			snprintf(why, size, "cannot list process %d's threads: %s",
				 (int)pid, strerror(-err));
			goto out_thaw;
		}
		/* every new thread interrupted first, then their stops
		 * collected: the first one stopped waits for the others'
		 * interrupts only, not for each one's stop in turn */
		while ((de = readdir(d))) {
			char *end;
			long tid = strtol(de->d_name, &end, 10);

			if (de->d_name[0] < '1' || de->d_name[0] > '9' || *end ||
			    tid <= 0 || tid == except || known(f, (pid_t)tid))
				continue;
			found = true;
			err = seize_one(f, (pid_t)tid, why, size);
			if (err < 0)
				break;
			err = 0;
		}
		closedir(d);
		if (!err)
			err = collect(f, from, why, size);
		if (err)
			goto out_thaw;
		if (!found)
			return f->n || except ? 0 : -ESRCH;
	}
	err = -EAGAIN;
	snprintf(why, size, "process %d makes threads faster than they can be stopped",
		 (int)pid);
out_thaw:
	freeze__thaw(f);
	return err;
}

int freeze__set_pc(struct freeze *f, size_t i, uint64_t pc)
{
	struct user_regs_struct regs = f->t[i].regs;
	struct iovec iov = { &regs, sizeof(regs) };

	machine__gregs_set_pc(&regs, pc);
	if (ptrace(PTRACE_SETREGSET, f->t[i].tid, (void *)NT_PRSTATUS, &iov))
		return -errno;
	f->t[i].regs = regs;
	return 0;
}

void freeze__thaw(struct freeze *f)
{
	size_t i;
	uint64_t held = f->start_ns ? pa_now_ns() - f->start_ns : 0;

	if (held > f->longest_ns)
		f->longest_ns = held;

	for (i = 0; i < f->n; i++)
		remote__detach_thread(f->t[i].tid, f->t[i].sig);
	free(f->t);
	f->t = NULL;
	f->n = f->cap = 0;
	f->start_ns = 0;
}
