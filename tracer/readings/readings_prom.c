// SPDX-License-Identifier: MIT
/*
 * readings_prom.c - a reading in Prometheus text exposition format
 * (`pprof-alloc stats --prometheus`, and /metrics).
 *
 * Names follow Prometheus's conventions: base units (_bytes, seconds),
 * _total for counters, one HELP and TYPE per family, and labels for the
 * open-ended key sets (smaps_rollup's keys, memory.stat's, hooks,
 * arenas).  What was not read has no sample at all (never 0); a limit that
 * is not set is +Inf.  Label values (paths, names: the target's) are
 * cleaned (untrusted.c), then escaped as the format asks.  promtool checks
 * the output in the tests.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "readings.h"
#include "common/untrusted.h"

void readings__prom_family(FILE *out, const char *name, const char *type,
			const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A run of cleaned text (untrusted.c) with the exposition format's
 * escapes for a label value. */
static void prom_put(void *ctx, const char *s, size_t n)
{
	FILE *out = ctx;
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[i] == '\\' || s[i] == '"')
			fprintf(out, "\\%c", s[i]);
		else if (s[i] == '\n')
			fputs("\\n", out);
		else
			fputc(s[i], out);
	}
}

static void prom_label_value(FILE *out, const char *s)
{
	untrusted__write(s, prom_put, out);
}

void readings__prom_sample(FILE *out, const char *name, const char *label,
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

/* An info metric: value 1, labels KEY="value" and path="path". */
static void prom_info(FILE *out, const char *name, const char *help,
		      const char *key, const char *value, const char *path)
{
	readings__prom_family(out, name, "gauge", help);
	fprintf(out, "%s{%s=\"", name, key);
	prom_label_value(out, value);
	fputs("\",path=\"", out);
	prom_label_value(out, path);
	fputs("\"} 1\n", out);
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
			readings__prom_family(out, name, type, help);
		any = true;
		readings__prom_sample(out, name, label, s->v[i].key,
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
		readings__prom_family(out, "pprof_alloc_process_threads", "gauge",
			    "Threads of the process.");
		readings__prom_sample(out, "pprof_alloc_process_threads", NULL, NULL,
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
	snprintf(name, sizeof(name), "%d", cg->version);
	prom_info(out, "pprof_alloc_cgroup_info",
		  "The memory cgroup read: its version and path.",
		  "version", name, cg->path);
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
		readings__prom_family(out, name, counter ? "counter" : "gauge", help);
		readings__prom_sample(out, name, NULL, NULL,
			    v->unlimited ? INFINITY : (double)v->value);
	}
	if (cg->has_stat)
		prom_kvset(out, "pprof_alloc_cgroup_memory_stat", "untyped",
			   "memory.stat of the cgroup, every key as the kernel names it.",
			   "key", &cg->stat, NULL, NULL);
	if (cg->has_oom_control)
		prom_kvset(out, "pprof_alloc_cgroup_memory_oom_control",
			   "untyped",
			   "memory.oom_control of the cgroup (v1), every key as the kernel names it.",
			   "key", &cg->oom_control, NULL, NULL);
	if (cg->has_events)
		prom_kvset(out, "pprof_alloc_cgroup_memory_events_total",
			   "counter", "memory.events of the cgroup (v2).",
			   "event", &cg->events, NULL, NULL);
	if (cg->some.present || cg->full.present) {
		const struct cg_pressure *p[2] = { &cg->some, &cg->full };
		const char *kind[2] = { "some", "full" };

		readings__prom_family(out, "pprof_alloc_cgroup_memory_pressure_stall_seconds_total",
			    "counter", "memory.pressure total stall time (v2).");
		for (i = 0; i < 2; i++)
			if (p[i]->present)
				readings__prom_sample(out, "pprof_alloc_cgroup_memory_pressure_stall_seconds_total",
					    "kind", kind[i],
					    (double)p[i]->total_us / 1e6);
		readings__prom_family(out, "pprof_alloc_cgroup_memory_pressure_avg10_ratio",
			    "gauge", "memory.pressure share of the last 10 s stalled (v2).");
		for (i = 0; i < 2; i++)
			if (p[i]->present)
				readings__prom_sample(out, "pprof_alloc_cgroup_memory_pressure_avg10_ratio",
					    "kind", kind[i], p[i]->avg10 / 100);
	}
}

/* The rows kept of mimalloc's table: bytes, and its threads. */
static void prom_mi_table(FILE *out, const struct alloc_reading *a)
{
	static const char *const col[4] = { "peak", "total", "freed",
					    "current" };
	const struct mi_row_values *v;
	int64_t x[4];
	int i, c;

	readings__prom_family(out, "pprof_alloc_mimalloc_table_bytes", "gauge",
			      "mimalloc's statistics table (mi_stats_print_out), by row and column, in bytes, to 3 figures.");
	for (i = 0; i < MI_THREADS; i++) {
		v = &a->mi_rows[i];
		if (!v->present)
			continue;
		x[0] = v->peak, x[1] = v->total, x[2] = v->freed;
		x[3] = v->current;
		for (c = 0; c < 4; c++)
			fprintf(out, "pprof_alloc_mimalloc_table_bytes{row=\"%s\",column=\"%s\"} %" PRId64 "\n",
				allocstats_mi_row_names[i], col[c], x[c]);
	}
	v = &a->mi_rows[MI_THREADS];
	if (v->present)
		readings__prom_one(out, "pprof_alloc_mimalloc_threads", "gauge",
				   "Threads mimalloc counts (its table's threads row, current).",
				   (double)v->current);
	if (a->has_mi_commits)
		readings__prom_one(out, "pprof_alloc_mimalloc_commits_total",
				   "counter", "Commits mimalloc made (its table's commits row).",
				   (double)a->mi_commits);
}

static void prom_mimalloc(FILE *out, const struct alloc_reading *a)
{
	static const int bytes[4] = { 3, 4, 5, 6 };
	int i;

	readings__prom_family(out, "pprof_alloc_mimalloc_bytes", "gauge",
			      "mimalloc mi_process_info() sizes (current_rss is its committed bytes again on Linux), in bytes.");
	for (i = 0; i < 4; i++)
		readings__prom_sample(out, "pprof_alloc_mimalloc_bytes", "stat",
				      allocstats_mimalloc_names[bytes[i]],
				      (double)a->mimalloc[bytes[i]]);
	readings__prom_family(out, "pprof_alloc_mimalloc_cpu_seconds_total",
			      "counter", "mimalloc mi_process_info() CPU time of the process, by mode.");
	readings__prom_sample(out, "pprof_alloc_mimalloc_cpu_seconds_total",
			      "mode", "user", (double)a->mimalloc[1] / 1000);
	readings__prom_sample(out, "pprof_alloc_mimalloc_cpu_seconds_total",
			      "mode", "system", (double)a->mimalloc[2] / 1000);
	readings__prom_one(out, "pprof_alloc_mimalloc_elapsed_seconds", "gauge",
			   "mimalloc mi_process_info() elapsed time since it started.",
			   (double)a->mimalloc[0] / 1000);
	readings__prom_one(out, "pprof_alloc_mimalloc_major_page_faults_total",
			   "counter", "mimalloc mi_process_info() page faults (major ones on Linux).",
			   (double)a->mimalloc[7]);
	if (a->has_mi_text)
		prom_mi_table(out, a);
}

static void prom_allocator(FILE *out, const struct readings *r)
{
	const struct alloc_reading *a = &r->alloc;
	bool any_common = false;
	char label[32];
	size_t i;

	if (!a->ok)
		return;
	prom_info(out, "pprof_alloc_allocator_info",
		  "The allocator that serves malloc in the process.",
		  "allocator", readings__allocator_name(a->allocator), a->path);
	for (i = 0; i < ALLOC_COMMON_COUNT; i++) {
		if (!a->has_common[i])
			continue;
		if (!any_common)
			readings__prom_family(out, "pprof_alloc_allocator_bytes", "gauge",
					      "The allocator's figures under common names (in_use, free, metadata, resident, mapped, retained), in bytes.");
		any_common = true;
		readings__prom_sample(out, "pprof_alloc_allocator_bytes", "stat",
				      allocstats_common_names[i],
				      (double)a->common[i]);
	}
	if (a->has_mimalloc)
		prom_mimalloc(out, a);
	if (a->has_tcmalloc && a->tcmalloc_mask) {
		readings__prom_family(out, "pprof_alloc_tcmalloc_bytes", "gauge",
				      "gperftools tcmalloc MallocExtension numeric properties, in bytes.");
		for (i = 0; i < PA_TCMALLOC_PROPERTIES; i++)
			if (a->tcmalloc_mask & (1u << i))
				readings__prom_sample(out, "pprof_alloc_tcmalloc_bytes",
						      "property",
						      allocstats_tcmalloc_names[i],
						      (double)a->tcmalloc[i]);
	}
	if (a->has_mallinfo) {
		readings__prom_family(out, "pprof_alloc_glibc_mallinfo2", "gauge",
			    "glibc mallinfo2() fields (bytes, or counts for *blks).");
		for (i = 0; i < 10; i++)
			readings__prom_sample(out, "pprof_alloc_glibc_mallinfo2", "field",
				    allocstats_mallinfo_names[i],
				    (double)a->mallinfo[i]);
	}
	if (a->has_arenas) {
		readings__prom_family(out, "pprof_alloc_glibc_arenas", "gauge",
			    "glibc malloc arenas (malloc_info heaps).");
		readings__prom_sample(out, "pprof_alloc_glibc_arenas", NULL, NULL,
			    (double)a->narenas);
		readings__prom_family(out, "pprof_alloc_glibc_arena_system_bytes", "gauge",
			    "Memory each glibc arena has from the system now.");
		for (i = 0; i < a->narenas; i++) {
			snprintf(label, sizeof(label), "%d", a->arenas[i].nr);
			readings__prom_sample(out, "pprof_alloc_glibc_arena_system_bytes",
				    "arena", label,
				    (double)a->arenas[i].system_current);
		}
		readings__prom_family(out, "pprof_alloc_glibc_arena_free_bytes", "gauge",
			    "Free bytes held in each glibc arena's bins.");
		for (i = 0; i < a->narenas; i++) {
			snprintf(label, sizeof(label), "%d", a->arenas[i].nr);
			readings__prom_sample(out, "pprof_alloc_glibc_arena_free_bytes",
				    "arena", label,
				    (double)(a->arenas[i].fast_size +
					     a->arenas[i].rest_size));
		}
		if (a->has_total) {
			readings__prom_family(out, "pprof_alloc_glibc_mmap_bytes", "gauge",
				    "Bytes glibc serves with mmap directly.");
			readings__prom_sample(out, "pprof_alloc_glibc_mmap_bytes", NULL,
				    NULL, (double)a->total.mmap_size);
		}
	}
	if (a->has_jemalloc) {
		bool any = false;

		for (i = 0; i < 6; i++) {
			if (!(a->jemalloc_mask & (1u << i)))
				continue;
			if (!any)
				readings__prom_family(out, "pprof_alloc_jemalloc_bytes",
					    "gauge", "jemalloc stats.* (mallctl).");
			any = true;
			readings__prom_sample(out, "pprof_alloc_jemalloc_bytes", "stat",
				    allocstats_jemalloc_names[i],
				    (double)a->jemalloc[i]);
		}
		if (a->jemalloc_mask & (1u << 6)) {
			readings__prom_family(out, "pprof_alloc_jemalloc_arenas", "gauge",
				    "jemalloc arenas.narenas.");
			readings__prom_sample(out, "pprof_alloc_jemalloc_arenas", NULL,
				    NULL, (double)a->jemalloc[6]);
		}
	}
}

void readings__prom_one(FILE *out, const char *name, const char *type,
		     const char *help, double v)
{
	readings__prom_family(out, name, type, help);
	readings__prom_sample(out, name, NULL, NULL, v);
}

static void prom_agent(FILE *out, const struct readings *r)
{
	const struct agent_counts *a = &r->agent;
	int i;

	if (!a->present)
		return;
	readings__prom_family(out, "pprof_alloc_agent_calls_total", "counter",
		    "Calls to each allocator function the agent hooks.");
	for (i = 0; i < PA_HOOK_COUNT; i++)
		readings__prom_sample(out, "pprof_alloc_agent_calls_total", "hook",
			    readings_hook_names[i], (double)a->calls[i]);
	readings__prom_family(out, "pprof_alloc_agent_requested_bytes_total", "counter",
		    "Bytes requested through each allocating function.");
	for (i = 0; i < PA_HOOK_COUNT; i++)
		if (i != PA_HOOK_FREE)
			readings__prom_sample(out, "pprof_alloc_agent_requested_bytes_total",
				    "hook", readings_hook_names[i],
				    (double)a->bytes[i]);
	readings__prom_one(out, "pprof_alloc_agent_samples_total", "counter",
		 "Allocations the agent sampled.", (double)a->samples);
	/* not read when the header's counters are not plausible: no sample
	 * rather than a counter that jumps or goes back */
	if (!a->losses_bad) {
		readings__prom_one(out, "pprof_alloc_agent_lost_records_total", "counter",
			 "Records dropped because the ring was full.",
			 (double)a->lost_records);
		readings__prom_one(out, "pprof_alloc_agent_lost_samples_total", "counter",
			 "Sampled allocations whose record was dropped.",
			 (double)a->lost_samples);
	}
	readings__prom_one(out, "pprof_alloc_agent_live_entries", "gauge",
		 "Sampled allocations live in the agent's table.",
		 (double)a->live_entries);
	readings__prom_one(out, "pprof_alloc_agent_live_capacity", "gauge",
		 "Entries the agent's live table can hold.",
		 (double)a->live_capacity);
	readings__prom_one(out, "pprof_alloc_agent_sample_rate_bytes", "gauge",
		 "Mean bytes between samples.", (double)a->sample_rate);
	readings__prom_one(out, "pprof_alloc_agent_memfd_bytes", "gauge",
		 "Resident bytes of the agent's memfd (ring and tables): shared memory, made as it is used, charged to a memory cgroup as shmem.",
		 (double)a->memfd_bytes);
	/* an agent that neither built an unwind table nor fell back from
	 * one (fp, dwarf, or one older than the fields) has none to report */
	if (!a->unwind_modules && !a->unwind_fallbacks)
		return;
	readings__prom_one(out, "pprof_alloc_agent_unwind_table_bytes", "gauge",
		 "Memory of the unwind tables the agent built from the modules' .eh_frame (its own mappings, not the memfd).",
		 (double)a->unwind_table_bytes);
	readings__prom_one(out, "pprof_alloc_agent_unwind_table_modules", "gauge",
		 "Modules the agent has built an unwind table for.",
		 (double)a->unwind_modules);
	readings__prom_one(out, "pprof_alloc_agent_unwind_fallbacks_total", "counter",
		 "Samples whose walk by the unwind tables gave out before the thread's entry (--unwind auto), walked by frame pointers instead.",
		 (double)a->unwind_fallbacks);
	readings__prom_one(out, "pprof_alloc_agent_unwind_inline_builds_total", "counter",
		 "Unwind tables the agent built on one of the program's threads, at a walk, rather than on its own thread ahead.",
		 (double)a->unwind_inline_builds);
}

void readings__prometheus(const struct readings *r, FILE *out)
{
	prom_process(out, r);
	prom_cgroup(out, r);
	prom_allocator(out, r);
	prom_agent(out, r);
	if (r->has_heap) {
		readings__prom_one(out, "pprof_alloc_heap_inuse_bytes", "gauge",
			 "Sampled heap in use, estimated.",
			 round(r->heap.inuse_bytes));
		readings__prom_one(out, "pprof_alloc_heap_inuse_objects", "gauge",
			 "Sampled objects in use, estimated.",
			 round(r->heap.inuse_objects));
	}
}

