// SPDX-License-Identifier: MIT
/*
 * sites.c - exact mode: the agent's counters per (stack, size) into the
 * heap aggregate.
 *
 * At --rate 1 the agent counts what it can at sites in the memfd instead
 * of writing records (agent/sites.c): allocations and frees per
 * (stack-table index, size, flags), in entries taken in order.  The
 * tracer reads the entries in use (the header's sites_used, clipped to
 * the table) now and then and adds what each entry gained since the last read to the entry's
 * bucket, so the heap holds the same sums it would have built from one
 * record per call - and everything downstream (profiles, deltas, serve,
 * the top table) is unchanged.
 *
 * The table is the target's memory: an entry is taken once its state is
 * PA_SITE_READY, and its key (size, stack, flags) is then remembered and
 * must never change; its stack must be published in the stack table and
 * no longer than max_frames.  Counts only grow: one that goes down is a
 * lie, and the entry is refused from then on.  frees are read before
 * allocs (the agent counts a free after its allocation, with release
 * order), so frees > allocs should not be seen; if it is, the entry is
 * read again next time.  An entry is taken once it has counted an
 * allocation.  Its bucket is found once, with the frames rewritten as a
 * record's would be ([truncated]), and kept.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "sites.h"

enum { SITE_NEW = 0, SITE_TAKEN = 1, SITE_REFUSED = 2 };

int site_reader__init(struct site_reader *sr, uint64_t capacity)
{
	memset(sr, 0, sizeof(*sr));
	if (!capacity)
		return 0;
	sr->lane_sites = pa_lane_sites(capacity);
	sr->seen = calloc(capacity, sizeof(*sr->seen));
	sr->entry_frees = calloc(capacity, sizeof(uint64_t));
	sr->lane_allocs = calloc(sr->lane_sites, sizeof(uint64_t));
	sr->lane_frees = calloc(sr->lane_sites, sizeof(uint64_t));
	if (!sr->seen || !sr->entry_frees || !sr->lane_allocs ||
	    !sr->lane_frees) {
		site_reader__fini(sr);
		return -ENOMEM;
	}
	sr->capacity = capacity;
	return 0;
}

void site_reader__fini(struct site_reader *sr)
{
	free(sr->seen);
	free(sr->entry_frees);
	free(sr->lane_allocs);
	free(sr->lane_frees);
	memset(sr, 0, sizeof(*sr));
}

/*
 * The lanes' counts of the first n sites summed into sum: frees (which)
 * or allocations.  A page of a lane that is a hole is not read (reading
 * it would make it).  False when a sum overflows: counts no agent made.
 */
static bool sum_lanes(const struct site_reader *sr,
		      const struct site_lanes *lanes, uint64_t n, bool frees,
		      uint64_t *sum)
{
	const uint64_t per_page = PA_PAGE_SIZE / sizeof(struct pa_site_lane);
	uint32_t l;
	uint64_t i;
	bool ok = true;

	memset(sum, 0, n * sizeof(*sum));
	for (l = 0; lanes && lanes->base && l < lanes->used; l++) {
		const volatile struct pa_site_lane *lane =
			lanes->base + (uint64_t)l * sr->lane_sites;
		uint64_t first_page = (uint64_t)l * sr->lane_sites / per_page;

		for (i = 0; i < n; i++) {
			uint64_t v;

			if (lanes->pages && !(i % per_page) &&
			    !lanes->pages[first_page + i / per_page]) {
				i += per_page - 1;
				continue;
			}
			v = frees ? __atomic_load_n(&lane[i].frees,
						    __ATOMIC_ACQUIRE) :
				    __atomic_load_n(&lane[i].allocs,
						    __ATOMIC_ACQUIRE);
			if (__builtin_add_overflow(sum[i], v, &sum[i])) {
				sum[i] = UINT64_MAX;
				ok = false;
			}
		}
	}
	return ok;
}

/* First sight of a ready entry: its key checked and its bucket found.
 * 0, 1 (refused) or -ENOMEM. */
static int take(struct site_reader *sr, struct session *s,
		struct site_seen *seen, const volatile struct pa_site *e,
		const uint8_t *stacks, uint64_t stack_capacity,
		uint32_t max_frames)
{
	union {
		struct pa_rec_alloc rec;
		uint8_t bytes[sizeof(struct pa_rec_alloc) +
			      PA_MAX_FRAMES * sizeof(uint64_t)];
	} u;
	uint64_t size = e->size;
	uint32_t sid = e->stack_id;
	uint16_t flags = e->flags;
	int64_t b;
	int n;

	if (size >= PA_USER_ADDR_LIMIT || (flags & ~PA_SITE_TRUNCATED))
		return 1;
	memset(&u.rec, 0, sizeof(u.rec));
	n = pa_stack_get(stacks, stack_capacity, sid, max_frames,
			 u.rec.frames);
	if (n < 0)
		return 1;
	u.rec.hdr.type = PA_REC_ALLOC;
	u.rec.hdr.flags = flags & PA_SITE_TRUNCATED ? PA_ALLOC_TRUNCATED : 0;
	u.rec.hdr.len = (uint32_t)pa_alloc_rec_size((uint32_t)n, 0, 0);
	u.rec.size = size;
	u.rec.nframes = (uint32_t)n;
	b = session__site_bucket(s, &u.rec);
	if (b < 0)
		return (int)b;
	seen->size = size;
	seen->stack_id = sid;
	seen->flags = flags;
	seen->bucket = b;
	seen->state = SITE_TAKEN;
	sr->sites++;
	return 0;
}

int site_reader__read(struct site_reader *sr, struct session *s,
		      const struct pa_site *table, uint64_t used,
		      const struct site_lanes *lanes,
		      const uint8_t *stacks, uint64_t stack_capacity,
		      uint32_t max_frames)
{
	const volatile struct pa_site *t = table;
	uint64_t i, n = used < sr->capacity ? used : sr->capacity;
	uint64_t nl = n < sr->lane_sites ? n : sr->lane_sites;
	struct site_lanes clipped;
	bool sane;
	int err;

	if (lanes) {
		clipped = *lanes;
		if (clipped.used > PA_SITE_LANES)
			clipped.used = PA_SITE_LANES;
		lanes = &clipped;
	}
	/* every free before any allocation, wherever each is counted */
	sane = sum_lanes(sr, lanes, nl, true, sr->lane_frees);
	for (i = 0; i < n; i++)
		sr->entry_frees[i] = __atomic_load_n(&t[i].frees,
						     __ATOMIC_ACQUIRE);
	sane &= sum_lanes(sr, lanes, nl, false, sr->lane_allocs);
	for (i = 0; i < n; i++) {
		struct site_seen *seen = &sr->seen[i];
		const volatile struct pa_site *e = &t[i];
		uint64_t allocs, frees;

		if (seen->state == SITE_REFUSED ||
		    __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) !=
			    PA_SITE_READY)
			continue;
		/* nothing counted yet (its sample may have gone to the ring
		 * after all): no bucket for it yet */
		if (seen->state == SITE_NEW &&
		    !__atomic_load_n(&e->allocs, __ATOMIC_ACQUIRE) &&
		    !(i < nl && sr->lane_allocs[i]))
			continue;
		if (seen->state == SITE_NEW) {
			err = take(sr, s, seen, e, stacks, stack_capacity,
				   max_frames);
			if (err < 0)
				return err;
			if (err) {
				seen->state = SITE_REFUSED;
				sr->refused++;
				continue;
			}
		} else if (e->size != seen->size ||
			   e->stack_id != seen->stack_id ||
			   e->flags != seen->flags) {
			seen->state = SITE_REFUSED;
			sr->refused++;
			continue;
		}
		frees = sr->entry_frees[i];
		allocs = __atomic_load_n(&e->allocs, __ATOMIC_ACQUIRE);
		if (i < nl &&
		    ((!sane &&
		      (sr->lane_allocs[i] == UINT64_MAX ||
		       sr->lane_frees[i] == UINT64_MAX)) ||
		     __builtin_add_overflow(allocs, sr->lane_allocs[i],
					    &allocs) ||
		     __builtin_add_overflow(frees, sr->lane_frees[i],
					    &frees))) {
			seen->state = SITE_REFUSED;
			sr->refused++;
			continue;
		}
		if (allocs == seen->allocs && frees == seen->frees)
			continue;
		if (allocs < seen->allocs || frees < seen->frees) {
			seen->state = SITE_REFUSED;
			sr->backwards++;
			continue;
		}
		if (frees > allocs)
			continue;	/* not now: read again next time */
		heap__count(&s->heap, seen->bucket, seen->size,
			    allocs - seen->allocs, frees - seen->frees);
		seen->allocs = allocs;
		seen->frees = frees;
	}
	return 0;
}
