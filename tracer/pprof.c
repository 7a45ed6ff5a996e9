// SPDX-License-Identifier: MIT
/*
 * pprof.c - build a pprof Profile and write it gzipped, atomically.
 *
 * The builder keeps compact records of its own, not protobuf-c structs:
 * strings (owned copies), mappings, functions, locations and samples live
 * in arrays that grow by doubling, and the variable-length parts (the lines
 * of every location, the stacks and values of every sample) live in flat
 * arrays that records index by offset.  That costs one allocation per
 * unique string and no allocation per sample, and it keeps a profile of
 * a million samples at a few tens of bytes per sample plus its stack.
 *
 * Only at encode time is the protobuf-c Profile built, in a handful of
 * arrays sized exactly (struct profile_msg), with pointers into the
 * builder's flat arrays; it is packed, gzipped and thrown away.  Nothing is
 * quadratic: interning a string or a function is one hash-table probe
 * sequence, every add is amortized O(1), and encoding is linear.
 *
 * Invariants:
 *  - strings[0] is "" and every string appears once (string_index);
 *  - a function is the 4-tuple (name, system_name, file, start_line), its
 *    strings as indices, and appears once (function_index);
 *  - ids are index + 1; every id stored in a location or sample was checked
 *    to exist when it was added, so encoding cannot produce dangling ids;
 *  - a failed call leaves the builder as it was, except that strings it
 *    interned stay interned (they cost nothing in the output but bytes).
 *
 * The builder and its encoder stay in one file, longer than most here,
 * because the encoder reads every builder record; apart, they would need a
 * private header that only they share.
 *
 * Not thread-safe: one builder belongs to one thread.  Nothing here is
 * async-signal-safe (it calls malloc).
 *
 * pprof__write() writes "<path>.tmp.XXXXXX" next to path, fsyncs it and
 * renames it over path, so a reader sees the old file or the whole new one.
 * The directory is not fsynced: the rename is atomic for readers, but after
 * a power cut the old file may come back.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* asprintf, mkostemp; the Makefile also defines it */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "profile.pb-c.h"
#include "tracer/pprof.h"

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

/*
 * Make room for need_cnt elements of elem_sz bytes in *data, doubling the
 * capacity *cap_cnt.  *data is untouched on failure.  0 or -ENOMEM.
 */
static int ensure_mem(void **data, size_t *cap_cnt, size_t elem_sz,
		      size_t need_cnt)
{
	size_t new_cnt = *cap_cnt ? *cap_cnt : 16;
	void *new_data;

	if (need_cnt <= *cap_cnt)
		return 0;
	while (new_cnt < need_cnt)
		new_cnt = new_cnt > SIZE_MAX / 2 ? need_cnt : new_cnt * 2;
	if (new_cnt > SIZE_MAX / elem_sz)
		return -ENOMEM;
	new_data = realloc(*data, new_cnt * elem_sz);
	if (!new_data)
		return -ENOMEM;
	*data = new_data;
	*cap_cnt = new_cnt;
	return 0;
}

/*
 * malloc(n * size) with the multiplication checked; NULL on failure.  Never
 * malloc(0), so that NULL always means failure, even for an empty array.
 */
static void *alloc_array(size_t n, size_t size)
{
	if (n > SIZE_MAX / size)
		return NULL;
	return malloc(n ? n * size : 1);
}

/* Room for n more elements after len: the sum is checked first. */
static int ensure_more(void **data, size_t *cap_cnt, size_t elem_sz,
		       size_t len, size_t n)
{
	if (n > SIZE_MAX - len)
		return -ENOMEM;
	return ensure_mem(data, cap_cnt, elem_sz, len + n);
}

static uint64_t hash_mix(uint64_t h)
{
	/* splitmix64's finalizer: each input bit affects each output bit. */
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return h;
}

static uint64_t hash_string(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return hash_mix(h);
}

static uint64_t hash_function(const struct function_rec *f)
{
	uint64_t h = hash_mix((uint64_t)f->name);

	h = hash_mix(h ^ (uint64_t)f->system_name);
	h = hash_mix(h ^ (uint64_t)f->file);
	return hash_mix(h ^ (uint64_t)f->start_line);
}

/* Keep the load at most 1/2 so that linear probing stays short. */
static int index_table__reserve(struct index_table *t)
{
	struct index_slot *slots;
	size_t cap, i, j;

	if (t->cap && t->used + 1 <= t->cap / 2)
		return 0;
	if (t->cap > SIZE_MAX / 2 / sizeof(*slots))
		return -ENOMEM;
	cap = t->cap ? t->cap * 2 : 64;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (i = 0; i < t->cap; i++) {
		if (!t->slots[i].entry)
			continue;
		for (j = t->slots[i].hash & (cap - 1); slots[j].entry;
		     j = (j + 1) & (cap - 1))
			;
		slots[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return 0;
}

static bool string_eq(const struct pprof_builder *b, size_t i,
		      const void *key)
{
	return strcmp(b->strings[i], key) == 0;
}

static bool function_eq(const struct pprof_builder *b, size_t i,
			const void *key)
{
	const struct function_rec *f = &b->functions[i], *k = key;

	return f->name == k->name && f->system_name == k->system_name &&
	       f->file == k->file && f->start_line == k->start_line;
}

/*
 * The slot holding key, or the empty slot where it belongs.  The table must
 * have a free slot (index_table__reserve() before inserting).
 */
static struct index_slot *
index_table__find(const struct index_table *t, const struct pprof_builder *b,
		  uint64_t hash, const void *key,
		  bool (*eq)(const struct pprof_builder *b, size_t entry,
			     const void *key))
{
	size_t mask = t->cap - 1, j;

	for (j = hash & mask; t->slots[j].entry; j = (j + 1) & mask)
		if (t->slots[j].hash == hash &&
		    eq(b, t->slots[j].entry - 1, key))
			return &t->slots[j];
	return &t->slots[j];
}

int64_t pprof__string(struct pprof_builder *b, const char *s)
{
	struct index_slot *slot;
	uint64_t hash;
	char *copy;
	int err;

	if (!s)
		s = "";
	err = index_table__reserve(&b->string_index);
	if (err)
		return err;
	hash = hash_string(s);
	slot = index_table__find(&b->string_index, b, hash, s, string_eq);
	if (slot->entry)
		return (int64_t)(slot->entry - 1);

	err = ensure_more((void **)&b->strings, &b->strings_cap,
			  sizeof(*b->strings), b->nstrings, 1);
	if (err)
		return err;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	b->strings[b->nstrings++] = copy;
	slot->hash = hash;
	slot->entry = b->nstrings;
	b->string_index.used++;
	return (int64_t)(b->nstrings - 1);
}

static int value_type__init(struct pprof_builder *b, struct value_type *vt,
			    const struct pprof_sample_type *src)
{
	int64_t type, unit;

	type = pprof__string(b, src->type);
	if (type < 0)
		return (int)type;
	unit = pprof__string(b, src->unit);
	if (unit < 0)
		return (int)unit;
	vt->type = type;
	vt->unit = unit;
	return 0;
}

struct pprof_builder *pprof__new(const struct pprof_sample_type *types,
				 size_t ntypes,
				 const struct pprof_sample_type *period_type,
				 int64_t period)
{
	struct pprof_builder *b;
	size_t i;
	int err;

	if (!types || !ntypes) {
		errno = EINVAL;
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		errno = ENOMEM;
		return NULL;
	}
	err = pprof__string(b, "");
	if (err < 0)
		goto out_free;
	b->sample_types = alloc_array(ntypes, sizeof(*b->sample_types));
	if (!b->sample_types) {
		err = -ENOMEM;
		goto out_free;
	}
	b->ntypes = ntypes;
	for (i = 0; i < ntypes; i++) {
		err = value_type__init(b, &b->sample_types[i], &types[i]);
		if (err)
			goto out_free;
	}
	if (period_type) {
		err = value_type__init(b, &b->period_type, period_type);
		if (err)
			goto out_free;
		b->has_period_type = true;
	}
	b->period = period;
	return b;

out_free:
	pprof__free(b);
	errno = -err;
	return NULL;
}

void pprof__free(struct pprof_builder *b)
{
	size_t i;

	if (!b)
		return;
	for (i = 0; i < b->nstrings; i++)
		free(b->strings[i]);
	free(b->strings);
	free(b->string_index.slots);
	free(b->sample_types);
	free(b->mappings);
	free(b->functions);
	free(b->function_index.slots);
	free(b->locations);
	free(b->lines);
	free(b->samples);
	free(b->sample_locations);
	free(b->sample_values);
	free(b->comments);
	free(b);
}

int64_t pprof__add_mapping(struct pprof_builder *b, uint64_t start,
			   uint64_t limit, uint64_t offset, const char *file,
			   const char *build_id, bool has_functions,
			   bool has_filenames, bool has_line_numbers,
			   bool has_inline_frames)
{
	struct mapping_rec *m;
	int64_t file_str, build_id_str;
	int err;

	file_str = pprof__string(b, file);
	if (file_str < 0)
		return file_str;
	build_id_str = pprof__string(b, build_id);
	if (build_id_str < 0)
		return build_id_str;
	err = ensure_more((void **)&b->mappings, &b->mappings_cap,
			  sizeof(*b->mappings), b->nmappings, 1);
	if (err)
		return err;
	m = &b->mappings[b->nmappings++];
	*m = (struct mapping_rec){
		.start = start,
		.limit = limit,
		.offset = offset,
		.file = file_str,
		.build_id = build_id_str,
		.has_functions = has_functions,
		.has_filenames = has_filenames,
		.has_line_numbers = has_line_numbers,
		.has_inline_frames = has_inline_frames,
	};
	return (int64_t)b->nmappings;
}

int64_t pprof__function(struct pprof_builder *b, const char *name,
			const char *system_name, const char *file,
			int64_t start_line)
{
	struct function_rec key = { .start_line = start_line };
	struct index_slot *slot;
	uint64_t hash;
	int err;

	key.name = pprof__string(b, name);
	if (key.name < 0)
		return key.name;
	key.system_name = pprof__string(b, system_name);
	if (key.system_name < 0)
		return key.system_name;
	key.file = pprof__string(b, file);
	if (key.file < 0)
		return key.file;

	err = index_table__reserve(&b->function_index);
	if (err)
		return err;
	hash = hash_function(&key);
	slot = index_table__find(&b->function_index, b, hash, &key,
				 function_eq);
	if (slot->entry)
		return (int64_t)slot->entry;

	err = ensure_more((void **)&b->functions, &b->functions_cap,
			  sizeof(*b->functions), b->nfunctions, 1);
	if (err)
		return err;
	b->functions[b->nfunctions++] = key;
	slot->hash = hash;
	slot->entry = b->nfunctions;
	b->function_index.used++;
	return (int64_t)b->nfunctions;
}

int64_t pprof__add_location(struct pprof_builder *b, uint64_t mapping_id,
			    uint64_t address, const struct pprof_line *lines,
			    size_t nlines)
{
	struct location_rec *loc;
	size_t i;
	int err;

	if (mapping_id > b->nmappings || (nlines && !lines))
		return -EINVAL;
	for (i = 0; i < nlines; i++)
		if (!lines[i].function_id ||
		    lines[i].function_id > b->nfunctions)
			return -EINVAL;
	err = ensure_more((void **)&b->lines, &b->lines_cap, sizeof(*b->lines),
			  b->nlines, nlines);
	if (err)
		return err;
	err = ensure_more((void **)&b->locations, &b->locations_cap,
			  sizeof(*b->locations), b->nlocations, 1);
	if (err)
		return err;
	if (nlines)
		memcpy(&b->lines[b->nlines], lines, nlines * sizeof(*lines));
	loc = &b->locations[b->nlocations++];
	*loc = (struct location_rec){
		.mapping_id = mapping_id,
		.address = address,
		.line_off = b->nlines,
		.nlines = nlines,
	};
	b->nlines += nlines;
	return (int64_t)b->nlocations;
}

int pprof__add_sample(struct pprof_builder *b, const uint64_t *location_ids,
		      size_t nlocations, const int64_t *values,
		      int64_t bytes_label)
{
	size_t i, nvalues;
	int err;

	if ((nlocations && !location_ids) || !values)
		return -EINVAL;
	for (i = 0; i < nlocations; i++)
		if (!location_ids[i] || location_ids[i] > b->nlocations)
			return -EINVAL;

	/* nvalues cannot overflow: it is an array that already exists. */
	nvalues = b->nsamples * b->ntypes;
	err = ensure_more((void **)&b->sample_values, &b->sample_values_cap,
			  sizeof(*b->sample_values), nvalues, b->ntypes);
	if (err)
		return err;
	err = ensure_more((void **)&b->sample_locations,
			  &b->sample_locations_cap,
			  sizeof(*b->sample_locations), b->nsample_locations,
			  nlocations);
	if (err)
		return err;
	err = ensure_more((void **)&b->samples, &b->samples_cap,
			  sizeof(*b->samples), b->nsamples, 1);
	if (err)
		return err;

	memcpy(&b->sample_values[nvalues], values,
	       b->ntypes * sizeof(*values));
	if (nlocations)
		memcpy(&b->sample_locations[b->nsample_locations],
		       location_ids, nlocations * sizeof(*location_ids));
	b->samples[b->nsamples++] = (struct sample_rec){
		.loc_off = b->nsample_locations,
		.nlocations = nlocations,
		.bytes_label = bytes_label,
	};
	b->nsample_locations += nlocations;
	if (bytes_label >= 0)
		b->nlabeled++;
	return 0;
}

int pprof__add_comment(struct pprof_builder *b, const char *comment)
{
	int64_t s;
	int err;

	s = pprof__string(b, comment);
	if (s < 0)
		return (int)s;
	err = ensure_more((void **)&b->comments, &b->comments_cap,
			  sizeof(*b->comments), b->ncomments, 1);
	if (err)
		return err;
	b->comments[b->ncomments++] = s;
	return 0;
}

void pprof__set_time(struct pprof_builder *b, int64_t time_nanos,
		     int64_t duration_nanos)
{
	b->time_nanos = time_nanos;
	b->duration_nanos = duration_nanos;
}

/* -EINVAL if type is not one of the builder's sample types. */
int pprof__set_default_sample_type(struct pprof_builder *b, const char *type)
{
	size_t i;

	for (i = 0; i < b->ntypes; i++) {
		int64_t name = b->sample_types[i].type;

		if (type && strcmp(b->strings[name], type) == 0) {
			b->default_sample_type = name;
			return 0;
		}
	}
	return -EINVAL;
}

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

/*
 * Gzip in[0..in_len) into a malloc'd buffer.  Fed in chunks because zlib
 * counts in uInt.  Level 1, as Go's runtime/pprof uses: profiles are
 * written while the user waits, and the last few percent are not worth it.
 */
static int gzip_buffer(const uint8_t *in, size_t in_len, uint8_t **out,
		       size_t *out_len)
{
	const size_t chunk = 1u << 30;
	z_stream zs = { 0 };
	size_t cap, in_done = 0;
	uint8_t *buf, *grown;
	int zerr, err = 0;

	zerr = deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
			    Z_DEFAULT_STRATEGY);
	if (zerr != Z_OK)
		return zerr == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
	cap = deflateBound(&zs, in_len);
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto out_deflate;
	}
	do {
		size_t in_now = in_len - in_done, out_room;

		if (zs.total_out == cap) {
			if (cap > SIZE_MAX / 2) {
				err = -ENOMEM;
				goto out_buf;
			}
			grown = realloc(buf, cap * 2);
			if (!grown) {
				err = -ENOMEM;
				goto out_buf;
			}
			buf = grown;
			cap *= 2;
		}
		if (in_now > chunk)
			in_now = chunk;
		out_room = cap - zs.total_out;
		zs.next_in = (Bytef *)(in + in_done);
		zs.avail_in = (uInt)in_now;
		zs.next_out = buf + zs.total_out;
		zs.avail_out = (uInt)(out_room > chunk ? chunk : out_room);
		zerr = deflate(&zs, in_done + in_now == in_len ? Z_FINISH
							       : Z_NO_FLUSH);
		in_done += in_now - zs.avail_in;
		if (zerr != Z_OK && zerr != Z_STREAM_END &&
		    zerr != Z_BUF_ERROR) {
			err = -EIO;
			goto out_buf;
		}
	} while (zerr != Z_STREAM_END);

	*out = buf;
	*out_len = zs.total_out;
	buf = NULL;
out_buf:
	free(buf);
out_deflate:
	deflateEnd(&zs);
	return err;
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
	err = gzip_buffer(packed, packed_len, out, len);
out_packed:
	free(packed);
out_msg:
	profile_msg__release(&msg);
	return err;
}

static int write_all(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * The mode is set before the fsync so that it is as durable as the data;
 * mkstemp() creates 0600 and the profile is meant to be shared like any
 * output file.
 */
int pprof__write(struct pprof_builder *b, const char *path)
{
	uint8_t *data;
	size_t len;
	char *tmp_path;
	int fd, err;

	err = pprof__encode_gzip(b, &data, &len);
	if (err)
		return err;
	if (asprintf(&tmp_path, "%s.tmp.XXXXXX", path) < 0) {
		err = -ENOMEM;
		goto out_data;
	}
	fd = mkostemp(tmp_path, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto out_tmp_path;
	}
	err = write_all(fd, data, len);
	if (!err && fchmod(fd, 0644) < 0)
		err = -errno;
	if (!err && fsync(fd) < 0)
		err = -errno;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp_path, path) < 0)
		err = -errno;
	if (err)
		unlink(tmp_path);
out_tmp_path:
	free(tmp_path);
out_data:
	free(data);
	return err;
}
