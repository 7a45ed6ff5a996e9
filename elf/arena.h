/* SPDX-License-Identifier: MIT */
/*
 * arena.h - a bump allocator: many small allocations, one release.
 *
 * For data that is built up and then dropped whole (an unpacked profile,
 * interned names): allocation is a pointer bump, and freeing everything is
 * a handful of free() calls however many pieces there were.
 */
#ifndef PA_ELF_ARENA_H
#define PA_ELF_ARENA_H

#include <stddef.h>

struct arena;

/* NULL with errno set. */
struct arena *arena__new(void);
/* Releases every allocation at once; NULL is fine. */
void arena__free(struct arena *a);

/*
 * size bytes aligned for any type (max_align_t), valid until
 * arena__free().  NULL with errno = ENOMEM.  Not zeroed.
 */
void *arena__alloc(struct arena *a, size_t size);

/* How many bytes the arena holds from malloc (for tests and reports). */
size_t arena__footprint(const struct arena *a);

#endif /* PA_ELF_ARENA_H */
