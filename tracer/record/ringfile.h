/* SPDX-License-Identifier: MIT */
/*
 * ringfile.h - the tracer's handle on an agent memfd: create one for a
 * launched target, or validate and map one obtained from a target.
 */
#ifndef PA_TRACER_RINGFILE_H
#define PA_TRACER_RINGFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "pprof_alloc_abi.h"

struct ringfile {
	int fd;
	struct pa_header *hdr;		/* shared: read fields with care */
	uint64_t file_size;		/* validated private copies below */
	uint64_t data_size;
	uint64_t live_capacity;
	uint64_t stack_capacity;
	uint64_t site_capacity;		/* 0: no site table */
	uint64_t sample_rate;
	uint32_t max_frames;
	bool in_memory;			/* ringfile__wrap: hdr is malloc'd */
	/* ringfile__losses: what it last found, and why the counters were
	 * found implausible (NULL while they are not) */
	struct ringfile_losses {
		uint64_t records;	/* lost_records */
		uint64_t bytes;		/* lost_bytes */
		uint64_t samples;	/* lost_samples */
		uint64_t live_overflow;
	} losses_seen;
	const char *losses_bad;
	uint64_t born_ns;		/* CLOCK_BOOTTIME at the target's start
					   (the kernel's, /proc/PID/stat), 0:
					   not known; bounds the counters */
};

/*
 * Create a sealed memfd laid out for a ring of data_size bytes and a live
 * table of live_capacity entries, and fill in its header.  0 or -errno
 * (-EINVAL: a size out of range).
 */
int ringfile__create(struct ringfile *rf, uint64_t data_size,
		     uint64_t live_capacity, uint64_t sample_rate,
		     uint32_t max_frames);

/*
 * Validate fd (seals, size, header) and map it (not populated: pages the
 * agent has not touched stay holes).  On failure returns -errno and sets *why to a static
 * description of what was wrong.  fd is owned by rf on success.
 */
int ringfile__open(struct ringfile *rf, int fd, const char **why);

/*
 * A copy of a memfd in memory (a core's), its header h validated by the
 * caller: rf takes mem over (freed by ringfile__close).
 */
void ringfile__wrap(struct ringfile *rf, void *mem, const struct pa_header *h);
void ringfile__close(struct ringfile *rf);

/*
 * The agent's loss counters, the target's to write, checked before any
 * advice is given on them: none may go backwards, none may be more than
 * this machine could have counted since it booted (one a nanosecond a
 * CPU), lost samples are among lost records, and lost bytes at most an
 * address space's worth per lost sample.  0, or -EBADMSG with *why set
 * when they are not plausible, now or at any earlier call: the header is
 * corrupt, and *l is all zero from then on.
 */
int ringfile__losses(struct ringfile *rf, struct ringfile_losses *l,
		     const char **why);

/*
 * Exact mode's peak as the agent counted it at every call (agent/inuse.c).
 * exact: one thread alone counted, and bytes is the peak; else bytes is
 * an upper bound, at most slack above the peak.  at_ns: the agent's
 * CLOCK_MONOTONIC near it (0: not known).
 */
struct ringfile_peak {
	uint64_t bytes;
	uint64_t slack;
	uint64_t at_ns;
	uint32_t threads;
	bool exact;
};

/* 0, -ENOENT (no count: not exact mode, or nothing counted yet) or
 * -EBADMSG with *why set (counts no agent could have written). */
int ringfile__peak(const struct ringfile *rf, struct ringfile_peak *p,
		   const char **why);

/*
 * A byte per page of len bytes at off in the memfd (off page-aligned):
 * 1 where the file has data, 0 for a hole - a page nobody touched, which
 * reads as zeros and would be made by reading it through the mapping.
 * From lseek's SEEK_DATA and SEEK_HOLE (swapped-out pages are data).
 * NULL when that cannot be told (a core's copy: no descriptor; out of
 * memory): the caller then reads every page.  Free it.
 */
unsigned char *ringfile__pages(const struct ringfile *rf, uint64_t off,
			       uint64_t len);

/*
 * The agent's stats thread's state (enum pa_stats_thread), waited for
 * while it is being made (PA_STATS_STARTING: on a busy machine the new
 * thread may not have run yet), until deadline (CLOCK_MONOTONIC ns).
 */
uint32_t ringfile__stats_state(const struct pa_header *hdr,
			       uint64_t deadline);

/* The target's start, from the kernel, for ringfile__losses' bound: no
 * counter can have grown longer than the process has lived. */
void ringfile__set_born(struct ringfile *rf, pid_t pid);

#endif /* PA_TRACER_RINGFILE_H */
