/* SPDX-License-Identifier: MIT */
/*
 * framecache.c - each resolved address's frames, by address.
 *
 * Open addressing with linear probing over slots that point into one pool
 * of frames (a slot holds where its frames start and how many), kept at
 * most half full; the pool only grows.  Entries are never removed: the
 * symbolizer's answers stay valid as long as it does (the names they point
 * to are interned there).  Not thread-safe; each symbolizer has its own.
 */
#include "elf/framecache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "elf/array.h"

struct cache_slot {
	uint64_t addr;
	uint32_t first;		/* index in the pool */
	uint16_t count;
	bool used;
};

static uint64_t hash_addr(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

bool frame_cache__find(const struct frame_cache *c, uint64_t addr,
		       const struct sym_frame **frames, int *n)
{
	size_t i;

	if (!c->cap)
		return false;
	i = hash_addr(addr) & (c->cap - 1);
	for (; c->slots[i].used; i = (i + 1) & (c->cap - 1)) {
		if (c->slots[i].addr != addr)
			continue;
		*frames = &c->pool[c->slots[i].first];
		*n = c->slots[i].count;
		return true;
	}
	return false;
}

static int resize(struct frame_cache *c, size_t new_cap)
{
	struct cache_slot *slots;

	if (new_cap > SIZE_MAX / sizeof(*slots))
		return -ENOMEM;
	slots = calloc(new_cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < c->cap; i++) {
		size_t j;

		if (!c->slots[i].used)
			continue;
		j = hash_addr(c->slots[i].addr) & (new_cap - 1);
		while (slots[j].used)
			j = (j + 1) & (new_cap - 1);
		slots[j] = c->slots[i];
	}
	free(c->slots);
	c->slots = slots;
	c->cap = new_cap;
	return 0;
}

int frame_cache__insert(struct frame_cache *c, uint64_t addr,
			const struct sym_frame *frames, int n)
{
	size_t i;
	int err;

	if (n < 0 || n > UINT16_MAX)
		return -EINVAL;
	if (c->used + 1 > c->cap / 2) {
		if (c->cap > SIZE_MAX / 2)
			return -ENOMEM;
		err = resize(c, c->cap ? c->cap * 2 : 1024);
		if (err)
			return err;
	}
	if (c->pool_len + (size_t)n > UINT32_MAX)
		return -ENOMEM;
	err = array__grow((void **)&c->pool, &c->pool_cap,
			  c->pool_len + (size_t)n, sizeof(*c->pool));
	if (err)
		return err;

	i = hash_addr(addr) & (c->cap - 1);
	while (c->slots[i].used)
		i = (i + 1) & (c->cap - 1);
	c->slots[i] = (struct cache_slot){
		.addr = addr,
		.first = (uint32_t)c->pool_len,
		.count = (uint16_t)n,
		.used = true,
	};
	if (n)
		memcpy(&c->pool[c->pool_len], frames,
		       (size_t)n * sizeof(*frames));
	c->pool_len += (size_t)n;
	c->used++;
	return 0;
}

void frame_cache__fini(struct frame_cache *c)
{
	free(c->slots);
	free(c->pool);
	memset(c, 0, sizeof(*c));
}
