/* SPDX-License-Identifier: MIT */
/*
 * report.h - turn the aggregate into a pprof profile and a top-N table.
 */
#ifndef PA_TRACER_REPORT_H
#define PA_TRACER_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "heap.h"
#include "mappings.h"

struct report_info {
	const char *command;		/* what was profiled, for comments */
	const char *ended;		/* "exited with status 0", ... */
	uint64_t lost_records, lost_bytes, live_overflow, agent_samples;
	uint64_t skipped_busy, resyncs;
	int64_t time_nanos, duration_nanos;
	bool symbolize;
};

/* Write the gzipped profile atomically to path.  0 or -errno (the caller
 * reports). */
int report__write(const struct heap *h, const struct mapping_set *ms,
		  const struct report_info *info, const char *path);

/* Print the n largest allocation sites by in-use and allocated bytes. */
int report__top(const struct heap *h, const struct mapping_set *ms, int n,
		FILE *out);

#endif /* PA_TRACER_REPORT_H */
