// SPDX-License-Identifier: MIT
/*
 * blockmap.c - exact mode's map from a live block's address to its site,
 * laid out as the heap is.
 *
 * At --rate 1 every block is live in the agent's books, and a free must
 * find its block's site.  The memfd's live table hashes addresses well
 * (its probes are bounded, and any clustering overflows them), so every
 * insert and every remove was a cache miss somewhere in 40 MiB - a third
 * of exact mode's cost on a tight churn.  A program frees and allocates
 * near where it just did, so this map follows the address space instead,
 * as tcmalloc's pagemap does: a radix tree of
 *
 *   root   bits 46..30 of the address: 2^17 words, each a node's number;
 *   node   bits 29..12: 2^18 words, each a leaf's number, for 1 GiB of
 *          address space; then 2^18 more for the pages' odd leaves;
 *   leaf   bits 11..4: 256 words, the site + 1 of the block at each
 *          16-byte granule of a 4 KiB page (0: none).  A block that is not
 *          16-aligned (jemalloc's 8-byte class) is in its page's odd leaf,
 *          made only for pages that have one.
 *
 * Nodes and leaves are taken from one pool mapped at the first use
 * (MAP_NORESERVE: its pages are made as they are touched), by a
 * fetch-and-add, and installed by a CAS on their parent's word; a thread
 * that loses the race leaves its piece unused.  Nothing is ever freed
 * while the agent runs, so a lookup never meets memory that went away.
 * The memory is a quarter of the bytes of the pages that ever held a
 * counted block, at most BLOCKMAP_POOL; past it, blocks go to the live
 * table as before.  It is left out of core dumps (MADV_DONTDUMP).
 *
 * A granule's word is read and written whole: put returns what was there
 * (a block whose free the hooks never saw: the caller ends it), take
 * empties it.  The caller orders them against the allocator as for the
 * live table, and owns the block meanwhile, so no other thread writes the
 * word: plain loads and stores, not locked exchanges.
 * The map is the agent's own memory: no tracer reads it (a site's counts
 * are what the profile takes), so it is not in the memfd, and a fork's
 * child that records again empties it (blockmap__reset).
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include "blockmap.h"
#include "pprof_alloc_memfd.h"

#define ROOT_BITS	17
#define NODE_BITS	18
#define LEAF_BITS	8
#define NODE_WORDS	(1u << NODE_BITS)
#define LEAF_WORDS	(1u << LEAF_BITS)
/* the pool's unit: a leaf (1 KiB); a node is 2 * NODE_WORDS words */
#define UNIT_BYTES	(LEAF_WORDS * sizeof(uint32_t))
#define NODE_UNITS	(2 * NODE_WORDS / LEAF_WORDS)
#define BLOCKMAP_POOL	(1ull << 30)
#define POOL_UNITS	(BLOCKMAP_POOL / UNIT_BYTES)

/*
 * Each thread's last leaves, by page: a lookup near the last ones (the
 * heap's usual way) skips the root and the node.  An entry is the page's
 * key (its number, odd bit and the map's reset generation) and its leaf's
 * number.  A signal handler may replace an entry between the two reads:
 * the key is read again after the leaf, and a leaf of the same key is the
 * same leaf.
 */
#define LEAF_CACHE	16u

struct leaf_cache {
	uint64_t key[LEAF_CACHE];
	uint32_t leaf[LEAF_CACHE];
};

static __thread struct leaf_cache leaf_cache;
static uint32_t reset_gen = 1;	/* bumped by each reset */

static uint32_t *root;		/* 2^ROOT_BITS words */
static uint32_t *pool;		/* POOL_UNITS units; unit 0 is never used */
static uint64_t pool_next = 1;
static int map_state;		/* 0 not yet, 1 mapping, 2 mapped, 3 failed */

size_t blockmap__bytes(void)
{
	uint64_t n = __atomic_load_n(&pool_next, __ATOMIC_RELAXED);

	if (n > POOL_UNITS)
		n = POOL_UNITS;
	return (size_t)((n - 1) * UNIT_BYTES);
}

/* The root and pool, mapped once.  False if there are none. */
static bool mapped(void)
{
	int state = __atomic_load_n(&map_state, __ATOMIC_ACQUIRE);
	size_t root_bytes = ((size_t)1 << ROOT_BITS) * sizeof(uint32_t);
	void *m;

	if (state == 2)
		return true;
	if (state != 0 ||
	    !__atomic_compare_exchange_n(&map_state, &state, 1, 0,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return false;	/* failed, or another thread maps it */
	/* not overcommitting, the kernel would charge all of it to the
	 * program's commit at once: the live table serves instead */
	if (pa_strict_overcommit()) {
		__atomic_store_n(&map_state, 3, __ATOMIC_RELEASE);
		return false;
	}
	m = mmap(NULL, root_bytes + BLOCKMAP_POOL, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		__atomic_store_n(&map_state, 3, __ATOMIC_RELEASE);
		return false;
	}
	/* nobody reads it from a core (the sites hold the counts), and a
	 * gigabyte of holes in every core dump costs its readers */
	madvise(m, root_bytes + BLOCKMAP_POOL, MADV_DONTDUMP);
	root = m;
	pool = (uint32_t *)((uint8_t *)m + root_bytes);
	__atomic_store_n(&map_state, 2, __ATOMIC_RELEASE);
	return true;
}

static inline uint32_t *unit(uint32_t n)
{
	return pool + (size_t)n * LEAF_WORDS;
}

/*
 * The word at *slot: its piece's number, a new piece of units units
 * installed there if it has none (make).  0 if none and none could be had.
 */
static uint32_t child(uint32_t *slot, uint32_t units, bool make)
{
	uint32_t n = __atomic_load_n(slot, __ATOMIC_ACQUIRE), mine;
	uint64_t at;

	/* a number never handed out is none (a write that raced a reset) */
	if (n)
		return (uint64_t)n + units <= POOL_UNITS ? n : 0;
	if (!make)
		return 0;
	at = __atomic_fetch_add(&pool_next, units, __ATOMIC_RELAXED);
	if (at + units > POOL_UNITS)
		return 0;	/* the pool is used up */
	mine = (uint32_t)at;
	if (__atomic_compare_exchange_n(slot, &n, mine, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		return mine;
	/* another thread's (ours stays unused) */
	return (uint64_t)n + units <= POOL_UNITS ? n : 0;
}

/* The word for addr through the tree; its leaf cached in slot i as key. */
static __attribute__((noinline)) uint32_t *word_slow(uint64_t addr, bool make,
						     uint64_t key,
						     unsigned int i)
{
	struct leaf_cache *c = &leaf_cache;
	uint32_t node, leaf;
	uint64_t r = addr >> (NODE_BITS + 12);

	if (r >> ROOT_BITS || !mapped())
		return NULL;
	node = child(&root[r], NODE_UNITS, make);
	if (!node)
		return NULL;
	/* the page's leaf, or its odd leaf for an address 8 mod 16 */
	leaf = child(&unit(node)[((addr & 8) ? NODE_WORDS : 0) +
				 ((addr >> 12) & (NODE_WORDS - 1))], 1, make);
	if (!leaf)
		return NULL;
	c->key[i] = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	c->leaf[i] = leaf;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	c->key[i] = key;
	return &unit(leaf)[(addr >> 4) & (LEAF_WORDS - 1)];
}

/* The word for addr, made if need be (make); NULL if none. */
static inline uint32_t *word(uint64_t addr, bool make)
{
	struct leaf_cache *c = &leaf_cache;
	/* the page, its odd bit and 15 bits of the generation: never 0 */
	uint64_t key = ((addr >> 12) << 1 | ((addr >> 3) & 1)) << 16 |
		       (__atomic_load_n(&reset_gen, __ATOMIC_ACQUIRE) & 0x7fff) |
		       1u << 15;
	unsigned int i = (unsigned int)(addr >> 12) & (LEAF_CACHE - 1);
	uint32_t leaf;

	if (c->key[i] == key) {
		leaf = c->leaf[i];
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (c->key[i] == key && leaf && leaf < POOL_UNITS)
			return &unit(leaf)[(addr >> 4) & (LEAF_WORDS - 1)];
	}
	return word_slow(addr, make, key, i);
}

int blockmap__put(uint64_t addr, uint32_t value, uint32_t *old)
{
	uint32_t *w;

	if (!value || (addr & 7))
		return -EINVAL;
	w = word(addr, true);
	if (!w)
		return -ENOMEM;
	/* plain loads and stores: the block is this thread's - malloc just
	 * returned it, or free is taking it - so no other thread writes its
	 * word meanwhile (a double free racing itself aside), and a locked
	 * exchange cost as much as the rest of the lookup */
	*old = __atomic_load_n(w, __ATOMIC_RELAXED);
	__atomic_store_n(w, value, __ATOMIC_RELEASE);
	return 0;
}

uint32_t blockmap__take(uint64_t addr)
{
	uint32_t *w, v;

	if (addr & 7 || __atomic_load_n(&map_state, __ATOMIC_ACQUIRE) != 2)
		return 0;
	w = word(addr, false);
	if (!w)
		return 0;
	v = __atomic_load_n(w, __ATOMIC_ACQUIRE);
	if (v)
		__atomic_store_n(w, 0, __ATOMIC_RELAXED);
	return v;
}

void blockmap__reset(bool alone)
{
	size_t root_bytes = ((size_t)1 << ROOT_BITS) * sizeof(uint32_t);

	if (__atomic_load_n(&map_state, __ATOMIC_ACQUIRE) != 2)
		return;
	/* zero pages again, the mapping kept: a thread still in a slow
	 * path of before reads zeros, never unmapped memory, and what it
	 * writes lands in units nobody will be handed again - the pool
	 * starts over only where no other thread can be (a fork's child) */
	madvise(root, root_bytes + BLOCKMAP_POOL, MADV_DONTNEED);
	/* every thread's cached leaves are of before */
	__atomic_add_fetch(&reset_gen, 1, __ATOMIC_RELEASE);
	if (alone)
		__atomic_store_n(&pool_next, 1, __ATOMIC_RELEASE);
}

void blockmap__free(void)
{
	size_t root_bytes = ((size_t)1 << ROOT_BITS) * sizeof(uint32_t);

	__atomic_add_fetch(&reset_gen, 1, __ATOMIC_RELEASE);
	if (__atomic_load_n(&map_state, __ATOMIC_ACQUIRE) == 2)
		munmap(root, root_bytes + BLOCKMAP_POOL);
	root = NULL;
	pool = NULL;
	pool_next = 1;
	map_state = 0;
}
