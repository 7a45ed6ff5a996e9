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
	uint64_t sites;			/* entries taken */
	uint64_t refused;		/* entries that could not be true */
	uint64_t backwards;		/* counts that went down (refused) */
	uint64_t last_ns;		/* the last read */
};

/* For a site table of capacity entries (0: none).  0 or -ENOMEM. */
int site_reader__init(struct site_reader *sr, uint64_t capacity);
void site_reader__fini(struct site_reader *sr);

/*
 * Add what the agent counted since the last read to s's heap.  table,
 * stacks: the memfd's (shared memory: every field is read once and
 * checked); used: the header's sites_used (clipped here).  0 or -ENOMEM.
 */
int site_reader__read(struct site_reader *sr, struct session *s,
		      const struct pa_site *table, uint64_t used,
		      const uint8_t *stacks, uint64_t stack_capacity,
		      uint32_t max_frames);

#endif /* PA_TRACER_SITES_H */
