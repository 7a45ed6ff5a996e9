// SPDX-License-Identifier: MIT
/*
 * stacks.c - interning the stacks of sampled allocations in the memfd.
 *
 * The live table says which sampled blocks are live, and in exact mode
 * the sites count every allocation; this table says where each was
 * allocated, so a tracer that connects late, or reads the memfd of a
 * process that died, can still build a profile.  Stacks repeat, so each
 * is stored once: an index (open addressing on a hash of the frames)
 * points into an arena that stacks take in order, each the words it
 * needs (layout and publication order in the ABI header).  Insert-only:
 * ids stay valid for the life of the memfd.
 *
 * The arena's pages are touched as stacks come (the memfd is not
 * populated there), so its memory is what the program's stacks need -
 * a compiler's 120,000 stacks of ~40 frames, a churn's handful - within
 * the bound its size sets.  A claimed slot whose stack found no words
 * left stays busy: later probes pass over it, and the stack goes to the
 * ring with its record.
 */
#include <string.h>
#include "stacks.h"

void stacks__init(struct stack_table *t, uint8_t *base, uint64_t capacity,
		  uint32_t max_frames, uint64_t *used)
{
	t->index = (uint32_t *)base;
	t->arena = (uint64_t *)(base + pa_stack_arena_offset(capacity));
	t->slots = pa_stack_slots(capacity);
	t->words = pa_stack_words(capacity);
	static uint32_t gens;

	t->used = used;
	t->max_frames = max_frames;
	t->gen = __atomic_add_fetch(&gens, 1, __ATOMIC_RELAXED) ?: 1;
}

/* A stack's words, its slot claimed: its id, or PA_STACK_NONE. */
static uint32_t add(struct stack_table *t, uint32_t *slot,
		    const uint64_t *frames, uint32_t n, uint64_t head)
{
	/* word 0 is never an id: 0 is an empty slot */
	uint64_t id = __atomic_fetch_add(t->used, n + 1, __ATOMIC_RELAXED) + 1;

	if (id + n >= t->words || id >= PA_STACK_SLOT_BUSY)
		return PA_STACK_NONE;	/* the slot stays busy: arena full */
	memcpy(&t->arena[id + 1], frames, n * sizeof(*frames));
	__atomic_store_n(&t->arena[id], head, __ATOMIC_RELEASE);
	__atomic_store_n(slot, (uint32_t)id, __ATOMIC_RELEASE);
	return (uint32_t)id;
}

uint32_t stacks__intern(struct stack_table *t, const uint64_t *frames,
			uint32_t n)
{
	uint64_t hash = pa_stack_hash(frames, n), mask = t->slots - 1;
	uint64_t head = pa_stack_head(n, hash), at = hash & mask;
	unsigned int i;

	if (!t->arena || n > t->max_frames)
		return PA_STACK_NONE;
	for (i = 0; i < PA_STACK_MAX_PROBE; i++, at = (at + 1) & mask) {
		uint32_t *slot = &t->index[at];
		uint32_t v = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

		if (v == 0) {
			if (!__atomic_compare_exchange_n(slot, &v,
							 PA_STACK_SLOT_BUSY, 0,
							 __ATOMIC_ACQUIRE,
							 __ATOMIC_RELAXED))
				continue;
			return add(t, slot, frames, n, head);
		}
		if (v == PA_STACK_SLOT_BUSY || v + (uint64_t)n >= t->words)
			continue;
		if (__atomic_load_n(&t->arena[v], __ATOMIC_ACQUIRE) == head &&
		    !memcmp(&t->arena[v + 1], frames, n * sizeof(*frames)))
			return v;
	}
	return PA_STACK_NONE;
}

int stacks__get(const struct stack_table *t, uint32_t id, uint64_t *frames)
{
	uint64_t head;
	uint32_t n;

	if (!t->arena || !id || id >= t->words)
		return -1;
	head = __atomic_load_n(&t->arena[id], __ATOMIC_ACQUIRE);
	n = (uint32_t)head;
	if (!(head >> 32) || n > t->max_frames || id + (uint64_t)n >= t->words)
		return -1;
	memcpy(frames, &t->arena[id + 1], n * sizeof(*frames));
	return (int)n;
}
