/* SPDX-License-Identifier: MIT */
/*
 * sites.h - exact mode's counters per (stack, size) in the memfd (layout
 * in the ABI header).
 */
#ifndef PA_AGENT_SITES_H
#define PA_AGENT_SITES_H

#include <stdbool.h>
#include <stdint.h>
#include "pprof_alloc_abi.h"

#define PA_SITE_NONE	UINT32_MAX

struct site_table {
	struct pa_site *entries;	/* NULL: no table (not exact mode) */
	uint32_t *index;		/* 2 * capacity slots */
	uint64_t *used;			/* the header's sites_used */
	uint64_t capacity;		/* power of two; private copy */
};

/* base: the table in the memfd (pa_site_table_size(capacity) bytes). */
void sites__init(struct site_table *t, void *base, uint64_t capacity,
		 uint64_t *used);
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

/* Count an allocation at, or a free from, the entry at index. */
static inline void sites__count_alloc(struct site_table *t, uint32_t index)
{
	__atomic_add_fetch(&t->entries[index].allocs, 1, __ATOMIC_RELAXED);
}

/* release: a reader that sees the free (acquire) sees its allocation,
 * counted before the block was handed to the thread that frees it */
static inline void sites__count_free(struct site_table *t, uint32_t index)
{
	__atomic_add_fetch(&t->entries[index].frees, 1, __ATOMIC_RELEASE);
}

#endif /* PA_AGENT_SITES_H */
