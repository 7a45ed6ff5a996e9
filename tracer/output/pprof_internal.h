/* SPDX-License-Identifier: MIT */
/*
 * pprof_internal.h - what the pprof builder (pprof.c) and its encoder
 * (pprof_encode.c) share: the builder's own compact records.  Nothing
 * outside those two files includes this; everyone else uses pprof.h.
 */
#ifndef PA_PPROF_INTERNAL_H
#define PA_PPROF_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "pprof.h"

/* An open-addressing (linear probing) set of indices into a builder array.
 * A slot holds the entry's hash and index + 1; 0 marks an empty slot. */
struct index_slot {
	uint64_t hash;
	size_t entry;
};

struct index_table {
	struct index_slot *slots;
	size_t cap;		/* 0 or a power of two */
	size_t used;
};

struct value_type {
	int64_t type;		/* string indices */
	int64_t unit;
};

struct mapping_rec {
	uint64_t start;
	uint64_t limit;
	uint64_t offset;
	int64_t file;
	int64_t build_id;
	bool has_functions;
	bool has_filenames;
	bool has_line_numbers;
	bool has_inline_frames;
};

struct function_rec {
	int64_t name;
	int64_t system_name;
	int64_t file;
	int64_t start_line;
};

struct location_rec {
	uint64_t mapping_id;
	uint64_t address;
	size_t line_off;	/* into pprof_builder.lines */
	size_t nlines;
};

struct sample_rec {
	size_t loc_off;		/* into sample_locations */
	size_t nlocations;	/* values: sample_values[i * ntypes] */
	int64_t bytes_label;	/* < 0: no label */
};

struct pprof_builder {
	char **strings;
	size_t nstrings, strings_cap;
	struct index_table string_index;

	struct value_type *sample_types;
	size_t ntypes;
	struct value_type period_type;
	bool has_period_type;
	int64_t period;
	int64_t default_sample_type;
	int64_t time_nanos;
	int64_t duration_nanos;

	struct mapping_rec *mappings;
	size_t nmappings, mappings_cap;

	struct function_rec *functions;
	size_t nfunctions, functions_cap;
	struct index_table function_index;

	struct location_rec *locations;
	size_t nlocations, locations_cap;
	struct pprof_line *lines;
	size_t nlines, lines_cap;

	struct sample_rec *samples;
	size_t nsamples, samples_cap;
	uint64_t *sample_locations;
	size_t nsample_locations, sample_locations_cap;
	int64_t *sample_values;
	size_t sample_values_cap;	/* in use: nsamples * ntypes */
	size_t nlabeled;

	int64_t *comments;
	size_t ncomments, comments_cap;
};

/* malloc of n elements of size bytes, overflow checked; never NULL for
 * n == 0 unless out of memory. */
static inline void *alloc_array(size_t n, size_t size)
{
	if (n > SIZE_MAX / size)
		return NULL;
	return malloc(n ? n * size : 1);
}

#endif /* PA_PPROF_INTERNAL_H */
