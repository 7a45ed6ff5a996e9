// SPDX-License-Identifier: MIT
/*
 * pprof_encode.c - encode a builder's profile with protobuf-c, gzip it,
 * and write it atomically.
 *
 * The protobuf-c Profile is built only here, in a handful of arrays sized
 * exactly (struct profile_msg) with pointers into the builder's flat
 * arrays; it is packed, gzipped (level 1, as Go's runtime/pprof does) and
 * thrown away.
 *
 * Gzipping and the atomic write are pprof_file.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "profile.pb-c.h"
#include "gzip.h"
#include "pprof_file.h"
#include "pprof_internal.h"

/*
 * The protobuf-c view of a builder: message structs in exactly sized arrays
 * and the pointer arrays protobuf-c wants for repeated messages.  Scalars
 * (stacks, values, comments, strings) point into the builder, so the view is
 * valid only until the builder changes.
 */
struct profile_msg {
	Perftools__Profiles__Profile profile;
	Perftools__Profiles__ValueType period_type;
	Perftools__Profiles__ValueType *sample_types;
	Perftools__Profiles__ValueType **sample_type_ptrs;
	Perftools__Profiles__Mapping *mappings;
	Perftools__Profiles__Mapping **mapping_ptrs;
	Perftools__Profiles__Function *functions;
	Perftools__Profiles__Function **function_ptrs;
	Perftools__Profiles__Location *locations;
	Perftools__Profiles__Location **location_ptrs;
	Perftools__Profiles__Line *lines;
	Perftools__Profiles__Line **line_ptrs;
	Perftools__Profiles__Sample *samples;
	Perftools__Profiles__Sample **sample_ptrs;
	Perftools__Profiles__Label *labels;
	Perftools__Profiles__Label **label_ptrs;
};

static void profile_msg__release(struct profile_msg *m)
{
	free(m->sample_types);
	free(m->sample_type_ptrs);
	free(m->mappings);
	free(m->mapping_ptrs);
	free(m->functions);
	free(m->function_ptrs);
	free(m->locations);
	free(m->location_ptrs);
	free(m->lines);
	free(m->line_ptrs);
	free(m->samples);
	free(m->sample_ptrs);
	free(m->labels);
	free(m->label_ptrs);
}

/* Allocate an array of n structs and one of n pointers to them; false on
 * failure, leaving whatever was allocated for profile_msg__release(). */
#define ALLOC_WITH_PTRS(arr, ptrs, n)					\
	(((arr) = alloc_array((n), sizeof(*(arr)))) != NULL &&		\
	 ((ptrs) = alloc_array((n), sizeof(*(ptrs)))) != NULL)

static void fill_sample_types(struct profile_msg *m,
			      const struct pprof_builder *b)
{
	size_t i;

	for (i = 0; i < b->ntypes; i++) {
		perftools__profiles__value_type__init(&m->sample_types[i]);
		m->sample_types[i].type = b->sample_types[i].type;
		m->sample_types[i].unit = b->sample_types[i].unit;
		m->sample_type_ptrs[i] = &m->sample_types[i];
	}
	m->profile.n_sample_type = b->ntypes;
	m->profile.sample_type = m->sample_type_ptrs;

	if (b->has_period_type) {
		perftools__profiles__value_type__init(&m->period_type);
		m->period_type.type = b->period_type.type;
		m->period_type.unit = b->period_type.unit;
		m->profile.period_type = &m->period_type;
	}
}

static void fill_mappings(struct profile_msg *m, const struct pprof_builder *b)
{
	size_t i;

	for (i = 0; i < b->nmappings; i++) {
		const struct mapping_rec *r = &b->mappings[i];
		Perftools__Profiles__Mapping *pm = &m->mappings[i];

		perftools__profiles__mapping__init(pm);
		pm->id = i + 1;
		pm->memory_start = r->start;
		pm->memory_limit = r->limit;
		pm->file_offset = r->offset;
		pm->filename = r->file;
		pm->build_id = r->build_id;
		pm->has_functions = r->has_functions;
		pm->has_filenames = r->has_filenames;
		pm->has_line_numbers = r->has_line_numbers;
		pm->has_inline_frames = r->has_inline_frames;
		m->mapping_ptrs[i] = pm;
	}
	m->profile.n_mapping = b->nmappings;
	m->profile.mapping = m->mapping_ptrs;
}

static void fill_functions(struct profile_msg *m, const struct pprof_builder *b)
{
	size_t i;

	for (i = 0; i < b->nfunctions; i++) {
		const struct function_rec *r = &b->functions[i];
		Perftools__Profiles__Function *pf = &m->functions[i];

		perftools__profiles__function__init(pf);
		pf->id = i + 1;
		pf->name = r->name;
		pf->system_name = r->system_name;
		pf->filename = r->file;
		pf->start_line = r->start_line;
		m->function_ptrs[i] = pf;
	}
	m->profile.n_function = b->nfunctions;
	m->profile.function = m->function_ptrs;
}

static void fill_locations(struct profile_msg *m, const struct pprof_builder *b)
{
	size_t i;

	for (i = 0; i < b->nlines; i++) {
		perftools__profiles__line__init(&m->lines[i]);
		m->lines[i].function_id = b->lines[i].function_id;
		m->lines[i].line = b->lines[i].line;
		m->line_ptrs[i] = &m->lines[i];
	}
	for (i = 0; i < b->nlocations; i++) {
		const struct location_rec *r = &b->locations[i];
		Perftools__Profiles__Location *pl = &m->locations[i];

		perftools__profiles__location__init(pl);
		pl->id = i + 1;
		pl->mapping_id = r->mapping_id;
		pl->address = r->address;
		pl->n_line = r->nlines;
		pl->line = r->nlines ? &m->line_ptrs[r->line_off] : NULL;
		m->location_ptrs[i] = pl;
	}
	m->profile.n_location = b->nlocations;
	m->profile.location = m->location_ptrs;
}

static void fill_samples(struct profile_msg *m, const struct pprof_builder *b,
			 int64_t bytes_key)
{
	size_t i, nlabels = 0;

	for (i = 0; i < b->nsamples; i++) {
		const struct sample_rec *r = &b->samples[i];
		Perftools__Profiles__Sample *ps = &m->samples[i];

		perftools__profiles__sample__init(ps);
		ps->n_location_id = r->nlocations;
		ps->location_id = r->nlocations ?
			&b->sample_locations[r->loc_off] : NULL;
		ps->n_value = b->ntypes;
		ps->value = &b->sample_values[i * b->ntypes];
		if (r->bytes_label >= 0) {
			Perftools__Profiles__Label *label = &m->labels[nlabels];

			perftools__profiles__label__init(label);
			label->key = bytes_key;
			label->num = r->bytes_label;
			label->num_unit = bytes_key;
			m->label_ptrs[nlabels] = label;
			ps->n_label = 1;
			ps->label = &m->label_ptrs[nlabels];
			nlabels++;
		}
		m->sample_ptrs[i] = ps;
	}
	m->profile.n_sample = b->nsamples;
	m->profile.sample = m->sample_ptrs;
}

/*
 * Build the protobuf-c view of b in *m.  0 or -errno; on failure *m holds
 * nothing that needs releasing beyond profile_msg__release().
 */
static int profile_msg__build(struct profile_msg *m, struct pprof_builder *b)
{
	int64_t bytes_key = 0;

	memset(m, 0, sizeof(*m));
	/* Interned before the string table is shared with the message. */
	if (b->nlabeled) {
		bytes_key = pprof__string(b, "bytes");
		if (bytes_key < 0)
			return (int)bytes_key;
	}

	if (!ALLOC_WITH_PTRS(m->sample_types, m->sample_type_ptrs, b->ntypes) ||
	    !ALLOC_WITH_PTRS(m->mappings, m->mapping_ptrs, b->nmappings) ||
	    !ALLOC_WITH_PTRS(m->functions, m->function_ptrs, b->nfunctions) ||
	    !ALLOC_WITH_PTRS(m->locations, m->location_ptrs, b->nlocations) ||
	    !ALLOC_WITH_PTRS(m->lines, m->line_ptrs, b->nlines) ||
	    !ALLOC_WITH_PTRS(m->samples, m->sample_ptrs, b->nsamples) ||
	    !ALLOC_WITH_PTRS(m->labels, m->label_ptrs, b->nlabeled))
		return -ENOMEM;

	perftools__profiles__profile__init(&m->profile);
	fill_sample_types(m, b);
	fill_mappings(m, b);
	fill_functions(m, b);
	fill_locations(m, b);
	fill_samples(m, b, bytes_key);
	m->profile.n_string_table = b->nstrings;
	m->profile.string_table = b->strings;
	m->profile.time_nanos = b->time_nanos;
	m->profile.duration_nanos = b->duration_nanos;
	m->profile.period = b->period;
	m->profile.n_comment = b->ncomments;
	m->profile.comment = b->comments;
	m->profile.default_sample_type = b->default_sample_type;
	return 0;
}

int pprof__encode_gzip(struct pprof_builder *b, uint8_t **out, size_t *len)
{
	struct profile_msg msg;
	uint8_t *packed;
	size_t packed_len;
	int err;

	err = profile_msg__build(&msg, b);
	if (err)
		goto out_msg;
	packed_len =
		perftools__profiles__profile__get_packed_size(&msg.profile);
	packed = malloc(packed_len ? packed_len : 1);
	if (!packed) {
		err = -ENOMEM;
		goto out_msg;
	}
	if (perftools__profiles__profile__pack(&msg.profile, packed) !=
	    packed_len) {
		err = -EIO;
		goto out_packed;
	}
	err = pprof_file__gzip(packed, packed_len, out, len);
out_packed:
	free(packed);
out_msg:
	profile_msg__release(&msg);
	return err;
}

int pprof__write(struct pprof_builder *b, const char *path)
{
	uint8_t *data;
	size_t len;
	int err;

	err = pprof__encode_gzip(b, &data, &len);
	if (err)
		return err;
	err = pprof_file__write(path, data, len);
	free(data);
	return err;
}
