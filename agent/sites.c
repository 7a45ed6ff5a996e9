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
#include "sites.h"

void sites__init(struct site_table *t, void *base, uint64_t capacity,
		 uint64_t *used)
{
	t->entries = capacity ? base : NULL;
	t->index = capacity ? (uint32_t *)((struct pa_site *)base + capacity) :
			      NULL;
	t->used = used;
	t->capacity = capacity;
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
