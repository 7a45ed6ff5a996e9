/* SPDX-License-Identifier: MIT */
/*
 * stacks.h - the memfd's table of distinct stacks (layout in the ABI
 * header), so live samples and sites can name their stack by id.
 */
#ifndef PA_AGENT_STACKS_H
#define PA_AGENT_STACKS_H

#include <stdbool.h>
#include <stdint.h>
#include "pprof_alloc_abi.h"

struct stack_table {
	uint32_t *index;
	uint64_t *arena;
	uint64_t *used;		/* the header's stack_words_used */
	uint64_t slots;		/* private copies */
	uint64_t words;
	uint32_t max_frames;
	uint32_t gen;		/* each stacks__init's own, never 0: an id
				   kept elsewhere is of this table only if
				   kept with this (the walk memo's tags) */
};

/* base: the table in the memfd (pa_stack_table_size(capacity) bytes). */
void stacks__init(struct stack_table *t, uint8_t *base, uint64_t capacity,
		  uint32_t max_frames, uint64_t *used);

/* The id of this stack in the table, added if new; PA_STACK_NONE when
 * there is no room for it.  Lock-free and async-signal-safe. */
uint32_t stacks__intern(struct stack_table *t, const uint64_t *frames,
			uint32_t n);

/* Whether id is this very stack (every frame compared). */
static inline bool stacks__same(const struct stack_table *t, uint32_t id,
				const uint64_t *frames, uint32_t n)
{
	const uint64_t *e;
	uint32_t i;

	if (!id || id == PA_STACK_NONE || !t->arena ||
	    id + (uint64_t)n >= t->words)
		return false;
	e = &t->arena[id];
	if (__atomic_load_n(e, __ATOMIC_ACQUIRE) >> 32 == 0 ||
	    (uint32_t)*e != n)
		return false;
	for (i = 0; i < n; i++)
		if (e[1 + i] != frames[i])
			return false;
	return true;
}

/* The frames of a stack this agent interned: their number, or -1. */
int stacks__get(const struct stack_table *t, uint32_t id, uint64_t *frames);

#endif /* PA_AGENT_STACKS_H */
