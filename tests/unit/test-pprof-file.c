/* SPDX-License-Identifier: MIT */
/*
 * test-pprof-file.c - reading profiles back, and refusing bad ones.
 *
 *  - a profile built by the builder survives write + read, gzipped or not,
 *    and reads back with the same mappings, locations and samples;
 *  - the reader refuses, with a reason, an empty file, a truncated gzip
 *    stream, gzip of random bytes, protobuf garbage, and a directory;
 *  - decompression bombs are refused before they are inflated: zeros (not
 *    a protobuf at byte 0), a valid tag before a string of zeros (past
 *    32 MiB at more than 100:1), in one member or many; a length past the
 *    2 GiB limit; text, a wrong wire type, a truncated field, with the
 *    reason.  Unknown fields of every wire type are read, and so is a
 *    profile over 32 MiB that compresses tens of times;
 *  - pipes: a profile read from a pipe (its magic split between two
 *    writes) is the one read from the file, an empty pipe is "empty";
 *  - what unpacking takes: pprof_file__unpack_size() is what protobuf-c
 *    asks its allocator for (counted, rounded as the arena rounds),
 *    exactly for profiles it unpacks - strings of every length, slabs of
 *    fields, nested and repeated messages, unknown fields - and no less
 *    for every cut of one; many empty samples or mappings (a profile by
 *    every other check) are refused before unpacking, raw, gzipped and
 *    from a pipe, naming them; a million small samples are read;
 *  - pprof_file__check() refuses each broken reference on its own: string
 *    index out of range, first string not "", duplicate and zero ids,
 *    a location naming a missing mapping or function, a sample naming a
 *    missing location or with the wrong number of values;
 *  - names: interning gives equal pointers, demangling gives c++filt's
 *    names for mangled names and leaves others alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "check.h"
#include "elf/arena.h"
#include "tests/unpack_count.h"
#include "elf/names.h"
#include "tracer/output/pprof.h"
#include "tracer/output/gzip.h"
#include "tracer/output/pprof_file.h"

static char dir[] = "/tmp/test-pprof-file.XXXXXX";

static const struct pprof_sample_type types[] = {
	{ "alloc_objects", "count" }, { "alloc_space", "bytes" },
};

static char *path_of(const char *name)
{
	char *p;

	CHECK(asprintf(&p, "%s/%s", dir, name) > 0);
	return p;
}

static void write_bytes(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	CHECK(fd >= 0);
	CHECK(write(fd, data, len) == (ssize_t)len);
	close(fd);
}

/* A small valid profile: 2 mappings, 3 locations, 2 samples. */
static struct pprof_builder *sample_profile(void)
{
	struct pprof_builder *b = pprof__new(types, 2, &types[1], 1);
	struct pprof_line line;
	uint64_t locs[2];
	int64_t vals[2] = { 3, 300 };
	int64_t m1, m2, fn;

	CHECK(b != NULL);
	m1 = pprof__add_mapping(b, 0x1000, 0x2000, 0, "/bin/a", "abcd", false,
				false, false, false);
	m2 = pprof__add_mapping(b, 0x5000, 0x6000, 0x1000, "/lib/b.so", NULL,
				false, false, false, false);
	CHECK(m1 == 1 && m2 == 2);
	fn = pprof__function(b, "f", "_Z1fv", "a.c", 0);
	CHECK(fn > 0);
	line = (struct pprof_line){ .function_id = (uint64_t)fn, .line = 7 };
	locs[0] = (uint64_t)pprof__add_location(b, 1, 0x1100, NULL, 0);
	locs[1] = (uint64_t)pprof__add_location(b, 2, 0x5100, &line, 1);
	CHECK(pprof__add_location(b, 0, 0x9999, NULL, 0) == 3);
	CHECK_EQ_INT(pprof__add_sample(b, locs, 2, vals, 100), 0);
	CHECK_EQ_INT(pprof__add_sample(b, locs + 1, 1, vals, -1), 0);
	return b;
}

static void test_roundtrip(void)
{
	struct pprof_builder *b = sample_profile();
	char *gz = path_of("ok.pb.gz"), *raw = path_of("ok.pb");
	struct pprof_file *f;
	pprof_profile *p;
	char why[256];
	size_t len;
	uint8_t *buf;

	CHECK_EQ_INT(pprof__write(b, gz), 0);
	CHECK_EQ_INT(pprof_file__read(gz, &f, why, sizeof(why)), 0);
	p = f->profile;
	CHECK_EQ_INT(p->n_mapping, 2);
	CHECK_EQ_INT(p->n_location, 3);
	CHECK_EQ_INT(p->n_sample, 2);
	CHECK_EQ_STR(p->string_table[p->mapping[0]->filename], "/bin/a");
	CHECK_EQ_STR(p->string_table[p->mapping[0]->build_id], "abcd");
	CHECK(p->location[1]->n_line == 1 && p->location[1]->line[0]->line == 7);

	/* Not gzipped is fine too. */
	len = perftools__profiles__profile__get_packed_size(p);
	buf = malloc(len);
	CHECK(buf && perftools__profiles__profile__pack(p, buf) == len);
	write_bytes(raw, buf, len);
	pprof_file__free(f);
	CHECK_EQ_INT(pprof_file__read(raw, &f, why, sizeof(why)), 0);
	p = f->profile;
	CHECK_EQ_INT(p->n_sample, 2);

	/* And written back by pprof_file__write_profile(). */
	CHECK_EQ_INT(pprof_file__write_profile(p, gz), 0);
	pprof_file__free(f);
	CHECK_EQ_INT(pprof_file__read(gz, &f, why, sizeof(why)), 0);
	CHECK_EQ_INT(f->profile->n_location, 3);
	pprof_file__free(f);
	free(buf);
	free(gz);
	free(raw);
	pprof__free(b);
}

static void expect_refused(const char *path, int err, const char *words);

/* Gzip members in gz[0..len), each checked to inflate to the next bytes
 * of want[0..want_len). */
static int members_of(const uint8_t *gz, size_t len, const uint8_t *want,
		      size_t want_len)
{
	uint8_t *out = malloc(want_len + 1);
	size_t done = 0;
	int members = 0;

	CHECK(out != NULL);
	while (len) {
		z_stream zs = { 0 };

		CHECK(inflateInit2(&zs, 15 + 16) == Z_OK);
		zs.next_in = (Bytef *)gz;
		zs.avail_in = (uInt)len;
		zs.next_out = out + done;
		zs.avail_out = (uInt)(want_len + 1 - done);
		CHECK(inflate(&zs, Z_FINISH) == Z_STREAM_END);
		done += zs.total_out;
		gz += zs.total_in;
		len -= zs.total_in;
		inflateEnd(&zs);
		members++;
	}
	CHECK_EQ_INT(done, want_len);
	CHECK(memcmp(out, want, want_len) == 0);
	free(out);
	return members;
}

/*
 * Past 1 MiB, the gzip is written as 1 MiB members, compressed in
 * parallel, which standard readers and pprof_file__read() take as one
 * stream; so is any multi-member gzip, a truncated one is refused.
 */
static void test_members(void)
{
	size_t n = (3u << 20) + 12345, gz_len;
	struct pprof_builder *b;
	char *path = path_of("big.pb.gz"), *cut = path_of("cut.pb.gz");
	char name[1600], why[256];
	struct pprof_file *f;
	uint8_t *text, *gz;
	uint32_t x = 1;

	text = malloc(n);
	CHECK(text != NULL);
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245 + 12345;
		text[i] = (uint8_t)('a' + (x >> 16) % 16);
	}
	CHECK_EQ_INT(gzip__compress(text, n, &gz, &gz_len), 0);
	CHECK_EQ_INT(members_of(gz, gz_len, text, n), 4);
	free(gz);
	CHECK_EQ_INT(gzip__compress(text, 1000, &gz, &gz_len), 0);
	CHECK_EQ_INT(members_of(gz, gz_len, text, 1000), 1);
	free(gz);
	CHECK_EQ_INT(gzip__compress(text, 0, &gz, &gz_len), 0);
	CHECK_EQ_INT(members_of(gz, gz_len, text, 0), 1);
	free(gz);

	/* A profile of ~4.8 MB of function names, written and read back. */
	b = pprof__new(types, 2, &types[1], 1);
	CHECK(b != NULL);
	for (int i = 0; i < 3000; i++) {
		struct pprof_line line;
		int64_t fn;

		memcpy(name, text + (size_t)i * 1000, sizeof(name) - 1);
		name[sizeof(name) - 1] = '\0';
		fn = pprof__function(b, name, NULL, "a.c", 0);
		CHECK(fn > 0);
		line = (struct pprof_line){ .function_id = (uint64_t)fn };
		CHECK(pprof__add_location(b, 0, 0x1000 + (uint64_t)i, &line,
					  1) == i + 1);
	}
	CHECK_EQ_INT(pprof__write(b, path), 0);
	CHECK_EQ_INT(pprof_file__read(path, &f, why, sizeof(why)), 0);
	CHECK_EQ_INT(f->profile->n_location, 3000);
	CHECK_EQ_INT(f->profile->n_function, 3000);
	memcpy(name, text + 2999 * 1000, sizeof(name) - 1);
	CHECK_EQ_STR(f->profile->string_table[
		f->profile->function[2999]->name], name);
	pprof_file__free(f);
	{
		/* Cut inside the last member: refused. */
		FILE *in = fopen(path, "rb");
		static uint8_t buf[8u << 20];
		size_t len;

		CHECK(in != NULL);
		len = fread(buf, 1, sizeof(buf), in);
		fclose(in);
		CHECK(len > 1000 && len < sizeof(buf));
		write_bytes(cut, buf, len - 100);
		expect_refused(cut, -EBADMSG, "truncated");
		/* A whole member, then one byte of the next: refused. */
		CHECK_EQ_INT(pprof__encode_gzip(b, &gz, &gz_len), 0);
		CHECK(gz_len + 1 < sizeof(buf));
		memcpy(buf, gz, gz_len);
		buf[gz_len] = 0x1f;
		free(gz);
		write_bytes(cut, buf, gz_len + 1);
		expect_refused(cut, -EBADMSG, "truncated");
	}
	pprof__free(b);
	free(text);
	free(path);
	free(cut);
}

static void expect_refused(const char *path, int err, const char *words)
{
	struct pprof_file *f = NULL;
	char why[256];

	CHECK_EQ_INT(pprof_file__read(path, &f, why, sizeof(why)), err);
	CHECK(f == NULL);
	if (!strstr(why, words)) {
		fprintf(stderr, "reason '%s' lacks '%s'\n", why, words);
		CHECK(!"reason");
	}
}

static void test_garbage(void)
{
	struct pprof_builder *b = sample_profile();
	char *empty = path_of("empty"), *trunc = path_of("trunc.pb.gz");
	char *noise = path_of("noise.gz"), *text = path_of("text");
	uint8_t *gz, junk[4096];
	size_t len;

	write_bytes(empty, "", 0);
	expect_refused(empty, -EBADMSG, "empty");

	CHECK_EQ_INT(pprof__encode_gzip(b, &gz, &len), 0);
	write_bytes(trunc, gz, len / 2);
	expect_refused(trunc, -EBADMSG, "truncated");

	/* The gzip magic, then noise. */
	srand(7);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)rand();
	junk[0] = 0x1f;
	junk[1] = 0x8b;
	write_bytes(noise, junk, sizeof(junk));
	expect_refused(noise, -EBADMSG, "gzip");

	write_bytes(text, "root:x:0:0:root:/root:/bin/bash\n", 32);
	expect_refused(text, -EBADMSG, "");

	expect_refused(dir, -EISDIR, "directory");
	free(gz);
	free(empty);
	free(trunc);
	free(noise);
	free(text);
	pprof__free(b);
}

/* ---- bombs, limits, the walk over the top level ----------------------- */

/* Protobuf bytes being put together. */
struct pb {
	uint8_t *p;
	size_t len, cap;
};

static void pb_bytes(struct pb *pb, const void *data, size_t n)
{
	if (pb->len + n > pb->cap) {
		pb->cap = (pb->len + n) * 2;
		pb->p = realloc(pb->p, pb->cap);
		CHECK(pb->p != NULL);
	}
	memcpy(pb->p + pb->len, data, n);
	pb->len += n;
}

static void pb_varint(struct pb *pb, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;

	do {
		b[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	pb_bytes(pb, b, n);
}

static void pb_string(struct pb *pb, unsigned int field, const char *s)
{
	pb_varint(pb, field << 3 | 2);
	pb_varint(pb, strlen(s));
	pb_bytes(pb, s, strlen(s));
}

/* Gzip data[0..len) into path (members of 1 MiB, as pprof-alloc writes). */
static void write_gzip(const char *path, const uint8_t *data, size_t len)
{
	uint8_t *gz;
	size_t gz_len;

	CHECK_EQ_INT(gzip__compress(data, len, &gz, &gz_len), 0);
	write_bytes(path, gz, gz_len);
	free(gz);
}

static void test_bombs(void)
{
	size_t n = 64u << 20;
	uint8_t *zeros = calloc(1, n);
	char *path = path_of("bomb.gz");
	static const uint8_t string_of_1g[] = {
		0x32, 0x80, 0x80, 0x80, 0x80, 0x04,
	};
	static const uint8_t past_2g[] = { 0x32, 0xff, 0xff, 0xff, 0xff, 0x0f };
	static const uint8_t field_0[] = { 0x80, 0x00, 0x01 };
	static const uint8_t group[] = { 0x7b, 0x7c };
	static const uint8_t varint_11[] = {
		0x78, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
		0x80, 0x01,
	};

	CHECK(zeros != NULL);
	/* Zeros: field number 0 at once. */
	write_gzip(path, zeros, n);
	expect_refused(path, -EBADMSG,
		       "not a pprof profile: field number 0 at byte 0");
	/* A valid tag, then zeros: the ratio, in one member (zlib's) or 64. */
	memcpy(zeros, string_of_1g, sizeof(string_of_1g));
	write_gzip(path, zeros, n);
	expect_refused(path, -EFBIG, "decompression bomb");
	{
		z_stream zs = { 0 };
		size_t cap = n / 100;
		uint8_t *gz = malloc(cap);

		CHECK(gz != NULL);
		CHECK(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 9,
				   Z_DEFAULT_STRATEGY) == Z_OK);
		zs.next_in = zeros;
		zs.avail_in = (uInt)n;
		zs.next_out = gz;
		zs.avail_out = (uInt)cap;
		CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
		write_bytes(path, gz, zs.total_out);
		deflateEnd(&zs);
		free(gz);
	}
	expect_refused(path, -EFBIG, "decompression bomb");
	/* Under 32 MiB, any ratio: read to the end (and then refused by
	 * protobuf-c, a string of 1 GiB being cut short). */
	write_gzip(path, zeros, 16u << 20);
	expect_refused(path, -EBADMSG, "truncated");

	/* Raw: a length past 2 GiB, field 0 written long, a group, a varint
	 * of 11 bytes, text, a known field with the wrong wire type. */
	write_bytes(path, past_2g, sizeof(past_2g));
	expect_refused(path, -EFBIG, "2048 MiB");
	write_bytes(path, field_0, sizeof(field_0));
	expect_refused(path, -EBADMSG, "field number 0");
	write_bytes(path, group, sizeof(group));
	expect_refused(path, -EBADMSG, "wire type 3");
	write_bytes(path, varint_11, sizeof(varint_11));
	expect_refused(path, -EBADMSG, "varint too long");
	write_bytes(path, "root:x:0:0", 10);
	expect_refused(path, -EBADMSG, "field 14 with wire type 2");
	write_bytes(path, "\x08\x01", 2);	/* sample_type as a varint */
	expect_refused(path, -EBADMSG, "field 1 with wire type 0");
	free(zeros);
	free(path);
}

/* The sample profile, packed, with fields protobuf-c keeps as unknown. */
static void test_unknown_fields(void)
{
	struct pprof_builder *b = sample_profile();
	char *path = path_of("unknown.pb"), why[256];
	struct pprof_file *f;
	struct pb pb = { 0 };
	uint8_t *gz;
	size_t len;

	CHECK_EQ_INT(pprof__encode_gzip(b, &gz, &len), 0);
	write_bytes(path, gz, len);
	CHECK_EQ_INT(pprof_file__read(path, &f, why, sizeof(why)), 0);
	len = perftools__profiles__profile__get_packed_size(f->profile);
	pb.p = malloc(len);
	pb.cap = pb.len = len;
	CHECK(pb.p &&
	      perftools__profiles__profile__pack(f->profile, pb.p) == len);
	pprof_file__free(f);
	free(gz);
	pb_bytes(&pb, "\x79" "12345678", 9);		/* 15, 64-bit */
	pb_bytes(&pb, "\x7d" "1234", 5);		/* 15, 32-bit */
	pb_bytes(&pb, "\x7a\x03" "abc", 5);		/* 15, bytes */
	pb_bytes(&pb, "\xa0\x06\x2a", 3);		/* 100, varint */
	pb_bytes(&pb, "\x6a\x02\x00\x00", 4);		/* comment, packed */
	pb_bytes(&pb, "\x68\x00", 2);			/* comment */
	write_bytes(path, pb.p, pb.len);
	CHECK_EQ_INT(pprof_file__read(path, &f, why, sizeof(why)), 0);
	CHECK_EQ_INT(f->profile->n_sample, 2);
	CHECK_EQ_INT(f->profile->n_comment, 3);
	CHECK(f->profile->base.n_unknown_fields >= 4);
	pprof_file__free(f);
	/* Cut inside the last field: refused, naming it. */
	write_bytes(path, pb.p, pb.len - 1);
	expect_refused(path, -EBADMSG, "truncated (field 13");
	free(pb.p);
	free(path);
	pprof__free(b);
}

/*
 * A real profile of 36 MB, most of it a string table of distinct names
 * that compresses about 25 times: past the 32 MiB floor, it is read.
 */
static struct pb big_profile(size_t *nstrings)
{
	struct pb pb = { 0 };
	char name[96];
	size_t i;

	pb_string(&pb, 6, "");
	pb_string(&pb, 6, "objects");
	pb_string(&pb, 6, "count");
	pb_bytes(&pb, "\x0a\x04\x08\x01\x10\x02", 6);	/* sample type */
	for (i = 3; pb.len < (36u << 20); i++) {
		snprintf(name, sizeof(name),
			 "_ZN7example6detail12handler_%07zuINS_4TypeEE7processEv",
			 i);
		pb_string(&pb, 6, name);
	}
	*nstrings = i;
	return pb;
}

static void test_big(void)
{
	char *path = path_of("big36.pb.gz"), why[256];
	struct pprof_file *f;
	size_t nstrings;
	struct pb pb = big_profile(&nstrings);
	int err;

	write_gzip(path, pb.p, pb.len);
	err = pprof_file__read(path, &f, why, sizeof(why));
	if (err)
		fprintf(stderr, "big profile: %s\n", why);
	CHECK_EQ_INT(err, 0);
	CHECK_EQ_INT(f->profile->n_string_table, nstrings);
	CHECK_EQ_INT(f->profile->n_sample_type, 1);
	pprof_file__free(f);
	free(pb.p);
	free(path);
}

/* ---- pipes -------------------------------------------------------------- */

struct feeder {
	int fd;
	const uint8_t *data;
	size_t len;
};

/* Write the first byte alone, a pause, then the rest (until the reader
 * stops reading); close. */
static void *feed(void *arg)
{
	struct feeder *f = arg;
	size_t done = 0;

	while (done < f->len) {
		size_t n = done ? f->len - done : 1;
		ssize_t w = write(f->fd, f->data + done, n);

		if (w < 0 && errno == EPIPE)
			break;
		CHECK(w > 0);
		done += (size_t)w;
		if (done == 1)
			usleep(20000);
	}
	close(f->fd);
	return NULL;
}

/* Read data[0..len) through a pipe.  0 or the error, with why. */
static int read_pipe(const uint8_t *data, size_t len, struct pprof_file **f,
		     char *why, size_t why_size)
{
	struct feeder feeder = { .data = data, .len = len };
	pthread_t writer;
	int p[2], err;

	CHECK(pipe(p) == 0);
	feeder.fd = p[1];
	CHECK(pthread_create(&writer, NULL, feed, &feeder) == 0);
	err = pprof_file__read_fd(p[0], f, why, why_size);
	close(p[0]);		/* the writer, if still writing, stops */
	pthread_join(writer, NULL);
	return err;
}

static void test_pipes(void)
{
	struct pprof_builder *b = sample_profile();
	struct pprof_file *f, *g;
	char why[256], *path = path_of("pipe.pb.gz");
	size_t len, nstrings;
	uint8_t *gz;
	struct pb pb;

	signal(SIGPIPE, SIG_IGN);
	CHECK_EQ_INT(pprof__encode_gzip(b, &gz, &len), 0);
	write_bytes(path, gz, len);
	CHECK_EQ_INT(pprof_file__read(path, &f, why, sizeof(why)), 0);
	CHECK_EQ_INT(read_pipe(gz, len, &g, why, sizeof(why)), 0);
	CHECK_EQ_INT(g->profile->n_sample, f->profile->n_sample);
	CHECK_EQ_INT(g->profile->n_location, f->profile->n_location);
	CHECK_EQ_INT(perftools__profiles__profile__get_packed_size(g->profile),
		     perftools__profiles__profile__get_packed_size(f->profile));
	pprof_file__free(g);
	pprof_file__free(f);

	/* Empty, truncated, a bomb: the same reasons as files. */
	CHECK_EQ_INT(read_pipe(gz, 0, &f, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "empty") != NULL);
	CHECK_EQ_INT(read_pipe(gz, len / 2, &f, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "truncated") != NULL);
	free(gz);
	{
		size_t n = 48u << 20;
		uint8_t *zeros = calloc(1, n), *bomb;
		size_t bomb_len;

		CHECK(zeros != NULL);
		memcpy(zeros, "\x32\x80\x80\x80\x80\x04", 6);
		CHECK_EQ_INT(gzip__compress(zeros, n, &bomb, &bomb_len), 0);
		CHECK_EQ_INT(read_pipe(bomb, bomb_len, &f, why, sizeof(why)),
			     -EFBIG);
		CHECK(strstr(why, "decompression bomb") != NULL);
		free(bomb);
		free(zeros);
	}
	/* A big one, raw and gzipped. */
	pb = big_profile(&nstrings);
	CHECK_EQ_INT(read_pipe(pb.p, pb.len, &f, why, sizeof(why)), 0);
	CHECK_EQ_INT(f->profile->n_string_table, nstrings);
	pprof_file__free(f);
	CHECK_EQ_INT(gzip__compress(pb.p, pb.len, &gz, &len), 0);
	CHECK_EQ_INT(read_pipe(gz, len, &f, why, sizeof(why)), 0);
	CHECK_EQ_INT(f->profile->n_string_table, nstrings);
	pprof_file__free(f);
	free(gz);
	free(pb.p);
	free(path);
	pprof__free(b);
}

/* ---- what unpacking takes ----------------------------------------------- */

/* protobuf-c's allocations: tests/unpack_count.h */

/* pprof_file__unpack_size() must be what protobuf-c asks for: exactly if
 * it unpacks, at least what it took before failing if not. */
static void expect_unpack_size(const struct pb *pb, const char *what)
{
	struct arena *arena = arena__new();
	ProtobufCAllocator counter = { count_alloc, count_free, arena };
	uint64_t size = pprof_file__unpack_size(pb->p, pb->len);
	pprof_profile *p;

	CHECK(arena != NULL);
	counted = 0;
	p = perftools__profiles__profile__unpack(&counter, pb->len, pb->p);
	if (p ? size != counted : size < counted) {
		fprintf(stderr, "%s (%zu bytes, %s): estimate %llu, protobuf-c %llu\n",
			what, pb->len, p ? "unpacked" : "refused",
			(unsigned long long)size, (unsigned long long)counted);
		CHECK(!"unpack size");
	}
	if (!p && strncmp(what, "bad", 3))
		fprintf(stderr, "%s: protobuf-c refused it\n", what);
	CHECK(p != NULL || !strncmp(what, "bad", 3));
	arena__free(arena);
}

/* n empty samples after a string table of "": a profile by every check
 * but size (no sample types, so no values wanted). */
static struct pb empty_samples(size_t n)
{
	struct pb pb = { 0 };

	pb_string(&pb, 6, "");
	while (n--)
		pb_bytes(&pb, "\x12\x00", 2);
	return pb;
}

static void test_unpack_size(void)
{
	struct pprof_builder *b = sample_profile();
	char *path = path_of("size.pb.gz"), why[256];
	struct pprof_file *f;
	struct pb pb = { 0 }, cut;
	uint8_t *gz;
	size_t len, i;
	static const size_t counts[] = { 0, 1, 16, 17, 48, 49, 1000, 100000 };

	/* The builder's profile, packed. */
	CHECK_EQ_INT(pprof__encode_gzip(b, &gz, &len), 0);
	write_bytes(path, gz, len);
	free(gz);
	CHECK_EQ_INT(pprof_file__read(path, &f, why, sizeof(why)), 0);
	pb.len = perftools__profiles__profile__get_packed_size(f->profile);
	pb.p = malloc(pb.len);
	CHECK(pb.p && perftools__profiles__profile__pack(f->profile, pb.p) ==
		      pb.len);
	pprof_file__free(f);
	expect_unpack_size(&pb, "the sample profile");
	free(pb.p);
	free(path);

	/* Empty samples, across the ScannedMember slabs' sizes. */
	for (i = 0; i < sizeof(counts) / sizeof(*counts); i++) {
		pb = empty_samples(counts[i]);
		expect_unpack_size(&pb, "empty samples");
		free(pb.p);
	}

	/* Strings of 0 to 40 bytes, nested messages past 16 fields,
	 * unpacked repeated numbers, labels, a location with 40 lines,
	 * period_type given thrice (merged), unknown fields of each wire
	 * type at both levels, packed and unpacked comments. */
	pb = (struct pb){ 0 };
	pb_string(&pb, 6, "");
	for (i = 1; i <= 40; i++) {	/* each length, for the rounding */
		char name[41];

		memset(name, 'a' + i % 26, i);
		name[i] = '\0';
		pb_string(&pb, 6, name);
	}
	{
		struct pb s = { 0 }, l = { 0 }, loc = { 0 };

		for (i = 0; i < 40; i++) {
			pb_bytes(&s, "\x08", 1);	/* location_id, unpacked */
			pb_varint(&s, i + 1);
		}
		pb_bytes(&s, "\x12\x03\x01\x80\x01", 5);	/* value, packed */
		pb_bytes(&s, "\x10\x05", 2);		/* value, unpacked */
		pb_bytes(&l, "\x08\x01\x10\x01\x18\x07\x20\x01", 8);
		for (i = 0; i < 20; i++) {
			pb_bytes(&s, "\x1a", 1);	/* label */
			pb_varint(&s, l.len);
			pb_bytes(&s, l.p, l.len);
		}
		pb_bytes(&s, "\x79" "12345678", 9);	/* 15, 64-bit */
		pb_bytes(&s, "\xa0\x06\x2a", 3);	/* 100, varint */
		pb_varint(&pb, 2 << 3 | 2);
		pb_varint(&pb, s.len);
		pb_bytes(&pb, s.p, s.len);

		pb_bytes(&loc, "\x08\x01\x18\x80\x20", 5);
		for (i = 0; i < 40; i++)
			pb_bytes(&loc, "\x22\x04\x08\x01\x10\x09", 6);
		pb_bytes(&loc, "\x7a\x03" "abc", 5);	/* 15, bytes */
		pb_varint(&pb, 4 << 3 | 2);
		pb_varint(&pb, loc.len);
		pb_bytes(&pb, loc.p, loc.len);
		free(s.p);
		free(l.p);
		free(loc.p);
	}
	pb_bytes(&pb, "\x2a\x08\x08\x01\x10\x01\x18\x01\x20\x01", 10);
	pb_bytes(&pb, "\x1a\x05\x08\x01\x18\x80\x20", 7);	/* mapping */
	for (i = 0; i < 3; i++)
		pb_bytes(&pb, "\x5a\x04\x08\x01\x10\x01", 6);	/* period_type */
	pb_bytes(&pb, "\x0a\x00\x0a\x04\x08\x01\x10\x01", 8);	/* sample_type */
	pb_bytes(&pb, "\x7d" "1234", 5);			/* 15, 32-bit */
	pb_bytes(&pb, "\x7a\x00", 2);				/* 15, empty */
	pb_bytes(&pb, "\x7a\x10" "0123456789abcdef", 18);	/* 15, 17 */
	pb_bytes(&pb, "\x6a\x03\x00\x81\x01\x68\x00", 7);	/* comments */
	expect_unpack_size(&pb, "nested");

	/* Cut anywhere: exact between fields; elsewhere protobuf-c gives up
	 * having asked for no more. */
	for (i = 0; i < pb.len; i++) {
		cut = (struct pb){ .p = pb.p, .len = i };
		expect_unpack_size(&cut, "bad: cut");
	}
	free(pb.p);
	pprof__free(b);
}

/*
 * Bombs for protobuf-c: 15.5 million empty samples, 31 MB, which protobuf-c
 * would unpack into 1.8 GB, raw and gzipped (under the 32 MiB at which the
 * ratio starts to count) and through a pipe: refused, naming the samples,
 * before anything is unpacked; 2 million empty mappings, 4 MB: named.  A
 * profile of a million samples with a location and a value each, 8 MB
 * that unpack into 150 MB (past the floor, at some 19 times), is read.
 */
static void test_unpack_bombs(void)
{
	char *raw = path_of("empty.pb"), *gz = path_of("empty.pb.gz");
	struct pb pb = empty_samples(15500000);
	struct pprof_file *f;
	char why[256];
	uint8_t *gzipped;
	size_t gz_len, i;
	int err;

	write_bytes(raw, pb.p, pb.len);
	expect_refused(raw, -EFBIG,
		       "(15500000 samples of 2 bytes each take 1774 MiB)");
	expect_refused(raw, -EFBIG, "not a profile pprof-alloc reads");
	CHECK_EQ_INT(gzip__compress(pb.p, pb.len, &gzipped, &gz_len), 0);
	CHECK(gz_len < (1u << 20));
	write_bytes(gz, gzipped, gz_len);
	expect_refused(gz, -EFBIG, "would take 1813 MiB to unpack");
	CHECK_EQ_INT(read_pipe(gzipped, gz_len, &f, why, sizeof(why)), -EFBIG);
	CHECK(strstr(why, "15500000 samples") != NULL);
	free(gzipped);
	free(pb.p);

	/* Empty mappings, just past a ScannedMember slab: named. */
	pb = (struct pb){ 0 };
	pb_string(&pb, 6, "");
	for (i = 0; i < 2097136; i++)
		pb_bytes(&pb, "\x1a\x00", 2);
	write_bytes(raw, pb.p, pb.len);
	expect_refused(raw, -EFBIG, "(2097136 mappings of 2 bytes each take");
	free(pb.p);

	/* A million samples of one location and one value: read. */
	pb = (struct pb){ 0 };
	pb_string(&pb, 6, "");
	pb_string(&pb, 6, "space");
	pb_string(&pb, 6, "bytes");
	pb_bytes(&pb, "\x0a\x04\x08\x01\x10\x02", 6);	/* sample type */
	pb_bytes(&pb, "\x1a\x05\x08\x01\x18\x80\x20", 7);	/* mapping 1 */
	for (i = 1; i <= 100; i++) {		/* locations 1-100 */
		struct pb l = { 0 };

		pb_bytes(&l, "\x08", 1);
		pb_varint(&l, i);
		pb_bytes(&l, "\x10\x01\x18", 3);	/* mapping 1, address */
		pb_varint(&l, 0x1000 + i);
		pb_bytes(&pb, "\x22", 1);
		pb_varint(&pb, l.len);
		pb_bytes(&pb, l.p, l.len);
		free(l.p);
	}
	for (i = 0; i < 1000000; i++) {
		uint8_t s[] = { 0x12, 0x06, 0x0a, 0x01, (uint8_t)(i % 100 + 1),
				0x12, 0x01, 0x40 };

		pb_bytes(&pb, s, sizeof(s));
	}
	CHECK(pprof_file__unpack_size(pb.p, pb.len) > (128u << 20));
	write_bytes(raw, pb.p, pb.len);
	err = pprof_file__read(raw, &f, why, sizeof(why));
	if (err)
		fprintf(stderr, "a million samples: %s\n", why);
	CHECK_EQ_INT(err, 0);
	CHECK_EQ_INT(f->profile->n_sample, 1000000);
	pprof_file__free(f);
	free(pb.p);
	free(raw);
	free(gz);
}

/* Unpack a fresh copy of the sample profile, break it, check it. */
static struct pprof_file *fresh_file;

static pprof_profile *fresh(void)
{
	char *gz = path_of("fresh.pb.gz");
	struct pprof_builder *b = sample_profile();
	char why[256];

	CHECK_EQ_INT(pprof__write(b, gz), 0);
	CHECK_EQ_INT(pprof_file__read(gz, &fresh_file, why, sizeof(why)), 0);
	pprof__free(b);
	free(gz);
	return fresh_file->profile;
}

static void expect_check(pprof_profile *p, const char *words)
{
	char why[256] = "";

	CHECK_EQ_INT(pprof_file__check(p, why, sizeof(why)), -EBADMSG);
	if (!strstr(why, words)) {
		fprintf(stderr, "reason '%s' lacks '%s'\n", why, words);
		CHECK(!"reason");
	}
	pprof_file__free(fresh_file);
}

static void test_check(void)
{
	pprof_profile *p;
	uint64_t saved;

	p = fresh();
	p->mapping[0]->filename = (int64_t)p->n_string_table;
	expect_check(p, "string index");

	p = fresh();
	p->function[0]->name = -1;
	expect_check(p, "string index");

	p = fresh();
	p->default_sample_type = 1 << 30;
	expect_check(p, "string index");

	p = fresh();
	p->string_table[0][0] = 'x';	/* protobuf-c's own buffer */
	expect_check(p, "start with");

	p = fresh();
	p->mapping[1]->id = p->mapping[0]->id;
	expect_check(p, "twice");

	p = fresh();
	p->location[0]->id = 0;
	expect_check(p, "id 0");

	p = fresh();
	p->location[0]->mapping_id = 99;
	expect_check(p, "no mapping");

	p = fresh();
	saved = p->location[1]->line[0]->function_id;
	p->location[1]->line[0]->function_id = saved + 10;
	expect_check(p, "no function");

	p = fresh();
	p->sample[0]->location_id[0] = 77;
	expect_check(p, "no location");

	p = fresh();
	p->sample[1]->n_value = 1;
	expect_check(p, "values");

	p = fresh();
	p->mapping[0]->memory_start = p->mapping[0]->memory_limit + 1;
	expect_check(p, "start after limit");

	p = fresh();
	CHECK_EQ_INT(pprof_file__check(p, (char[64]){ 0 }, 64), 0);
	pprof_file__free(fresh_file);
}

static void test_names(void)
{
	struct names *n = names__new();
	const char *a, *b, *c;

	CHECK(n != NULL);
	a = names__intern(n, "_ZN2ns4PoolIiE4growEm");
	b = names__intern(n, "_ZN2ns4PoolIiE4growEm");
	CHECK(a == b);
	CHECK_EQ_STR(names__demangled(n, a), "ns::Pool<int>::grow(unsigned long)");
	CHECK(names__demangled(n, a) == names__demangled(n, b));
	c = names__intern(n, "main");
	CHECK(names__demangled(n, c) == c);
	c = names__intern(n, "_Znot-mangled");
	CHECK(names__demangled(n, c) == c);
	CHECK(names__intern(n, NULL) == NULL);
	/* Many names: the set grows and keeps them all. */
	for (int i = 0; i < 5000; i++) {
		char name[32];

		snprintf(name, sizeof(name), "fn%d", i);
		CHECK_EQ_STR(names__intern(n, name), name);
	}
	CHECK(names__intern(n, "_ZN2ns4PoolIiE4growEm") == a);
	names__free(n);
	names__free(NULL);
}

int main(void)
{
	CHECK(mkdtemp(dir) != NULL);
	test_roundtrip();
	test_garbage();
	test_members();
	test_bombs();
	test_unknown_fields();
	test_big();
	test_pipes();
	test_unpack_size();
	test_unpack_bombs();
	test_check();
	test_names();
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		CHECK(system(cmd) == 0);
	}
	CHECK_SUMMARY("test-pprof-file");
	return 0;
}
