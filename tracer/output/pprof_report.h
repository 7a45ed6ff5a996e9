/* SPDX-License-Identifier: MIT */
/*
 * pprof_report.h - turn the aggregate into a pprof profile and a top-N table.
 */
#ifndef PA_TRACER_REPORT_H
#define PA_TRACER_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "tracer/record/heap.h"
#include "tracer/record/mappings.h"

struct report_info {
	const char *command;		/* what was profiled, for comments */
	const char *ended;		/* "exited with status 0", ... */
	uint64_t lost_records, lost_bytes, live_overflow, agent_samples;
	const char *losses_bad;	/* why the agent's loss counters were
				   ignored (ringfile__losses), or NULL */
	uint64_t skipped_busy, resyncs;
	int64_t time_nanos, duration_nanos;
	const char *unwind_summary;	/* DWARF unwinding, or NULL */
	const char *exact_summary;	/* --rate 1's counting, or NULL */
	const char *default_type;	/* NULL: "inuse_space" */
	const struct heap_snapshot *base;	/* a delta from this, or NULL */
	bool no_peak;			/* no peak_* sample types (a core: its
					   heap was never followed) */
	const char *source;		/* not the agent's samples: says whose
					   (jemalloc's), instead of the
					   agent's counts */
	bool jit_names;			/* name code in no file from the
					   process's perf map (not for a
					   core: its PID may be another's) */
	const char *const *extra_comments;	/* the readings' summary */
	size_t nextra;
};

struct symbols;
struct debuginfo_opts;

/*
 * Locate every module's symbols by build ID and load them.  Unless quiet,
 * says on stderr when the program itself has no debug info.  NULL with
 * errno set.  Free with symbols__free().
 */
struct symbols *report__symbols(struct mapping_set *ms,
				const struct debuginfo_opts *opts, bool quiet);

/* The same for the mappings that hold a frame of h's (NULL: all). */
struct symbols *report__symbols_for(struct mapping_set *ms,
				    const struct heap *h,
				    const struct debuginfo_opts *opts,
				    bool quiet);

/* Locate and load the symbols of the modules of ms that syms does not
 * have yet (a target that loaded more since); _used: of the mappings i
 * with used[i] only (NULL: all).  0 or -ENOMEM. */
int report__symbols_add(struct symbols *syms, struct mapping_set *ms,
			bool quiet);
int report__symbols_add_used(struct symbols *syms, struct mapping_set *ms,
			     const bool *used, bool quiet);

/* Write the gzipped profile atomically to path, symbolized with syms
 * (NULL: addresses only).  The heap's peak is made ready first
 * (heap__peak_ready).  0 or -errno (the caller reports). */
int report__write(struct heap *h, const struct mapping_set *ms,
		  struct symbols *syms, const struct report_info *info,
		  const char *path);

/* The same profile, gzipped into a malloc'd *out of *len bytes. */
int report__encode(struct heap *h, const struct mapping_set *ms,
		   struct symbols *syms, const struct report_info *info,
		   uint8_t **out, size_t *len);

/* Print the n largest allocation sites by in-use and allocated bytes. */
int report__top(const struct heap *h, struct symbols *syms, int n, FILE *out);

#endif /* PA_TRACER_REPORT_H */
