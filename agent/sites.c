// SPDX-License-Identifier: MIT
/*
 * sites.c - exact mode's counters per (stack, size), in the memfd.
 *
 * At --rate 1 every allocation is sampled, and a record per allocation
 * and per free costs more than the allocation itself - and, read by a
 * tracer on another core, more than that core can take.  So in exact mode
 * an allocation the agent walked itself is only counted: its stack is
 * interned in the stack table, (stack index, size, flags) names a site
 * here, the site's allocs grows by one and the live entry keeps the site,
 * so that its free adds one to the same site's frees.  The tracer reads
 * the counters whenever it likes, and a dead process's memfd (a core)
 * holds them all: nothing waits for a reader and nothing is dropped.
 *
 * Entries are taken in order (a fetch-and-add on the header's
 * sites_used), so the tracer reads only the ones in use, and found through
 * an index of twice as many slots: open addressing on a hash of the key.
 * A producer claims an empty slot with a CAS to PA_SITE_SLOT_BUSY, takes
 * the next entry, writes its key, publishes it (state PA_SITE_READY,
 * release), then stores the entry's index + 1 in the slot.  A busy slot is
 * passed over (it may be another key), so two threads adding one key at
 * once may make two entries; the tracer sums by stack and size.  A full
 * probe run, or no entry left (the slot then stays busy), gives
 * PA_SITE_NONE, and the caller records through the ring instead: the
 * table's size bounds the memory, never the exactness.
 */
#include <stddef.h>
#include <sys/mman.h>
#include "sites.h"

/* Lanes held: bit i, lane i (agent-private; the tracer sums them all). */
static uint32_t lanes_taken;
/* The lanes' site caches: PA_SITE_LANES * SITE_CACHE_SLOTS, mapped at the
 * first claim; NULL when that failed. */
static uint32_t *caches;
static int caches_state;	/* 0 not yet, 1 mapping, 2 done */

void sites__init(struct site_table *t, void *base, uint64_t capacity,
		 uint64_t *used, uint32_t *lanes_used)
{
	uint32_t held = __atomic_load_n(&lanes_taken, __ATOMIC_RELAXED);
	uint32_t top = held ? 32 - (uint32_t)__builtin_clz(held) : 0;

	t->entries = capacity ? base : NULL;
	t->index = capacity ? (uint32_t *)((struct pa_site *)base + capacity) :
			      NULL;
	t->lanes = capacity ? (struct pa_site_lane *)
			      ((uint8_t *)base +
			       pa_site_lanes_offset(capacity)) : NULL;
	t->lane_sites = pa_lane_sites(capacity);
	t->used = used;
	t->lanes_used = lanes_used;
	t->capacity = capacity;
	__atomic_add_fetch(&t->gen, 1, __ATOMIC_RELEASE);
	/* threads that hold a lane from before (an agent started again)
	 * count there: the tracer must read it */
	if (capacity && top > __atomic_load_n(lanes_used, __ATOMIC_RELAXED))
		__atomic_store_n(lanes_used, top, __ATOMIC_RELEASE);
}

static uint32_t *lane_caches(void)
{
	int expected = 0;
	void *m;

	if (__atomic_load_n(&caches_state, __ATOMIC_ACQUIRE) == 2)
		return __atomic_load_n(&caches, __ATOMIC_ACQUIRE);
	if (!__atomic_compare_exchange_n(&caches_state, &expected, 1, 0,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return NULL;	/* another thread maps them */
	m = mmap(NULL, PA_SITE_LANES * SITE_CACHE_SLOTS * sizeof(uint32_t),
		 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	__atomic_store_n(&caches, m == MAP_FAILED ? NULL : (uint32_t *)m,
			 __ATOMIC_RELEASE);
	__atomic_store_n(&caches_state, 2, __ATOMIC_RELEASE);
	return __atomic_load_n(&caches, __ATOMIC_ACQUIRE);
}

/* The header's site_lanes_used at least n: the tracer reads a lane before
 * anything is counted there (the table made again included). */
static void raise_used(struct site_table *t, uint32_t n)
{
	uint32_t used = __atomic_load_n(t->lanes_used, __ATOMIC_RELAXED);

	while (used < n &&
	       !__atomic_compare_exchange_n(t->lanes_used, &used, n, 0,
					    __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
}

void sites__lane_of(struct site_table *t, int lane, struct site_lane *l)
{
	uint32_t *c;

	l->counts = NULL;
	l->cache = NULL;
	if (lane < 0 || lane >= (int)PA_SITE_LANES || !t->lanes)
		return;
	l->counts = t->lanes + (uint64_t)lane * t->lane_sites;
	raise_used(t, (uint32_t)lane + 1);
	c = lane_caches();
	l->cache = c ? c + (uint64_t)lane * SITE_CACHE_SLOTS : NULL;
}

int sites__claim_lane(struct site_table *t, struct site_lane *l)
{
	uint32_t held = __atomic_load_n(&lanes_taken, __ATOMIC_RELAXED);
	int lane;

	l->counts = NULL;
	l->cache = NULL;
	if (!t->lanes)
		return -1;
	for (;;) {
		uint32_t free_bits = ~held & ((1u << PA_SITE_LANES) - 1);

		if (!free_bits)
			return -1;
		lane = __builtin_ctz(free_bits);
		if (__atomic_compare_exchange_n(&lanes_taken, &held,
						held | 1u << lane, 0,
						__ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED))
			break;
	}
	sites__lane_of(t, lane, l);
	return lane;
}

void sites__release_lane(int lane)
{
	if (lane >= 0 && lane < (int)PA_SITE_LANES)
		__atomic_and_fetch(&lanes_taken, ~(1u << lane),
				   __ATOMIC_RELEASE);
}

void sites__forget_lanes(void)
{
	__atomic_store_n(&lanes_taken, 0, __ATOMIC_RELAXED);
	/* a thread of the parent's that was mapping the caches never will */
	if (__atomic_load_n(&caches_state, __ATOMIC_RELAXED) == 1)
		__atomic_store_n(&caches_state, 0, __ATOMIC_RELAXED);
}

void sites__free(void)
{
	uint32_t *c = __atomic_exchange_n(&caches, NULL, __ATOMIC_ACQ_REL);

	if (c)
		munmap(c, PA_SITE_LANES * SITE_CACHE_SLOTS * sizeof(uint32_t));
	__atomic_store_n(&caches_state, 0, __ATOMIC_RELEASE);
}

/* A new entry for the key, its slot claimed.  Its index or PA_SITE_NONE. */
static uint32_t add(struct site_table *t, uint32_t *slot, uint32_t stack_id,
		    uint64_t size, uint16_t flags)
{
	uint64_t i = __atomic_fetch_add(t->used, 1, __ATOMIC_RELAXED);
	struct pa_site *e;

	if (i >= t->capacity)
		return PA_SITE_NONE;	/* the slot stays busy: table full */
	e = &t->entries[i];
	e->size = size;
	e->stack_id = stack_id;
	e->flags = flags;
	__atomic_store_n(&e->state, PA_SITE_READY, __ATOMIC_RELEASE);
	__atomic_store_n(slot, (uint32_t)i + 1, __ATOMIC_RELEASE);
	return (uint32_t)i;
}

uint32_t sites__intern(struct site_table *t, uint32_t stack_id,
		       uint64_t size, uint16_t flags)
{
	uint64_t mask = 2 * t->capacity - 1;
	uint64_t at = pa_site_hash(stack_id, size, flags) & mask;
	unsigned int i;

	if (!t->entries || stack_id == UINT32_MAX)
		return PA_SITE_NONE;
	for (i = 0; i < PA_SITE_MAX_PROBE; i++, at = (at + 1) & mask) {
		uint32_t *slot = &t->index[at];
		uint32_t v = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
		const struct pa_site *e;

		if (v == 0) {
			if (!__atomic_compare_exchange_n(slot, &v,
							 PA_SITE_SLOT_BUSY, 0,
							 __ATOMIC_ACQUIRE,
							 __ATOMIC_RELAXED))
				continue;
			return add(t, slot, stack_id, size, flags);
		}
		if (v == PA_SITE_SLOT_BUSY || v > t->capacity)
			continue;
		e = &t->entries[v - 1];
		if (e->stack_id == stack_id && e->size == size &&
		    e->flags == flags)
			return v - 1;
	}
	return PA_SITE_NONE;
}
