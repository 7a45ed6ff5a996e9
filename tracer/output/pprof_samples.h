/* SPDX-License-Identifier: MIT */
/*
 * pprof_samples.h - a Profile's samples checked as they are on the wire,
 * without unpacking them (tracer/output/pprof_samples.c), for
 * pprof_splice.c.
 */
#ifndef PA_TRACER_PPROF_SAMPLES_H
#define PA_TRACER_PPROF_SAMPLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What some samples are, for the checks that need the rest of the
 * profile (pprof_samples__fit()). */
struct pprof_sample_tally {
	uint64_t samples;
	uint64_t cost;			/* what protobuf-c would allocate */
	uint64_t values_min, values_max;	/* values per sample */
	uint64_t locations;		/* location ids (none 0), */
	uint64_t loc_max;		/* the largest */
	uint64_t string_max;		/* label strings; 0: none */
};

/* Bytes past the end of what pprof_samples__scan() is given that it may
 * read (and ignores). */
#define PPROF_SAMPLES_PAD	16

void pprof_samples__init(struct pprof_sample_tally *t);
/* Add t's samples to to's. */
void pprof_samples__add(struct pprof_sample_tally *to,
			const struct pprof_sample_tally *t);

/*
 * Walk data[0..len), whole top-level fields of a Profile
 * (pprof_file__top_field()), and check each sample as the samples
 * protobuf-c packs, tallied into t (made with pprof_samples__init()).
 * *other: some field is not a sample.  PPROF_SAMPLES_PAD bytes past
 * data + len must be readable.  0, or -EBADMSG if a field is cut short,
 * or a sample is encoded any other way or has a location id 0.
 */
int pprof_samples__scan(const uint8_t *data, size_t len,
			struct pprof_sample_tally *t, bool *other);

/*
 * Would pprof_file__check() pass samples such as t's in a profile of
 * sample_types sample types, strings strings and locations locations,
 * numbered 1 to locations if dense?
 */
bool pprof_samples__fit(const struct pprof_sample_tally *t,
			uint64_t sample_types, uint64_t strings,
			uint64_t locations, bool dense);

#endif /* PA_TRACER_PPROF_SAMPLES_H */
