/* SPDX-License-Identifier: MIT */
/*
 * stacks.h - the memfd's table of distinct stacks (layout in the ABI
 * header), so live samples can name their stack by index.
 */
#ifndef PA_AGENT_STACKS_H
#define PA_AGENT_STACKS_H

#include <stdint.h>
#include "pprof_alloc_abi.h"

struct stack_table {
	uint8_t *base;
	uint64_t capacity;	/* private copies */
	uint64_t entry_size;
	uint32_t max_frames;
};

void stacks__init(struct stack_table *t, uint8_t *base, uint64_t capacity,
		  uint32_t max_frames);

/* The index of this stack in the table, added if new; PA_STACK_NONE when
 * its probe run is full.  Lock-free and async-signal-safe. */
uint32_t stacks__intern(struct stack_table *t, const uint64_t *frames,
			uint32_t n);

#endif /* PA_AGENT_STACKS_H */
