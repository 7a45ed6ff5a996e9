// SPDX-License-Identifier: MIT
/*
 * session.c - what the tracer builds from one target's ring.
 *
 * Every record the consumer has checked comes here: frees and allocations
 * go to the heap aggregate (an allocation with a stack copy is unwound
 * first, tracer/record/stackwalk.c), module records to the mapping set, which
 * keeps them for after the target's death.  A frame in no known mapping
 * asks for /proc/PID/maps to be read again: at once for a sample that is
 * about to be unwound (its modules must be known now), else at the
 * caller's next session__refresh().  Every recording (recorder.c) goes
 * through this; none keeps any other per-record state.
 */
#include "session.h"

#include <errno.h>
#include <time.h>
#include "pa_clock.h"

int session__init(struct session *s, pid_t pid, uint64_t rate,
		  uint32_t max_frames)
{
	heap__init(&s->heap, rate);
	mapping_set__init(&s->maps, pid);
	s->need_refresh = false;
	s->pending_modules = false;
	s->alive = true;
	s->last_refresh = 0;
	s->sw = stackwalk__new(max_frames);
	return s->sw ? 0 : -ENOMEM;
}

void session__set_limits(struct session *s, size_t max_stacks,
			 uint64_t live_capacity, uint64_t live_size)
{
	uint64_t max_live = SIZE_MAX;

	if (live_capacity > live_size)
		live_capacity = live_size;
	if (live_capacity <= SIZE_MAX / SESSION_LIVE_PER_ENTRY)
		max_live = live_capacity * SESSION_LIVE_PER_ENTRY;
	heap__set_max_buckets(&s->heap, max_stacks);
	heap__set_max_live(&s->heap, (size_t)max_live);
}

void session__fini(struct session *s)
{
	mapping_set__fini(&s->maps);
	stackwalk__free(s->sw);
	s->sw = NULL;
	heap__fini(&s->heap);
}

void session__refresh(struct session *s, uint64_t now)
{
	if (!s->need_refresh || now - s->last_refresh < SESSION_REFRESH_NS)
		return;
	mapping_set__refresh(&s->maps);
	s->last_refresh = now;
	s->need_refresh = false;
}

/*
 * A sample with a stack copy is unwound as it is read, with the modules
 * known then: if its frame-pointer frames (the agent's cheap view of the
 * same stack) fall outside them, look at /proc now (at most every
 * SESSION_REFRESH_NS), or after the target's death open the modules only its
 * records named.
 */
static void modules_for(struct session *s, const struct pa_rec_alloc *a)
{
	uint64_t now;
	uint32_t i;

	for (i = 0; i < a->nframes; i++)
		if (!mapping_set__find(&s->maps, a->frames[i]))
			break;
	if (i == a->nframes)
		return;
	if (!s->alive) {
		if (s->pending_modules) {
			mapping_set__open_reported(&s->maps);
			s->pending_modules = false;
		}
		return;
	}
	now = pa_now_ns();
	if (now - s->last_refresh < SESSION_REFRESH_NS)
		return;
	mapping_set__refresh(&s->maps);
	s->last_refresh = now;
}

/* A new bucket's frames: one outside every known mapping asks for a
 * fresh read of /proc/PID/maps. */
static void check_frames(struct session *s, const struct pa_rec_alloc *a)
{
	uint32_t i;

	if (s->need_refresh)
		return;
	for (i = 0; i < a->nframes; i++)
		if (a->frames[i] != STACKWALK_TRUNCATED &&
		    !mapping_set__find(&s->maps, a->frames[i])) {
			s->need_refresh = true;
			return;
		}
}

int session__on_record(void *ctx, const struct pa_rec_hdr *rec)
{
	struct session *s = ctx;
	const struct pa_rec_alloc *a;
	int made;

	if (rec->type == PA_REC_FREE) {
		heap__free(&s->heap, (const struct pa_rec_free *)rec);
		return 0;
	}
	if (rec->type == PA_REC_MODULE) {
		const struct pa_rec_module *m = (const void *)rec;

		/* While the target lives, /proc (map_files) is the better
		 * source; the record is kept for after its death. */
		if (!mapping_set__find(&s->maps, m->start))
			s->need_refresh = true;
		s->pending_modules = true;
		return mapping_set__note(&s->maps, m->start, m->end, m->offset,
					 m->bias, m->path, m->path_len,
					 m->build_id, m->build_id_len) == -ENOMEM ?
			       -ENOMEM : 0;
	}
	a = (const struct pa_rec_alloc *)rec;
	if (a->hdr.flags & PA_ALLOC_STACK)
		modules_for(s, a);
	a = stackwalk__record(s->sw, &s->maps, a);
	made = heap__alloc(&s->heap, a);
	if (made < 0)
		return made;
	if (made)
		check_frames(s, a);
	return 0;
}

int64_t session__site_bucket(struct session *s,
			     const struct pa_rec_alloc *rec)
{
	const struct pa_rec_alloc *a = stackwalk__record(s->sw, &s->maps, rec);
	int64_t i;
	int made;

	i = heap__bucket(&s->heap, a->frames, a->nframes, a->size,
			 (a->hdr.flags & PA_ALLOC_TRUNCATED) != 0, &made);
	if (i >= 0 && made)
		check_frames(s, a);
	return i;
}

