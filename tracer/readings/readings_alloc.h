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
extern const char *const allocstats_mimalloc_names[8];
extern const char *const allocstats_tcmalloc_names[PA_TCMALLOC_PROPERTIES];

/*
 * The figures every allocator is mapped onto, where it has them (each
 * allocator's own keys are kept beside them):
 *   in_use    bytes the program holds
 *   free      bytes the allocator holds for reuse, not given back
 *   metadata  the allocator's own bookkeeping
 *   resident  what the allocator counts as resident
 *   mapped    what it has from the system, given-back memory excluded
 *   retained  given back to the system but kept mapped (address space)
 */
enum alloc_common {
	ALLOC_IN_USE,
	ALLOC_FREE,
	ALLOC_METADATA,
	ALLOC_RESIDENT,
	ALLOC_MAPPED,
	ALLOC_RETAINED,
	ALLOC_COMMON_COUNT
};
extern const char *const allocstats_common_names[ALLOC_COMMON_COUNT];

/* Values above this are refused from the target: no address space has
 * that many bytes, no process that many milliseconds or faults. */
#define ALLOCSTATS_MAX_VALUE	(1ull << 57)

/* The rows of mi_stats_print_out's table that are kept: those counted
 * process-wide in a release build of mimalloc 2.0 (see readings_mimalloc.c). */
enum mi_row {
	MI_RESERVED,
	MI_COMMITTED,
	MI_RESET,
	MI_THREADS,
	MI_ROW_COUNT
};
extern const char *const allocstats_mi_row_names[MI_ROW_COUNT];

struct mi_row_values {
	bool present;
	int64_t peak, total, freed, current;
};

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
	bool in_program;		/* ... the main program (linked in) */
	const char *calls_seen;		/* which calls the agent sees (the
					   tracer's; NULL: not known) */
	bool has_mallinfo;
	uint64_t mallinfo[10];
	bool has_jemalloc;
	uint64_t jemalloc[7];
	uint32_t jemalloc_mask;		/* which of them were read */
	bool has_mimalloc;		/* mi_process_info */
	uint64_t mimalloc[8];
	bool has_mi_text;		/* mi_stats_print_out was parsed */
	struct mi_row_values mi_rows[MI_ROW_COUNT];
	bool has_mi_commits;
	int64_t mi_commits;
	bool has_tcmalloc;
	uint64_t tcmalloc[PA_TCMALLOC_PROPERTIES];
	uint32_t tcmalloc_mask;		/* which of them were answered */
	bool has_common[ALLOC_COMMON_COUNT];
	uint64_t common[ALLOC_COMMON_COUNT];
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
/* A header mapped anew (a launched program exec'd): no longer quiet for
 * an earlier mapping's silence at the same address. */
void allocstats__forget_quiet(void);

/*
 * Parse malloc_info's XML (len bytes, need not be NUL-terminated) into
 * r's arenas and total.  0, -EINVAL (not malloc_info's format; r->why
 * says where) or -ENOMEM.
 */
int allocstats__parse_info(struct alloc_reading *r, const char *xml,
			   size_t len);

/*
 * Parse mi_stats_print_out's text (len bytes, need not be NUL-terminated)
 * into r's mi_rows and mi_commits; r->arenas_truncated says it was cut
 * short.  0, or -EINVAL (not mimalloc's table; r->why says where).
 */
int allocstats__parse_mi_text(struct alloc_reading *r, const char *text,
			      size_t len);

/* Fill r's common figures from the allocator's own. */
void allocstats__common(struct alloc_reading *r);

void allocstats__fini(struct alloc_reading *r);

#endif /* PA_TRACER_ALLOCSTATS_H */
