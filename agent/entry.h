/* SPDX-License-Identifier: MIT */
/*
 * entry.h - hooks for an allocator linked into the program (entry.c).
 */
#ifndef PA_AGENT_ENTRY_H
#define PA_AGENT_ENTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "pprof_alloc_abi.h"

extern struct pa_entry_table pprof_alloc_entry;

/* Is addr inside the main program's loaded segments? */
bool entry__in_program(uintptr_t addr);

/* Map the entry page near the program, once.  0 or -errno. */
int entry__map_page(void);

/* preload.c: its hooks and real pointers for the plain family's
 * malloc..pvalloc, written into hook[] and slot[] (indexed by enum
 * pa_entry_fn). */
void preload__entry_slots(uint64_t *hook, uint64_t *slot) __attribute__((weak));

/* A free of a block the free filter flags, reported before the real free:
 * a live sample (taken out of the live table) or, outside a patched call,
 * an unknown block. */
void agent__free_watched_block(void *p);

/*
 * realloc's accounting, for preload.c's realloc and the entry hooks: the
 * old block's free, the new block's allocation at fp.  Exactly one of re
 * (realloc's shape) and rx (jemalloc's rallocx, with flags) is set.
 */
void *agent__resize(void *p, size_t size, struct hook_frame fp,
		    void *(*re)(void *, size_t),
		    void *(*rx)(void *, size_t, int), int flags);

#endif /* PA_AGENT_ENTRY_H */
