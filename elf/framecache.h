/* SPDX-License-Identifier: MIT */
/*
 * framecache.h - the symbolizer's answers by address: each address's
 * frames, remembered so that it is resolved once however often it is asked
 * about.
 */
#ifndef PA_ELF_FRAMECACHE_H
#define PA_ELF_FRAMECACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "elf/symbolize.h"

struct cache_slot;

/* Zero-initialised is empty. */
struct frame_cache {
	struct cache_slot *slots;	/* capacity is a power of two */
	size_t cap, used;
	struct sym_frame *pool;		/* every entry's frames, end to end */
	size_t pool_len, pool_cap;
};

/*
 * The frames remembered for addr (*frames valid until the next insert) and
 * how many (*n, maybe 0); false if addr is not in the cache.
 */
bool frame_cache__find(const struct frame_cache *c, uint64_t addr,
		       const struct sym_frame **frames, int *n);

/* Remember frames[0..n) (n <= UINT16_MAX) for addr.  0 or -ENOMEM. */
int frame_cache__insert(struct frame_cache *c, uint64_t addr,
			const struct sym_frame *frames, int n);

void frame_cache__fini(struct frame_cache *c);

#endif /* PA_ELF_FRAMECACHE_H */
