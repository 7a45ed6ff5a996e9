/* SPDX-License-Identifier: MIT */
/*
 * heap.h - the tracer's aggregate of sampled allocations: one bucket per
 * (stack, requested size), and the set of sampled blocks still live.
 */
#ifndef PA_TRACER_HEAP_H
#define PA_TRACER_HEAP_H

#include <stddef.h>
#include <stdint.h>
#include "pprof_alloc_abi.h"
#include "elf/u64map.h"

struct heap_bucket {
	uint64_t size;			/* requested bytes per allocation */
	double alloc_objects, alloc_bytes;	/* estimates (weighted) */
	double inuse_objects, inuse_bytes;
	uint64_t frames_at;		/* index into heap.frames */
	uint32_t nframes;
	uint16_t truncated;
	uint16_t mixed;			/* sizes vary: [other], or a stack's
					   sizes past the cap; no "bytes" */
	int64_t next;			/* same-hash chain, -1 at the end */
};

/*
 * The one frame of the [other] bucket: samples whose (stack, size) would
 * have made a bucket past max_buckets.  Like stackwalk's [truncated]
 * frame, not a user-space address.
 */
#define HEAP_FRAME_OTHER	0xffffffffffffe000ull

/* With a cap of max_buckets, at most max_buckets * this many frames are
 * kept in (stack, size) buckets: deep stacks fold sooner than short ones
 * (a hostile agent's 256-frame stacks, or their symbolization, would
 * otherwise cost 8 times what real ones do). */
#define HEAP_FRAMES_PER_PAIR	32u

struct heap {
	uint64_t rate;
	size_t max_buckets;		/* 0: no cap; else at most this many
					   (stack, size) buckets - so stacks -
					   plus mixed ones (below) */
	size_t npairs;			/* buckets of one (stack, size) */
	size_t pair_frames;		/* ... and their frames */
	struct u64map stacks;		/* with a cap: stack hash -> its mixed
					   bucket + 1 (0: none yet) */
	int64_t other;			/* the [other] bucket, -1: none yet */
	struct u64map mixed_sizes;	/* live samples of mixed buckets:
					   addr -> size */
	uint64_t folded;		/* samples of new stacks past the cap,
					   put in [other] */
	uint64_t folded_sizes;		/* samples of known stacks with a new
					   size past the cap */
	struct heap_bucket *buckets;
	size_t nbuckets, bucket_cap;
	uint64_t *frames;		/* all buckets' frames, leaf first */
	size_t nframes, frame_cap;
	struct u64map by_hash;		/* stack hash -> first bucket */
	struct u64map live;		/* address -> bucket, aux: alloc id */
	size_t max_live;		/* 0: no cap; else at most this many
					   live samples kept */
	uint64_t live_dropped;		/* samples not kept live past it */

	/* what came in */
	uint64_t allocs, frees;
	uint64_t frees_unknown;		/* of addresses we never saw */
	uint64_t frees_stale;		/* of a block whose address was already
					   reused (a realloc's late free) */
	uint64_t allocs_replaced;	/* address sampled again before its
					   free arrived */
	uint64_t truncated;		/* stacks cut at max_frames */
	uint64_t reconciled;		/* taken back: the agent's live table
					   says they were freed */
	uint64_t seeded;		/* live samples read from the tables */
	uint64_t unseeded;		/* ... that had no stack there, or an
					   impossible address or size */
	uint64_t untracked;		/* samples the agent could not track */
	uint64_t counted_allocs;	/* exact mode: allocations and frees */
	uint64_t counted_frees;		/* counted at the agent's sites */
	uint64_t first_ns, last_ns;

	/* The in-use heap's high-water mark (see heap.c) */
	double now_bytes, now_objects;	/* in use now: every bucket's sum */
	double moved_bytes;		/* ... of which blocks moved from a site
					   to the ring, counted twice until
					   the sites are read next */
	double peak_bytes, peak_objects;	/* the highest now_bytes seen */
	uint64_t peak_ns;		/* when (CLOCK_MONOTONIC) */
	uint64_t peak_gen;		/* bumped when the peak moves */
	double (*peak)[2];		/* per bucket: in use at the snapshot
					   (objects, bytes) */
	size_t peak_nbuckets, peak_cap;
	double snap_bytes;		/* now_bytes at the snapshot */
	uint64_t snaps;			/* snapshots taken */
	bool peak_pending;		/* a new high, not yet snapshotted */
	bool in_batch;			/* heap__batch_begin: no peak checks */
	bool peak_failed;		/* out of memory for a snapshot: the
					   last one stands */
};

void heap__init(struct heap *h, uint64_t rate);
/* At most max (stack, size) buckets from now on (0: no cap).  Past it, a
 * known stack's new sizes go to one size-less bucket of that stack, and
 * new stacks to one [other] bucket. */
void heap__set_max_buckets(struct heap *h, size_t max);
/* At most max live samples (0: no cap); past it a new sample counts as
 * allocated but not as in use. */
void heap__set_max_live(struct heap *h, size_t max);
void heap__fini(struct heap *h);

/* The estimated number of allocations one sample of size bytes stands for. */
double heap__weight(const struct heap *h, uint64_t size);

/* Returns 1 if the record made a new bucket (new frames to look at), 0 if
 * not, or -ENOMEM. */
int heap__alloc(struct heap *h, const struct pa_rec_alloc *rec);
void heap__free(struct heap *h, const struct pa_rec_free *rec);

/*
 * Exact mode (the agent's sites): the bucket of blocks of size bytes
 * allocated at frames (truncated: cut at max_frames), made if need be and
 * folded past the cap as heap__alloc folds; *made says it is new.  Index
 * or -ENOMEM.
 */
int64_t heap__bucket(struct heap *h, const uint64_t *frames, uint32_t n,
		     uint64_t size, bool truncated, int *made);
/* ... and allocs more allocations and frees more frees of them counted
 * there (rate 1: each is one allocation). */
void heap__count(struct heap *h, int64_t bucket, uint64_t size,
		 uint64_t allocs, uint64_t frees);

/* ... or estimates made elsewhere (another profiler's: jemalloc's), added
 * to the bucket as they are. */
void heap__add(struct heap *h, int64_t bucket, double alloc_objects,
	       double alloc_bytes, double inuse_objects, double inuse_bytes);

/*
 * Make the in-use set agree with the agent's live table (capacity entries,
 * shared memory: every key is checked, each entry read once).  A sample
 * the tracer holds as live that the table does not hold - same address,
 * same allocation id - was freed and its free record lost: it is taken
 * back.  Samples the agent never tracked (no room in the table) are left
 * alone.  Call only when the table is still, after the target exited or
 * the agent detached.  pages (NULL: all): a byte per page of the table,
 * 0 for a page the agent never touched - skipped, not read, as reading it
 * through a shared mapping would make it (ringfile__pages).  0 or -ENOMEM.
 */
int heap__reconcile(struct heap *h, const struct pa_live_entry *table,
		    uint64_t capacity, const unsigned char *pages);

/*
 * Take the live samples of an agent that was recording before we came:
 * each live-table entry with a stack in the stack table becomes an
 * allocation (its ring record, if still there, is then recognised by its
 * id and not counted twice).  An entry counted at one of the site_capacity
 * sites is not: the sites hold it (tracer/record/sites.c).  Shared memory: every entry is checked and
 * read once; garbage is skipped.  pages as for heap__reconcile.  0 or
 * -ENOMEM.
 */
int heap__seed(struct heap *h, const struct pa_live_entry *table,
	       uint64_t live_capacity, const unsigned char *pages,
	       const uint8_t *stacks,
	       uint64_t stack_capacity, uint32_t max_frames,
	       uint64_t site_capacity);

/*
 * A batch of changes seen as one step (a read of the agent's site
 * counters, which come in no order): the peak is looked at after it, not
 * inside it.  now: the batch's time.
 */
void heap__batch_begin(struct heap *h);
void heap__batch_end(struct heap *h, uint64_t now);

/* The in-use heap at its highest point, made ready to be read: after it,
 * h->peak[i] (i < h->peak_nbuckets; later buckets held nothing then) is
 * bucket i's in-use objects and bytes at the peak, and their sums are
 * within PEAK_STEP of peak_bytes (heap.c). */
void heap__peak_ready(struct heap *h);
static inline const double *heap__peak_of(const struct heap *h, size_t i)
{
	return i < h->peak_nbuckets ? h->peak[i] : NULL;
}

/* Every bucket's four values at one time (alloc_objects, alloc_bytes,
 * inuse_objects, inuse_bytes), for a delta profile against a later time. */
struct heap_snapshot {
	size_t nbuckets;
	double (*values)[4];
};
/* 0 or -ENOMEM; free with heap_snapshot__fini. */
int heap__snapshot(const struct heap *h, struct heap_snapshot *s);
void heap_snapshot__fini(struct heap_snapshot *s);

/* Estimated totals over every bucket: in use now, and allocated since the
 * start. */
struct heap_totals {
	double inuse_objects, inuse_bytes;
	double alloc_objects, alloc_bytes;
};
void heap__totals(const struct heap *h, struct heap_totals *t);

static inline const uint64_t *heap__frames(const struct heap *h,
					   const struct heap_bucket *b)
{
	return h->frames ? h->frames + b->frames_at : NULL;
}

#endif /* PA_TRACER_HEAP_H */
