// SPDX-License-Identifier: MIT
/*
 * readings_text.c - a reading for a person (`pprof-alloc stats`), and the
 * few summary lines that go into a profile's comments.
 *
 * Sizes are shown in binary units; what was not read is "-", with the
 * reason when a whole source is missing.  An agent that may be there but
 * could not be read is said to be so, never "none".  The target's strings
 * (paths, names) are cleaned (untrusted.c) on their way to the terminal.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include "readings.h"
#include "common/untrusted.h"

const char *readings__human(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB",
					     "PiB", "EiB" };
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 6) {
		v /= 1024;
		u++;
	}
	if (!u)
		snprintf(buf, len, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}

static void text_kv(FILE *out, const struct kvset *s, const char *const *keys,
		    const char *count_key)
{
	const char *const *k;
	const struct kv *kv;
	char buf[32];

	for (k = keys; *k; k++) {
		kv = kvset__get(s, *k);
		if (!kv || !kv->valid)
			fprintf(out, "    %-16s -\n", *k);
		else if (count_key && !strcmp(*k, count_key))
			fprintf(out, "    %-16s %" PRIu64 "\n", *k, kv->value);
		else
			fprintf(out, "    %-16s %s\n", *k,
				readings__human(kv->value, buf, sizeof(buf)));
	}
}

static void text_cg(FILE *out, const char *name, const struct cg_value *v,
		    bool counter)
{
	char buf[32];

	if (!v->present)
		fprintf(out, "    %-20s -\n", name);
	else if (v->unlimited)
		fprintf(out, "    %-20s unlimited\n", name);
	else if (counter)
		fprintf(out, "    %-20s %" PRIu64 "\n", name, v->value);
	else
		fprintf(out, "    %-20s %s\n", name,
			readings__human(v->value, buf, sizeof(buf)));
}

/* The common figures on one line, "-" for those not known. */
static void text_common(FILE *out, const struct alloc_reading *a)
{
	char b[32];
	int i;

	fputs("    common:", out);
	for (i = 0; i < ALLOC_COMMON_COUNT; i++)
		fprintf(out, "%s %s %s", i ? "," : "",
			allocstats_common_names[i],
			a->has_common[i] ? readings__human(a->common[i], b, sizeof(b)) : "-");
	fputc('\n', out);
}

static void text_specific(FILE *out, const struct alloc_reading *a)
{
	const uint64_t *m = a->mimalloc;
	const struct mi_row_values *v;
	char b1[32], b2[32], b3[32];
	int i;

	if (a->has_mimalloc)
		fprintf(out, "    mi_process_info: committed %s (peak %s), peak RSS %s, user %.3f s, system %.3f s, %" PRIu64 " major faults\n",
			readings__human(m[5], b1, sizeof(b1)),
			readings__human(m[6], b2, sizeof(b2)),
			readings__human(m[4], b3, sizeof(b3)),
			(double)m[1] / 1000, (double)m[2] / 1000, m[7]);
	for (i = 0; a->has_mi_text && i < MI_THREADS; i++) {
		v = &a->mi_rows[i];
		if (v->present)
			fprintf(out, "    %-16s %s (peak %s), from mimalloc's table\n",
				allocstats_mi_row_names[i],
				readings__human(v->current > 0 ? (uint64_t)v->current : 0,
						b1, sizeof(b1)),
				readings__human(v->peak > 0 ? (uint64_t)v->peak : 0,
						b2, sizeof(b2)));
	}
	for (i = 0; a->has_tcmalloc && i < PA_TCMALLOC_PROPERTIES; i++)
		if (a->tcmalloc_mask & (1u << i))
			fprintf(out, "    %-40s %s\n", allocstats_tcmalloc_names[i],
				readings__human(a->tcmalloc[i], b1, sizeof(b1)));
}

/* A string of the target's (a cgroup path, the allocator's) for the
 * terminal, cleaned into buf (SHOWN_MAX bytes). */
#define SHOWN_MAX 4096
#define shown(s, buf) shown_in((s), (buf), sizeof(buf))

static const char *shown_in(const char *s, char *buf, size_t size)
{
	untrusted__clean(buf, size, s, SIZE_MAX);
	return buf;
}

void readings__text(const struct readings *r, FILE *out)
{
	const struct cgroup_reading *cg = &r->cgroup;
	const struct alloc_reading *a = &r->alloc;
	char when[40], b1[32], b2[32], b3[32], t1[SHOWN_MAX], t2[SHOWN_MAX];
	size_t i;
	int h;

	readings__iso_time(r->unix_ns, when, sizeof(when));
	fprintf(out, "process %d at %s\n", (int)r->pid, when);
	fprintf(out, "  smaps_rollup:%s%s\n", r->proc.smaps_err ? " " : "",
		r->proc.smaps_err ? strerror(-r->proc.smaps_err) : "");
	if (!r->proc.smaps_err)
		text_kv(out, &r->proc.smaps, procmem_smaps_keys, NULL);
	fprintf(out, "  status:%s%s\n", r->proc.status_err ? " " : "",
		r->proc.status_err ? strerror(-r->proc.status_err) : "");
	if (!r->proc.status_err)
		text_kv(out, &r->proc.status, procmem_status_keys, "Threads");
	if (!cg->version) {
		fprintf(out, "  cgroup: none (%s)\n", shown(cg->why, t1));
	} else {
		fprintf(out, "  cgroup v%d %s (%s):\n", cg->version,
			shown(cg->path, t1), shown(cg->dir, t2));
		for (h = 0; h < CG_COMMON_COUNT; h++)
			text_cg(out, cgroup_common_names[h], &cg->common[h],
				cgroup_common_is_counter[h]);
		if (cg->problems[0])
			fprintf(out, "    problems: %s\n", shown(cg->problems, t1));
	}
	if (!a->ok) {
		fprintf(out, "  allocator: unknown (%s)\n", shown(a->why, t1));
	} else {
		fprintf(out, "  allocator: %s (%s)\n",
			readings__allocator_name(a->allocator), shown(a->path, t1));
		if (a->has_mallinfo) {
			fprintf(out, "    in use %s, free %s, mmapped %s, top pad %s\n",
				readings__human(a->mallinfo[7], b1, sizeof(b1)),
				readings__human(a->mallinfo[8], b2, sizeof(b2)),
				readings__human(a->mallinfo[4], when, sizeof(when)),
				readings__human(a->mallinfo[9], b3, sizeof(b3)));
		}
		for (i = 0; a->has_arenas && i < a->narenas; i++)
			fprintf(out, "    arena %d: %s from the system, %s free in bins\n",
				a->arenas[i].nr,
				readings__human(a->arenas[i].system_current, b1, sizeof(b1)),
				readings__human(a->arenas[i].fast_size + a->arenas[i].rest_size,
				      b2, sizeof(b2)));
		for (i = 0; a->has_jemalloc && i < 6; i++)
			if (a->jemalloc_mask & (1u << i))
				fprintf(out, "    %-10s %s\n",
					allocstats_jemalloc_names[i],
					readings__human(a->jemalloc[i], b1, sizeof(b1)));
		text_specific(out, a);
		text_common(out, a);
	}
	if (r->agent.present) {
		fprintf(out, "  agent: %" PRIu64 " samples (rate %" PRIu64
			"), %" PRIu64 " lost records, live table %" PRIu64
			" of %" PRIu64 "\n", r->agent.samples,
			r->agent.sample_rate, r->agent.lost_records,
			r->agent.live_entries, r->agent.live_capacity);
		if (r->agent.losses_bad)
			fprintf(out, "    its header is corrupt: the loss counters are not plausible, and are shown as 0\n");
		if (r->agent.orphaned)
			fprintf(out, "    turned itself off: its tracer (process %u) ended without detaching; attach again to record\n",
				r->agent.orphaned);
		fprintf(out, "    %-16s %s resident of %s (shared memory)\n",
			"memfd", readings__human(r->agent.memfd_bytes, b1, sizeof(b1)),
			readings__human(r->agent.memfd_size, b2, sizeof(b2)));
		if (r->agent.unwind_modules || r->agent.unwind_fallbacks)
			fprintf(out, "    %-16s %s for %" PRIu64
				" modules (%" PRIu64
				" built on the program's threads); %" PRIu64
				" samples fell back to frame pointers\n",
				"unwind tables",
				readings__human(r->agent.unwind_table_bytes, b1, sizeof(b1)),
				r->agent.unwind_modules,
				r->agent.unwind_inline_builds,
				r->agent.unwind_fallbacks);
		for (h = 0; h < PA_HOOK_COUNT; h++) {
			if (!r->agent.calls[h])
				continue;
			if (h == PA_HOOK_FREE)
				fprintf(out, "    %-16s %" PRIu64 " calls\n",
					readings_hook_names[h],
					r->agent.calls[h]);
			else
				fprintf(out, "    %-16s %" PRIu64 " calls, %s\n",
					readings_hook_names[h],
					r->agent.calls[h],
					readings__human(r->agent.bytes[h], b1,
					      sizeof(b1)));
		}
	} else if (r->agent_unreadable) {
		fprintf(out, "  agent: cannot be read (%s)\n",
			shown(r->agent_why, t1));
	} else {
		fprintf(out, "  agent: none (%s)\n", shown(r->agent_why, t1));
	}
	if (r->has_heap)
		fprintf(out, "  sampled heap: %s in use (estimated), %" PRIu64
			" samples\n",
			readings__human((uint64_t)llround(r->heap.inuse_bytes), b1,
			      sizeof(b1)), r->heap_samples);
}

/* ---- summary ---------------------------------------------------------- */

void readings__summary(const struct readings *r,
		       void (*add)(void *ctx, const char *line), void *ctx)
{
	const struct cgroup_reading *cg = &r->cgroup;
	const struct alloc_reading *a = &r->alloc;
	char line[512], when[40], b1[32], b2[32], b3[32];
	uint64_t rss, anon, file;

	readings__iso_time(r->unix_ns, when, sizeof(when));
	if (kvset__value(&r->proc.status, "VmRSS", &rss)) {
		if (!kvset__value(&r->proc.status, "RssAnon", &anon))
			anon = 0;
		if (!kvset__value(&r->proc.status, "RssFile", &file))
			file = 0;
		snprintf(line, sizeof(line),
			 "readings at %s: RSS %s (anon %s, file %s)", when,
			 readings__human(rss, b1, sizeof(b1)), readings__human(anon, b2, sizeof(b2)),
			 readings__human(file, b3, sizeof(b3)));
		add(ctx, line);
	}
	if (cg->version && cg->common[CG_USAGE].present) {
		if (snprintf(line, sizeof(line), "cgroup v%d %s: usage %s, limit %s",
			 cg->version, cg->path,
			 readings__human(cg->common[CG_USAGE].value, b1, sizeof(b1)),
			 !cg->common[CG_LIMIT].present ? "-" :
			 cg->common[CG_LIMIT].unlimited ? "unlimited" :
			 readings__human(cg->common[CG_LIMIT].value, b2, sizeof(b2))) >=
		    (int)sizeof(line))
			strcpy(line + sizeof(line) - 4, "...");
		add(ctx, line);
	}
	if (a->ok && a->has_mallinfo) {
		snprintf(line, sizeof(line),
			 "allocator %s: in use %s, free in arenas %s, mmapped %s",
			 readings__allocator_name(a->allocator),
			 readings__human(a->mallinfo[7], b1, sizeof(b1)),
			 readings__human(a->mallinfo[8], b2, sizeof(b2)),
			 readings__human(a->mallinfo[4], b3, sizeof(b3)));
		add(ctx, line);
	} else if (a->ok && a->has_jemalloc) {
		snprintf(line, sizeof(line),
			 "allocator jemalloc: allocated %s, resident %s",
			 readings__human(a->jemalloc[0], b1, sizeof(b1)),
			 readings__human(a->jemalloc[3], b2, sizeof(b2)));
		add(ctx, line);
	} else if (a->ok && (a->has_mimalloc || a->has_tcmalloc)) {
		snprintf(line, sizeof(line),
			 "allocator %s: in use %s, free %s, mapped %s",
			 readings__allocator_name(a->allocator),
			 a->has_common[ALLOC_IN_USE] ? readings__human(a->common[ALLOC_IN_USE], b1, sizeof(b1)) : "-",
			 a->has_common[ALLOC_FREE] ? readings__human(a->common[ALLOC_FREE], b2, sizeof(b2)) : "-",
			 a->has_common[ALLOC_MAPPED] ? readings__human(a->common[ALLOC_MAPPED], b3, sizeof(b3)) : "-");
		add(ctx, line);
	}
	if (r->agent.present) {
		snprintf(line, sizeof(line),
			 "agent memfd %s resident of %s of shared memory (the cgroup's shmem: %s)",
			 readings__human(r->agent.memfd_bytes, b1, sizeof(b1)),
			 readings__human(r->agent.memfd_size, b3, sizeof(b3)),
			 cg->version && cg->common[CG_SHMEM].present ?
			 readings__human(cg->common[CG_SHMEM].value, b2, sizeof(b2)) : "-");
		add(ctx, line);
	}
}

void readings__end_summary(const struct readings_end *e,
			   void (*add)(void *ctx, const char *line), void *ctx)
{
	const struct cgroup_reading *cg = &e->final;
	const struct readings_oom *o = &e->oom;
	const struct cg_value *peak = &cg->common[CG_PEAK];
	const struct cg_value *kills = &cg->common[CG_OOM_KILL];
	char line[768], b1[32], b2[32], b3[32], when[40], more[96];

	if (e->has_peak_heap && e->peak_counted) {
		char slack[96] = "exactly (one thread allocated)";

		if (e->peak_slack)
			snprintf(slack, sizeof(slack),
				 "at most %s above the peak (each thread's share of the count)",
				 readings__human(e->peak_slack, b2, sizeof(b2)));
		snprintf(line, sizeof(line),
			 "peak heap %s in use (%.0f bytes) at %.3f s, counted by the agent at every call, %s; peak_inuse_space holds the heap at the highest read of its counters, every 50 ms (%s, %.0f objects)",
			 readings__human((uint64_t)llround(e->peak_bytes), b1,
					 sizeof(b1)),
			 e->peak_bytes, e->peak_after_s, slack,
			 readings__human((uint64_t)llround(e->peak_read_bytes),
					 b3, sizeof(b3)),
			 e->peak_objects);
		add(ctx, line);
	} else if (e->has_peak_heap) {
		more[0] = 0;
		if (e->has_peak_rss_then)
			snprintf(more, sizeof(more), "; RSS %s read %.0f ms after it",
				 readings__human(e->peak_rss_then, b2,
						 sizeof(b2)),
				 e->peak_rss_after_ms);
		snprintf(line, sizeof(line),
			 "peak heap %s in use (%.0f bytes, %.0f objects) at %.3f s%s; peak_inuse_space holds the heap then%s",
			 readings__human((uint64_t)llround(e->peak_bytes), b1,
					 sizeof(b1)),
			 e->peak_bytes, e->peak_objects, e->peak_after_s,
			 more, e->peak_stale ?
				 " (NOT: out of memory for its snapshot, peak_inuse_space holds an earlier, lower one)" :
			 e->peak_exact ?
				 " (exact counts: --rate 1 counts every allocation; they are read every 50 ms, so a peak held for less may be seen in part)" :
				 " (the peak of the heap estimated from samples)");
		add(ctx, line);
	}
	if (e->has_peak_rss) {
		snprintf(line, sizeof(line), "peak RSS %s (%s)",
			 readings__human(e->peak_rss, b1, sizeof(b1)),
			 e->peak_rss_from);
		add(ctx, line);
	}

	if (e->has_final && cg->version && cg->common[CG_USAGE].present) {
		readings__iso_time(e->final_unix_ns, when, sizeof(when));
		more[0] = 0;
		if (kills->present)
			snprintf(more, sizeof(more), ", oom_kill %" PRIu64,
				 kills->value);
		if (snprintf(line, sizeof(line),
			     "cgroup v%d %s %s (%s): usage %s, peak %s, limit %s%s",
			     cg->version, cg->path,
			     e->after_exit ? "after the target ended" :
					     "at the end",
			     when,
			     readings__human(cg->common[CG_USAGE].value, b1, sizeof(b1)),
			     peak->present ? readings__human(peak->value, b2, sizeof(b2)) :
					     "-",
			     !cg->common[CG_LIMIT].present ? "-" :
			     cg->common[CG_LIMIT].unlimited ? "unlimited" :
			     readings__human(cg->common[CG_LIMIT].value, b3, sizeof(b3)),
			     more) >= (int)sizeof(line))
			strcpy(line + sizeof(line) - 4, "...");
		add(ctx, line);
	}
	if (o->known && o->after > o->before && !o->killed &&
	    strcmp(o->counter, "/proc/vmstat oom_kill")) {
		snprintf(line, sizeof(line),
			 "the memory cgroup's OOM killer killed %" PRIu64
			 " process%s during the run, not the target (%s went from %"
			 PRIu64 " to %" PRIu64 ")",
			 o->after - o->before,
			 o->after - o->before == 1 ? "" : "es", o->counter,
			 o->before, o->after);
		add(ctx, line);
	}
}
