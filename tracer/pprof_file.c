// SPDX-License-Identifier: MIT
/*
 * pprof_file.c - pprof files as whole messages.
 *
 * Writing: the packed Profile is gzipped (tracer/gzip.c: libdeflate,
 * level 1, as Go's runtime/pprof does: profiles are written while the
 * user waits) and
 * written to "<path>.tmp.XXXXXX" next to path, fsynced and renamed over
 * path, so a reader sees the old file or the whole new one.  The directory
 * is not fsynced: the rename is atomic for readers, but after a power cut
 * the old file may come back.
 *
 * Reading: a profile may come from anywhere, so nothing in it is trusted.
 * The file is read whole (at most MAX_FILE bytes), gunzipped if it starts
 * with the gzip magic (at most MAX_PROFILE bytes out, which also stops
 * decompression bombs), and unpacked by protobuf-c, which checks the wire
 * format.  pprof_file__check() then checks what the wire format cannot:
 * every string index inside the string table (whose first entry must be
 * ""), ids non-zero and unique, every reference pointing at something that
 * exists, and one value per sample type - so that code walking the profile
 * afterwards may index without checking.  protobuf-c allocates every
 * sub-message, array and string separately; it is given an arena
 * (elf/arena.c) instead of malloc, so unpacking is pointer bumps and
 * freeing the profile is one release.  The caller may put its own
 * replacement arrays into the message from the same arena.
 */
#include "tracer/pprof_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "elf/arena.h"
#include "tracer/gzip.h"
#include "tracer/u64map.h"

#define MAX_FILE	(1ull << 30)
#define MAX_PROFILE	(2ull << 30)

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
int pprof_file__write(const char *path, const uint8_t *data, size_t len)
{
	char *tmp_path;
	int fd, err;

	if (asprintf(&tmp_path, "%s.tmp.XXXXXX", path) < 0)
		return -ENOMEM;
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
	return err;
}

int pprof_file__write_profile(const pprof_profile *p, const char *path)
{
	uint8_t *packed, *gz;
	size_t packed_len, gz_len;
	int err;

	packed_len = perftools__profiles__profile__get_packed_size(p);
	packed = malloc(packed_len ? packed_len : 1);
	if (!packed)
		return -ENOMEM;
	if (perftools__profiles__profile__pack(p, packed) != packed_len) {
		err = -EIO;
		goto out_packed;
	}
	err = gzip__compress(packed, packed_len, &gz, &gz_len);
	if (err)
		goto out_packed;
	err = pprof_file__write(path, gz, gz_len);
	free(gz);
out_packed:
	free(packed);
	return err;
}

/* Read the whole file (a regular file, at most MAX_FILE bytes). */
static int read_file(const char *path, uint8_t **out, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	size_t done = 0;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		err = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		goto out_close;
	}
	if ((uint64_t)st.st_size > MAX_FILE) {
		err = -EFBIG;
		goto out_close;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		err = -ENOMEM;
		goto out_close;
	}
	while (done < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + done, (size_t)st.st_size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;		/* shrank while we read: take what is there */
		done += (size_t)n;
	}
	*out = buf;
	*len = done;
out_close:
	close(fd);
	return err;
}

/* protobuf-c's allocator on an arena: frees are no-ops, the arena goes
 * whole. */
static void *arena_alloc(void *arena, size_t size)
{
	return arena__alloc(arena, size);
}

static void arena_keep(void *arena, void *pointer)
{
	(void)arena;
	(void)pointer;
}

int pprof_file__read(const char *path, struct pprof_file **out, char *why,
		     size_t why_size)
{
	uint8_t *raw = NULL, *data = NULL;
	size_t raw_len = 0, len = 0;
	struct pprof_file *f;
	struct arena *arena;
	int err;

	*why = '\0';
	err = read_file(path, &raw, &raw_len);
	if (err) {
		snprintf(why, why_size, "%s", strerror(-err));
		return err;
	}
	if (raw_len == 0) {
		snprintf(why, why_size, "empty file");
		err = -EBADMSG;
		goto out_raw;
	}
	if (raw_len >= 2 && raw[0] == 0x1f && raw[1] == 0x8b) {
		err = gzip__decompress(raw, raw_len, MAX_PROFILE, &data, &len, why,
				      why_size);
		if (err) {
			if (!*why)
				snprintf(why, why_size, "%s", strerror(-err));
			goto out_raw;
		}
	} else {
		data = raw;
		len = raw_len;
		raw = NULL;
	}
	arena = arena__new();
	f = arena ? arena__alloc(arena, sizeof(*f)) : NULL;
	if (!f) {
		snprintf(why, why_size, "out of memory");
		err = -ENOMEM;
		goto out_arena;
	}
	f->arena = arena;
	f->profile = perftools__profiles__profile__unpack(
		&(ProtobufCAllocator){ arena_alloc, arena_keep, arena },
		len, data);
	if (!f->profile) {
		snprintf(why, why_size, "not a pprof profile (protobuf decoding failed)");
		err = -EBADMSG;
		goto out_arena;
	}
	err = pprof_file__check(f->profile, why, why_size);
	if (err)
		goto out_arena;
	*out = f;
	arena = NULL;
out_arena:
	arena__free(arena);
	free(data);
out_raw:
	free(raw);
	return err;
}

void pprof_file__free(struct pprof_file *f)
{
	if (f)
		arena__free(f->arena);
}

/* ---- checks ---------------------------------------------------------- */

/*
 * A set of ids.  Profiles number their mappings, functions and locations
 * 1, 2, 3...: then a bitmap answers without hashing and stays in cache;
 * ids spread further apart go in a hash set.
 */
struct id_set {
	uint64_t *bits;		/* dense: bit id set; NULL when sparse */
	uint64_t limit;		/* dense: ids below this fit */
	struct u64map map;	/* sparse */
};

static int id_set__init(struct id_set *set, uint64_t max_id, size_t n)
{
	memset(set, 0, sizeof(*set));
	u64map__init(&set->map);
	if (max_id / 64 > n + 1024)
		return 0;
	set->limit = max_id + 1;
	set->bits = calloc(max_id / 64 + 1, sizeof(*set->bits));
	return set->bits ? 0 : -ENOMEM;
}

static void id_set__fini(struct id_set *set)
{
	free(set->bits);
	u64map__fini(&set->map);
}

static bool id_set__has(const struct id_set *set, uint64_t id)
{
	if (set->bits)
		return id < set->limit &&
		       (set->bits[id / 64] >> (id % 64) & 1);
	return u64map__find(&set->map, id) != NULL;
}

/* Add id; 0, or -ENOMEM.  Ids must be below the max given to init. */
static int id_set__add(struct id_set *set, uint64_t id)
{
	if (set->bits) {
		set->bits[id / 64] |= 1ull << (id % 64);
		return 0;
	}
	return u64map__put(&set->map, id, 0) ? -ENOMEM : 0;
}

struct checker {
	const pprof_profile *p;
	char *why;
	size_t why_size;
	struct id_set mappings, functions, locations;
};

static int bad(struct checker *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int bad(struct checker *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why, c->why_size, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

static bool str_ok(const struct checker *c, int64_t index)
{
	return index >= 0 && (uint64_t)index < c->p->n_string_table;
}

/* Record ids in a set; 0 or a reason. */
static int unique_id(struct checker *c, struct id_set *set, uint64_t id,
		     const char *what, size_t i)
{
	if (id == 0)
		return bad(c, "%s %zu has id 0", what, i);
	if (id_set__has(set, id))
		return bad(c, "%s id %llu is used twice", what,
			   (unsigned long long)id);
	return id_set__add(set, id);
}

static int check_strings(struct checker *c)
{
	const pprof_profile *p = c->p;

	if (p->n_string_table == 0 || !p->string_table[0] ||
	    p->string_table[0][0] != '\0')
		return bad(c, "the string table must start with \"\"");
	for (size_t i = 0; i < p->n_sample_type; i++)
		if (!str_ok(c, p->sample_type[i]->type) ||
		    !str_ok(c, p->sample_type[i]->unit))
			return bad(c, "sample type %zu: string index out of range", i);
	if (p->period_type && (!str_ok(c, p->period_type->type) ||
			       !str_ok(c, p->period_type->unit)))
		return bad(c, "period type: string index out of range");
	for (size_t i = 0; i < p->n_comment; i++)
		if (!str_ok(c, p->comment[i]))
			return bad(c, "comment %zu: string index out of range", i);
	if (!str_ok(c, p->drop_frames) || !str_ok(c, p->keep_frames) ||
	    !str_ok(c, p->default_sample_type))
		return bad(c, "string index out of range in the profile's fields");
	return 0;
}

static int check_mappings_functions(struct checker *c)
{
	const pprof_profile *p = c->p;
	int err;

	for (size_t i = 0; i < p->n_mapping; i++) {
		const Perftools__Profiles__Mapping *m = p->mapping[i];

		err = unique_id(c, &c->mappings, m->id, "mapping", i);
		if (err)
			return err;
		if (!str_ok(c, m->filename) || !str_ok(c, m->build_id))
			return bad(c, "mapping %llu: string index out of range",
				   (unsigned long long)m->id);
		if (m->memory_start > m->memory_limit)
			return bad(c, "mapping %llu: start after limit",
				   (unsigned long long)m->id);
	}
	for (size_t i = 0; i < p->n_function; i++) {
		const Perftools__Profiles__Function *f = p->function[i];

		err = unique_id(c, &c->functions, f->id, "function", i);
		if (err)
			return err;
		if (!str_ok(c, f->name) || !str_ok(c, f->system_name) ||
		    !str_ok(c, f->filename))
			return bad(c, "function %llu: string index out of range",
				   (unsigned long long)f->id);
	}
	return 0;
}

static int check_locations(struct checker *c)
{
	const pprof_profile *p = c->p;
	int err;

	for (size_t i = 0; i < p->n_location; i++) {
		const Perftools__Profiles__Location *l = p->location[i];

		err = unique_id(c, &c->locations, l->id, "location", i);
		if (err)
			return err;
		if (l->mapping_id && !id_set__has(&c->mappings, l->mapping_id))
			return bad(c, "location %llu: no mapping %llu",
				   (unsigned long long)l->id,
				   (unsigned long long)l->mapping_id);
		for (size_t j = 0; j < l->n_line; j++)
			if (!id_set__has(&c->functions,
					 l->line[j]->function_id))
				return bad(c, "location %llu: no function %llu",
					   (unsigned long long)l->id,
					   (unsigned long long)l->line[j]->function_id);
	}
	return 0;
}

static int check_samples(struct checker *c)
{
	const pprof_profile *p = c->p;

	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];

		if (s->n_value != p->n_sample_type)
			return bad(c, "sample %zu has %zu values for %zu sample types",
				   i, s->n_value, p->n_sample_type);
		for (size_t j = 0; j < s->n_location_id; j++)
			if (!id_set__has(&c->locations, s->location_id[j]))
				return bad(c, "sample %zu: no location %llu", i,
					   (unsigned long long)s->location_id[j]);
		for (size_t j = 0; j < s->n_label; j++) {
			const Perftools__Profiles__Label *l = s->label[j];

			if (!str_ok(c, l->key) || !str_ok(c, l->str) ||
			    !str_ok(c, l->num_unit))
				return bad(c, "sample %zu: label string index out of range",
					   i);
		}
	}
	return 0;
}

int pprof_file__check(const pprof_profile *p, char *why, size_t why_size)
{
	struct checker c = { .p = p, .why = why, .why_size = why_size };
	uint64_t max_mapping = 0, max_function = 0, max_location = 0;
	int err;

	for (size_t i = 0; i < p->n_mapping; i++)
		if (p->mapping[i]->id > max_mapping)
			max_mapping = p->mapping[i]->id;
	for (size_t i = 0; i < p->n_function; i++)
		if (p->function[i]->id > max_function)
			max_function = p->function[i]->id;
	for (size_t i = 0; i < p->n_location; i++)
		if (p->location[i]->id > max_location)
			max_location = p->location[i]->id;
	err = id_set__init(&c.mappings, max_mapping, p->n_mapping);
	if (!err)
		err = id_set__init(&c.functions, max_function, p->n_function);
	if (!err)
		err = id_set__init(&c.locations, max_location, p->n_location);
	if (!err)
		err = check_strings(&c);
	if (!err)
		err = check_mappings_functions(&c);
	if (!err)
		err = check_locations(&c);
	if (!err)
		err = check_samples(&c);
	if (err == -ENOMEM)
		snprintf(why, why_size, "out of memory");
	id_set__fini(&c.locations);
	id_set__fini(&c.functions);
	id_set__fini(&c.mappings);
	return err;
}
