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
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common/log.h"
#include "arch/arch.h"
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
	bool check;			/* PPROF_ALLOC_UNWIND_CHECK=1 */
	uint64_t vdso_tried;		/* where the vDSO was last added */
};

/* Disagreements printed in full, at most (the count has them all). */
#define CHECK_SHOWN	10

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
	sw->check = getenv("PPROF_ALLOC_UNWIND_CHECK") &&
		    !strcmp(getenv("PPROF_ALLOC_UNWIND_CHECK"), "1");
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
	/* the vDSO too (a signal may interrupt clock_gettime there), once
	 * for each place it is seen at */
	if (ms->vdso_end && ms->vdso_start != sw->vdso_tried &&
	    !unwinder__covers(sw->u, ms->vdso_start)) {
		sw->vdso_tried = ms->vdso_start;
		if (unwinder__add_vdso(sw->u, ms->vdso_start, ms->vdso_end) < 0)
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

/* One frame for a disagreement's report: the address, and its module and
 * offset in it if a mapping holds it. */
static void show_frame(char *buf, size_t size, const struct mapping_set *ms,
		       uint64_t pc)
{
	const struct mapping *m = pc ? mapping_set__find(ms, pc) : NULL;

	if (!m)
		snprintf(buf, size, "%#" PRIx64, pc);
	else
		snprintf(buf, size, "%#" PRIx64 " %s+%#" PRIx64, pc,
			 strrchr(ms->mods[m->module].path, '/') ?
			 strrchr(ms->mods[m->module].path, '/') + 1 :
			 ms->mods[m->module].path,
			 pc - m->start + m->offset);
}

/*
 * The check: the agent's frames (a whole stack, by its tables) against
 * libdwfl's n frames from the copy of the same stack, which ended as end.
 * They agree if every frame both have is the same and, where libdwfl
 * reached the outermost frame, both have as many; libdwfl ending first (a
 * copy shorter than the stack) is counted apart.  A disagreement is
 * printed, frame by frame, the first CHECK_SHOWN times.
 */
static void check(struct stackwalk *sw, const struct mapping_set *ms,
		  const struct pa_rec_alloc *rec, const uint64_t *d,
		  uint32_t nd, enum unwind_end end)
{
	const uint64_t *a = rec->frames;
	uint32_t na = rec->nframes, i, common = na < nd ? na : nd;
	bool truncated = rec->hdr.flags & PA_ALLOC_TRUNCATED;
	bool same = nd > 0;

	for (i = 0; i < common && same; i++)
		same = a[i] == d[i];
	sw->st.checked++;
	/* the same stack: libdwfl found as many frames (or, the agent's cut
	 * at max_frames, at least as many), or it ran out of copy first */
	if (same && end == UNWIND_OUTERMOST &&
	    (na == nd || (truncated && nd >= na)))
		return;
	if (same && end == UNWIND_MAX && truncated && nd >= na)
		return;
	if (same && end == UNWIND_CUT && nd < na &&
	    unwinder__past_copy(sw->u)) {
		sw->st.check_shorter++;
		return;
	}
	if (sw->st.check_differ++ >= CHECK_SHOWN)
		return;
	pr_warn("unwind check: sample %" PRIu64 ": the agent's tables (%u frames) and libdwfl on its stack copy (%u frames, %s) disagree:\n",
		rec->seq, na, nd,
		end == UNWIND_OUTERMOST ? "to the outermost frame" : "cut");
	for (i = 0; i < na || i < nd; i++) {
		char fa[160] = "-", fd[160] = "-";

		if (i < na)
			show_frame(fa, sizeof(fa), ms, a[i]);
		if (i < nd)
			show_frame(fd, sizeof(fd), ms, d[i]);
		pr_warn("  #%-3u %s %-48s %s\n", i,
			i < na && i < nd && a[i] == d[i] ? " " : "*", fa, fd);
	}
}

const struct pa_rec_alloc *stackwalk__record(struct stackwalk *sw,
					     const struct mapping_set *ms,
					     const struct pa_rec_alloc *rec)
{
	const struct pa_stack_copy *sc;
	const struct unwind_arch *ua;
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
	/* the agent's tables unwound it whole: its frames stay, the copy is
	 * only for the check (PPROF_ALLOC_UNWIND_CHECK) */
	if ((rec->hdr.flags & PA_ALLOC_WHOLE) && rec->nframes &&
	    rec->nframes <= sw->max_frames && !sw->check)
		return rewrite(sw, rec, rec->frames, rec->nframes,
			       (rec->hdr.flags & PA_ALLOC_TRUNCATED) != 0);
	if (!(rec->hdr.flags & PA_ALLOC_WHOLE))
		sw->st.records++;
	sc = (const struct pa_stack_copy *)&rec->frames[rec->nframes];
	/* the tracer's own architecture: the target runs beside it (a
	 * record claiming another cannot take the unwinder over) */
	ua = sc->arch == PA_ARCH_EM ? unwind__arch(sc->arch) : NULL;
	if (!rec->nframes || rec->nframes > sw->max_frames || !ua ||
	    !(sc->regs_mask >> ua->sp & 1) ||
	    sc->regs[ua->pc] != rec->frames[0])
		goto out_fp;
	if (!sw->u && !sw->no_unwinder) {
		sw->u = unwinder__new(sc->arch);
		sw->no_unwinder = !sw->u;
	}
	if (!sw->u)
		goto out_fp;
	sync_modules(sw, ms);

	regs = (struct unwind_regs){
		.arch = sc->arch,
		.mask = sc->regs_mask,
		.regs = sc->regs,
		.nregs = ua->nregs,	/* the pc given apart */
		.pc = rec->frames[0],
		.stack_start = sc->regs[ua->sp],
		.stack = sc->stack,
		.stack_size = sc->size,
	};
	t0 = pa_thread_cpu_ns();
	n = unwinder__unwind(sw->u, &regs, sw->out->frames, sw->max_frames,
			     &end);
	if (!(rec->hdr.flags & PA_ALLOC_WHOLE))
		sw->st.cpu_ns += pa_thread_cpu_ns() - t0;
	if (sw->check && (rec->hdr.flags & PA_ALLOC_WHOLE)) {
		/* copied only to be checked: the agent's frames stay */
		check(sw, ms, rec, sw->out->frames, n > 0 ? (uint32_t)n : 0,
		      n > 0 ? end : UNWIND_CUT);
		return rewrite(sw, rec, rec->frames, rec->nframes,
			       (rec->hdr.flags & PA_ALLOC_TRUNCATED) != 0);
	}
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
	if (rec->nframes > sw->max_frames)
		return rec;	/* the consumer lets none through: no copy */
	if (rec->hdr.flags & PA_ALLOC_WHOLE) {
		/* a copy to check that libdwfl could not even start on */
		sw->st.checked++;
		sw->st.check_differ++;
		return rewrite(sw, rec, rec->frames, rec->nframes,
			       (rec->hdr.flags & PA_ALLOC_TRUNCATED) != 0);
	}
	sw->st.failed++;
	return rewrite(sw, rec, rec->frames, rec->nframes,
		       (rec->hdr.flags & PA_ALLOC_TRUNCATED) != 0);
}
