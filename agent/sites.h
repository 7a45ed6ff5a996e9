/* SPDX-License-Identifier: MIT */
/*
 * sites.h - exact mode's counters per (stack, size) in the memfd (layout
 * in the ABI header).
 */
#ifndef PA_AGENT_SITES_H
#define PA_AGENT_SITES_H

#include <stdbool.h>
#include <stdint.h>
#include "arch/arch.h"
#include "pprof_alloc_abi.h"

#define PA_SITE_NONE	UINT32_MAX

struct site_table {
	struct pa_site *entries;	/* NULL: no table (not exact mode) */
	uint32_t *index;		/* 2 * capacity slots */
	uint64_t *used;			/* the header's sites_used */
	uint64_t capacity;		/* power of two; private copy */
	struct pa_site_lane *lanes;	/* PA_SITE_LANES * lane_sites */
	uint64_t lane_sites;
	uint32_t *lanes_used;		/* the header's site_lanes_used */
	uint32_t gen;			/* bumped by each sites__init */
};

/* A thread's lane and its cache of sites, while it holds one. */
struct site_lane {
	struct pa_site_lane *counts;	/* lane_sites counters, or NULL */
	uint32_t *cache;		/* SITE_CACHE_SLOTS, or NULL */
};

#define SITE_CACHE_SLOTS	512u

/* base: the table in the memfd (pa_site_table_size(capacity) bytes). */
void sites__init(struct site_table *t, void *base, uint64_t capacity,
		 uint64_t *used, uint32_t *lanes_used);
/* The entry for (stack_id, size, flags), made if need be; PA_SITE_NONE
 * when its probe run is full (or busy) or there is no table. */
uint32_t sites__intern(struct site_table *t, uint32_t stack_id,
		       uint64_t size, uint16_t flags);

/* Whether site (an index + 1, 0: none) is the entry of this key. */
static inline bool sites__same(const struct site_table *t, uint32_t site,
			       uint32_t stack_id, uint64_t size, uint16_t flags)
{
	const struct pa_site *e;

	if (!site || site > t->capacity || !t->entries ||
	    stack_id == PA_STACK_NONE)
		return false;
	e = &t->entries[site - 1];
	return __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == PA_SITE_READY &&
	       e->stack_id == stack_id && e->size == size && e->flags == flags;
}

/*
 * A lane's count plus one.  Only its thread adds to it, and never from a
 * signal handler on top of its own add: on x86-64 one add instruction
 * (which no signal splits), elsewhere under *busy, and a nested call
 * finds it set and counts in the shared entry instead.  Release order:
 * what came before is seen by a reader that sees the count.  False when
 * busy.
 */
static inline bool sites__lane_add(uint64_t *count, uint8_t *busy)
{
	if (pa_arch_count_inc(count))
		return true;
	if (*busy)
		return false;
	*busy = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(count, __atomic_load_n(count, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELEASE);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	*busy = 0;
	return true;
}

/* Count an allocation at, or a free from, the entry at index: in the
 * thread's lane (NULL: none) when the index has a counter there. */
static inline void sites__count_alloc(struct site_table *t,
				      struct pa_site_lane *lane,
				      uint8_t *busy, uint32_t index)
{
	if (lane && index < t->lane_sites &&
	    sites__lane_add(&lane[index].allocs, busy))
		return;
	__atomic_add_fetch(&t->entries[index].allocs, 1, __ATOMIC_RELAXED);
}

/* release: a reader that sees the free (acquire) sees its allocation,
 * counted before the block was handed to the thread that frees it */
static inline void sites__count_free(struct site_table *t,
				     struct pa_site_lane *lane, uint8_t *busy,
				     uint32_t index)
{
	if (lane && index < t->lane_sites &&
	    sites__lane_add(&lane[index].frees, busy))
		return;
	__atomic_add_fetch(&t->entries[index].frees, 1, __ATOMIC_RELEASE);
}

/* The site cache's slot for a key. */
static inline uint32_t sites__cache_slot(uint32_t stack_id, uint64_t size,
					 uint16_t flags)
{
	return (uint32_t)(pa_site_hash(stack_id, size, flags) >> 40) &
	       (SITE_CACHE_SLOTS - 1);
}

/*
 * Lanes, handed out to threads (sites.c).  claim: a free lane for the
 * calling thread, or -1 when all are held (it counts in the entries);
 * its counters and cache into *l.  lane_of: the same for a lane held
 * (the table made again).  release: give lane back (a thread that ends).
 * forget: none held (a forked child; its threads are gone).
 */
int sites__claim_lane(struct site_table *t, struct site_lane *l);
void sites__lane_of(struct site_table *t, int lane, struct site_lane *l);
void sites__release_lane(int lane);
void sites__forget_lanes(void);
/* The caches unmapped (the agent released: no thread is in it); the
 * lanes stay their threads'. */
void sites__free(void);

#endif /* PA_AGENT_SITES_H */
