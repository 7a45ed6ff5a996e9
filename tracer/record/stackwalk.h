/* SPDX-License-Identifier: MIT */
/*
 * stackwalk.h - allocation records with a stack copy to records with the
 * frames DWARF unwinding finds.
 */
#ifndef PA_TRACER_STACKWALK_H
#define PA_TRACER_STACKWALK_H

#include <stdint.h>
#include "pprof_alloc_abi.h"
#include "mappings.h"

/*
 * The frame that marks a stack the unwinder could not follow to its end.
 * Not a user-space address on any architecture this runs on, so it cannot
 * be taken for a real one; the report names it "[truncated]".
 */
#define STACKWALK_TRUNCATED	0xfffffffffffff000ull

struct stackwalk_stats {
	uint64_t records;	/* records with a stack copy */
	uint64_t unwound;	/* ... unwound past the agent's first frame */
	uint64_t outermost;	/* ... to the outermost frame */
	uint64_t cut;		/* ... marked [truncated] */
	uint64_t failed;	/* ... kept with the frame-pointer frames */
	uint64_t frames;	/* frames found, in all */
	uint64_t cpu_ns;	/* thread CPU time spent unwinding */
	uint64_t modules_failed;	/* mappings the unwinder could not use */
	/* PPROF_ALLOC_UNWIND_CHECK=1 (see stackwalk.c): stacks the agent's
	 * tables unwound whole, checked against libdwfl's unwind of their
	 * copy */
	uint64_t checked;	/* compared */
	uint64_t check_differ;	/* ... that disagreed: a frame differs, or
				   libdwfl went further */
	uint64_t check_shorter;	/* ... libdwfl ended first (cut), on the
				   agent's path */
};

struct stackwalk;

/* NULL with errno set. */
struct stackwalk *stackwalk__new(uint32_t max_frames);
void stackwalk__free(struct stackwalk *sw);

/*
 * The record to use for rec: rec itself when it has no stack copy, else a
 * copy of it (in sw, valid until the next call) whose frames are those
 * unwound from the copy with the modules of ms (a STACKWALK_TRUNCATED
 * frame at the end if the unwind was cut short) and without the copy.  A
 * copy that cannot be unwound at all leaves the agent's frame-pointer
 * frames.  Never fails.
 */
const struct pa_rec_alloc *stackwalk__record(struct stackwalk *sw,
					     const struct mapping_set *ms,
					     const struct pa_rec_alloc *rec);

void stackwalk__stats(const struct stackwalk *sw, struct stackwalk_stats *st);

#endif /* PA_TRACER_STACKWALK_H */
