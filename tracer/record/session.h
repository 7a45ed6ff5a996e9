/* SPDX-License-Identifier: MIT */
/*
 * session.h - what the tracer builds from one target's ring: the heap
 * aggregate, the target's mappings, and the unwinder for stack copies.
 */
#ifndef PA_TRACER_SESSION_H
#define PA_TRACER_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "heap.h"
#include "mappings.h"
#include "stackwalk.h"
#include "pa_clock.h"

/* /proc/PID/maps is read again at most this often for unknown frames. */
#define SESSION_REFRESH_NS	(20 * PA_NSEC_PER_MSEC)

struct session {
	struct heap heap;
	struct mapping_set maps;
	struct stackwalk *sw;	/* stack copies to frames */
	bool need_refresh;	/* a frame outside every known mapping */
	bool pending_modules;	/* modules known only from agent records */
	bool alive;		/* the target lives: /proc can be read */
	uint64_t last_refresh;
};

/* For the process pid, a ring of this rate and max_frames.  0 or -ENOMEM
 * (the session is then still safe to fini). */
int session__init(struct session *s, pid_t pid, uint64_t rate,
		  uint32_t max_frames);
/*
 * Bound what a target can make the tracer hold: at most max_stacks
 * (stack, size) pairs (heap__set_max_buckets), and at most
 * SESSION_LIVE_PER_ENTRY * live_capacity live samples, live_capacity being
 * the agent's live table.  The agent tracks at most that many itself, so
 * a live set four times larger is either samples it could not track
 * (--live-size too small: the warning says to raise it) or a flood of
 * allocations never freed from a broken or hostile agent.  The table's
 * size is the target's to say (an agent found already recording made its
 * own), so it counts only up to live_size, the user's --live-size.
 */
#define SESSION_LIVE_PER_ENTRY	4u
void session__set_limits(struct session *s, size_t max_stacks,
			 uint64_t live_capacity, uint64_t live_size);
void session__fini(struct session *s);

/* The ring consumer's callback (ring_record_fn): ctx is the session. */
int session__on_record(void *ctx, const struct pa_rec_hdr *rec);

/* Exact mode: the bucket of an agent's site, given as an allocation
 * record without a stack copy (its frames rewritten as a record's are).
 * Index or -ENOMEM. */
int64_t session__site_bucket(struct session *s,
			     const struct pa_rec_alloc *rec);

/* Read /proc/PID/maps again if a frame asked for it (rate-limited). */
void session__refresh(struct session *s, uint64_t now_ns);

#endif /* PA_TRACER_SESSION_H */
