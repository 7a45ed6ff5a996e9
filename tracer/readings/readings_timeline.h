/* SPDX-License-Identifier: MIT */
/*
 * readings_timeline.h - readings while a profile is recorded: one line per
 * interval in PROFILE.timeline.jsonl, the last one in PROFILE.json.
 */
#ifndef PA_TRACER_TIMELINE_H
#define PA_TRACER_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "readings.h"
#include "pa_clock.h"

#define TIMELINE_DEFAULT_NS	PA_NSEC_PER_SEC	/* readings without --interval */

struct timeline {
	char *json_path;		/* the readings at the end */
	char *timeline_path;		/* NULL: no timeline (no --interval) */
	FILE *timeline;
	uint64_t interval_ns;
	uint64_t next_ns;
	unsigned long lines;
	struct readings last;
	bool have_last;
	bool last_at_exit;		/* last was read as the process exited
					   (agent/exitwait.c) */
	bool failed;			/* a write failed: said once */
	bool moved;			/* ... and went to a fallback */
	bool quiet_none;		/* no reading taken: say nothing (a
					   follower's short-lived process) */
	bool not_held;			/* its exit() does not wait for a
					   reading (a followed process) */
	uint64_t cpu_ns;		/* our own time spent taking readings */
	unsigned long readings;
};

/*
 * Derive the paths from the profile's (heap.pb.gz: heap.json,
 * heap.timeline.jsonl) and open the timeline when interval_ns is not 0
 * (readings are then taken every interval_ns and each one is a line;
 * without it every TIMELINE_DEFAULT_NS, kept only for the end).  0 or
 * -errno (reported).
 */
int timeline__open(struct timeline *t, const char *profile_path,
		   uint64_t interval_ns);

/* The profile's path without its .pb.gz, .gz or .pb, plus suffix
 * (".json", ".timeline.jsonl"); malloc'd, NULL when out of memory. */
char *timeline__sibling(const char *profile_path, const char *suffix);

/* Take a reading if one is due at now (CLOCK_MONOTONIC ns). */
void timeline__tick(struct timeline *t, uint64_t now,
		    const struct readings_source *src);

/* The process is in exit(), held for us: its last reading, now (a
 * timeline line too). */
void timeline__take_at_exit(struct timeline *t,
			    const struct readings_source *src);

/*
 * The end: take a last reading if the target still lives (else keep the
 * latest), write the JSON file with end beside the reading (end may be
 * NULL; its reading is said, and its peak RSS taken from the reading's
 * VmHWM when it has none), close the timeline.  Returns the reading the
 * summary comes from (NULL if there is none).  Reports failures; a file
 * whose place failed is written to a fallback (said).
 */
const struct readings *timeline__finish(struct timeline *t,
					const struct readings_source *src,
					bool alive, struct readings_end *end);
void timeline__close(struct timeline *t);

#endif /* PA_TRACER_TIMELINE_H */
