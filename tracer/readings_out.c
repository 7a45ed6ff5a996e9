// SPDX-License-Identifier: MIT
/*
 * readings_out.c - a reading as JSON, as Prometheus text, as text for a
 * person, and as a few summary lines for a profile's comments.
 *
 * One rule for all formats: what was not read is absent - JSON null (with
 * the reason where there is one), no Prometheus sample, "-" in text -
 * never 0.  Sizes are bytes everywhere except in the text for people.  A
 * limit that is not set is "unlimited" in JSON and +Inf in Prometheus.
 *
 * Prometheus names follow its conventions (base units, _bytes, _total for
 * counters, one HELP and TYPE per family, labels for the open-ended key
 * sets such as memory.stat), and are checked by promtool in the tests.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "json.h"
#include "readings.h"

static const char *allocator_name(uint32_t a)
{
	return a == PA_ALLOCATOR_GLIBC ? "glibc" :
	       a == PA_ALLOCATOR_JEMALLOC ? "jemalloc" : "unknown";
}

static void iso_time(int64_t unix_ns, char *buf, size_t len)
{
	time_t t = (time_t)(unix_ns / 1000000000ll);
	struct tm tm;

	gmtime_r(&t, &tm);
	if (snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (int)(unix_ns / 1000000 % 1000)) >=
	    (int)len)
		buf[len - 1] = 0;
}

/* ---- JSON ------------------------------------------------------------- */

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

static void json_cgroup(struct json *j, const struct readings *r)
{
	const struct cgroup_reading *cg = &r->cgroup;
	int i;

	json__begin_object(j, "cgroup");
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

static void json_allocator(struct json *j, const struct readings *r)
{
	const struct alloc_reading *a = &r->alloc;
	size_t i;

	json__begin_object(j, "allocator");
	if (!a->ok) {
		json__string(j, "name", "unknown");
		json__string(j, "why", a->why);
		json__end(j);
		return;
	}
	json__string(j, "name", allocator_name(a->allocator));
	json__string(j, "path", a->path);
	if (a->allocator == PA_ALLOCATOR_UNKNOWN)
		json__string(j, "why", "statistics are read from glibc and jemalloc only");
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
		json_arena(j, "arenas_total", &a->total);
		json__bool(j, "arenas_truncated", a->arenas_truncated);
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
	json__end(j);
}

static void json_agent(struct json *j, const struct readings *r)
{
	const struct agent_counts *a = &r->agent;
	int i;

	if (!a->present) {
		json__null(j, "agent");
		return;
	}
	json__begin_object(j, "agent");
	json__u64(j, "sample_rate", a->sample_rate);
	json__u64(j, "samples", a->samples);
	json__u64(j, "lost_records", a->lost_records);
	json__u64(j, "lost_samples", a->lost_samples);
	json__u64(j, "lost_bytes", a->lost_bytes);
	json__u64(j, "live_overflow", a->live_overflow);
	json__u64(j, "live_entries", a->live_entries);
	json__u64(j, "live_capacity", a->live_capacity);
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

void readings__json(const struct readings *r, FILE *out, bool pretty)
{
	struct json j;
	char when[40];

	json__init(&j, out, pretty);
	iso_time(r->unix_ns, when, sizeof(when));
	json__begin_object(&j, NULL);
	json__string(&j, "time", when);
	json__i64(&j, "unix_ns", r->unix_ns);
	json__i64(&j, "pid", r->pid);
	json_process(&j, r);
	json_cgroup(&j, r);
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
	json__end(&j);
	json__finish(&j);
}

/* ---- Prometheus -------------------------------------------------------- */

static void prom_family(FILE *out, const char *name, const char *type,
			const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void prom_label_value(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(out, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", out);
		else
			fputc(*s, out);
	}
}

static void prom_sample(FILE *out, const char *name, const char *label,
			const char *label_value, double v)
{
	fputs(name, out);
	if (label) {
		fprintf(out, "{%s=\"", label);
		prom_label_value(out, label_value);
		fputs("\"}", out);
	}
	if (isinf(v))
		fputs(" +Inf\n", out);
	else
		fprintf(out, " %.17g\n", v);
}

static void prom_kvset(FILE *out, const char *name, const char *type,
		       const char *help, const char *label,
		       const struct kvset *s, const char *const *only,
		       const char *skip)
{
	const char *const *k;
	bool any = false;
	size_t i;

	for (i = 0; i < s->n; i++) {
		bool wanted = !only;

		for (k = only; k && *k && !wanted; k++)
			wanted = !strcmp(*k, s->v[i].key);
		if (!wanted || !s->v[i].valid ||
		    (skip && !strcmp(skip, s->v[i].key)))
			continue;
		if (!any)
			prom_family(out, name, type, help);
		any = true;
		prom_sample(out, name, label, s->v[i].key,
			    (double)s->v[i].value);
	}
}

static void prom_process(FILE *out, const struct readings *r)
{
	uint64_t threads;

	if (!r->proc.smaps_err)
		prom_kvset(out, "pprof_alloc_process_smaps_rollup_bytes",
			   "gauge", "/proc/PID/smaps_rollup, by key, in bytes.",
			   "key", &r->proc.smaps, NULL, NULL);
	if (r->proc.status_err)
		return;
	prom_kvset(out, "pprof_alloc_process_status_bytes", "gauge",
		   "/proc/PID/status memory lines (Vm*, Rss*), in bytes.",
		   "key", &r->proc.status, procmem_status_keys, "Threads");
	if (kvset__value(&r->proc.status, "Threads", &threads)) {
		prom_family(out, "pprof_alloc_process_threads", "gauge",
			    "Threads of the process.");
		prom_sample(out, "pprof_alloc_process_threads", NULL, NULL,
			    (double)threads);
	}
}

static void prom_cgroup(FILE *out, const struct readings *r)
{
	const struct cgroup_reading *cg = &r->cgroup;
	char name[96], help[160];
	int i;

	if (!cg->version)
		return;
	prom_family(out, "pprof_alloc_cgroup_info", "gauge",
		    "The memory cgroup read: its version and path.");
	fprintf(out, "pprof_alloc_cgroup_info{version=\"%d\",path=\"",
		cg->version);
	prom_label_value(out, cg->path);
	fputs("\"} 1\n", out);
	for (i = 0; i < CG_COMMON_COUNT; i++) {
		const struct cg_value *v = &cg->common[i];
		bool counter = cgroup_common_is_counter[i];

		if (!v->present)
			continue;
		snprintf(name, sizeof(name), "pprof_alloc_cgroup_%s%s",
			 cgroup_common_names[i], counter ? "_total" : "_bytes");
		snprintf(help, sizeof(help),
			 "Memory cgroup %s (v1 and v2 mapped onto one name)%s.",
			 cgroup_common_names[i], counter ? "" : ", in bytes");
		prom_family(out, name, counter ? "counter" : "gauge", help);
		prom_sample(out, name, NULL, NULL,
			    v->unlimited ? INFINITY : (double)v->value);
	}
	if (cg->has_stat)
		prom_kvset(out, "pprof_alloc_cgroup_memory_stat", "untyped",
			   "memory.stat of the cgroup, every key as the kernel names it.",
			   "key", &cg->stat, NULL, NULL);
	if (cg->has_events)
		prom_kvset(out, "pprof_alloc_cgroup_memory_events_total",
			   "counter", "memory.events of the cgroup (v2).",
			   "event", &cg->events, NULL, NULL);
	if (cg->some.present || cg->full.present) {
		const struct cg_pressure *p[2] = { &cg->some, &cg->full };
		const char *kind[2] = { "some", "full" };

		prom_family(out, "pprof_alloc_cgroup_memory_pressure_stall_seconds_total",
			    "counter", "memory.pressure total stall time (v2).");
		for (i = 0; i < 2; i++)
			if (p[i]->present)
				prom_sample(out, "pprof_alloc_cgroup_memory_pressure_stall_seconds_total",
					    "kind", kind[i],
					    (double)p[i]->total_us / 1e6);
		prom_family(out, "pprof_alloc_cgroup_memory_pressure_avg10_ratio",
			    "gauge", "memory.pressure share of the last 10 s stalled (v2).");
		for (i = 0; i < 2; i++)
			if (p[i]->present)
				prom_sample(out, "pprof_alloc_cgroup_memory_pressure_avg10_ratio",
					    "kind", kind[i], p[i]->avg10 / 100);
	}
}

static void prom_allocator(FILE *out, const struct readings *r)
{
	const struct alloc_reading *a = &r->alloc;
	char label[32];
	size_t i;

	if (!a->ok)
		return;
	prom_family(out, "pprof_alloc_allocator_info", "gauge",
		    "The allocator that serves malloc in the process.");
	fprintf(out, "pprof_alloc_allocator_info{allocator=\"%s\",path=\"",
		allocator_name(a->allocator));
	prom_label_value(out, a->path);
	fputs("\"} 1\n", out);
	if (a->has_mallinfo) {
		prom_family(out, "pprof_alloc_glibc_mallinfo2", "gauge",
			    "glibc mallinfo2() fields (bytes, or counts for *blks).");
		for (i = 0; i < 10; i++)
			prom_sample(out, "pprof_alloc_glibc_mallinfo2", "field",
				    allocstats_mallinfo_names[i],
				    (double)a->mallinfo[i]);
	}
	if (a->has_arenas) {
		prom_family(out, "pprof_alloc_glibc_arenas", "gauge",
			    "glibc malloc arenas (malloc_info heaps).");
		prom_sample(out, "pprof_alloc_glibc_arenas", NULL, NULL,
			    (double)a->narenas);
		prom_family(out, "pprof_alloc_glibc_arena_system_bytes", "gauge",
			    "Memory each glibc arena has from the system now.");
		for (i = 0; i < a->narenas; i++) {
			snprintf(label, sizeof(label), "%d", a->arenas[i].nr);
			prom_sample(out, "pprof_alloc_glibc_arena_system_bytes",
				    "arena", label,
				    (double)a->arenas[i].system_current);
		}
		prom_family(out, "pprof_alloc_glibc_arena_free_bytes", "gauge",
			    "Free bytes held in each glibc arena's bins.");
		for (i = 0; i < a->narenas; i++) {
			snprintf(label, sizeof(label), "%d", a->arenas[i].nr);
			prom_sample(out, "pprof_alloc_glibc_arena_free_bytes",
				    "arena", label,
				    (double)(a->arenas[i].fast_size +
					     a->arenas[i].rest_size));
		}
		prom_family(out, "pprof_alloc_glibc_mmap_bytes", "gauge",
			    "Bytes glibc serves with mmap directly.");
		prom_sample(out, "pprof_alloc_glibc_mmap_bytes", NULL, NULL,
			    (double)a->total.mmap_size);
	}
	if (a->has_jemalloc) {
		bool any = false;

		for (i = 0; i < 6; i++) {
			if (!(a->jemalloc_mask & (1u << i)))
				continue;
			if (!any)
				prom_family(out, "pprof_alloc_jemalloc_bytes",
					    "gauge", "jemalloc stats.* (mallctl).");
			any = true;
			prom_sample(out, "pprof_alloc_jemalloc_bytes", "stat",
				    allocstats_jemalloc_names[i],
				    (double)a->jemalloc[i]);
		}
		if (a->jemalloc_mask & (1u << 6)) {
			prom_family(out, "pprof_alloc_jemalloc_arenas", "gauge",
				    "jemalloc arenas.narenas.");
			prom_sample(out, "pprof_alloc_jemalloc_arenas", NULL,
				    NULL, (double)a->jemalloc[6]);
		}
	}
}

static void prom_one(FILE *out, const char *name, const char *type,
		     const char *help, double v)
{
	prom_family(out, name, type, help);
	prom_sample(out, name, NULL, NULL, v);
}

static void prom_agent(FILE *out, const struct readings *r)
{
	const struct agent_counts *a = &r->agent;
	int i;

	if (!a->present)
		return;
	prom_family(out, "pprof_alloc_agent_calls_total", "counter",
		    "Calls to each allocator function the agent hooks.");
	for (i = 0; i < PA_HOOK_COUNT; i++)
		prom_sample(out, "pprof_alloc_agent_calls_total", "hook",
			    readings_hook_names[i], (double)a->calls[i]);
	prom_family(out, "pprof_alloc_agent_requested_bytes_total", "counter",
		    "Bytes requested through each allocating function.");
	for (i = 0; i < PA_HOOK_COUNT; i++)
		if (i != PA_HOOK_FREE)
			prom_sample(out, "pprof_alloc_agent_requested_bytes_total",
				    "hook", readings_hook_names[i],
				    (double)a->bytes[i]);
	prom_one(out, "pprof_alloc_agent_samples_total", "counter",
		 "Allocations the agent sampled.", (double)a->samples);
	prom_one(out, "pprof_alloc_agent_lost_records_total", "counter",
		 "Records dropped because the ring was full.",
		 (double)a->lost_records);
	prom_one(out, "pprof_alloc_agent_lost_samples_total", "counter",
		 "Sampled allocations whose record was dropped.",
		 (double)a->lost_samples);
	prom_one(out, "pprof_alloc_agent_live_entries", "gauge",
		 "Sampled allocations live in the agent's table.",
		 (double)a->live_entries);
	prom_one(out, "pprof_alloc_agent_live_capacity", "gauge",
		 "Entries the agent's live table can hold.",
		 (double)a->live_capacity);
	prom_one(out, "pprof_alloc_agent_sample_rate_bytes", "gauge",
		 "Mean bytes between samples.", (double)a->sample_rate);
}

void readings__prometheus(const struct readings *r, FILE *out)
{
	prom_process(out, r);
	prom_cgroup(out, r);
	prom_allocator(out, r);
	prom_agent(out, r);
	if (r->has_heap) {
		prom_one(out, "pprof_alloc_heap_inuse_bytes", "gauge",
			 "Sampled heap in use, estimated.",
			 round(r->heap.inuse_bytes));
		prom_one(out, "pprof_alloc_heap_inuse_objects", "gauge",
			 "Sampled objects in use, estimated.",
			 round(r->heap.inuse_objects));
	}
}

/* ---- text ------------------------------------------------------------- */

static const char *human(uint64_t bytes, char *buf, size_t len)
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
				human(kv->value, buf, sizeof(buf)));
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
			human(v->value, buf, sizeof(buf)));
}

void readings__text(const struct readings *r, FILE *out)
{
	const struct cgroup_reading *cg = &r->cgroup;
	const struct alloc_reading *a = &r->alloc;
	char when[40], b1[32], b2[32];
	size_t i;
	int h;

	iso_time(r->unix_ns, when, sizeof(when));
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
		fprintf(out, "  cgroup: none (%s)\n", cg->why);
	} else {
		fprintf(out, "  cgroup v%d %s (%s):\n", cg->version, cg->path,
			cg->dir);
		for (h = 0; h < CG_COMMON_COUNT; h++)
			text_cg(out, cgroup_common_names[h], &cg->common[h],
				cgroup_common_is_counter[h]);
		if (cg->problems[0])
			fprintf(out, "    problems: %s\n", cg->problems);
	}
	if (!a->ok) {
		fprintf(out, "  allocator: unknown (%s)\n", a->why);
	} else {
		fprintf(out, "  allocator: %s (%s)\n",
			allocator_name(a->allocator), a->path);
		if (a->has_mallinfo) {
			fprintf(out, "    in use %s, free %s, mmapped %s, top pad %s\n",
				human(a->mallinfo[7], b1, sizeof(b1)),
				human(a->mallinfo[8], b2, sizeof(b2)),
				human(a->mallinfo[4], when, sizeof(when)),
				human(a->mallinfo[9], b1, sizeof(b1)));
		}
		for (i = 0; a->has_arenas && i < a->narenas; i++)
			fprintf(out, "    arena %d: %s from the system, %s free in bins\n",
				a->arenas[i].nr,
				human(a->arenas[i].system_current, b1, sizeof(b1)),
				human(a->arenas[i].fast_size + a->arenas[i].rest_size,
				      b2, sizeof(b2)));
		for (i = 0; a->has_jemalloc && i < 6; i++)
			if (a->jemalloc_mask & (1u << i))
				fprintf(out, "    %-10s %s\n",
					allocstats_jemalloc_names[i],
					human(a->jemalloc[i], b1, sizeof(b1)));
	}
	if (r->agent.present) {
		fprintf(out, "  agent: %" PRIu64 " samples (rate %" PRIu64
			"), %" PRIu64 " lost records, live table %" PRIu64
			" of %" PRIu64 "\n", r->agent.samples,
			r->agent.sample_rate, r->agent.lost_records,
			r->agent.live_entries, r->agent.live_capacity);
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
					human(r->agent.bytes[h], b1,
					      sizeof(b1)));
		}
	} else {
		fprintf(out, "  agent: none\n");
	}
	if (r->has_heap)
		fprintf(out, "  sampled heap: %s in use (estimated), %" PRIu64
			" samples\n",
			human((uint64_t)llround(r->heap.inuse_bytes), b1,
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

	iso_time(r->unix_ns, when, sizeof(when));
	if (kvset__value(&r->proc.status, "VmRSS", &rss)) {
		if (!kvset__value(&r->proc.status, "RssAnon", &anon))
			anon = 0;
		if (!kvset__value(&r->proc.status, "RssFile", &file))
			file = 0;
		snprintf(line, sizeof(line),
			 "readings at %s: RSS %s (anon %s, file %s)", when,
			 human(rss, b1, sizeof(b1)), human(anon, b2, sizeof(b2)),
			 human(file, b3, sizeof(b3)));
		add(ctx, line);
	}
	if (cg->version && cg->common[CG_USAGE].present) {
		if (snprintf(line, sizeof(line), "cgroup v%d %s: usage %s, limit %s",
			 cg->version, cg->path,
			 human(cg->common[CG_USAGE].value, b1, sizeof(b1)),
			 !cg->common[CG_LIMIT].present ? "-" :
			 cg->common[CG_LIMIT].unlimited ? "unlimited" :
			 human(cg->common[CG_LIMIT].value, b2, sizeof(b2))) >=
		    (int)sizeof(line))
			strcpy(line + sizeof(line) - 4, "...");
		add(ctx, line);
	}
	if (a->ok && a->has_mallinfo) {
		snprintf(line, sizeof(line),
			 "allocator %s: in use %s, free in arenas %s, mmapped %s",
			 allocator_name(a->allocator),
			 human(a->mallinfo[7], b1, sizeof(b1)),
			 human(a->mallinfo[8], b2, sizeof(b2)),
			 human(a->mallinfo[4], b3, sizeof(b3)));
		add(ctx, line);
	} else if (a->ok && a->has_jemalloc) {
		snprintf(line, sizeof(line),
			 "allocator jemalloc: allocated %s, resident %s",
			 human(a->jemalloc[0], b1, sizeof(b1)),
			 human(a->jemalloc[3], b2, sizeof(b2)));
		add(ctx, line);
	}
}
