/* SPDX-License-Identifier: MIT */
/*
 * jeprof_dump.h - jemalloc's heap profile dump ("heap_v2"), read strictly.
 */
#ifndef PA_TRACER_JEPROF_DUMP_H
#define PA_TRACER_JEPROF_DUMP_H

#include <stddef.h>
#include <stdint.h>

/* Bounds on what a dump may hold (it is the target's word). */
#define JEPROF_MAX_BYTES	(256u << 20)	/* the whole dump */
#define JEPROF_MAX_LINE		65536u		/* one line, newline excluded */
#define JEPROF_MAX_FRAMES	256u		/* one stack (jemalloc: 128) */
#define JEPROF_MAX_STACKS	(1u << 20)

/* One "@ frames" entry: the stack's in-use and accumulated counts, as
 * written (jeprof's unbiasing is still to be applied: jeprof__scale). */
struct jeprof_stack {
	uint64_t frames_at;		/* into jeprof_dump.frames, leaf first */
	uint32_t nframes;
	uint64_t objs, bytes;		/* in use */
	uint64_t accum_objs, accum_bytes;	/* allocated (prof_accum) */
};

struct jeprof_dump {
	uint64_t period;		/* mean bytes between samples */
	uint64_t objs, bytes;		/* the t*: totals of the header */
	uint64_t accum_objs, accum_bytes;
	struct jeprof_stack *stacks;
	size_t nstacks, stack_cap;
	uint64_t *frames;		/* return addresses */
	size_t nframes, frame_cap;
};

/*
 * Parse len bytes of a dump (no NUL needed).  Everything up to the
 * MAPPED_LIBRARIES: section is checked: the heap_v2/PERIOD line (a power
 * of two), the t*: totals, per-thread lines, then "@ 0x..." stacks each
 * followed by its t*: counts (a stack's objects and bytes both 0 or both
 * not, bytes at least the objects), every number a decimal or hexadecimal
 * that fits 64 bits, every frame a user-space address, within the bounds
 * above.  0, -EINVAL with why (what, and the line) or -ENOMEM.  d is then
 * to be freed with jeprof_dump__fini, whatever was returned.
 */
int jeprof_dump__parse(struct jeprof_dump *d, const char *buf, size_t len,
		       char *why, size_t why_size);
void jeprof_dump__fini(struct jeprof_dump *d);

/*
 * jeprof's (and pprof's) unbiasing of one stack's counts: both scaled by
 * 1 / (1 - exp(-(bytes / objs) / period)).  jemalloc 5.3 writes counts
 * such that this gives its own per-size unbiased figures (opt.prof_unbias,
 * its default); older ones and prof_unbias:false write raw sampled counts,
 * for which it is pprof's estimate.  Either way this is the scaling.
 */
void jeprof__scale(uint64_t objs, uint64_t bytes, uint64_t period,
		   double *objs_out, double *bytes_out);

#endif /* PA_TRACER_JEPROF_DUMP_H */
