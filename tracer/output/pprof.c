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
 *  - strings[0] is "" and every string appears once (string_index), as
 *    untrusted.c cleans it: names and paths are the target's, and the
 *    table is what go tool pprof and our report print;
 *  - a function is the 4-tuple (name, system_name, file, start_line), its
 *    strings as indices, and appears once (function_index);
 *  - ids are index + 1; every id stored in a location or sample was checked
 *    to exist when it was added, so encoding cannot produce dangling ids;
 *  - a failed call leaves the builder as it was, except that strings it
 *    interned stay interned (they cost nothing in the output but bytes).
 *
 * The encoder (pprof_encode.c) reads the builder's records through
 * pprof_internal.h.
 *
 * Not thread-safe: one builder belongs to one thread.  Nothing here is
 * async-signal-safe (it calls malloc).
 *
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* asprintf, mkostemp; the Makefile also defines it */
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pprof_internal.h"
#include "common/untrusted.h"

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
	/* names and paths are the target's: the table holds them cleaned */
	copy = NULL;
	if (!untrusted__is_clean(s, UNTRUSTED_MAX)) {
		copy = untrusted__strdup(s);
		if (!copy)
			return -ENOMEM;
		s = copy;
	}
	hash = hash_string(s);
	slot = index_table__find(&b->string_index, b, hash, s, string_eq);
	if (slot->entry) {
		free(copy);
		return (int64_t)(slot->entry - 1);
	}

	err = ensure_more((void **)&b->strings, &b->strings_cap,
			  sizeof(*b->strings), b->nstrings, 1);
	if (err)
		goto out_copy;
	if (!copy)
		copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	b->strings[b->nstrings++] = copy;
	slot->hash = hash;
	slot->entry = b->nstrings;
	b->string_index.used++;
	return (int64_t)(b->nstrings - 1);

out_copy:
	free(copy);
	return err;
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
