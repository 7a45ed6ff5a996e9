/* SPDX-License-Identifier: MIT */
/*
 * readings_alloc.h - the allocator's own statistics, asked of the agent.
 */
#ifndef PA_TRACER_ALLOCSTATS_H
#define PA_TRACER_ALLOCSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "pprof_alloc_abi.h"

extern const char *const allocstats_mallinfo_names[10];
extern const char *const allocstats_jemalloc_names[7];

/* One <heap> of malloc_info, or the totals after them. */
struct malloc_arena {
	int nr;				/* -1 for the totals */
	uint64_t fast_count, fast_size;	/* free chunks in fastbins */
	uint64_t rest_count, rest_size;	/* free chunks in other bins */
	uint64_t mmap_count, mmap_size;	/* totals only */
	uint64_t system_current, system_max;
	uint64_t aspace_total, aspace_mprotect;
};

#define ALLOCSTATS_MAX_ARENAS 1024

struct alloc_reading {
	bool ok;			/* false: why says what is missing */
	int64_t unix_ns;		/* when it was read (set by readings) */
	char why[160];
	uint32_t allocator;		/* enum pa_allocator */
	char path[256];			/* the file that serves malloc */
	bool has_mallinfo;
	uint64_t mallinfo[10];
	bool has_jemalloc;
	uint64_t jemalloc[7];
	uint32_t jemalloc_mask;		/* which of them were read */
	bool has_arenas;		/* malloc_info was parsed */
	bool arenas_truncated;		/* it did not fit the stats area */
	struct malloc_arena *arenas;	/* the <heap>s */
	size_t narenas;
	struct malloc_arena total;
	bool has_total;			/* false when the XML was cut short */
};

/*
 * Ask the agent whose header is hdr (mapped, file_size bytes) for its
 * allocator statistics and wait at most timeout_ms for the answer.  The
 * reply is validated and copied out of shared memory before it is used.
 * Never fails for the target's sake: r->ok false and r->why say why
 * (no stats thread, no reply...).  0 or -ENOMEM.
 */
int allocstats__ask(struct alloc_reading *r, struct pa_header *hdr,
		    uint64_t file_size, int timeout_ms);

/*
 * Parse malloc_info's XML (len bytes, need not be NUL-terminated) into
 * r's arenas and total.  0, -EINVAL (not malloc_info's format; r->why
 * says where) or -ENOMEM.
 */
int allocstats__parse_info(struct alloc_reading *r, const char *xml,
			   size_t len);

void allocstats__fini(struct alloc_reading *r);

#endif /* PA_TRACER_ALLOCSTATS_H */
