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
 * Insert-only, like the stack table: a producer claims an empty entry
 * with a CAS of its state to PA_SITE_BUSY, writes the key and publishes
 * it with a release store of PA_SITE_READY.  A busy entry is passed over
 * (it may be another key), so two threads adding one key at once may make
 * two entries; the tracer sums by stack and size.  A full probe run gives
 * PA_SITE_NONE, and the caller records through the ring instead: the
 * table's size bounds the memory, never the exactness.
 */
#include <stddef.h>
#include "sites.h"

void sites__init(struct site_table *t, struct pa_site *entries,
		 uint64_t capacity)
{
	t->entries = capacity ? entries : NULL;
	t->capacity = capacity;
}

uint32_t sites__intern(struct site_table *t, uint32_t stack_id,
		       uint64_t size, uint16_t flags)
{
	uint64_t mask = t->capacity - 1;
	uint64_t slot = pa_site_hash(stack_id, size, flags) & mask;
	unsigned int i;

	if (!t->entries || stack_id == UINT32_MAX)
		return PA_SITE_NONE;
	for (i = 0; i < PA_SITE_MAX_PROBE; i++, slot = (slot + 1) & mask) {
		struct pa_site *e = &t->entries[slot];
		uint16_t st = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);

		if (st == PA_SITE_READY) {
			if (e->stack_id == stack_id && e->size == size &&
			    e->flags == flags)
				return (uint32_t)slot;
			continue;
		}
		if (st != 0)
			continue;
		if (!__atomic_compare_exchange_n(&e->state, &st, PA_SITE_BUSY,
						 0, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue;
		e->size = size;
		e->stack_id = stack_id;
		e->flags = flags;
		__atomic_store_n(&e->state, PA_SITE_READY, __ATOMIC_RELEASE);
		return (uint32_t)slot;
	}
	return PA_SITE_NONE;
}
