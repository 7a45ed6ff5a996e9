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
#include "machine.h"

#define REMOTE_MAX_PENDING 32

/* Where the borrowed thread is stopped, and whose registers it holds. */
enum remote_stop {
	REMOTE_AS_FOUND,	/* the seize's stop, its own registers */
	REMOTE_SYSCALL_ENTRY,	/* ours: the entry of a system call */
	REMOTE_SYSCALL_EXIT,	/* ours: the exit of a system call */
	REMOTE_FAULTED,		/* ours: a call crashed (signal-delivery-stop) */
};

struct remote {
	pid_t pid;
	pid_t tid;			/* the borrowed thread */
	bool seized;
	bool signal_stop;		/* the seize found a signal on its way:
					   not borrowed, delivered at release */
	enum remote_stop stop;
	bool ours;			/* it holds registers we set */
	struct mregs saved;		/* exactly as it was */
	uint8_t *ext;			/* its floating-point and vector
					   state (machine__get_ext) */
	size_t ext_len;
	uint64_t saved_sigmask;		/* the thread's, put back at release */
	bool sigmask_set;		/* all but faults blocked meanwhile */
	uint64_t stub;			/* the call stub's page, once armed */
	uint64_t frame;			/* the way back's sp, once armed */
	uint64_t ret_slot;		/* the return slot under it, or 0 */
	uint64_t mailbox;		/* struct callstub_mailbox, in the frame */
	int pending[REMOTE_MAX_PENDING];/* signals kept to send again */
	int npending;
	siginfo_t infos[REMOTE_MAX_PENDING];	/* pending[i]'s siginfo ... */
	uint32_t have_info;		/* ... if bit i is set */
	size_t scratch_used;		/* bytes handed out below the red zone */
	uint64_t longest_stop_ns;	/* for the benchmark */
	uint64_t stopped_since;
};

/*
 * The thread of pid best suited to be borrowed: one blocked in an idle
 * system call (poll, epoll_wait, nanosleep, select, accept, read, wait,
 * pause...), else one waiting in futex (never the agent's stats thread).
 * Never one inside a signal handler, which may have interrupted the
 * allocator: its stack holds restorer, the signal restorer's address
 * (callstub__gadgets; 0 if unknown, and then not looked for).
 * Returns its tid, or -ESRCH if pid
 * has no thread, -EBUSY if none is waiting at all.
 */
pid_t remote__pick_thread(pid_t pid, uint64_t restorer);

/*
 * Seize tid (PTRACE_SEIZE, then PTRACE_INTERRUPT on that thread only; the
 * others run on) and save its registers.  On failure *why says what went
 * wrong in words a user can act on.  0 or -errno.
 */
int remote__seize(struct remote *r, pid_t pid, pid_t tid, int timeout_ms,
		  const char **why);

/*
 * For a thread that is never idle: seize it and let it run, under
 * PTRACE_SYSCALL, to the entry of a system call it may be borrowed at (its
 * own I/O - write, send, recv, a read of no file, sched_yield... - never
 * one the allocator or the loader makes under their locks), for at most
 * timeout_ms.  Its way home is then to make that call.  0, or -EBUSY (let
 * go untouched) or -errno, with *why set.
 */
int remote__seize_at_syscall(struct remote *r, pid_t pid, pid_t tid,
			     int timeout_ms, const char **why);

/*
 * Is the seized thread stopped inside a system call it may be borrowed
 * from (remote__pick_thread()'s rules), interrupted there?  The pick reads
 * /proc before the stop: meanwhile the thread may have returned and gone
 * on, into fork() holding every arena lock, say.  It must also have room
 * on its stack for the frame and the call, and be in no signal handler
 * (restorer, as for the pick).  If not, release it and pick again.
 */
bool remote__idle(const struct remote *r, uint64_t restorer);

/*
 * Call fn(args...) (at most 6 integer arguments) on the seized thread and
 * return its rax in *ret.  The call runs on the thread's stack below the red
 * zone and a signal frame that brings the thread back as it was, through a
 * stub mapped once in the target (callstub.c): from the first call on, the
 * thread goes home by itself if the tracer dies.  Signals that arrive
 * meanwhile stay queued for it (blocked) until release.  0 or -errno
 * (-ETIMEDOUT: the call did not return in time - the thread was let go to
 * finish it and go back on its own, the remote is released; -EFAULT: the
 * call crashed; -ESRCH: the target died).  A call that returned, but whose
 * thread went home by itself before the tracer caught it (a tracer stalled
 * for longer than the stub waits), leaves the remote released too: seize
 * again for another call.
 */
int remote__call(struct remote *r, uint64_t fn, const uint64_t *args,
		 int nargs, uint64_t *ret, int timeout_ms, const char **why);

/*
 * munmap(addr, len) in the target, the way the call stub was mapped: the
 * thread runs it at libc's "syscall; ret" and returns into the signal
 * restorer, through the frame - so it can unmap the stub itself, which its
 * calls run through (r->stub is then 0), or a page of code no thread may
 * be in any more (tracer/attach/unload.c says when).  After a remote__call (the
 * frame is written then).  0 or -errno with *why; remote__release puts the
 * thread back afterwards.
 */
int remote__munmap(struct remote *r, uint64_t addr, uint64_t len,
		   int timeout_ms, const char **why);

/* Write len bytes of buf at addr in the target (through /proc/PID/mem). */
int remote__write(const struct remote *r, uint64_t addr, const void *buf,
		  size_t len);

/*
 * Somewhere safe to put a few bytes of arguments for calls: below the saved
 * stack pointer, past the red zone, in an area of REMOTE_SCRATCH_MAX bytes
 * above the signal frame.  Returns the address, or 0 when it is full.
 */
#define REMOTE_SCRATCH_MAX	(4096 + 256)
uint64_t remote__scratch(struct remote *r, size_t len);

/* Put the thread back exactly (its registers, extended state and signal
 * mask; an interrupted system call restarts as the kernel would), detach,
 * send kept signals again.  Safe on a remote that was never seized or was
 * let go.  0 or -errno. */
int remote__release(struct remote *r);

/*
 * Detach the threads that were let go before they had stopped (one in
 * vfork), now that they have; the tracer's loop calls it often, from the
 * thread that seized them.  Returns how many are still waited for.
 */
int remote__settle(void);

/* waitpid on one thread with a timeout.  0, -ETIMEDOUT or -errno. */
int remote__wait_thread(pid_t tid, int *status, int timeout_ms);
/* PTRACE_DETACH delivering sig, or, if the thread is not in a stop yet,
 * later (remote__settle). */
void remote__detach_thread(pid_t tid, int sig);

#endif /* PA_TRACER_INJECT_H */
