/* SPDX-License-Identifier: MIT */
/*
 * symbolize_jobs.h - resolve a batch of addresses with several threads,
 * each with its own symbolizer, into one result that does not depend on
 * how many threads there were.
 */
#ifndef PA_TRACER_SYMBOLIZE_JOBS_H
#define PA_TRACER_SYMBOLIZE_JOBS_H

#include <stddef.h>
#include <stdint.h>
#include "elf/symbolize.h"

/* Most frames kept per address. */
#define SYM_JOBS_MAX_FRAMES	32

/* Most threads one batch uses. */
#define SYM_JOBS_MAX		64

/*
 * What a batch found: item i's frames are frames[first[i]] onward,
 * count[i] of them (0: nothing known).  Names point into the symbolizers
 * that resolved them: the caller's and the clones kept here, all valid
 * until sym_batch__fini() (and the caller's own symbolizer is freed).
 */
struct sym_batch {
	uint32_t *first, *count;
	struct sym_frame *frames;
	size_t nframes;
	size_t hits;			/* items with count > 0 */
	struct symbolizer **clones;
	size_t nclones;
	unsigned int threads;		/* how many resolved (for reports) */
};

/*
 * Resolve addrs[0..n) with sym and up to jobs - 1 clones of it, each in a
 * thread of its own.  Equal addresses are resolved once; threads take the
 * unique addresses a whole compile unit at a time, heaviest first, so two
 * threads rarely read the same unit (addresses no unit is known for go in
 * runs of their own).  Results (and names, by content) are the same
 * for any jobs.  0 or -errno (-ENOMEM; a thread that cannot be started
 * leaves the work to the others, or to the caller's thread).
 * sym_batch__fini() in any
 * case.
 */
int sym_batch__resolve(struct sym_batch *b, struct symbolizer *sym,
		       const uint64_t *addrs, size_t n, unsigned int jobs);

void sym_batch__fini(struct sym_batch *b);

/* The default --jobs: online CPUs, at least 1, at most cap. */
unsigned int sym_jobs__default(unsigned int cap);

#endif /* PA_TRACER_SYMBOLIZE_JOBS_H */
