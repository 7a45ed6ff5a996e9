/* SPDX-License-Identifier: MIT */
/*
 * attach.h - get an agent into a running process, or find the one there.
 */
#ifndef PA_TRACER_ATTACH_H
#define PA_TRACER_ATTACH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "tracer/record/ringfile.h"

/* Each function taking a why fills it on failure: one line, at most
 * ATTACH_WHY_SIZE bytes with its NUL, in the caller's buffer. */
#define ATTACH_WHY_SIZE		512

struct attach_config {
	const char *agent;		/* absolute path of libpprof-alloc.so */
	uint64_t rate, ring_size, live_size;
	uint32_t max_frames;
	int timeout_ms;			/* for each remote call */
	bool stats;			/* start the agent's stats thread */
	uint32_t unwind, stack_bytes;	/* enum pa_unwind, for the agent */
	const char *owner_addr;		/* serve's listen address, or NULL */
};

struct attach_stats {
	bool injected;			/* dlopen was called */
	bool reattached;		/* an agent was there, detached */
	bool existing;			/* an agent was there, recording */
	uint64_t longest_stop_ns;	/* the borrowed thread's longest stop */
	uint64_t unload_stop_ns;	/* every thread's, to unload the agent */
	unsigned int entry_patched;	/* functions hooked at their entry */
	char entry_line[1024];		/* what entry patching did, or "" */
	const char *entry_allocator;	/* "jemalloc"... by its symbols */
	uint64_t mallctl_at;		/* its own mallctl (entry.h) */
};

/*
 * Refuse a target we must not touch: gone, a zombie, stopped, another
 * architecture, not dynamically linked against glibc, seccomp-filtered.
 * 0 or -errno with why set (one line, says what to do).
 */
int attach__check(pid_t pid, char *why);

/*
 * The program of pid defines allocator functions itself: patch their
 * entries (entry.c), saying what was hooked in st->entry_line and on
 * stderr.  Launch and attach both come here once the agent runs.
 */
void attach__patch_entries(pid_t pid, const char *agent,
			   struct attach_stats *st);

/*
 * Find the agent's memfd in the target (its /proc/PID/fd) without touching
 * the target otherwise, validate it and map it into rf.  0, -ENOENT when
 * there is none, or -errno with why set.
 */
int attach__find_agent(pid_t pid, struct ringfile *rf, char *why);

/*
 * Connect to the target's agent, injecting it first if there is none, and
 * start it recording.  On success rf holds the validated memfd and this
 * process owns the agent (owner.c); -EBUSY if another tracer alive does.
 * On failure the target is left as it was.  0 or -errno with why set.
 */
int attach__connect(pid_t pid, const struct attach_config *cfg,
		    struct ringfile *rf, struct attach_stats *st,
		    char *why);

/*
 * Have the agent hook modules loaded since (after the target's dlopen):
 * borrow an idle thread and call pprof_alloc_rescan.  Returns 1 when a
 * module is still being loaded (call again shortly), 0 when done, -errno
 * (-EBUSY: no idle thread right now) otherwise.
 */
int attach__rescan(pid_t pid, const struct attach_config *cfg,
		   struct attach_stats *st);

/*
 * Ask the agent to unhook and stop: through the command word, and with a
 * remote call to pprof_alloc_detach when a thread can be borrowed.  Waits
 * (bounded) until the agent says it is detached.  0, or -ETIMEDOUT when it
 * has not yet (it will at its next sampled allocation).  On success the
 * agent is still ours, and its stats thread still answers, for the last
 * reading: attach__leave must follow.
 */
int attach__detach(pid_t pid, const struct attach_config *cfg,
		   struct ringfile *rf, struct attach_stats *st,
		   char *why);

/*
 * After a successful detach: an agent that was injected is turned off and,
 * when that is safe, unloaded (unload.c); one line says what stays if
 * anything does.  Then the agent is let go of (its owner claim).
 */
void attach__leave(pid_t pid, const struct attach_config *cfg,
		   struct ringfile *rf, struct attach_stats *st);

#endif /* PA_TRACER_ATTACH_H */
