// SPDX-License-Identifier: MIT
/*
 * pprof_file.c - pprof files as whole messages.
 *
 * Writing: the packed Profile is gzipped (level 1, as Go's runtime/pprof
 * does: profiles are written while the user waits) and written to
 * "<path>.tmp.XXXXXX" next to path, fsynced and renamed over path, so a
 * reader sees the old file or the whole new one.  The directory is not
 * fsynced: the rename is atomic for readers, but after a power cut the old
 * file may come back.
 *
 * Reading: a profile may come from anywhere, so nothing in it is trusted.
 * The file is read whole (at most MAX_FILE bytes), gunzipped if it starts
 * with the gzip magic (at most MAX_PROFILE bytes out, which also stops
 * decompression bombs), and unpacked by protobuf-c, which checks the wire
 * format.  pprof_file__check() then checks what the wire format cannot:
 * every string index inside the string table (whose first entry must be
 * ""), ids non-zero and unique, every reference pointing at something that
 * exists, and one value per sample type - so that code walking the profile
 * afterwards may index without checking.
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
#include <zlib.h>
#include "tracer/u64map.h"

#define MAX_FILE	(1ull << 30)
#define MAX_PROFILE	(2ull << 30)

/*
 * Gzip in[0..in_len) into a malloc'd buffer.  Fed in chunks because zlib
 * counts in uInt.  Level 1, as Go's runtime/pprof uses: profiles are
 * written while the user waits, and the last few percent are not worth it.
 */
int pprof_file__gzip(const uint8_t *in, size_t in_len, uint8_t **out,
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
	err = pprof_file__gzip(packed, packed_len, &gz, &gz_len);
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

/* Gunzip in into a malloc'd buffer of at most MAX_PROFILE bytes. */
static int gunzip(const uint8_t *in, size_t in_len, uint8_t **out,
		  size_t *out_len, char *why, size_t why_size)
{
	z_stream zs = { 0 };
	size_t cap = in_len * 4 + 4096, in_done = 0;
	uint8_t *buf, *grown;
	int zerr, err = 0;

	if (inflateInit2(&zs, 15 + 32) != Z_OK)
		return -ENOMEM;
	if (cap > MAX_PROFILE)
		cap = MAX_PROFILE;
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto out_inflate;
	}
	do {
		size_t in_now = in_len - in_done, room;

		if (zs.total_out == cap) {
			if (cap >= MAX_PROFILE) {
				snprintf(why, why_size,
					 "more than %llu bytes uncompressed",
					 (unsigned long long)MAX_PROFILE);
				err = -EFBIG;
				goto out_buf;
			}
			cap = cap * 2 > MAX_PROFILE ? MAX_PROFILE : cap * 2;
			grown = realloc(buf, cap);
			if (!grown) {
				err = -ENOMEM;
				goto out_buf;
			}
			buf = grown;
		}
		if (in_now > (1u << 30))
			in_now = 1u << 30;
		room = cap - zs.total_out;
		zs.next_in = (Bytef *)(in + in_done);
		zs.avail_in = (uInt)in_now;
		zs.next_out = buf + zs.total_out;
		zs.avail_out = (uInt)(room > (1u << 30) ? (1u << 30) : room);
		zerr = inflate(&zs, Z_NO_FLUSH);
		in_done += in_now - zs.avail_in;
		if (zerr == Z_BUF_ERROR && in_done == in_len &&
		    zs.avail_out) {
			snprintf(why, why_size, "truncated gzip data");
			err = -EBADMSG;
			goto out_buf;
		}
		if (zerr != Z_OK && zerr != Z_STREAM_END &&
		    zerr != Z_BUF_ERROR) {
			snprintf(why, why_size, "corrupt gzip data: %s",
				 zs.msg ? zs.msg : "inflate failed");
			err = zerr == Z_MEM_ERROR ? -ENOMEM : -EBADMSG;
			goto out_buf;
		}
	} while (zerr != Z_STREAM_END);
	*out = buf;
	*out_len = zs.total_out;
	buf = NULL;
out_buf:
	free(buf);
out_inflate:
	inflateEnd(&zs);
	return err;
}

int pprof_file__read(const char *path, pprof_profile **out, char *why,
		     size_t why_size)
{
	uint8_t *raw = NULL, *data = NULL;
	size_t raw_len = 0, len = 0;
	pprof_profile *p;
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
		err = gunzip(raw, raw_len, &data, &len, why, why_size);
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
	p = perftools__profiles__profile__unpack(NULL, len, data);
	if (!p) {
		snprintf(why, why_size, "not a pprof profile (protobuf decoding failed)");
		err = -EBADMSG;
		goto out_data;
	}
	err = pprof_file__check(p, why, why_size);
	if (err) {
		pprof_file__free(p);
		goto out_data;
	}
	*out = p;
out_data:
	free(data);
out_raw:
	free(raw);
	return err;
}

void pprof_file__free(pprof_profile *p)
{
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
}

/* ---- checks ---------------------------------------------------------- */

struct checker {
	const pprof_profile *p;
	char *why;
	size_t why_size;
	struct u64map mappings, functions, locations;
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
static int unique_id(struct checker *c, struct u64map *set, uint64_t id,
		     const char *what, size_t i)
{
	if (id == 0)
		return bad(c, "%s %zu has id 0", what, i);
	if (u64map__find(set, id))
		return bad(c, "%s id %llu is used twice", what,
			   (unsigned long long)id);
	return u64map__put(set, id, i) ? -ENOMEM : 0;
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
		if (l->mapping_id && !u64map__find(&c->mappings, l->mapping_id))
			return bad(c, "location %llu: no mapping %llu",
				   (unsigned long long)l->id,
				   (unsigned long long)l->mapping_id);
		for (size_t j = 0; j < l->n_line; j++)
			if (!u64map__find(&c->functions,
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
			if (!u64map__find(&c->locations, s->location_id[j]))
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
	int err;

	u64map__init(&c.mappings);
	u64map__init(&c.functions);
	u64map__init(&c.locations);
	err = check_strings(&c);
	if (!err)
		err = check_mappings_functions(&c);
	if (!err)
		err = check_locations(&c);
	if (!err)
		err = check_samples(&c);
	if (err == -ENOMEM)
		snprintf(why, why_size, "out of memory");
	u64map__fini(&c.locations);
	u64map__fini(&c.functions);
	u64map__fini(&c.mappings);
	return err;
}
