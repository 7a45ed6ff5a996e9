// SPDX-License-Identifier: MIT
/*
 * test-heap.c - the tracer's aggregation: buckets per (stack, size),
 * in-use accounting through frees, frees of unknown addresses, an address
 * allocated twice without a free in between (a lost free record).
 */
#include <string.h>
#include "check.h"
#include "tracer/record/heap.h"

static union {
	struct pa_rec_alloc a;
	uint8_t bytes[sizeof(struct pa_rec_alloc) + 64 * 8];
} rec;

static int alloc(struct heap *h, uint64_t addr, uint64_t size,
		 const uint64_t *frames, uint32_t n)
{
	static uint64_t seq;

	memset(&rec, 0, sizeof(rec));
	rec.a.hdr.type = PA_REC_ALLOC;
	rec.a.seq = ++seq;		/* every sample has its own id */
	rec.a.addr = addr;
	rec.a.size = size;
	rec.a.time_ns = addr;
	rec.a.nframes = n;
	memcpy(rec.a.frames, frames, n * 8);
	return heap__alloc(h, &rec.a);
}

static void dofree(struct heap *h, uint64_t addr)
{
	struct pa_rec_free f = { .hdr.type = PA_REC_FREE, .addr = addr };

	heap__free(h, &f);
}

static const struct heap_bucket *find(const struct heap *h, uint64_t leaf,
				      uint64_t size)
{
	size_t i;

	for (i = 0; i < h->nbuckets; i++)
		if (h->buckets[i].size == size && h->buckets[i].nframes &&
		    heap__frames(h, &h->buckets[i])[0] == leaf)
			return &h->buckets[i];
	return NULL;
}

/* The snapshot's in-use bytes of the bucket of (leaf, size). */
static double peak_bytes_of(const struct heap *h, uint64_t leaf, uint64_t size)
{
	const struct heap_bucket *b = find(h, leaf, size);
	const double *p = b ? heap__peak_of(h, (size_t)(b - h->buckets)) : NULL;

	return p ? p[1] : 0;
}

/* The in-use heap at its highest: rises at one site, falls, rises less at
 * another; site counters read as one batch; many small steps. */
static void check_peak(void)
{
	static const uint64_t a[] = { 0xa0, 0x20 }, b[] = { 0xb0, 0x20 };
	struct heap h;
	uint64_t i;
	int64_t bk;
	int made;

	heap__init(&h, 1);
	for (i = 0; i < 1000; i++)
		alloc(&h, 0x100000 + i * 0x1000, 1000, a, 2);
	CHECK(h.peak_bytes == 1000000 && h.peak_objects == 1000);
	CHECK(h.peak_ns == 0x100000 + 999 * 0x1000);	/* its record's */
	for (i = 0; i < 1000; i++)
		dofree(&h, 0x100000 + i * 0x1000);
	for (i = 0; i < 10; i++)
		alloc(&h, 0x900000 + i * 0x1000, 100, b, 2);
	heap__peak_ready(&h);
	CHECK(h.now_bytes == 1000);
	CHECK(h.peak_bytes == 1000000);
	CHECK(peak_bytes_of(&h, 0xa0, 1000) == 1000000);
	CHECK(peak_bytes_of(&h, 0xb0, 100) == 0);	/* not there then */
	CHECK(find(&h, 0xa0, 1000)->inuse_bytes == 0);
	CHECK_EQ_INT(h.snaps, 1);			/* one, lazily */

	/* a batch: only its end counts (b's allocations and a's frees came
	 * in any order within it) */
	bk = heap__bucket(&h, b, 2, 100, false, &made);
	CHECK(bk >= 0);
	heap__batch_begin(&h);
	heap__count(&h, bk, 100, 20000, 0);		/* +2000000 ... */
	heap__count(&h, bk, 100, 0, 19990);		/* ... -1999000 */
	heap__batch_end(&h, 7);
	CHECK(h.peak_bytes == 1000000);			/* net +1000: no high */
	heap__batch_begin(&h);
	heap__count(&h, bk, 100, 20000, 0);
	heap__batch_end(&h, 8);
	CHECK(h.peak_bytes == 2002000 && h.peak_ns == 8);
	heap__peak_ready(&h);				/* it is there now */
	CHECK(peak_bytes_of(&h, 0xb0, 100) == 2002000);
	CHECK(peak_bytes_of(&h, 0xa0, 1000) == 0);
	heap__fini(&h);

	/* many small steps up and down: few snapshots, each a real moment,
	 * the last within the step of the top */
	heap__init(&h, 1);
	for (i = 0; i < 20000; i++) {
		alloc(&h, 0x100000 + i * 0x100, 4096, a, 2);
		if (i % 3 == 2)
			dofree(&h, 0x100000 + (i - 1) * 0x100);
	}
	for (i = 0; i < 20000; i++)
		dofree(&h, 0x100000 + i * 0x100);
	heap__peak_ready(&h);
	CHECK(h.now_bytes == 0);
	CHECK(h.peak_bytes == (20000 - 6666) * 4096.0);
	CHECK(h.snaps < 2000);
	CHECK(peak_bytes_of(&h, 0xa0, 4096) <= h.peak_bytes);
	CHECK(peak_bytes_of(&h, 0xa0, 4096) >= h.peak_bytes * (1 - 1.0 / 256));
	heap__fini(&h);
}

int main(void)
{
	static const uint64_t s1[] = { 0x10, 0x20, 0x30 };
	static const uint64_t s2[] = { 0x11, 0x20, 0x30 };
	const struct heap_bucket *b;
	struct heap h;
	uint64_t i;

	heap__init(&h, 1);
	CHECK_EQ_INT(alloc(&h, 0x1000, 100, s1, 3), 1);	/* new bucket */
	CHECK_EQ_INT(alloc(&h, 0x2000, 100, s1, 3), 0);	/* same bucket */
	CHECK_EQ_INT(alloc(&h, 0x3000, 50, s1, 3), 1);	/* other size */
	CHECK_EQ_INT(alloc(&h, 0x4000, 100, s2, 3), 1);	/* other stack */
	CHECK_EQ_INT(alloc(&h, 0x5000, 100, s1, 2), 1);	/* shorter stack */
	CHECK_EQ_INT(h.nbuckets, 4);

	dofree(&h, 0x1000);
	dofree(&h, 0x9999);				/* never seen */
	CHECK_EQ_INT(h.frees, 2);
	CHECK_EQ_INT(h.frees_unknown, 1);

	b = find(&h, 0x10, 100);
	CHECK(b != NULL);
	CHECK(b->alloc_objects == 2 && b->alloc_bytes == 200);
	CHECK(b->inuse_objects == 1 && b->inuse_bytes == 100);

	/* 0x2000 allocated again without its free: the old one is gone */
	CHECK_EQ_INT(alloc(&h, 0x2000, 50, s1, 3), 0);
	CHECK_EQ_INT(h.allocs_replaced, 1);
	b = find(&h, 0x10, 100);
	CHECK(b->inuse_objects == 0 && b->inuse_bytes == 0);
	CHECK(b->alloc_objects == 2);
	b = find(&h, 0x10, 50);
	CHECK(b->inuse_objects == 2 && b->inuse_bytes == 100);

	/* churn: many allocations and frees keep in-use exact and the
	 * bucket count flat */
	for (i = 0; i < 100000; i++) {
		alloc(&h, 0x100000 + i * 16, 8, s2, 3);
		if (i >= 10)
			dofree(&h, 0x100000 + (i - 10) * 16);
	}
	b = find(&h, 0x11, 8);
	CHECK(b->alloc_objects == 100000 && b->inuse_objects == 10);
	CHECK(b->inuse_bytes == 80);
	CHECK_EQ_INT(h.nbuckets, 5);
	CHECK_EQ_INT(h.live.used, 4 + 10);
	heap__fini(&h);

	/* sampled rate: weights, and frees take back exactly what was added */
	heap__init(&h, 524288);
	alloc(&h, 0x1000, 1000, s1, 3);
	alloc(&h, 0x2000, 1000, s1, 3);
	dofree(&h, 0x1000);
	b = find(&h, 0x10, 1000);
	CHECK(b->alloc_objects > 500 && b->alloc_objects < 1100);
	CHECK(b->inuse_objects * 2 == b->alloc_objects);
	heap__fini(&h);

	/* reconcile: the agent's table says which samples are still live */
	{
		static struct pa_live_entry table[1024];
		uint16_t untracked_flag = PA_ALLOC_UNTRACKED;

		heap__init(&h, 1);
		alloc(&h, 0x1000, 10, s1, 3);	/* still live */
		alloc(&h, 0x2000, 10, s1, 3);	/* freed, record lost */
		alloc(&h, 0x3000, 10, s1, 3);	/* live, but another block */
		alloc(&h, 0x4000, 10, s1, 3);
		rec.a.hdr.flags = untracked_flag;	/* never in the table */
		rec.a.seq += 1000;			/* another sample */
		heap__alloc(&h, &rec.a);
		memset(table, 0, sizeof(table));
		table[1].key = 0x1000;
		table[1].alloc_id = u64map__slot(&h.live, 0x1000)->aux;
		table[2].key = 0x3000;			/* a different sample */
		table[2].alloc_id = u64map__slot(&h.live, 0x3000)->aux + 1;
		table[3].key = PA_LIVE_TOMBSTONE;
		table[4].key = 0x5000 | PA_LIVE_BUSY;	/* garbage is ignored */
		CHECK_EQ_INT(heap__reconcile(&h, table, 1024, NULL), 0);
		CHECK_EQ_INT(h.reconciled, 2);
		b = find(&h, 0x10, 10);
		CHECK(b->inuse_objects == 2 && b->inuse_bytes == 20);
		CHECK(b->alloc_objects == 5);	/* 0x4000 recorded twice */
		heap__fini(&h);
	}
	/* the cap: new (stack, size) pairs past it go to [other], whose
	 * frees take back each block's own size */
	{
		const struct heap_bucket *other;
		uint64_t f[1];
		int k;

		heap__init(&h, 1);
		heap__set_max_buckets(&h, 3);
		for (k = 0; k < 10; k++) {
			f[0] = 0x100 + (uint64_t)k;
			CHECK(alloc(&h, 0x10000 + (uint64_t)k * 16,
				    100 + (uint64_t)k, f, 1) >= 0);
		}
		/* an old pair still finds its bucket */
		f[0] = 0x101;
		CHECK_EQ_INT(alloc(&h, 0x20000, 101, f, 1), 0);
		CHECK_EQ_INT(h.nbuckets, 4);		/* 3 + [other] */
		CHECK_EQ_INT(h.folded, 7);
		other = &h.buckets[h.other];
		CHECK_EQ_INT(other->nframes, 1);
		CHECK(heap__frames(&h, other)[0] == HEAP_FRAME_OTHER);
		CHECK_EQ_INT(other->size, 0);
		/* 103 + 104 + ... + 109 */
		CHECK(other->inuse_objects == 7 && other->inuse_bytes == 742);
		dofree(&h, 0x10000 + 5 * 16);		/* 105 bytes */
		dofree(&h, 0x10000 + 9 * 16);		/* 109 bytes */
		CHECK(other->inuse_objects == 5 && other->inuse_bytes == 528);
		CHECK(other->alloc_bytes == 742);
		CHECK_EQ_INT(h.mixed_sizes.used, 5);
		/* an address reused by an [other] sample before its free */
		f[0] = 0x999;
		CHECK_EQ_INT(alloc(&h, 0x10000 + 6 * 16, 7, f, 1), 0);
		CHECK(other->inuse_objects == 5 && other->inuse_bytes == 429);
		/* a known stack with a new size: its own size-less bucket */
		f[0] = 0x102;
		CHECK_EQ_INT(alloc(&h, 0x30000, 77, f, 1), 0);
		CHECK_EQ_INT(alloc(&h, 0x30010, 88, f, 1), 0);
		CHECK_EQ_INT(h.nbuckets, 5);
		CHECK_EQ_INT(h.folded_sizes, 2);
		CHECK_EQ_INT(h.folded, 8);	/* 7, and 0x999 */
		other = &h.buckets[4];
		CHECK(other->mixed && other->size == 0);
		CHECK(heap__frames(&h, other)[0] == 0x102);
		CHECK(other->inuse_bytes == 165);
		dofree(&h, 0x30000);
		CHECK(other->inuse_bytes == 88 && other->inuse_objects == 1);
		heap__fini(&h);
	}

	/* the live cap: past it, allocated but not in use; a free of one of
	 * those is unknown; room comes back when a live one is freed */
	{
		heap__init(&h, 1);
		heap__set_max_live(&h, 3);
		for (i = 0; i < 5; i++)
			alloc(&h, 0x1000 * (i + 1), 10, s1, 3);
		b = find(&h, 0x10, 10);
		CHECK(b->alloc_objects == 5 && b->alloc_bytes == 50);
		CHECK(b->inuse_objects == 3 && b->inuse_bytes == 30);
		CHECK_EQ_INT(h.live_dropped, 2);
		CHECK_EQ_INT(h.allocs, 5);
		dofree(&h, 0x5000);		/* was dropped */
		CHECK_EQ_INT(h.frees_unknown, 1);
		CHECK(b->inuse_objects == 3);
		dofree(&h, 0x1000);
		CHECK(b->inuse_objects == 2 && b->inuse_bytes == 20);
		alloc(&h, 0x6000, 10, s1, 3);
		CHECK(b->inuse_objects == 3 && b->inuse_bytes == 30);
		CHECK_EQ_INT(h.live_dropped, 2);
		/* the same address again replaces, even when full */
		alloc(&h, 0x6000, 10, s1, 3);
		CHECK_EQ_INT(h.live_dropped, 2);
		CHECK_EQ_INT(h.allocs_replaced, 1);
		CHECK(b->inuse_objects == 3);
		heap__fini(&h);
	}

	/* the frame budget: with 2 pairs allowed, 64 frames; a second stack
	 * of 40 frames would pass it and folds, though a pair is left */
	{
		uint64_t deep[40];

		heap__init(&h, 1);
		heap__set_max_buckets(&h, 2);
		for (i = 0; i < 40; i++)
			deep[i] = 0x1000 + i;
		CHECK_EQ_INT(alloc(&h, 0x10000, 8, deep, 40), 1);
		deep[0] = 0x999;
		alloc(&h, 0x20000, 8, deep, 40);
		CHECK_EQ_INT(h.npairs, 1);
		CHECK_EQ_INT(h.folded, 1);
		CHECK_EQ_INT(h.pair_frames, 40);
		/* a short one still fits */
		CHECK_EQ_INT(alloc(&h, 0x30000, 8, s1, 3), 1);
		CHECK_EQ_INT(h.npairs, 2);
		heap__fini(&h);
	}

	/* what no real allocation can be */
	CHECK(pa_block_plausible(0x1000, 10));
	CHECK(!pa_block_plausible(0, 10));
	CHECK(!pa_block_plausible(PA_USER_ADDR_LIMIT, 1));
	CHECK(!pa_block_plausible(0x1000, UINT64_MAX));
	CHECK(!pa_block_plausible(0x1000, PA_USER_ADDR_LIMIT));
	CHECK(pa_block_plausible(0x1000, PA_USER_ADDR_LIMIT - 0x1000));
	check_peak();
	CHECK_SUMMARY("test-heap");
	return 0;
}
