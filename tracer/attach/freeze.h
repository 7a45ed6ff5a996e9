/* SPDX-License-Identifier: MIT */
/*
 * freeze.h - stop every thread of a process for a moment (freeze.c).
 */
#ifndef PA_TRACER_FREEZE_H
#define PA_TRACER_FREEZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

struct frozen {
	pid_t tid;
	int sig;			/* to deliver when let go, or 0 */
	bool running;			/* seized but never seen stopped */
	struct user_regs_struct regs;	/* at the stop */
};

struct freeze {
	pid_t pid;
	size_t n, cap;
	struct frozen *t;
	uint64_t start_ns;		/* when the first thread was seized */
	uint64_t longest_ns;		/* how long the threads were held:
					   set by freeze__thaw */
};

/* Stop every thread of pid; on failure all are let go again.  0, or
 * -errno with one sentence in why. */
int freeze__all(pid_t pid, struct freeze *f, char *why, size_t size);
/* The same, but for thread except, which the caller has seized already
 * (a borrowed thread, inject.h): 0 also when it is the only one. */
int freeze__others(pid_t pid, pid_t except, struct freeze *f, char *why,
		   size_t size);
/* Move stopped thread i to pc (its other registers as they are).  0 or
 * -errno. */
int freeze__set_pc(struct freeze *f, size_t i, uint64_t pc);
/* Let every thread go (delivering a signal one stopped for). */
void freeze__thaw(struct freeze *f);

#endif /* PA_TRACER_FREEZE_H */
