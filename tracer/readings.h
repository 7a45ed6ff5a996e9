/* SPDX-License-Identifier: MIT */
/*
 * readings.h - one reading of everything known about a process's memory:
 * the kernel's view (smaps_rollup, status), its cgroup's, its allocator's,
 * the agent's counters and the sampled heap; and the ways to print it.
 */
#ifndef PA_TRACER_READINGS_H
#define PA_TRACER_READINGS_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include "allocstats.h"
#include "cgroup.h"
#include "heap.h"
#include "procmem.h"

extern const char *const readings_hook_names[PA_HOOK_COUNT];

struct agent_counts {
	bool present;
	uint64_t calls[PA_HOOK_COUNT], bytes[PA_HOOK_COUNT];
	uint64_t samples, lost_records, lost_samples, lost_bytes;
	uint64_t live_overflow, live_entries, live_capacity, sample_rate;
};

struct readings {
	int64_t unix_ns;		/* wall clock of the reading */
	pid_t pid;
	int proc_err;			/* procmem__read's */
	struct procmem proc;
	int cgroup_err;
	struct cgroup_reading cgroup;
	struct alloc_reading alloc;
	struct agent_counts agent;
	bool has_heap;
	struct heap_totals heap;	/* the sampled heap, estimated */
	uint64_t heap_samples;
};

/* Where a reading comes from; hdr and heap may be NULL. */
struct readings_source {
	const char *proc_root;		/* "/proc" unless pointed elsewhere */
	const char *sys_root;		/* NULL: the mounts the tracer sees */
	pid_t pid;
	struct pa_header *hdr;		/* the agent's memfd, mapped */
	uint64_t file_size, live_capacity;
	int stats_timeout_ms;
	const struct heap *heap;
	const char *no_agent_why;	/* when hdr is NULL */
	bool skip_allocator;		/* this time, not the allocator */
};

/* Take a reading.  0, -ESRCH (nothing in procfs for the pid) or -ENOMEM;
 * whatever could not be read is absent in it, with a reason. */
int readings__take(struct readings *r, const struct readings_source *src);
void readings__fini(struct readings *r);

/* "glibc", "jemalloc" or "unknown" */
const char *readings__allocator_name(uint32_t allocator);
/* ISO 8601 UTC with milliseconds */
void readings__iso_time(int64_t unix_ns, char *buf, size_t len);

/* readings_json.c, readings_prom.c, readings_text.c */
void readings__json(const struct readings *r, FILE *out, bool pretty);
void readings__prometheus(const struct readings *r, FILE *out);
/* The Prometheus text writer behind it, for other metrics (serve's): a
 * family's HELP and TYPE lines; one sample (label NULL: none; the value
 * escaped); and a family of one unlabelled sample. */
void readings__prom_family(FILE *out, const char *name, const char *type,
			   const char *help);
void readings__prom_sample(FILE *out, const char *name, const char *label,
			   const char *label_value, double v);
void readings__prom_one(FILE *out, const char *name, const char *type,
			const char *help, double v);
void readings__text(const struct readings *r, FILE *out);
/* A few lines summing it up, for the profile's comments; each is
 * passed to add (which copies it). */
void readings__summary(const struct readings *r,
		       void (*add)(void *ctx, const char *line), void *ctx);

#endif /* PA_TRACER_READINGS_H */
