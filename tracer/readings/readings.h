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
#include "readings_alloc.h"
#include "readings_cgroup.h"
#include "tracer/record/heap.h"
#include "readings_procmem.h"
#include "tracer/record/ringfile.h"

extern const char *const readings_hook_names[PA_HOOK_COUNT];

struct agent_counts {
	bool present;
	uint64_t calls[PA_HOOK_COUNT], bytes[PA_HOOK_COUNT];
	uint64_t samples, lost_records, lost_samples, lost_bytes;
	uint64_t live_overflow, live_entries, live_capacity, sample_rate;
	uint64_t memfd_bytes;		/* the agent's memfd: shmem resident
					   (see readings.c) ... */
	uint64_t memfd_size;		/* ... of the file's size */
	uint64_t unwind_modules, unwind_table_bytes, unwind_fallbacks;
	uint64_t unwind_inline_builds;	/* tables built on the program's
					   threads */
	bool losses_bad;		/* the header's loss counters are not
					   plausible: read as zero */
	uint32_t orphaned;		/* the agent turned itself off: its
					   tracer (this pid) ended without
					   detaching; 0 otherwise */
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
	bool agent_unreadable;		/* one may be there: not readable */
	char agent_why[256];		/* when !agent.present */
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
	struct ringfile *rf;		/* ... its handle: the loss counters
					   are read checked (ringfile__losses) */
	uint64_t file_size, live_capacity;
	int stats_timeout_ms;
	const struct heap *heap;
	const char *no_agent_why;	/* when hdr is NULL */
	bool agent_unreadable;		/* ... because it could not be read */
	bool skip_allocator;		/* this time, not the allocator */
	const char *calls_seen;		/* which allocator calls the agent
					   sees, or NULL (stats: not known) */
};

/* Take a reading.  0, -ESRCH (nothing in procfs for the pid), -ECHILD (a
 * zombie: it has exited and has no memory or cgroup left to read; its
 * /proc/PID/cgroup names the root) or -ENOMEM; whatever could not be read
 * is absent in it, with a reason.  Always safe to fini. */
int readings__take(struct readings *r, const struct readings_source *src);
void readings__fini(struct readings *r);

/*
 * Was the target OOM-killed?  The kernel counts each OOM kill in the
 * victim's memory cgroup (oom_kill) and in /proc/vmstat, before it sends
 * the SIGKILL.  A counter read when the run started and again after the
 * target's death that moved, with the target dead of SIGKILL, says so;
 * the cgroup's counter is used when it was read both times, /proc/vmstat's
 * (any process on the machine) only when not.
 */
struct readings_oom {
	bool known;		/* a counter was read at the start and the end */
	const char *counter;	/* which one: "memory.events oom_kill"... */
	uint64_t before, after;
	bool sigkilled;		/* the target died of SIGKILL */
	bool killed;		/* ... as the counter moved: OOM-killed */
};

/*
 * How a recorded run ended, for PROFILE.json and the profile's comments:
 * the end as the tracer saw it and a reading of the target's memory cgroup
 * taken after it (the last reading of the process may be older: it is
 * taken while the process lives).
 */
struct readings_end {
	const char *ended;		/* "was killed by signal 9 (Killed)" */
	/* the reading beside it: how it was taken */
	const char *reading;		/* "at exit", "at the end" (a live
					   target), "periodic" (the last one
					   before it died) */
	int64_t reading_unix_ns;
	bool reading_not_held;		/* its exit() waited for no reading:
					   a followed process */
	/* the highest resident set, from the kernel */
	bool has_peak_rss;
	uint64_t peak_rss;
	const char *peak_rss_from;	/* "wait4 ru_maxrss", "status VmHWM" */
	/* the in-use heap at its highest (heap.h) */
	bool has_peak_heap;
	bool peak_exact;		/* --rate 1: counted, not estimated */
	bool peak_stale;		/* out of memory for its snapshot: the
					   profile's peak_* are an earlier one */
	double peak_bytes, peak_objects;
	/* --rate 1: the agent counted a higher peak than the tracer's
	 * highest read of its sites (peak_read_bytes, which the profile's
	 * peak_* hold): peak_bytes is the agent's, exact or at most
	 * peak_slack above the peak (peak_objects are the read's) */
	bool peak_counted;
	uint64_t peak_slack;
	double peak_read_bytes;
	int64_t peak_unix_ns;
	double peak_after_s;		/* seconds after the run's start */
	bool has_peak_rss_then;
	uint64_t peak_rss_then;		/* RSS read closest to it (the tracer
					   learns of it after it)... */
	double peak_rss_after_ms;	/* ... this long after it */
	bool has_final;
	bool after_exit;		/* final was read after the target ended */
	int64_t final_unix_ns;
	struct cgroup_reading final;	/* the cgroup, read at the end */
	struct readings_oom oom;
};

/* The peak RSS is never below an RSS the tracer read (peak_rss_then). */
static inline void readings__peak_rss_floor(struct readings_end *e)
{
	if (e->has_peak_rss && e->has_peak_rss_then &&
	    e->peak_rss_then > e->peak_rss)
		e->peak_rss = e->peak_rss_then;
}

/*
 * The verdict from the target's cgroup at the start and at the end (either
 * may be version 0), /proc/vmstat's oom_kill at both (has_vm false: not
 * read), and whether the target died of SIGKILL.
 */
void readings__oom_verdict(struct readings_oom *v,
			   const struct cgroup_reading *start,
			   const struct cgroup_reading *end, bool has_vm,
			   uint64_t vm_before, uint64_t vm_after,
			   bool sigkilled);
/* "OOM-killed (memory cgroup /x: oom_kill 0 -> 1)" into buf, or "" when
 * the verdict is not a kill. */
void readings__oom_describe(const struct readings_oom *v,
			    const struct readings_end *end, char *buf,
			    size_t len);
void readings__end_fini(struct readings_end *e);

/* "12 B", "1.5 MiB" */
const char *readings__human(uint64_t bytes, char *buf, size_t len);
/* "glibc", "jemalloc", "mimalloc", "tcmalloc" or "unknown" */
const char *readings__allocator_name(uint32_t allocator);
/* ISO 8601 UTC with milliseconds */
void readings__iso_time(int64_t unix_ns, char *buf, size_t len);

/* readings_json.c, readings_prom.c, readings_text.c */
void readings__json(const struct readings *r, FILE *out, bool pretty);
/* The same with the run's end beside it ("end" and "final"): PROFILE.json.
 * end may be NULL. */
void readings__json_end(const struct readings *r,
			const struct readings_end *end, FILE *out,
			bool pretty);
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
/* The lines on the run's end: the cgroup after it, an OOM kill of
 * another process of the cgroup. */
void readings__end_summary(const struct readings_end *e,
			   void (*add)(void *ctx, const char *line),
			   void *ctx);

#endif /* PA_TRACER_READINGS_H */
