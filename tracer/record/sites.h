/* SPDX-License-Identifier: MIT */
/*
 * sites.h - exact mode: the agent's counters per (stack, size) into the
 * heap aggregate.
 */
#ifndef PA_TRACER_SITES_H
#define PA_TRACER_SITES_H

#include <stdint.h>
#include "pprof_alloc_abi.h"
#include "session.h"

/* What the tracer last took from one site entry. */
struct site_seen {
	uint64_t size;
	uint64_t allocs, frees;
	int64_t bucket;			/* heap bucket; -1 before the first */
	uint32_t stack_id;
	uint16_t flags;
	uint16_t state;			/* SITE_NEW, SITE_TAKEN, SITE_REFUSED */
};

struct site_reader {
	uint64_t capacity;		/* 0: the memfd has no site table */
	struct site_seen *seen;		/* capacity entries */
	/* one read's sums: the entries' frees, and the lanes' allocations
	 * and frees (lane_sites each) */
	uint64_t *entry_frees, *lane_allocs, *lane_frees;
	uint64_t lane_sites;
	uint64_t sites;			/* entries taken */
	uint64_t refused;		/* entries that could not be true */
	uint64_t backwards;		/* counts that went down (refused) */
	uint64_t last_ns;		/* the last read */
};

/* For a site table of capacity entries (0: none).  0 or -ENOMEM. */
int site_reader__init(struct site_reader *sr, uint64_t capacity);
void site_reader__fini(struct site_reader *sr);

/* The site lanes of the memfd (struct pa_site_lane). */
struct site_lanes {
	const struct pa_site_lane *base;	/* NULL: none */
	uint32_t used;			/* the header's site_lanes_used
					   (clipped here) */
	/* one flag per page of the lanes, from the first: the page has data
	 * (a hole reads as zeros, and is not read); NULL: all have */
	const unsigned char *pages;
};

/*
 * Add what the agent counted since the last read to s's heap.  table,
 * lanes, stacks: the memfd's (shared memory: every field is read once and
 * checked); used: the header's sites_used (clipped here).  0 or -ENOMEM.
 */
int site_reader__read(struct site_reader *sr, struct session *s,
		      const struct pa_site *table, uint64_t used,
		      const struct site_lanes *lanes,
		      const uint8_t *stacks, uint64_t stack_capacity,
		      uint32_t max_frames);

#endif /* PA_TRACER_SITES_H */
