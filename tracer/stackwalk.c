// SPDX-License-Identifier: MIT
/*
 * stackwalk.c - allocation records with a stack copy (--unwind dwarf or
 * auto) to records with the frames DWARF unwinding finds.
 *
 * The consumer hands every allocation record here before the heap sees it.
 * A record without a copy passes through (one cut at max_frames gets the
 * [truncated] frame).  A record with one is unwound by elf/unwind.c from
 * the caller's registers and stack bytes it carries, with the CFI of the
 * target's modules: those of the mapping set, which hold an fd on the very
 * file each mapping maps (opened through /proc/PID/map_files), so no path
 * the target controls is followed.  The unwinder is told of mappings as
 * the set grows; libdwfl parses a module's CFI once, the first time a pc
 * lands in it, and keeps it, so the cost per sample is the walk itself.
 *
 * What comes out is checked against what the agent saw: the unwind starts
 * at the agent's own first frame (the return address into the allocator's
 * caller), and if it gets no further than that frame the agent's
 * frame-pointer frames are kept instead (counted as failed): a copy that
 * is garbage cannot make a stack worse than the walk the agent did.  A
 * walk that stops before the outermost frame - no CFI for a pc, a rule
 * that needs a register or stack bytes the copy lacks, or max_frames -
 * ends with the STACKWALK_TRUNCATED frame.
 *
 * Everything in the copy is the target's: the consumer has checked that
 * the record's length matches its copy's size; elf/unwind.c bounds every
 * read by it.
 */
#include "stackwalk.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "elf/unwind.h"
#include "pa_clock.h"

struct stackwalk {
	struct unwinder *u;		/* NULL until the first copy */
	bool no_unwinder;		/* could not make one: don't retry */
	uint32_t max_frames;
	size_t synced_maps;		/* ms->nmaps when last synced */
	unsigned int synced_refreshes;
	struct pa_rec_alloc *out;	/* max_frames + 1 frames */
	struct stackwalk_stats st;
};

struct stackwalk *stackwalk__new(uint32_t max_frames)
{
	struct stackwalk *sw;

	if (!max_frames || max_frames > PA_MAX_FRAMES) {
		errno = EINVAL;
		return NULL;
	}
	sw = calloc(1, sizeof(*sw));
	if (!sw)
		return NULL;
	sw->max_frames = max_frames;
	sw->out = malloc(pa_alloc_rec_size(max_frames + 1, 0, 0));
	if (!sw->out) {
		free(sw);
		return NULL;
	}
	return sw;
}

void stackwalk__free(struct stackwalk *sw)
{
	if (!sw)
		return;
	unwinder__free(sw->u);
	free(sw->out);
	free(sw);
}

void stackwalk__stats(const struct stackwalk *sw, struct stackwalk_stats *st)
{
	*st = sw->st;
}

/* Tell the unwinder of the mappings the set has gained. */
static void sync_modules(struct stackwalk *sw, const struct mapping_set *ms)
{
	if (ms->nmaps == sw->synced_maps &&
	    ms->refreshes == sw->synced_refreshes)
		return;
	for (size_t i = 0; i < ms->nmaps; i++) {
		const struct mapping *map = &ms->maps[i];
		const struct module *mod = &ms->mods[map->module];

		if (mod->fd < 0 || !mod->has_bias ||
		    unwinder__covers(sw->u, map->start))
			continue;
		/* a file libdwfl cannot use: its frames end the unwinds
		 * that reach them (counted) */
		if (unwinder__add_module(sw->u, mod->path, mod->fd, -1,
					 map->start, map->end, mod->bias) < 0)
			sw->st.modules_failed++;
	}
	sw->synced_maps = ms->nmaps;
	sw->synced_refreshes = ms->refreshes;
}

/* The record as it came, minus the copy: n frames of frames, and the
 * [truncated] frame if cut. */
static const struct pa_rec_alloc *rewrite(struct stackwalk *sw,
					  const struct pa_rec_alloc *rec,
					  const uint64_t *frames, uint32_t n,
					  bool cut)
{
	struct pa_rec_alloc *out = sw->out;

	/* room for the mark: the last frame gives way at max_frames */
	if (cut && n >= sw->max_frames)
		n = sw->max_frames - 1;
	memcpy(out, rec, sizeof(*out));
	if (frames != out->frames)
		memmove(out->frames, frames, n * sizeof(*frames));
	if (cut)
		out->frames[n++] = STACKWALK_TRUNCATED;
	out->nframes = n;
	out->hdr.flags &= (uint16_t)~PA_ALLOC_STACK;
	if (cut)
		out->hdr.flags |= PA_ALLOC_TRUNCATED;
	out->hdr.len = (uint32_t)pa_alloc_rec_size(n, 0, 0);
	return out;
}

const struct pa_rec_alloc *stackwalk__record(struct stackwalk *sw,
					     const struct mapping_set *ms,
					     const struct pa_rec_alloc *rec)
{
	const struct pa_stack_copy *sc;
	struct unwind_regs regs;
	enum unwind_end end;
	uint64_t t0;
	int n;

	if (!(rec->hdr.flags & PA_ALLOC_STACK)) {
		if (!(rec->hdr.flags & PA_ALLOC_TRUNCATED) || !rec->nframes ||
		    rec->nframes > sw->max_frames)
			return rec;
		return rewrite(sw, rec, rec->frames, rec->nframes, true);
	}
	sw->st.records++;
	sc = (const struct pa_stack_copy *)&rec->frames[rec->nframes];
	if (!rec->nframes || rec->nframes > sw->max_frames ||
	    sc->arch != EM_X86_64 || !(sc->regs_mask >> 7 & 1) ||
	    sc->regs[16] != rec->frames[0])
		goto out_fp;
	if (!sw->u && !sw->no_unwinder) {
		sw->u = unwinder__new(EM_X86_64);
		sw->no_unwinder = !sw->u;
	}
	if (!sw->u)
		goto out_fp;
	sync_modules(sw, ms);

	regs = (struct unwind_regs){
		.arch = sc->arch,
		.mask = sc->regs_mask,
		.regs = sc->regs,
		.nregs = 16,		/* 16 is the pc, given apart */
		.pc = rec->frames[0],
		.stack_start = sc->regs[7],
		.stack = sc->stack,
		.stack_size = sc->size,
	};
	t0 = pa_thread_cpu_ns();
	n = unwinder__unwind(sw->u, &regs, sw->out->frames, sw->max_frames,
			     &end);
	sw->st.cpu_ns += pa_thread_cpu_ns() - t0;
	if (n < 2 && rec->nframes > 1)
		goto out_fp;
	if (n < 1)
		goto out_fp;
	sw->st.unwound++;
	sw->st.frames += (uint64_t)n;
	if (end == UNWIND_OUTERMOST) {
		sw->st.outermost++;
		return rewrite(sw, rec, sw->out->frames, (uint32_t)n, false);
	}
	sw->st.cut++;
	return rewrite(sw, rec, sw->out->frames, (uint32_t)n, true);

out_fp:
	sw->st.failed++;
	if (rec->nframes > sw->max_frames)
		return rec;	/* the consumer lets none through: no copy */
	return rewrite(sw, rec, rec->frames, rec->nframes,
		       (rec->hdr.flags & PA_ALLOC_TRUNCATED) != 0);
}
