/* SPDX-License-Identifier: MIT */
/*
 * callstub.h - what a borrowed thread runs, and the way back it carries.
 *
 * Every call the tracer makes in a target (inject.c) runs through a page of
 * code mapped once in the target (the stub) and returns through a signal
 * frame written on the borrowed thread's stack (the frame) that holds the
 * thread's own registers, extended state and signal mask.  Whatever happens
 * to the tracer, the thread finishes the call and rt_sigreturn puts it back
 * as it was.  The layout and the reasons are in callstub.c.
 */
#ifndef PA_TRACER_CALLSTUB_H
#define PA_TRACER_CALLSTUB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "pa_clock.h"

#define CALLSTUB_PAGE	4096

/* Where a call starts in the stub mapped at page (mregs__call sets the
 * function, its arguments and the mailbox's address). */
uint64_t callstub__entry(uint64_t page);

/* Written by the stub when the call returns; the thread then waits for the
 * tracer (a ppoll of nothing, at most a quarter of a second) and goes
 * home. */
#define CALLSTUB_WAIT_NSEC	(250 * PA_NSEC_PER_MSEC)
struct callstub_mailbox {
	uint32_t done;		/* 1 once the call returned */
	uint32_t pad;
	uint64_t result;	/* its return value */
	int64_t wait_sec;	/* the wait's timespec */
	int64_t wait_nsec;
};

/* A mailbox ready for a call: not done, the wait's length set. */
void callstub__mailbox(struct callstub_mailbox *mb);

/*
 * An anonymous one-page r-x mapping of pid that holds exactly the stub (one
 * made by an earlier attach, perhaps by another tracer).  0 with *page
 * set, -ENOENT if there is none, or -errno.
 */
int callstub__find(pid_t pid, uint64_t *page);

/* Write the stub's bytes into the page at page (a mapping of pid's). */
int callstub__write(pid_t pid, uint64_t page);

/*
 * Two sequences used once, to map the stub: "syscall; ret" in pid's libc
 * and the signal restorer (glibc's in libc, or the vDSO's: machine.h).
 * 0 or -ENOENT.
 */
int callstub__gadgets(pid_t pid, uint64_t *syscall_ret, uint64_t *restorer);

#endif /* PA_TRACER_CALLSTUB_H */
