// SPDX-License-Identifier: MIT
/*
 * stacks.c - interning the stacks of sampled allocations in the memfd.
 *
 * The live table says which sampled blocks are live; this table says where
 * each was allocated, so a tracer that connects late, or reads the memfd of
 * a process that died, can still build a profile of the live heap.  Stacks
 * repeat, so they are stored once: open addressing on a hash of the
 * frames, insert-only.  A producer claims an empty entry with a CAS of its
 * hash word to PA_STACK_BUSY, writes the frames, then publishes the hash
 * with release order; a reader that sees a published hash sees the frames.
 * Two threads interning the same new stack at once may store it twice -
 * harmless, the tracer compares frames, not indices.  A full probe run
 * returns PA_STACK_NONE: the sample is still recorded, with its stack in
 * its ring record; only a late reader would lack it.
 *
 * The table never shrinks: its size bounds the distinct stacks of what is
 * live at any moment of the process's life, not of what is live now.
 */
#include <string.h>
#include "stacks.h"

void stacks__init(struct stack_table *t, uint8_t *base, uint64_t capacity,
		  uint32_t max_frames)
{
	t->base = base;
	t->capacity = capacity;
	t->max_frames = max_frames;
	t->entry_size = pa_stack_entry_size(max_frames);
}

uint32_t stacks__intern(struct stack_table *t, const uint64_t *frames,
			uint32_t n)
{
	uint64_t hash = pa_stack_hash(frames, n), mask = t->capacity - 1;
	uint64_t slot = hash & mask;
	unsigned int i;

	if (!t->base || n > t->max_frames)
		return PA_STACK_NONE;
	for (i = 0; i < PA_STACK_MAX_PROBE; i++, slot = (slot + 1) & mask) {
		struct pa_stack_entry *e =
			(struct pa_stack_entry *)(t->base + slot * t->entry_size);
		uint64_t h = __atomic_load_n(&e->hash, __ATOMIC_ACQUIRE);

		if (h == hash && e->nframes == n &&
		    !memcmp(e->frames, frames, n * sizeof(*frames)))
			return (uint32_t)slot;
		if (h != 0)
			continue;
		if (!__atomic_compare_exchange_n(&e->hash, &h, PA_STACK_BUSY, 0,
						 __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue;
		e->nframes = n;
		e->reserved = 0;
		memcpy(e->frames, frames, n * sizeof(*frames));
		__atomic_store_n(&e->hash, hash, __ATOMIC_RELEASE);
		return (uint32_t)slot;
	}
	return PA_STACK_NONE;
}
