// SPDX-License-Identifier: MIT
/*
 * readings_json.c - a reading as JSON (PROFILE.json, the timeline's lines,
 * `pprof-alloc stats --json`).
 *
 * Sizes are bytes.  What was not read is null, with the reason beside it
 * where there is one ("..._error", "..._problems", "why"), never 0.  A
 * limit that is not set is the string "unlimited".  Listed keys (the ones
 * the documentation promises) come first, null when a kernel lacks them;
 * every other key the kernel gave follows.
 *
 * PROFILE.json also has "end" (how the run ended, OOM-killed or not, and
 * the counter that says so) and "final" (the memory cgroup read after the
 * end, with its own time): a process killed early may have only a reading
 * from its start, and its cgroup's peak and oom_kill are read afterwards.
 */
#include <math.h>
#include <string.h>
#include "tracer/output/json.h"
#include "readings.h"

/* The listed keys first (null when missing), then any others. */
static void json_kvset(struct json *j, const char *key,
		       const struct kvset *s, const char *const *listed)
{
	const char *const *k;
	const struct kv *kv;
	size_t i;

	json__begin_object(j, key);
	for (k = listed; k && *k; k++) {
		kv = kvset__get(s, *k);
		if (kv && kv->valid)
			json__u64(j, *k, kv->value);
		else
			json__null(j, *k);
	}
	for (i = 0; i < s->n; i++) {
		bool dup = false;

		for (k = listed; k && *k && !dup; k++)
			dup = !strcmp(*k, s->v[i].key);
		if (dup)
			continue;
		if (s->v[i].valid)
			json__u64(j, s->v[i].key, s->v[i].value);
		else
			json__null(j, s->v[i].key);
	}
	json__end(j);
	if (s->bad_lines) {
		char name[64];

		snprintf(name, sizeof(name), "%s_problems", key);
		json__string(j, name, s->first_error);
	}
}

static void json_cg_value(struct json *j, const char *key,
			  const struct cg_value *v)
{
	if (!v->present)
		json__null(j, key);
	else if (v->unlimited)
		json__string(j, key, "unlimited");
	else
		json__u64(j, key, v->value);
}

static void json_error(struct json *j, const char *key, int err)
{
	if (err)
		json__string(j, key, strerror(-err));
}

static void json_process(struct json *j, const struct readings *r)
{
	json__begin_object(j, "process");
	if (r->proc.smaps_err) {
		json__null(j, "smaps_rollup");
		json_error(j, "smaps_rollup_error", r->proc.smaps_err);
	} else {
		json_kvset(j, "smaps_rollup", &r->proc.smaps,
			   procmem_smaps_keys);
	}
	if (r->proc.status_err) {
		json__null(j, "status");
		json_error(j, "status_error", r->proc.status_err);
	} else {
		json_kvset(j, "status", &r->proc.status, procmem_status_keys);
	}
	json__end(j);
}

static void json_psi(struct json *j, const char *key,
		     const struct cg_pressure *p)
{
	if (!p->present) {
		json__null(j, key);
		return;
	}
	json__begin_object(j, key);
	json__double(j, "avg10", p->avg10);
	json__double(j, "avg60", p->avg60);
	json__double(j, "avg300", p->avg300);
	json__u64(j, "total_us", p->total_us);
	json__end(j);
}

static void json_cgroup(struct json *j, const char *key,
			const struct cgroup_reading *cg)
{
	int i;

	json__begin_object(j, key);
	if (!cg->version) {
		json__null(j, "version");
		json__string(j, "why", cg->why);
		json__end(j);
		return;
	}
	json__u64(j, "version", (uint64_t)cg->version);
	json__string(j, "path", cg->path);
	json__string(j, "dir", cg->dir);
	json__begin_object(j, "common");
	for (i = 0; i < CG_COMMON_COUNT; i++)
		json_cg_value(j, cgroup_common_names[i], &cg->common[i]);
	json__end(j);
	json__begin_object(j, "files");
	for (i = 0; i < cg->nfiles; i++)
		json_cg_value(j, cg->files[i].name, &cg->files[i].v);
	json__end(j);
	if (cg->problems[0])
		json__string(j, "files_problems", cg->problems);
	if (cg->has_stat)
		json_kvset(j, "stat", &cg->stat, NULL);
	else
		json__null(j, "stat");
	if (cg->version == 1) {
		if (cg->has_oom_control)
			json_kvset(j, "oom_control", &cg->oom_control, NULL);
		else
			json__null(j, "oom_control");
	}
	if (cg->version == 2) {
		if (cg->has_events)
			json_kvset(j, "events", &cg->events, NULL);
		else
			json__null(j, "events");
		if (cg->some.present || cg->full.present) {
			json__begin_object(j, "pressure");
			json_psi(j, "some", &cg->some);
			json_psi(j, "full", &cg->full);
			json__end(j);
		} else {
			json__null(j, "pressure");
		}
	}
	json__end(j);
}

static void json_arena(struct json *j, const char *key,
		       const struct malloc_arena *a)
{
	json__begin_object(j, key);
	if (a->nr >= 0)
		json__u64(j, "nr", (uint64_t)a->nr);
	json__u64(j, "free_fast_chunks", a->fast_count);
	json__u64(j, "free_fast_bytes", a->fast_size);
	json__u64(j, "free_rest_chunks", a->rest_count);
	json__u64(j, "free_rest_bytes", a->rest_size);
	if (a->nr < 0) {
		json__u64(j, "mmap_chunks", a->mmap_count);
		json__u64(j, "mmap_bytes", a->mmap_size);
	}
	json__u64(j, "system_current_bytes", a->system_current);
	json__u64(j, "system_max_bytes", a->system_max);
	json__u64(j, "aspace_total_bytes", a->aspace_total);
	json__u64(j, "aspace_mprotect_bytes", a->aspace_mprotect);
	json__end(j);
}

static void json_mi_row(struct json *j, const char *key,
			const struct mi_row_values *v)
{
	if (!v->present) {
		json__null(j, key);
		return;
	}
	json__begin_object(j, key);
	json__i64(j, "peak", v->peak);
	json__i64(j, "total", v->total);
	json__i64(j, "freed", v->freed);
	json__i64(j, "current", v->current);
	json__end(j);
}

/* mi_process_info's figures, and the rows kept of its table */
static void json_mimalloc(struct json *j, const struct alloc_reading *a)
{
	size_t i;

	json__begin_object(j, "mimalloc");
	for (i = 0; i < 8; i++)
		json__u64(j, allocstats_mimalloc_names[i], a->mimalloc[i]);
	json__end(j);
	if (!a->has_mi_text) {
		json__null(j, "mimalloc_table");
		if (a->why[0])
			json__string(j, "mimalloc_table_why", a->why);
		return;
	}
	json__begin_object(j, "mimalloc_table");
	json__bool(j, "approximate", true);	/* printed to 3 figures */
	json__bool(j, "truncated", a->arenas_truncated);
	for (i = 0; i < MI_ROW_COUNT; i++)
		json_mi_row(j, allocstats_mi_row_names[i], &a->mi_rows[i]);
	if (a->has_mi_commits)
		json__i64(j, "commits", a->mi_commits);
	else
		json__null(j, "commits");
	json__end(j);
}

static void json_allocator(struct json *j, const struct readings *r)
{
	const struct alloc_reading *a = &r->alloc;
	size_t i;

	json__begin_object(j, "allocator");
	if (a->calls_seen)
		json__string(j, "calls_seen", a->calls_seen);
	if (!a->ok) {
		json__string(j, "name", "unknown");
		json__string(j, "why", a->why);
		json__end(j);
		return;
	}
	json__string(j, "name", readings__allocator_name(a->allocator));
	/* linked into the executable, or in a shared library */
	json__bool(j, "in_program", a->in_program);
	if (a->unix_ns && a->unix_ns != r->unix_ns) {
		char when[40];

		readings__iso_time(a->unix_ns, when, sizeof(when));
		json__string(j, "time", when);	/* read earlier than the rest */
	}
	json__string(j, "path", a->path);
	if (a->allocator == PA_ALLOCATOR_UNKNOWN)
		json__string(j, "why", "statistics are read from glibc, jemalloc, mimalloc and tcmalloc only");
	json__begin_object(j, "common");
	for (i = 0; i < ALLOC_COMMON_COUNT; i++)
		if (a->has_common[i])
			json__u64(j, allocstats_common_names[i], a->common[i]);
		else
			json__null(j, allocstats_common_names[i]);
	json__end(j);
	if (a->has_mallinfo) {
		json__begin_object(j, "mallinfo2");
		for (i = 0; i < 10; i++)
			json__u64(j, allocstats_mallinfo_names[i], a->mallinfo[i]);
		json__end(j);
	}
	if (a->has_arenas) {
		json__begin_array(j, "arenas");
		for (i = 0; i < a->narenas; i++)
			json_arena(j, NULL, &a->arenas[i]);
		json__end(j);
		if (a->has_total)
			json_arena(j, "arenas_total", &a->total);
		else
			json__null(j, "arenas_total");
		json__bool(j, "arenas_truncated", a->arenas_truncated);
		if (a->why[0])
			json__string(j, "arenas_why", a->why);
	} else if (a->allocator == PA_ALLOCATOR_GLIBC && a->why[0]) {
		json__string(j, "arenas_why", a->why);
	}
	if (a->has_jemalloc) {
		json__begin_object(j, "jemalloc");
		for (i = 0; i < 7; i++)
			if (a->jemalloc_mask & (1u << i))
				json__u64(j, allocstats_jemalloc_names[i],
					  a->jemalloc[i]);
			else
				json__null(j, allocstats_jemalloc_names[i]);
		json__end(j);
	}
	if (a->has_mimalloc)
		json_mimalloc(j, a);
	if (a->has_tcmalloc) {
		json__begin_object(j, "tcmalloc");
		for (i = 0; i < PA_TCMALLOC_PROPERTIES; i++)
			if (a->tcmalloc_mask & (1u << i))
				json__u64(j, allocstats_tcmalloc_names[i],
					  a->tcmalloc[i]);
			else
				json__null(j, allocstats_tcmalloc_names[i]);
		json__end(j);
	}
	if ((a->allocator == PA_ALLOCATOR_JEMALLOC && !a->has_jemalloc) ||
	    (a->allocator == PA_ALLOCATOR_MIMALLOC && !a->has_mimalloc) ||
	    (a->allocator == PA_ALLOCATOR_TCMALLOC && !a->has_tcmalloc))
		json__string(j, "why", a->why[0] ? a->why :
				       "the allocator answered nothing");
	json__end(j);
}

static void json_agent(struct json *j, const struct readings *r)
{
	const struct agent_counts *a = &r->agent;
	int i;

	if (!a->present) {
		json__null(j, "agent");
		json__string(j, "agent_why", r->agent_why);
		json__bool(j, "agent_unreadable", r->agent_unreadable);
		return;
	}
	json__begin_object(j, "agent");
	json__u64(j, "memfd_bytes", a->memfd_bytes);
	json__u64(j, "memfd_size", a->memfd_size);
	json__u64(j, "sample_rate", a->sample_rate);
	json__u64(j, "samples", a->samples);
	json__u64(j, "lost_records", a->lost_records);
	if (a->losses_bad)
		json__bool(j, "losses_corrupt", true);
	if (a->orphaned)
		json__u64(j, "orphaned_by", a->orphaned);
	json__u64(j, "lost_samples", a->lost_samples);
	json__u64(j, "lost_bytes", a->lost_bytes);
	json__u64(j, "live_overflow", a->live_overflow);
	json__u64(j, "live_entries", a->live_entries);
	json__u64(j, "live_capacity", a->live_capacity);
	if (a->unwind_modules || a->unwind_fallbacks) {	/* see readings_prom.c */
		json__u64(j, "unwind_table_bytes", a->unwind_table_bytes);
		json__u64(j, "unwind_table_modules", a->unwind_modules);
		json__u64(j, "unwind_fallbacks", a->unwind_fallbacks);
		json__u64(j, "unwind_inline_builds", a->unwind_inline_builds);
	}
	json__begin_object(j, "hooks");
	for (i = 0; i < PA_HOOK_COUNT; i++) {
		json__begin_object(j, readings_hook_names[i]);
		json__u64(j, "calls", a->calls[i]);
		if (i != PA_HOOK_FREE)
			json__u64(j, "bytes", a->bytes[i]);
		json__end(j);
	}
	json__end(j);
	json__end(j);
}

/* "end": how the run ended; "final": the cgroup read after it. */
static void json_end(struct json *j, const struct readings_end *e)
{
	const struct readings_oom *o = &e->oom;
	char when[40];

	json__begin_object(j, "end");
	if (e->ended)
		json__string(j, "target", e->ended);
	else
		json__null(j, "target");
	json__bool(j, "oom_killed", o->killed);
	if (o->known) {
		json__begin_object(j, "oom_kill");
		json__string(j, "counter", o->counter);
		json__u64(j, "before", o->before);
		json__u64(j, "after", o->after);
		json__end(j);
	} else {
		json__null(j, "oom_kill");
	}
	if (e->reading) {
		readings__iso_time(e->reading_unix_ns, when, sizeof(when));
		json__begin_object(j, "reading");
		json__string(j, "taken", e->reading);
		json__string(j, "time", when);
		/* a followed process: "periodic" says nothing of how
		 * it ended */
		json__bool(j, "held_at_exit", !e->reading_not_held);
		json__end(j);
	} else {
		json__null(j, "reading");
	}
	if (e->has_peak_rss) {
		json__begin_object(j, "peak_rss");
		json__u64(j, "bytes", e->peak_rss);
		json__string(j, "from", e->peak_rss_from);
		json__end(j);
	} else {
		json__null(j, "peak_rss");
	}
	if (e->has_peak_heap) {
		json__begin_object(j, "peak_heap");
		json__double(j, "bytes", round(e->peak_bytes));
		/* the agent counts bytes, not objects */
		if (e->peak_counted)
			json__null(j, "objects");
		else
			json__double(j, "objects", round(e->peak_objects));
		json__bool(j, "exact", e->peak_exact);
		json__bool(j, "snapshot_stale", e->peak_stale);
		json__bool(j, "counted_by_agent", e->peak_counted);
		if (e->peak_counted) {
			json__u64(j, "slack_bytes", e->peak_slack);
			json__double(j, "highest_read_bytes",
				     round(e->peak_read_bytes));
		}
		readings__iso_time(e->peak_unix_ns, when, sizeof(when));
		json__string(j, "time", when);
		json__i64(j, "unix_ns", e->peak_unix_ns);
		json__double(j, "after_start_s", e->peak_after_s);
		if (e->has_peak_rss_then) {
			json__u64(j, "rss_then", e->peak_rss_then);
			json__double(j, "rss_then_after_ms",
				     round(e->peak_rss_after_ms * 10) / 10);
		} else {
			json__null(j, "rss_then");
		}
		json__end(j);
	} else {
		json__null(j, "peak_heap");
	}
	json__end(j);
	if (!e->has_final) {
		json__null(j, "final");
		return;
	}
	json__begin_object(j, "final");
	readings__iso_time(e->final_unix_ns, when, sizeof(when));
	json__string(j, "time", when);
	json__i64(j, "unix_ns", e->final_unix_ns);
	json__bool(j, "after_exit", e->after_exit);
	json_cgroup(j, "cgroup", &e->final);
	json__end(j);
}

void readings__json(const struct readings *r, FILE *out, bool pretty)
{
	readings__json_end(r, NULL, out, pretty);
}

void readings__json_end(const struct readings *r,
			const struct readings_end *end, FILE *out,
			bool pretty)
{
	struct json j;
	char when[40];

	json__init(&j, out, pretty);
	readings__iso_time(r->unix_ns, when, sizeof(when));
	json__begin_object(&j, NULL);
	json__string(&j, "time", when);
	json__i64(&j, "unix_ns", r->unix_ns);
	json__i64(&j, "pid", r->pid);
	json_process(&j, r);
	json_cgroup(&j, "cgroup", &r->cgroup);
	json_allocator(&j, r);
	json_agent(&j, r);
	if (r->has_heap) {
		json__begin_object(&j, "heap");
		json__u64(&j, "samples", r->heap_samples);
		json__double(&j, "inuse_bytes", round(r->heap.inuse_bytes));
		json__double(&j, "inuse_objects", round(r->heap.inuse_objects));
		json__double(&j, "alloc_bytes", round(r->heap.alloc_bytes));
		json__double(&j, "alloc_objects", round(r->heap.alloc_objects));
		json__end(&j);
	}
	if (end)
		json_end(&j, end);
	json__end(&j);
	json__finish(&j);
}

