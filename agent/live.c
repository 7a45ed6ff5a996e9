// SPDX-License-Identifier: MIT
/*
 * live.c - the set of sampled allocations that are still live.
 *
 * The table lives in the memfd (so a late or post-mortem reader sees it);
 * its layout and key encoding are drawn in the ABI header.  Operations are
 * lock-free and async-signal-safe:
 *
 *   insert  claims the first empty or tombstone slot of the probe sequence
 *           with a CAS to addr|BUSY, fills size/seq/time, then publishes the
 *           plain address with release order.
 *   remove  finds the slot whose key is exactly addr and CASes it to a
 *           tombstone.  A slot is never made empty again, so a probe that
 *           meets an empty slot has seen every slot addr could be in.
 *
 * The caller orders these against the real allocator: insert after malloc
 * returned, remove before free is called, so the same address is never in
 * the table twice and never removed by a thread that does not own it.
 *
 * Because tombstones pile up, a miss probes up to PA_LIVE_MAX_PROBE slots.
 * Most frees are of unsampled memory, so they first ask a filter of byte
 * counters in the agent's own memory (incremented before insert, decremented
 * after remove, sticky once saturated: live.h): a zero means "certainly not sampled" for the
 * price of one byte load.
 */
#include <errno.h>
#include <stddef.h>
#include "live.h"

void live__init(struct live_table *t, struct pa_live_entry *entries,
		uint64_t capacity, uint8_t *filter)
{
	t->entries = entries;
	t->capacity = capacity;
	t->filter = filter;
}

static void filter_inc(struct live_table *t, uint64_t addr)
{
	uint8_t *c = &t->filter[live_filter_slot(addr)];
	uint8_t v = __atomic_load_n(c, __ATOMIC_RELAXED);

	do {
		if (v >= LIVE_FILTER_STUCK)
			return;		/* sticky */
	} while (!__atomic_compare_exchange_n(c, &v, v + 1, 1,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
}

static void filter_dec(struct live_table *t, uint64_t addr)
{
	uint8_t *c = &t->filter[live_filter_slot(addr)];
	uint8_t v = __atomic_load_n(c, __ATOMIC_RELAXED);

	do {
		if (v >= LIVE_FILTER_STUCK || v == 0)
			return;
	} while (!__atomic_compare_exchange_n(c, &v, v - 1, 1,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
}

/* An entry's fields, read from shared memory, into *out. */
static void copy_entry(struct pa_live_entry *out,
		       const struct pa_live_entry *e, uint64_t addr)
{
	out->key = addr;
	out->size = e->size;
	out->alloc_id = e->alloc_id;
	out->time_ns = e->time_ns;
	out->stack_id = e->stack_id;
	out->site = e->site;
}

/* Claim e (its key read as key) for addr; a stale entry is copied out
 * first.  True if claimed. */
static bool claim(struct pa_live_entry *e, uint64_t key, uint64_t addr,
		  struct pa_live_entry *stale)
{
	/* read before the claim: nobody else takes it out once we hold it,
	 * and a racing free that wins the CAS takes it with these values */
	if (key == addr)
		copy_entry(stale, e, addr);
	return __atomic_compare_exchange_n(&e->key, &key, addr | PA_LIVE_BUSY,
					   0, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

/* Tries of a probe whose chosen slot was taken by another thread first. */
#define INSERT_TRIES	4

int live__insert(struct live_table *t, uint64_t addr, uint64_t size,
		 uint64_t alloc_id, uint64_t time_ns, uint32_t stack_id,
		 uint32_t site, struct pa_live_entry *stale)
{
	uint64_t mask = t->capacity - 1;
	struct pa_live_entry *e = NULL;
	unsigned int i, try;
	uint64_t key = 0;

	if (!addr || (addr & PA_LIVE_BUSY) || addr == PA_LIVE_TOMBSTONE)
		return -EINVAL;

	filter_inc(t, addr);
	for (try = 0; try < INSERT_TRIES; try++) {
		uint64_t slot = pa_live_hash(addr, t->capacity);
		struct pa_live_entry *free_e = NULL;
		uint64_t free_key = 0;

		e = NULL;
		/* the first free slot; with stale, on to the run's end, for
		 * an entry of the same address (a free the hooks missed),
		 * which is taken over instead */
		for (i = 0; i < PA_LIVE_MAX_PROBE;
		     i++, slot = (slot + 1) & mask) {
			struct pa_live_entry *c = &t->entries[slot];
			uint64_t k = __atomic_load_n(&c->key, __ATOMIC_ACQUIRE);

			if (stale && k == addr) {
				e = c;
				key = k;
				break;
			}
			if ((k == 0 || k == PA_LIVE_TOMBSTONE) && !free_e) {
				free_e = c;
				free_key = k;
			}
			if (free_e && (k == 0 || !stale))
				break;
		}
		if (!e) {
			e = free_e;
			key = free_key;
		}
		if (!e)
			break;
		if (claim(e, key, addr, stale))
			goto out_fill;
	}
	filter_dec(t, addr);
	return -ENOSPC;
out_fill:
	if (key == addr)
		filter_dec(t, addr);	/* one out, one in */
	e->size = size;
	e->alloc_id = alloc_id;
	e->time_ns = time_ns;
	e->stack_id = stack_id;
	e->site = site;
	__atomic_store_n(&e->key, addr, __ATOMIC_RELEASE);
	return key == addr;
}

/* addr's entry (published), or NULL. */
static struct pa_live_entry *find(struct live_table *t, uint64_t addr)
{
	uint64_t mask = t->capacity - 1;
	uint64_t slot = pa_live_hash(addr, t->capacity);
	unsigned int i;

	for (i = 0; i < PA_LIVE_MAX_PROBE; i++, slot = (slot + 1) & mask) {
		struct pa_live_entry *e = &t->entries[slot];
		uint64_t key = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);

		if (key == 0)
			return NULL;
		if (key == addr)
			return e;
	}
	return NULL;
}

bool live__set_site(struct live_table *t, uint64_t addr, uint32_t site)
{
	struct pa_live_entry *e = find(t, addr);

	if (!e)
		return false;
	__atomic_store_n(&e->site, site, __ATOMIC_RELAXED);
	return true;
}

bool live__remove(struct live_table *t, uint64_t addr,
		  struct pa_live_entry *out)
{
	struct pa_live_entry *e = find(t, addr);
	uint64_t key = addr;

	if (!e)
		return false;
	copy_entry(out, e, addr);
	if (!__atomic_compare_exchange_n(&e->key, &key, PA_LIVE_TOMBSTONE, 0,
					 __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		return false;	/* a racing double free won */
	filter_dec(t, addr);
	return true;
}
