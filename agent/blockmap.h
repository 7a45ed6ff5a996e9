/* SPDX-License-Identifier: MIT */
/*
 * blockmap.h - exact mode's map from a live block's address to its site
 * (blockmap.c), in the agent's own memory.
 */
#ifndef PA_AGENT_BLOCKMAP_H
#define PA_AGENT_BLOCKMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* addr's block counts at value (a site's index + 1); *old what was there
 * (0, or a block whose free was never seen).  0, -EINVAL (an address not
 * 8-aligned), -ENOMEM (the pool is used up, or could not be mapped). */
int blockmap__put(uint64_t addr, uint32_t value, uint32_t *old);

/* addr's value, taken out; 0 if it has none. */
uint32_t blockmap__take(uint64_t addr);

/* Empty it (a followed child, a new attach, a detach); the mapping
 * stays.  alone: no other thread can be in it (a fork's child): its pool
 * starts over; else what was taken stays taken. */
void blockmap__reset(bool alone);
/* Unmap it (the agent is being unloaded: no thread is in it). */
void blockmap__free(void);
/* Bytes of its pool taken. */
size_t blockmap__bytes(void);

#endif /* PA_AGENT_BLOCKMAP_H */
