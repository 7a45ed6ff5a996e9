/* SPDX-License-Identifier: MIT */
/*
 * live.h - the live table of sampled allocations (layout in the ABI header),
 * and the agent-private filter that lets free() skip it.
 */
#ifndef PA_AGENT_LIVE_H
#define PA_AGENT_LIVE_H

#include <stdbool.h>
#include <stdint.h>
#include "pprof_alloc_abi.h"

/*
 * The filter has one byte counter per 64-byte granule of address space
 * (mod the filter size): a counter is non-zero while a sampled block that
 * starts in such a granule is live.  Indexing by address rather than by a
 * hash keeps neighbouring frees on the same filter line - frees cluster in
 * the allocator's arenas, and one filter line covers a 4 KiB page - so the
 * check that every free pays is an L1 hit, not a random miss; and a granule
 * holds at most a few blocks, so false positives stay rare.
 */
#define LIVE_FILTER_BITS 16
#define LIVE_FILTER_SIZE (1u << LIVE_FILTER_BITS)
/* Sticky values: 255, a block the live table could not hold may start in
 * the granule (agent.c: untracked); 254, exact mode's block map holds
 * blocks there; 253, a count that saturated. */
#define LIVE_FILTER_MAPPED 254u
#define LIVE_FILTER_STUCK 253u

static inline uint32_t live_filter_slot(uint64_t addr)
{
	return (uint32_t)(addr >> 6) & (LIVE_FILTER_SIZE - 1);
}

struct live_table {
	struct pa_live_entry *entries;
	uint64_t capacity;	/* power of two; private copy */
	uint8_t *filter;	/* LIVE_FILTER_SIZE counters, agent memory */
};

void live__init(struct live_table *t, struct pa_live_entry *entries,
		uint64_t capacity, uint8_t *filter);

/* False means addr is certainly not in the table. */
static inline bool live_filter_hit(const uint8_t *filter, uint64_t addr)
{
	return __atomic_load_n(&filter[live_filter_slot(addr)],
			       __ATOMIC_RELAXED) != 0;
}

/* Start loading addr's first slot: an insert comes after the stack walk,
 * which then runs while the line is on its way. */
static inline void live__prefetch(const struct live_table *t, uint64_t addr)
{
	__builtin_prefetch(&t->entries[pa_live_hash(addr, t->capacity)], 1);
}

static inline bool live__maybe(const struct live_table *t, uint64_t addr)
{
	return live_filter_hit(t->filter, addr);
}

/*
 * site: the entry's site table index + 1, or 0 (see the ABI header).
 * stale (may be NULL): an entry for the same address met on the probe is
 * a block whose free was never seen (a free the hooks missed); it is
 * replaced, copied to *stale, and 1 returned.  0, 1, -EINVAL (untrackable
 * address), -ENOSPC (no free slot within the probe).
 */
int live__insert(struct live_table *t, uint64_t addr, uint64_t size,
		 uint64_t alloc_id, uint64_t time_ns, uint32_t stack_id,
		 uint32_t site, struct pa_live_entry *stale);

/* The live entry of addr (its allocation is still inside the agent, so
 * nobody frees it meanwhile) now counts at site.  False if not there. */
bool live__set_site(struct live_table *t, uint64_t addr, uint32_t site);

/* Remove addr; copies its entry to *out.  False if it was not there. */
bool live__remove(struct live_table *t, uint64_t addr,
		  struct pa_live_entry *out);

#endif /* PA_AGENT_LIVE_H */
