/* SPDX-License-Identifier: MIT */
/*
 * pprof.h - build a pprof Profile message and write it gzipped.
 *
 * A builder interns strings, functions, locations and mappings and collects
 * samples; pprof__write() encodes the Profile (proto/profile.proto) with
 * protobuf-c, gzips it and writes it to a temporary file in the target's
 * directory that is renamed into place, so a reader never sees half a file.
 * Ids handed out are the pprof ids (1-based; 0 means "none").
 */
#ifndef PA_PPROF_H
#define PA_PPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pprof_builder;

struct pprof_sample_type {
	const char *type;	/* "alloc_objects" */
	const char *unit;	/* "count" */
};

struct pprof_line {
	uint64_t function_id;
	int64_t line;
};

/*
 * New builder with the given sample types (copied) and period type/period.
 * Returns NULL with errno set on failure.
 */
struct pprof_builder *pprof__new(const struct pprof_sample_type *types,
				 size_t ntypes,
				 const struct pprof_sample_type *period_type,
				 int64_t period);
void pprof__free(struct pprof_builder *b);

/* Index of s in the string table (interned; "" is 0).  < 0: -errno. */
int64_t pprof__string(struct pprof_builder *b, const char *s);

/* Returns the mapping id (> 0) or -errno.  build_id is hex, may be NULL. */
int64_t pprof__add_mapping(struct pprof_builder *b, uint64_t start,
			   uint64_t limit, uint64_t offset, const char *file,
			   const char *build_id, bool has_functions,
			   bool has_filenames, bool has_line_numbers,
			   bool has_inline_frames);

/* Deduplicated on (name, system_name, file, start_line).  id > 0 or -errno. */
int64_t pprof__function(struct pprof_builder *b, const char *name,
			const char *system_name, const char *file,
			int64_t start_line);

/* A new location (not deduplicated: the caller keeps one per address).
 * lines[0] is the leaf (innermost inlined) frame.  id > 0 or -errno. */
int64_t pprof__add_location(struct pprof_builder *b, uint64_t mapping_id,
			    uint64_t address, const struct pprof_line *lines,
			    size_t nlines);

/* A sample: location_ids[0] is the leaf; values has ntypes entries.
 * bytes_label >= 0 adds the num label "bytes" (unit "bytes").  0 or -errno. */
int pprof__add_sample(struct pprof_builder *b, const uint64_t *location_ids,
		      size_t nlocations, const int64_t *values,
		      int64_t bytes_label);

int pprof__add_comment(struct pprof_builder *b, const char *comment);
void pprof__set_time(struct pprof_builder *b, int64_t time_nanos,
		     int64_t duration_nanos);
/* Sets default_sample_type by its type name. */
int pprof__set_default_sample_type(struct pprof_builder *b, const char *type);

/* Encode, gzip and write atomically to path.  0 or -errno. */
int pprof__write(struct pprof_builder *b, const char *path);

/* Encode and gzip into a malloc'd buffer (*out, *len); for tests.  0 or -errno. */
int pprof__encode_gzip(struct pprof_builder *b, uint8_t **out, size_t *len);

#endif /* PA_PPROF_H */
