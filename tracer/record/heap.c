// SPDX-License-Identifier: MIT
/*
 * heap.c - aggregate sampled allocations into buckets.
 *
 * A bucket is one (call stack, requested size) pair, so a pprof sample can
 * carry the exact "bytes" label.  Each sample adds its weight w - the
 * number of allocations it stands for - to the bucket's alloc and in-use
 * sums, and its free takes the same w back.  With byte-based Poisson
 * sampling an allocation of s bytes is sampled with probability
 * p = 1 - exp(-s/rate); w = 1/p is Go's unbiased estimate (Go applies it
 * per bucket to the mean size; applying it per sample is the same formula
 * and exact when sizes differ).  rate 1 records everything: w = 1.
 *
 * Memory grows with distinct (stack, size) pairs and with live samples,
 * never with the number of records.  A process profiled for days
 * (`serve`) may make new pairs for ever; with max_buckets set, at most
 * that many (stack, size) buckets are made - so at most that many stacks
 * are known - and past it a sample of a known stack with a new size goes
 * to that stack's one "mixed" bucket (no "bytes" label), a sample of a new
 * stack to one [other] bucket (its stack is the single frame
 * HEAP_FRAME_OTHER).  So there are at most 2 * max_buckets + 1 buckets.
 * Their frames are bounded too: past max_buckets * HEAP_FRAMES_PER_PAIR
 * frames in (stack, size) buckets, new stacks fold the same way (a mixed
 * bucket's stack is a known one, so those hold no more again).
 * The sizes of live samples in mixed buckets are kept apart (mixed_sizes),
 * so that a free takes back exactly what its allocation added.
 *
 * The live set is bounded too (max_live): an agent tracks at most its
 * live table's entries, plus samples it could not track whose frees still
 * come, so a live set far past that is a target that never frees what it
 * says it allocated - a flood.  Past max_live a new sample counts as
 * allocated but not in use (live_dropped).
 *
 * The peak: every change to a bucket's in-use sums goes through
 * inuse_change, which keeps their total (now_bytes) and its high-water
 * mark.  A snapshot of every bucket's in-use sums at the peak would cost
 * a pass over the buckets at each new high, so one is taken lazily and
 * only past a step: a new high at least PEAK_STEP above the last snapshot
 * makes one pending, and it is taken just before the heap next goes down
 * (or when asked for) - while the heap still is what it was at that high.
 * So the snapshot holds a real moment of the heap within PEAK_STEP of its
 * highest, and snapshots are at most log(peak) / log(1 + PEAK_STEP).  A
 * batch (the agent's site counters, read in no order) is one step: the
 * peak is looked at after it, not between its sites.  With exact counts
 * (rate 1) any new high a batch makes is snapshotted: the peak is then
 * the heap at the highest read, not within a step of it.
 */
#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "heap.h"

void heap__init(struct heap *h, uint64_t rate)
{
	memset(h, 0, sizeof(*h));
	h->rate = rate ? rate : 1;
	h->other = -1;
	u64map__init(&h->by_hash);
	u64map__init(&h->live);
	u64map__init(&h->stacks);
	u64map__init(&h->mixed_sizes);
}

void heap__set_max_buckets(struct heap *h, size_t max)
{
	h->max_buckets = max;
}

void heap__set_max_live(struct heap *h, size_t max)
{
	h->max_live = max;
}

void heap__fini(struct heap *h)
{
	free(h->peak);
	free(h->buckets);
	free(h->frames);
	u64map__fini(&h->by_hash);
	u64map__fini(&h->live);
	u64map__fini(&h->stacks);
	u64map__fini(&h->mixed_sizes);
	memset(h, 0, sizeof(*h));
}

double heap__weight(const struct heap *h, uint64_t size)
{
	if (h->rate <= 1 || !size)
		return 1.0;
	return 1.0 / -expm1(-(double)size / (double)h->rate);
}

static uint64_t stack_hash(const uint64_t *frames, uint32_t n, uint64_t size)
{
	uint64_t x = u64_hash(size ^ ((uint64_t)n << 48));
	uint32_t i;

	for (i = 0; i < n; i++)
		x = u64_hash(x ^ frames[i]) + i;
	return x;
}

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 64;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return -ENOMEM;
		n *= 2;
	}
	if (n > SIZE_MAX / elem)
		return -ENOMEM;
	p = realloc(*v, n * elem);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = n;
	return 0;
}

static int64_t new_bucket(struct heap *h, const uint64_t *frames,
			  uint32_t n, uint64_t size, bool mixed,
			  uint64_t hash, const uint64_t *first);

/* A snapshot is taken once the heap is this much past the last one: a
 * fraction of it, and at least PEAK_MIN_STEP bytes. */
#define PEAK_STEP	(1.0 / 256)
#define PEAK_MIN_STEP	(64.0 * 1024)

static void snapshot_peak(struct heap *h)
{
	size_t i;

	h->peak_pending = false;
	if (grow((void **)&h->peak, &h->peak_cap, h->nbuckets,
		 sizeof(*h->peak))) {
		h->peak_failed = true;	/* the last snapshot stands */
		return;
	}
	for (i = 0; i < h->nbuckets; i++) {
		h->peak[i][0] = h->buckets[i].inuse_objects;
		h->peak[i][1] = h->buckets[i].inuse_bytes;
	}
	h->peak_nbuckets = h->nbuckets;
	h->snap_bytes = h->now_bytes;
	h->snaps++;
	h->peak_failed = false;
}

/* The heap went up to now_bytes at time now: a new high? */
static void went_up(struct heap *h, uint64_t now)
{
	double step;

	/* blocks moved from their sites to the ring count twice until the
	 * next read of the sites takes them off there (moved_bytes) */
	if (h->now_bytes - h->moved_bytes <= h->peak_bytes)
		return;
	h->peak_bytes = h->now_bytes - h->moved_bytes;
	h->peak_objects = h->now_objects;
	h->peak_ns = now;
	h->peak_gen++;
	step = h->snap_bytes * PEAK_STEP;
	if (h->now_bytes >= h->snap_bytes + (step > PEAK_MIN_STEP ? step :
					     PEAK_MIN_STEP))
		h->peak_pending = true;
}

/* Add to bucket b's in-use sums (below 0: take away) at time now;
 * quiet: not a step of its own (no new high from it). */
static void inuse_change(struct heap *h, struct heap_bucket *b,
			 double objects, double bytes, uint64_t now,
			 bool quiet)
{
	/* about to go down from a pending high: the heap is that high now */
	if (bytes < 0 && h->peak_pending && !h->in_batch)
		snapshot_peak(h);
	b->inuse_objects += objects;
	b->inuse_bytes += bytes;
	h->now_objects += objects;
	h->now_bytes += bytes;
	if (bytes > 0 && !h->in_batch && !quiet)
		went_up(h, now);
}

void heap__batch_begin(struct heap *h)
{
	if (h->peak_pending)
		snapshot_peak(h);
	h->in_batch = true;
}

void heap__batch_end(struct heap *h, uint64_t now)
{
	uint64_t gen = h->peak_gen;

	h->in_batch = false;
	h->moved_bytes = 0;	/* the sites have let them go */
	went_up(h, now);
	/* exact counts (rate 1): a batch that made a new high at all makes
	 * its snapshot pending, however little it rose - the batches come at
	 * most every read of the sites (50 ms), which bounds the snapshots;
	 * the step would leave the peak up to 1/256 short when a slow
	 * program's growth spans several reads */
	if (h->rate <= 1 && h->peak_gen != gen)
		h->peak_pending = true;
}

void heap__peak_ready(struct heap *h)
{
	/* a change that made no high of its own (a block moved from its
	 * site, jemalloc's own profile added) may have left the heap above
	 * its peak: the heap now is the peak then, never less than it */
	if (h->now_bytes - h->moved_bytes > h->peak_bytes) {
		h->peak_bytes = h->now_bytes - h->moved_bytes;
		h->peak_objects = h->now_objects;
		h->peak_ns = h->last_ns;
		h->peak_gen++;
		h->peak_pending = true;
	}
	/* pending, or at its high now and not snapshotted there: the heap as
	 * it is is the peak */
	if (h->peak_pending ||
	    (h->peak_bytes > 0 && h->now_bytes >= h->peak_bytes &&
	     h->snap_bytes != h->now_bytes))
		snapshot_peak(h);
}

/* The stack alone, for the registry of known stacks. */
#define STACK_ONLY	UINT64_MAX

/* The bucket for a sample past the cap.  Index or -ENOMEM. */
static int64_t past_cap(struct heap *h, const uint64_t *frames, uint32_t n)
{
	static const uint64_t other = HEAP_FRAME_OTHER;
	uint64_t *known = u64map__find(&h->stacks,
				       stack_hash(frames, n, STACK_ONLY));
	int64_t i;

	if (known) {
		h->folded_sizes++;
		if (*known)
			return (int64_t)*known - 1;
		i = new_bucket(h, frames, n, 0, true, 0, NULL);
		if (i < 0)
			return i;
		/* the registry may have grown: find the entry again */
		*u64map__find(&h->stacks, stack_hash(frames, n, STACK_ONLY)) =
			(uint64_t)i + 1;
		return i;
	}
	h->folded++;
	if (h->other < 0) {
		h->other = new_bucket(h, &other, 1, 0, true, 0, NULL);
	}
	return h->other;
}

/* Find or make the bucket; *made says it is new.  Index or -ENOMEM. */
static int64_t bucket_for(struct heap *h, const uint64_t *frames, uint32_t n,
			  uint64_t size, int *made)
{
	uint64_t hash = stack_hash(frames, n, size);
	uint64_t *first = u64map__find(&h->by_hash, hash);
	struct heap_bucket *b;
	int64_t i;

	*made = 0;
	for (i = first ? (int64_t)*first : -1; i >= 0; i = h->buckets[i].next) {
		b = &h->buckets[i];
		if (b->size == size && b->nframes == n &&
		    (!n || !memcmp(heap__frames(h, b), frames,
				   n * sizeof(*frames))))
			return i;
	}
	if (h->max_buckets &&
	    (h->npairs >= h->max_buckets ||
	     h->pair_frames + n > h->max_buckets * HEAP_FRAMES_PER_PAIR))
		return past_cap(h, frames, n);
	if (h->max_buckets) {
		uint64_t key = stack_hash(frames, n, STACK_ONLY);

		if (!u64map__find(&h->stacks, key) &&
		    u64map__put(&h->stacks, key, 0))
			return -ENOMEM;
	}
	i = new_bucket(h, frames, n, size, false, hash, first);
	if (i >= 0) {
		*made = 1;
		h->npairs++;
		h->pair_frames += n;
	}
	return i;
}

/*
 * Append a bucket.  One of a (stack, size) pair becomes the head of hash's
 * chain (first: the old head, or NULL); a mixed one is on no chain.
 * Index or -ENOMEM.
 */
static int64_t new_bucket(struct heap *h, const uint64_t *frames,
			  uint32_t n, uint64_t size, bool mixed,
			  uint64_t hash, const uint64_t *first)
{
	/* read before the put below overwrites it with the new head */
	int64_t next = first ? (int64_t)*first : -1;
	struct heap_bucket *b;
	int64_t i;
	int err;

	if (grow((void **)&h->buckets, &h->bucket_cap, h->nbuckets + 1,
		 sizeof(*h->buckets)) ||
	    grow((void **)&h->frames, &h->frame_cap, h->nframes + n,
		 sizeof(*h->frames)))
		return -ENOMEM;
	i = (int64_t)h->nbuckets;
	if (!mixed) {
		err = u64map__put(&h->by_hash, hash, (uint64_t)i);
		if (err)
			return err;
	}
	b = &h->buckets[i];
	memset(b, 0, sizeof(*b));
	b->size = size;
	b->nframes = n;
	b->frames_at = h->nframes;
	b->next = next;
	b->mixed = mixed;
	if (n)	/* h->frames is NULL before the first frame */
		memcpy(h->frames + h->nframes, frames, n * sizeof(*frames));
	h->nframes += n;
	h->nbuckets++;
	return i;
}

int64_t heap__bucket(struct heap *h, const uint64_t *frames, uint32_t n,
		     uint64_t size, bool truncated, int *made)
{
	int64_t i = bucket_for(h, frames, n, size, made);

	if (i >= 0 && truncated)
		h->buckets[i].truncated = 1;
	return i;
}

void heap__count(struct heap *h, int64_t bucket, uint64_t size,
		 uint64_t allocs, uint64_t frees)
{
	struct heap_bucket *b = &h->buckets[bucket];
	double live = (double)allocs - (double)frees;

	b->alloc_objects += (double)allocs;
	b->alloc_bytes += (double)allocs * (double)size;
	inuse_change(h, b, live, live * (double)size, h->last_ns, false);
	h->allocs += allocs;
	h->frees += frees;
	h->counted_allocs += allocs;
	h->counted_frees += frees;
	if (b->truncated)	/* its frames end in the [truncated] mark */
		h->truncated += allocs;
}

void heap__add(struct heap *h, int64_t bucket, double alloc_objects,
	       double alloc_bytes, double inuse_objects, double inuse_bytes)
{
	struct heap_bucket *b = &h->buckets[bucket];

	b->alloc_objects += alloc_objects;
	b->alloc_bytes += alloc_bytes;
	inuse_change(h, b, inuse_objects, inuse_bytes, h->last_ns, true);
}

/* In the live map's aux, beside the allocation id (which uses 62 bits). */
#define UNTRACKED (1ull << 63)

/* Undo the in-use part of the live sample at addr in bucket. */
static void take_back(struct heap *h, uint64_t bucket, uint64_t addr)
{
	struct heap_bucket *b = &h->buckets[bucket];
	uint64_t size = b->size;
	double w;

	if (b->mixed && !u64map__del(&h->mixed_sizes, addr, &size))
		return;		/* cannot happen: put with the live entry */
	w = heap__weight(h, size);
	inuse_change(h, b, -w, -w * (double)size, 0, false);
}

int heap__alloc(struct heap *h, const struct pa_rec_alloc *rec)
{
	struct heap_bucket *b;
	struct u64map_slot *same;
	uint64_t old, id = pa_alloc_id(rec->tid, rec->seq);
	int64_t i;
	double w;
	int made, err;

	/* seen already (taken from the live table, then met in the ring) */
	same = u64map__slot(&h->live, rec->addr);
	if (same && (same->aux & ~UNTRACKED) == id)
		return 0;
	i = bucket_for(h, rec->frames, rec->nframes, rec->size, &made);
	if (i < 0)
		return (int)i;
	b = &h->buckets[i];
	w = heap__weight(h, rec->size);
	/* a block an exact agent counted at a site, moved to the ring: its
	 * allocation was counted there */
	if (!(rec->hdr.flags & PA_ALLOC_MOVED)) {
		b->alloc_objects += w;
		b->alloc_bytes += w * (double)rec->size;
	}
	if (rec->hdr.flags & PA_ALLOC_TRUNCATED) {
		b->truncated = 1;
		if (!(rec->hdr.flags & PA_ALLOC_MOVED))	/* counted at its site */
			h->truncated++;
	}
	if (rec->hdr.flags & PA_ALLOC_UNTRACKED)
		h->untracked++;
	if (u64map__del(&h->live, rec->addr, &old)) {
		h->allocs_replaced++;
		take_back(h, old, rec->addr);
	} else if (h->max_live && h->live.used >= h->max_live) {
		/* counted as allocated, never as in use: see heap.h */
		h->live_dropped++;
		goto out_times;
	}
	err = h->buckets[i].mixed ? u64map__put(&h->mixed_sizes, rec->addr,
						 rec->size) : 0;
	if (!err)
		err = u64map__put2(&h->live, rec->addr, (uint64_t)i,
				   id | (rec->hdr.flags & PA_ALLOC_UNTRACKED ?
					 UNTRACKED : 0));
	if (err) {
		u64map__del(&h->mixed_sizes, rec->addr, NULL);
		return err;
	}
	/* a block moved from its site: in use there until the next read of
	 * the sites takes it off - it is not a new high now */
	if (rec->hdr.flags & PA_ALLOC_MOVED)
		h->moved_bytes += w * (double)rec->size;
	inuse_change(h, &h->buckets[i], w, w * (double)rec->size,
		     rec->time_ns, rec->hdr.flags & PA_ALLOC_MOVED);
out_times:
	if (!h->first_ns || rec->time_ns < h->first_ns)
		h->first_ns = rec->time_ns;
	if (rec->time_ns > h->last_ns)
		h->last_ns = rec->time_ns;
	if (!(rec->hdr.flags & PA_ALLOC_MOVED))
		h->allocs++;
	return made;
}

void heap__free(struct heap *h, const struct pa_rec_free *rec)
{
	struct u64map_slot *s = u64map__slot(&h->live, rec->addr);
	uint64_t bucket;

	h->frees++;
	if (!s) {
		h->frees_unknown++;
		return;
	}
	/* An unverified free (id 0) matches whatever lives there. */
	if (rec->alloc_id && rec->alloc_id != (s->aux & ~UNTRACKED)) {
		h->frees_stale++;
		return;
	}
	bucket = s->value;
	u64map__del(&h->live, rec->addr, NULL);
	take_back(h, bucket, rec->addr);
}

/* Entry i's key is on a page of the table that holds anything (pages:
 * a byte a page, 0 for a hole; NULL: every page may). */
static inline bool entry_there(const unsigned char *pages, uint64_t i)
{
	return !pages ||
	       pages[i * sizeof(struct pa_live_entry) / PA_PAGE_SIZE];
}

int heap__reconcile(struct heap *h, const struct pa_live_entry *table,
		    uint64_t capacity, const unsigned char *pages)
{
	const volatile struct pa_live_entry *t = table;
	struct u64map agent;
	uint64_t i;
	int err = 0;

	u64map__init(&agent);
	for (i = 0; i < capacity; i++) {
		uint64_t key, id;

		if (!entry_there(pages, i))
			continue;
		key = t[i].key;
		id = t[i].alloc_id;

		if (!key || key == PA_LIVE_TOMBSTONE || (key & PA_LIVE_BUSY))
			continue;
		err = u64map__put(&agent, key, id);
		if (err)
			goto out_fini;
	}
	for (i = 0; i < h->live.capacity; i++) {
		struct u64map_slot *s = &h->live.slots[i];
		uint64_t *id;

		if (s->state != 1 || (s->aux & UNTRACKED))
			continue;
		id = u64map__find(&agent, s->key);
		if (id && *id == s->aux)
			continue;
		take_back(h, s->value, s->key);
		s->state = 2;		/* deleted; the map stays consistent */
		h->live.used--;
		h->reconciled++;
	}
out_fini:
	u64map__fini(&agent);
	return err;
}

int heap__seed(struct heap *h, const struct pa_live_entry *table,
	       uint64_t live_capacity, const unsigned char *pages,
	       const uint8_t *stacks,
	       uint64_t stack_capacity, uint32_t max_frames,
	       uint64_t site_capacity)
{
	const volatile struct pa_live_entry *t = table;
	uint64_t i;
	int ret = 0;
	union {
		struct pa_rec_alloc rec;
		uint8_t bytes[sizeof(struct pa_rec_alloc) +
			      PA_MAX_FRAMES * sizeof(uint64_t)];
	} u;

	for (i = 0; i < live_capacity; i++) {
		uint64_t key, size, id;
		uint32_t sid;
		int made, n;

		if (!entry_there(pages, i))
			continue;
		key = t[i].key;
		size = t[i].size;
		sid = t[i].stack_id;
		if (!key || key == PA_LIVE_TOMBSTONE || (key & PA_LIVE_BUSY))
			continue;
		if (t[i].site && t[i].site <= site_capacity)
			continue;	/* counted at its site: sites.c */
		if (t[i].site) {
			h->unseeded++;	/* no such site */
			continue;
		}
		if (!pa_block_plausible(key, size)) {
			h->unseeded++;
			continue;
		}
		memset(&u.rec, 0, sizeof(u.rec));
		n = pa_stack_get(stacks, stack_capacity, sid, max_frames,
				 u.rec.frames);
		if (n < 0) {
			h->unseeded++;
			continue;
		}
		id = t[i].alloc_id;
		u.rec.hdr.type = PA_REC_ALLOC;
		u.rec.addr = key;
		u.rec.size = size;
		u.rec.time_ns = t[i].time_ns;
		u.rec.tid = (uint32_t)(id >> 40);
		u.rec.seq = id & ((1ull << 40) - 1);
		u.rec.nframes = (uint32_t)n;
		made = heap__alloc(h, &u.rec);
		if (made < 0) {
			ret = made;
			break;
		}
		h->seeded++;
	}
	return ret;
}

int heap__snapshot(const struct heap *h, struct heap_snapshot *s)
{
	s->nbuckets = h->nbuckets;
	s->values = calloc(h->nbuckets + 1, sizeof(*s->values));
	if (!s->values)
		return -ENOMEM;
	for (size_t i = 0; i < h->nbuckets; i++) {
		s->values[i][0] = h->buckets[i].alloc_objects;
		s->values[i][1] = h->buckets[i].alloc_bytes;
		s->values[i][2] = h->buckets[i].inuse_objects;
		s->values[i][3] = h->buckets[i].inuse_bytes;
	}
	return 0;
}

void heap_snapshot__fini(struct heap_snapshot *s)
{
	free(s->values);
	s->values = NULL;
	s->nbuckets = 0;
}

void heap__totals(const struct heap *h, struct heap_totals *t)
{
	size_t i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < h->nbuckets; i++) {
		t->inuse_objects += h->buckets[i].inuse_objects;
		t->inuse_bytes += h->buckets[i].inuse_bytes;
		t->alloc_objects += h->buckets[i].alloc_objects;
		t->alloc_bytes += h->buckets[i].alloc_bytes;
	}
}
