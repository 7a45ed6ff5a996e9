// SPDX-License-Identifier: MIT
/*
 * pprof_report.c - from buckets to pprof.
 *
 * Every unique return address becomes one pprof Location (address =
 * return address - 1, inside the call instruction, which is also what the
 * symbolizer is asked about), attached to the Mapping of its executable
 * segment, with one Line per inline frame, leaf first.  Every bucket
 * becomes one Sample carrying the four values (estimates rounded to
 * integers; at rate 1 they are exact counts) and its "bytes" label.
 *
 * Mappings keep their file, file offset and build ID, so the profile can
 * be re-symbolized elsewhere; the main executable's mapping comes first, as
 * pprof expects.  The symbolizer is fed the fds the tracer opened while
 * the target was alive, and debug files found for them by build ID
 * (report__symbols, through elf/symbols.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "elf/symbolize.h"
#include "pprof.h"
#include "elf/symbols.h"
#include "pprof_report.h"
#include "tracer/record/perfmap.h"
#include "tracer/record/stackwalk.h"
#include "elf/u64map.h"
#include "common/log.h"
#include "common/untrusted.h"

#define MAX_INLINE 32

/* The first four in every profile; the peak's two in whole-run ones (not
 * in a delta: the peak is the run's, not the window's). */
static const struct pprof_sample_type sample_types[] = {
	{ "alloc_objects", "count" },
	{ "alloc_space", "bytes" },
	{ "inuse_objects", "count" },
	{ "inuse_space", "bytes" },
	{ "peak_inuse_objects", "count" },
	{ "peak_inuse_space", "bytes" },
};
#define NTYPES_DELTA	4
#define NTYPES		6
static const struct pprof_sample_type period_type = { "space", "bytes" };

/* A value of the profile: an estimate, rounded; below 0 only in a delta
 * (what shrank), never from float noise around 0. */
static int64_t round_value(double v, bool delta)
{
	if (delta)
		return fabs(v) < 0.5 ? 0 : (int64_t)llround(v);
	return v < 0.5 ? 0 : (int64_t)llround(v);
}

int report__symbols_add(struct symbols *syms, struct mapping_set *ms,
			bool quiet)
{
	return report__symbols_add_used(syms, ms, NULL, quiet);
}

int report__symbols_add_used(struct symbols *syms, struct mapping_set *ms,
			     const bool *used, bool quiet)
{
	size_t i, j;

	for (i = 0; i < ms->nmods; i++) {
		const struct module *m = &ms->mods[i];
		const struct debuginfo_found *found = NULL;
		bool registered = false, any = false;
		char line[1024];

		for (j = 0; j < ms->nmaps; j++) {
			struct mapping *map = &ms->maps[j];
			struct symbols_module sm = {
				.path = m->path,
				.fd = m->fd,
				.build_id = m->has_info ? m->info.build_id :
							  NULL,
				.build_id_len = m->has_info ?
					m->info.build_id_len : 0,
				.start = map->start,
				.end = map->end,
				.offset = map->offset,
				.has_bias = m->has_bias,
				.bias = m->bias,
			};
			bool ok;

			if (map->module != i || (used && !used[j]))
				continue;
			if (symbols__add(syms, &sm, &found, &ok) == -ENOMEM)
				return -ENOMEM;
			map->symbolized = ok;
			registered |= ok;
			any = true;
		}
		/* Only the program itself is worth a word when it has no
		 * debug info: libraries without any are the usual case. */
		if (any && m->is_exe && !quiet && found &&
		    (!found->has_debug_info || !registered))
			pr_warn("%s: %s\n", m->path,
				symbols__describe(found, registered, line,
						  sizeof(line)));
	}
	return 0;
}

struct symbols *report__symbols(struct mapping_set *ms,
				const struct debuginfo_opts *opts, bool quiet)
{
	return report__symbols_for(ms, NULL, opts, quiet);
}

struct symbols *report__symbols_for(struct mapping_set *ms,
				    const struct heap *h,
				    const struct debuginfo_opts *opts,
				    bool quiet)
{
	struct symbols *syms = symbols__new(opts);
	bool *used = NULL;
	size_t i;
	int err;

	if (!syms)
		goto out_nomem;
	/* only the mappings some frame of the heap is in: a module no
	 * sample went through needs no symbols (nor a word about them) */
	if (h && ms->nmaps) {
		used = calloc(ms->nmaps, sizeof(*used));
		if (!used)
			goto out_free;
		for (i = 0; i < h->nframes; i++) {
			const struct mapping *m;

			/* a return address: its call is the byte before */
			m = mapping_set__find(ms, h->frames[i]);
			if (!m && h->frames[i])
				m = mapping_set__find(ms, h->frames[i] - 1);
			if (m)
				used[m - ms->maps] = true;
		}
	}
	err = report__symbols_add_used(syms, ms, used, quiet);
	free(used);
	if (err)
		goto out_free;
	return syms;
out_free:
	symbols__free(syms);
out_nomem:
	errno = ENOMEM;
	return NULL;
}

/* Mapping ids in pprof order: main executable first. */
static int add_mappings(struct pprof_builder *b, const struct mapping_set *ms,
			bool symbolized, uint64_t *ids)
{
	int pass;
	size_t i;

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < ms->nmaps; i++) {
			const struct mapping *m = &ms->maps[i];
			const struct module *mod = &ms->mods[m->module];
			char hex[2 * ELFINFO_BUILD_ID_MAX + 1];
			const char *bid = NULL;
			int64_t id;

			if (mod->is_exe != (pass == 0))
				continue;
			if (mod->has_info && mod->info.build_id_len)
				bid = elfinfo__build_id_hex(mod->info.build_id,
							    mod->info.build_id_len,
							    hex);
			/* a mapping the symbolizer could not take is left
			 * for `pprof-alloc symbolize` or pprof to try again */
			bool done = symbolized && m->symbolized;

			id = pprof__add_mapping(b, m->start, m->end, m->offset,
						mod->path, bid, done, done, done,
						done);
			if (id < 0)
				return (int)id;
			ids[i] = (uint64_t)id;
		}
	}
	return 0;
}

static int64_t location_for(struct pprof_builder *b, struct u64map *locs,
			    struct symbolizer *sym,
			    const struct mapping_set *ms,
			    const struct perfmap *jit,
			    const uint64_t *map_ids, uint64_t pc)
{
	struct sym_frame frames[MAX_INLINE];
	struct pprof_line lines[MAX_INLINE];
	const struct mapping *m;
	uint64_t *known = u64map__find(locs, pc), addr = pc ? pc - 1 : 0;
	int64_t id;
	int n = 0, i, err;

	if (known)
		return (int64_t)*known;
	if (pc == STACKWALK_TRUNCATED || pc == HEAP_FRAME_OTHER) {
		/* the unwinder could not go on, or the stacks past the cap:
		 * a frame that says so */
		const char *what = pc == HEAP_FRAME_OTHER ? "[other]" :
							    "[truncated]";
		int64_t fid = pprof__function(b, what, what, "", 0);

		if (fid < 0)
			return fid;
		lines[0].function_id = (uint64_t)fid;
		lines[0].line = 0;
		id = pprof__add_location(b, 0, 0, lines, 1);
		if (id < 0)
			return id;
		err = u64map__put(locs, pc, (uint64_t)id);
		return err ? err : id;
	}
	if (sym)
		n = symbolizer__lookup(sym, addr, frames, MAX_INLINE);
	if (n < 0)
		n = 0;
	for (i = 0; i < n; i++) {
		const char *name = frames[i].function ? frames[i].function :
							"??";
		const char *raw = frames[i].system_name ?
					  frames[i].system_name : name;
		int64_t fid = pprof__function(b, name, raw,
					      frames[i].file ? frames[i].file :
							       "",
					      0);

		if (fid < 0)
			return fid;
		lines[i].function_id = (uint64_t)fid;
		lines[i].line = frames[i].line;
	}
	m = mapping_set__find(ms, addr);
	if (!m && !n && sym) {
		/* code in no file: compiled at run time, named by the
		 * runtime's perf map if it wrote one */
		const char *name = perfmap__lookup(jit, addr);
		int64_t fid = pprof__function(b, name ? name : "[JIT]",
					      name ? name : "[JIT]", "", 0);

		if (fid < 0)
			return fid;
		lines[0].function_id = (uint64_t)fid;
		lines[0].line = 0;
		n = 1;
	}
	id = pprof__add_location(b, m ? map_ids[m - ms->maps] : 0, addr, lines,
				 (size_t)n);
	if (id < 0)
		return id;
	err = u64map__put(locs, pc, (uint64_t)id);
	return err ? err : id;
}

/* What the agent sampled and what was lost, as comments. */
static void agent_comments(struct pprof_builder *b, const struct heap *h,
			   const struct report_info *info)
{
	char line[512];

	snprintf(line, sizeof(line),
		 "sampling rate %" PRIu64 " bytes; %" PRIu64
		 " samples taken by the agent, %" PRIu64
		 " received; %" PRIu64 " frees of sampled blocks",
		 h->rate, info->agent_samples, h->allocs, h->frees);
	pprof__add_comment(b, line);
	snprintf(line, sizeof(line),
		 "lost records %" PRIu64 " (%" PRIu64 " sampled bytes)"
		 "; unfinished records skipped %" PRIu64 "; ring resyncs %"
		 PRIu64 "; live table overflow %" PRIu64
		 "; stacks truncated %" PRIu64
		 "; in-use samples found freed in the live table %" PRIu64
		 "; live samples taken from the agent's tables %" PRIu64,
		 info->lost_records, info->lost_bytes, info->skipped_busy,
		 info->resyncs, info->live_overflow, h->truncated,
		 h->reconciled, h->seeded);
	pprof__add_comment(b, line);
	if (info->losses_bad) {
		snprintf(line, sizeof(line),
			 "the agent's header is corrupt: %s; its loss counters are ignored",
			 info->losses_bad);
		pprof__add_comment(b, line);
	}
}

/*
 * Build the profile and either write it to path or, with path NULL, encode
 * it into *out (*len bytes).
 */
static int report(const struct heap *h, const struct mapping_set *ms,
		  struct symbols *syms, const struct report_info *info,
		  const char *path, uint8_t **out, size_t *len)
{
	struct symbolizer *sym = syms ? symbols__symbolizer(syms) : NULL;
	struct perfmap *jit = NULL;
	struct pprof_builder *b;
	struct u64map locs;
	uint64_t *map_ids = NULL, *loc_ids = NULL;
	bool peak = !info->base && !info->no_peak;
	char line[512];
	size_t i;
	int err;

	u64map__init(&locs);
	b = pprof__new(sample_types, peak ? NTYPES : NTYPES_DELTA,
		       &period_type, (int64_t)h->rate);
	if (!b)
		return -errno;
	map_ids = calloc(ms->nmaps + 1, sizeof(*map_ids));
	loc_ids = calloc(PA_MAX_FRAMES + 1, sizeof(*loc_ids));
	if (!map_ids || !loc_ids) {
		err = -ENOMEM;
		goto out_free;
	}
	err = add_mappings(b, ms, sym != NULL, map_ids);
	if (err)
		goto out_free;
	if (sym && info->jit_names && ms->pid > 0) {
		char why[256];

		jit = perfmap__load(ms->pid, why, sizeof(why));
		if (!jit && *why)
			pr_warn("%s\n", why);
	}

	for (i = 0; i < h->nbuckets; i++) {
		const struct heap_bucket *bk = &h->buckets[i];
		const uint64_t *frames = heap__frames(h, bk);
		const double *was = info->base && i < info->base->nbuckets ?
			info->base->values[i] : NULL;
		const double *at_peak = peak ? heap__peak_of(h, i) : NULL;
		bool delta = info->base != NULL;
		int64_t values[NTYPES] = {
			round_value(bk->alloc_objects - (was ? was[0] : 0), delta),
			round_value(bk->alloc_bytes - (was ? was[1] : 0), delta),
			round_value(bk->inuse_objects - (was ? was[2] : 0), delta),
			round_value(bk->inuse_bytes - (was ? was[3] : 0), delta),
			at_peak ? round_value(at_peak[0], false) : 0,
			at_peak ? round_value(at_peak[1], false) : 0,
		};
		uint32_t j;

		if (!values[0] && !values[1] && !values[2] && !values[3] &&
		    !values[4] && !values[5])
			continue;
		for (j = 0; j < bk->nframes; j++) {
			int64_t id = location_for(b, &locs, sym, ms, jit,
						  map_ids, frames[j]);

			if (id < 0) {
				err = (int)id;
				goto out_free;
			}
			loc_ids[j] = (uint64_t)id;
		}
		err = pprof__add_sample(b, loc_ids, bk->nframes, values,
					bk->mixed ? -1 : (int64_t)bk->size);
		if (err)
			goto out_free;
	}

	snprintf(line, sizeof(line), "pprof-alloc: %s", info->command);
	pprof__add_comment(b, line);
	if (info->ended) {
		snprintf(line, sizeof(line), "target %s", info->ended);
		pprof__add_comment(b, line);
	}
	if (info->source)
		pprof__add_comment(b, info->source);
	else
		agent_comments(b, h, info);
	if (h->max_buckets) {
		snprintf(line, sizeof(line),
			 "at most %zu (stack, size) pairs and %zu frames in them: past that, %" PRIu64
			 " samples of new stacks in [other], %" PRIu64
			 " of known stacks with new sizes in a size-less bucket of their stack",
			 h->max_buckets,
			 h->max_buckets * (size_t)HEAP_FRAMES_PER_PAIR,
			 h->folded, h->folded_sizes);
		pprof__add_comment(b, line);
	}
	if (h->live_dropped) {
		snprintf(line, sizeof(line),
			 "at most %zu live samples kept: %" PRIu64
			 " more counted as allocated, not as in use",
			 h->max_live, h->live_dropped);
		pprof__add_comment(b, line);
	}
	if (info->unwind_summary)
		pprof__add_comment(b, info->unwind_summary);
	if (info->exact_summary)
		pprof__add_comment(b, info->exact_summary);
	for (i = 0; i < info->nextra; i++)
		pprof__add_comment(b, info->extra_comments[i]);
	pprof__set_time(b, info->time_nanos, info->duration_nanos);
	err = pprof__set_default_sample_type(b, info->default_type ?
					     info->default_type : "inuse_space");
	if (!err)
		err = path ? pprof__write(b, path) :
			     pprof__encode_gzip(b, out, len);
out_free:
	perfmap__free(jit);
	u64map__fini(&locs);
	free(loc_ids);
	free(map_ids);
	pprof__free(b);
	return err;
}

int report__write(struct heap *h, const struct mapping_set *ms,
		  struct symbols *syms, const struct report_info *info,
		  const char *path)
{
	heap__peak_ready(h);
	return report(h, ms, syms, info, path, NULL, NULL);
}

int report__encode(struct heap *h, const struct mapping_set *ms,
		   struct symbols *syms, const struct report_info *info,
		   uint8_t **out, size_t *len)
{
	heap__peak_ready(h);
	return report(h, ms, syms, info, NULL, out, len);
}

/* ---- top ---------------------------------------------------------- */

struct site {
	uint64_t pc;
	double inuse_bytes, inuse_objects, alloc_bytes, alloc_objects;
};

static int by_inuse(const void *a, const void *b)
{
	const struct site *x = a, *y = b;

	return x->inuse_bytes < y->inuse_bytes ? 1 :
	       x->inuse_bytes > y->inuse_bytes ? -1 : 0;
}

static int by_alloc(const void *a, const void *b)
{
	const struct site *x = a, *y = b;

	return x->alloc_bytes < y->alloc_bytes ? 1 :
	       x->alloc_bytes > y->alloc_bytes ? -1 : 0;
}

static void print_site(FILE *out, struct symbolizer *sym, const struct site *s,
		       bool inuse)
{
	struct sym_frame f[MAX_INLINE];
	int n = sym ? symbolizer__lookup(sym, s->pc ? s->pc - 1 : 0, f,
					 MAX_INLINE) : 0;

	fprintf(out, "  %14.0f B %10.0f objs  ",
		inuse ? s->inuse_bytes : s->alloc_bytes,
		inuse ? s->inuse_objects : s->alloc_objects);
	/* names from the target's binaries: cleaned for the terminal */
	if (n > 0 && f[0].function)
		untrusted__fputs(f[0].function, out);
	else
		fprintf(out, "0x%" PRIx64, s->pc);
	if (n > 0 && f[0].file) {
		fputs(" (", out);
		untrusted__fputs(f[0].file, out);
		fprintf(out, ":%d)", f[0].line);
	}
	fputc('\n', out);
}

int report__top(const struct heap *h, struct symbols *syms, int n, FILE *out)
{
	struct symbolizer *sym = syms ? symbols__symbolizer(syms) : NULL;
	struct u64map index;
	struct site *sites;
	size_t nsites = 0, i;
	int err = 0;

	if (n <= 0)
		return 0;
	sites = calloc(h->nbuckets + 1, sizeof(*sites));
	if (!sites)
		return -ENOMEM;
	u64map__init(&index);
	for (i = 0; i < h->nbuckets; i++) {
		const struct heap_bucket *b = &h->buckets[i];
		uint64_t pc = b->nframes ? heap__frames(h, b)[0] : 0;
		uint64_t *at = u64map__find(&index, pc);
		struct site *s;

		if (!at) {
			err = u64map__put(&index, pc, nsites);
			if (err)
				goto out_free;
			s = &sites[nsites++];
			s->pc = pc;
		} else {
			s = &sites[*at];
		}
		s->inuse_bytes += b->inuse_bytes;
		s->inuse_objects += b->inuse_objects;
		s->alloc_bytes += b->alloc_bytes;
		s->alloc_objects += b->alloc_objects;
	}
	qsort(sites, nsites, sizeof(*sites), by_inuse);
	fprintf(out, "Top %d allocation sites by in-use bytes:\n", n);
	for (i = 0; i < nsites && i < (size_t)n; i++)
		if (sites[i].inuse_bytes >= 0.5)
			print_site(out, sym, &sites[i], true);
	qsort(sites, nsites, sizeof(*sites), by_alloc);
	fprintf(out, "Top %d allocation sites by allocated bytes:\n", n);
	for (i = 0; i < nsites && i < (size_t)n; i++)
		print_site(out, sym, &sites[i], false);
out_free:
	u64map__fini(&index);
	free(sites);
	return err;
}
