/* SPDX-License-Identifier: MIT */
/*
 * inject.h - call a function inside another process, with ptrace alone.
 */
#ifndef PA_TRACER_INJECT_H
#define PA_TRACER_INJECT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#define REMOTE_MAX_PENDING 32

struct remote {
	pid_t pid;
	pid_t tid;			/* the borrowed thread */
	bool seized;
	struct user_regs_struct saved;	/* exactly as it was */
	uint8_t *xstate;		/* NT_X86_XSTATE, as it was */
	size_t xstate_len;
	int pending[REMOTE_MAX_PENDING];/* signals that arrived meanwhile */
	int npending;
	siginfo_t infos[REMOTE_MAX_PENDING];	/* pending[i]'s siginfo ... */
	uint32_t have_info;		/* ... if bit i is set */
	bool signal_stop;		/* stopped in a signal-delivery-stop */
	uint64_t saved_sigmask;		/* the thread's, put back at release */
	bool sigmask_set;		/* signals blocked while borrowed */
	uint64_t unblocked;		/* ... all but these (faults) */
	size_t scratch_used;		/* bytes handed out below the red zone */
	uint64_t longest_stop_ns;	/* for the benchmark */
	uint64_t stopped_since;
};

/*
 * The thread of pid best suited to be borrowed: one blocked in an idle
 * system call (poll, epoll_wait, nanosleep, select, accept, read, wait,
 * pause...), else one waiting in futex (never the agent's stats thread).
 * Returns its tid, or -ESRCH if pid
 * has no thread, -EBUSY if none is waiting at all.
 */
pid_t remote__pick_thread(pid_t pid);

/*
 * Seize tid (PTRACE_SEIZE, then PTRACE_INTERRUPT on that thread only; the
 * others run on) and save its registers.  On failure *why says what went
 * wrong in words a user can act on.  0 or -errno.
 */
int remote__seize(struct remote *r, pid_t pid, pid_t tid, int timeout_ms,
		  const char **why);

/*
 * Is the seized thread stopped inside a system call it may be borrowed
 * from (remote__pick_thread()'s rules), interrupted there?  The pick reads
 * /proc before the stop: meanwhile the thread may have returned and gone
 * on, into fork() holding every arena lock, say.  If not, release it and
 * pick again.
 */
bool remote__idle(const struct remote *r);

/*
 * Call fn(args...) (at most 6 integer arguments) on the seized thread and
 * return its rax in *ret.  The call runs on the thread's stack below the red
 * zone and returns to address 0, where the thread faults and stops.  Signals
 * that arrive meanwhile are kept and re-delivered at release.  0 or -errno
 * (-ETIMEDOUT: the call did not return in time; -ESRCH: the target died).
 */
int remote__call(struct remote *r, uint64_t fn, const uint64_t *args,
		 int nargs, uint64_t *ret, int timeout_ms, const char **why);

/* Write len bytes of buf at addr in the target (through /proc/PID/mem). */
int remote__write(const struct remote *r, uint64_t addr, const void *buf,
		  size_t len);

/*
 * Somewhere safe to put a few bytes of arguments for the next call: below
 * the saved stack pointer, past the red zone.  Returns the address.
 */
uint64_t remote__scratch(struct remote *r, size_t len);

/* Restore the registers exactly, detach, re-deliver kept signals.  Safe on
 * a remote that was never seized.  0 or -errno. */
int remote__release(struct remote *r);

#endif /* PA_TRACER_INJECT_H */
