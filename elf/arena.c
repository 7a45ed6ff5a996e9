/* SPDX-License-Identifier: MIT */
/*
 * arena.c - a bump allocator: many small allocations, one release.
 *
 * Memory comes from malloc in chunks that double from ARENA_FIRST up to
 * ARENA_MAX, so a small arena stays small and a big one makes few calls.
 * An allocation larger than a quarter of the current chunk size gets a
 * chunk of its own (put behind the current one, which keeps its free
 * space), so big arrays waste nothing.  Allocations are aligned to
 * max_align_t.  Nothing is freed until arena__free(), which walks the
 * chunk list.
 *
 * Sizes are checked for overflow before any sum.  An arena is not
 * thread-safe: give each thread its own.
 */
#include "elf/arena.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define ARENA_FIRST	(64u << 10)
#define ARENA_MAX	(4u << 20)
#define ARENA_ALIGN	_Alignof(max_align_t)

struct chunk {
	struct chunk *next;
	size_t size;		/* usable bytes after the header */
	max_align_t data[];
};

struct arena {
	struct chunk *chunks;	/* the current chunk first */
	char *next, *end;	/* free space of the current chunk */
	size_t chunk_size;	/* of the next ordinary chunk */
	size_t footprint;
};

struct arena *arena__new(void)
{
	struct arena *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->chunk_size = ARENA_FIRST;
	return a;
}

void arena__free(struct arena *a)
{
	struct chunk *c, *next;

	if (!a)
		return;
	for (c = a->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(a);
}

static struct chunk *chunk_new(struct arena *a, size_t size)
{
	struct chunk *c;

	if (size > SIZE_MAX - sizeof(*c))
		return NULL;
	c = malloc(sizeof(*c) + size);
	if (!c)
		return NULL;
	c->size = size;
	a->footprint += sizeof(*c) + size;
	return c;
}

void *arena__alloc(struct arena *a, size_t size)
{
	struct chunk *c;
	size_t rounded;
	char *p;

	if (size > SIZE_MAX - ARENA_ALIGN)
		goto out_nomem;
	/* At least one unit: zero bytes still get a pointer of their own. */
	rounded = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	if (!rounded)
		rounded = ARENA_ALIGN;
	if (a->next && rounded <= (size_t)(a->end - a->next)) {
		p = a->next;
		a->next += rounded;
		return p;
	}
	if (rounded > a->chunk_size / 4) {
		/* Its own chunk, behind the current one. */
		c = chunk_new(a, rounded);
		if (!c)
			goto out_nomem;
		if (a->chunks) {
			c->next = a->chunks->next;
			a->chunks->next = c;
		} else {
			c->next = NULL;
			a->chunks = c;
			a->next = a->end = (char *)c->data + rounded;
		}
		return c->data;
	}
	c = chunk_new(a, a->chunk_size);
	if (!c)
		goto out_nomem;
	c->next = a->chunks;
	a->chunks = c;
	a->next = (char *)c->data + rounded;
	a->end = (char *)c->data + c->size;
	if (a->chunk_size < ARENA_MAX)
		a->chunk_size *= 2;
	return c->data;

out_nomem:
	errno = ENOMEM;
	return NULL;
}

size_t arena__footprint(const struct arena *a)
{
	return a ? a->footprint : 0;
}
