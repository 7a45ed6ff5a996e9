/* SPDX-License-Identifier: MIT */
/*
 * test-pprof-splice.c - profiles read with their samples kept as bytes
 * (tracer/output/pprof_splice.c, pprof_samples.c) and written back.
 *
 *  - gzip members carry their sizes: gzip__members() finds each of a file
 *    pprof-alloc wrote, gzip__sized() tells such a file from another;
 *    pprof_file__cuts() puts samples in members of their own;
 *  - a profile the builder wrote (60,000 samples in several members, with
 *    labels and without locations too) is read spliced, with one thread
 *    and with four (the samples then read in the background): no samples
 *    in the message, the rest all there, and written back it is the same
 *    protobuf, byte for byte; changed as `symbolize` changes it (a
 *    string, a function, lines, a comment), it is what the same change
 *    to the profile read whole packs to;
 *  - what is not in protobuf-c's encoding is read the usual way, whole: ids
 *    not packed, a varint longer than it needs, a label field that is 0,
 *    fields of a sample out of order - the same profile as
 *    pprof_file__read() gives;
 *  - what is wrong is refused in pprof_file__read()'s words: a location
 *    id 0, one past the locations, a sample with a value too few, a label
 *    string past the table, a file cut short, a byte changed; a member's
 *    size wrong is a gzip file all the same, read the usual way;
 *  - a member among the samples holding another field (not as
 *    pprof-alloc cuts): read in the background, pprof_splice__finish()
 *    says to read it the usual way, which gives the whole profile; read
 *    with one thread, it is spliced right away.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "check.h"
#include "tracer/output/gzip.h"
#include "tracer/output/pprof.h"
#include "tracer/output/pprof_file.h"
#include "tracer/output/pprof_splice.h"

static char dir[] = "/tmp/test-pprof-splice.XXXXXX";

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

/* Every member of gz[0..len) inflated, into a malloc'd *out. */
static size_t gunzip_all(const uint8_t *gz, size_t len, uint8_t **out)
{
	size_t cap = 1 << 20, n = 0;
	uint8_t *buf = malloc(cap);

	CHECK(buf != NULL);
	while (len) {
		z_stream zs = { 0 };
		int zerr;

		CHECK_EQ_INT(inflateInit2(&zs, 15 + 16), Z_OK);
		zs.next_in = (Bytef *)gz;
		zs.avail_in = (uInt)len;
		do {
			if (n == cap) {
				cap *= 2;
				buf = realloc(buf, cap);
				CHECK(buf != NULL);
			}
			zs.next_out = buf + n;
			zs.avail_out = (uInt)(cap - n);
			zerr = inflate(&zs, Z_NO_FLUSH);
			n = cap - zs.avail_out;
			CHECK(zerr == Z_OK || zerr == Z_STREAM_END ||
			      zerr == Z_BUF_ERROR);
		} while (zerr != Z_STREAM_END);
		gz += zs.total_in;
		len -= zs.total_in;
		inflateEnd(&zs);
	}
	*out = buf;
	return n;
}

static size_t read_all(const char *path, uint8_t **out)
{
	int fd = open(path, O_RDONLY);
	off_t size;

	CHECK(fd >= 0);
	size = lseek(fd, 0, SEEK_END);
	CHECK(size > 0);
	*out = malloc((size_t)size);
	CHECK(*out != NULL);
	CHECK(pread(fd, *out, (size_t)size, 0) == size);
	close(fd);
	return (size_t)size;
}

/* The protobuf packing p gives. */
static size_t pack(const pprof_profile *p, uint8_t **out)
{
	size_t len = perftools__profiles__profile__get_packed_size(p);

	*out = malloc(len + 1);
	CHECK(*out != NULL);
	CHECK_EQ_INT(perftools__profiles__profile__pack(p, *out), len);
	return len;
}

/* ---- protobuf by hand --------------------------------------------------- */

struct bytes {
	uint8_t *p;
	size_t len, cap;
};

static void put(struct bytes *b, const void *data, size_t len)
{
	if (b->len + len > b->cap) {
		b->cap = (b->len + len) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		CHECK(b->p != NULL);
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
}

static void varint(struct bytes *b, uint64_t v)
{
	uint8_t c;

	while (v >= 0x80) {
		c = (uint8_t)(v | 0x80);
		put(b, &c, 1);
		v >>= 7;
	}
	c = (uint8_t)v;
	put(b, &c, 1);
}

static void field_varint(struct bytes *b, unsigned int num, uint64_t v)
{
	varint(b, num << 3);
	varint(b, v);
}

static void field_bytes(struct bytes *b, unsigned int num,
			const struct bytes *in)
{
	varint(b, num << 3 | 2);
	varint(b, in->len);
	put(b, in->p, in->len);
}

/* Sample types (objects, count) and the string table, then mappings and
 * locations 1..nloc, in rest (not the samples). */
static void profile_head(struct bytes *head)
{
	struct bytes vt = { 0 };

	field_varint(&vt, 1, 1);
	field_varint(&vt, 2, 2);
	field_bytes(head, 1, &vt);
	free(vt.p);
}

static void profile_rest(struct bytes *rest, unsigned int nloc)
{
	static const char *const strings[] = { "", "objects", "count", "bytes" };
	struct bytes m = { 0 };

	field_varint(&m, 1, 1);
	field_varint(&m, 2, 0x1000);
	field_varint(&m, 3, 0x100000);
	field_bytes(rest, 3, &m);
	for (unsigned int i = 1; i <= nloc; i++) {
		struct bytes l = { 0 };

		field_varint(&l, 1, i);
		field_varint(&l, 2, 1);
		field_varint(&l, 3, 0x1000 + i);
		field_bytes(rest, 4, &l);
		free(l.p);
	}
	for (size_t i = 0; i < sizeof(strings) / sizeof(*strings); i++) {
		struct bytes s = { .p = (uint8_t *)strings[i],
				   .len = strlen(strings[i]) };

		field_bytes(rest, 6, &s);
	}
	free(m.p);
}

/* A sample as protobuf-c packs it: ids, one value, a label (key 3,
 * num num) if num. */
static void sample(struct bytes *out, const uint64_t *ids, size_t n,
		   int64_t value, int64_t num)
{
	struct bytes s = { 0 }, packed = { 0 }, label = { 0 };

	for (size_t i = 0; i < n; i++)
		varint(&packed, ids[i]);
	if (n)
		field_bytes(&s, 1, &packed);
	free(packed.p);
	packed = (struct bytes){ 0 };
	varint(&packed, (uint64_t)value);
	field_bytes(&s, 2, &packed);
	if (num) {
		field_varint(&label, 1, 3);
		field_varint(&label, 3, (uint64_t)num);
		field_bytes(&s, 3, &label);
	}
	field_bytes(out, 2, &s);
	free(s.p);
	free(packed.p);
	free(label.p);
}

/* Many samples, as a run: more than a member's worth. */
static void many_samples(struct bytes *out, unsigned int nloc, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		uint64_t ids[40];
		size_t k = 1 + i % 40;

		for (size_t j = 0; j < k; j++)
			ids[j] = 1 + (i * 7 + j * 13) % nloc;
		sample(out, ids, k, (int64_t)i, i % 3 ? (int64_t)i + 1 : 0);
	}
}

/* head, samples, rest: gzipped as pprof-alloc cuts it, written to name. */
static char *write_profile(const char *name, const struct bytes *all)
{
	char *path = path_of(name);
	uint8_t *gz;
	size_t gz_len;

	CHECK_EQ_INT(pprof_file__gzip(all->p, all->len, &gz, &gz_len), 0);
	write_bytes(path, gz, gz_len);
	free(gz);
	return path;
}

/* ---- checks ------------------------------------------------------------- */

/*
 * Read path spliced again, its message packed and gzipped ahead
 * (pprof_splice__prepare(), before the samples are all read): the same
 * gzipped bytes as gz, written without.
 */
static void same_prepared(const char *path, unsigned int threads,
			  const uint8_t *gz, size_t gz_len)
{
	struct pprof_file *file = NULL;
	struct pprof_splice *s = NULL;
	uint8_t *again;
	size_t again_len;
	char why[256];

	CHECK_EQ_INT(pprof_splice__read(path, threads, &file, &s, why,
					sizeof(why)), 0);
	CHECK(s != NULL);
	CHECK_EQ_INT(pprof_splice__prepare(s, file->profile), 0);
	CHECK_EQ_INT(pprof_splice__prepare(s, file->profile), -EINVAL);
	CHECK_EQ_INT(pprof_splice__finish(s), 0);
	CHECK_EQ_INT(pprof_splice__gzip(s, file->profile, &again, &again_len),
		     0);
	CHECK_EQ_INT(again_len, gz_len);
	CHECK(memcmp(again, gz, gz_len) == 0);
	free(again);
	pprof_splice__free(s);
	pprof_file__free(file);
}

/*
 * Read path spliced with threads (finishing, and reading it the usual way
 * if finishing says so) and whole: the same error and message, or, for a
 * profile, the same protobuf written back.  Returns whether it was
 * spliced to the end.
 */
static bool same_as_whole(const char *path, unsigned int threads,
			  int want_err)
{
	struct pprof_file *whole = NULL, *file = NULL;
	struct pprof_splice *s = NULL;
	char why_whole[256], why[256];
	uint8_t *a, *b, *gz;
	size_t a_len, b_len, gz_len;
	bool spliced = false;
	int err;

	CHECK_EQ_INT(pprof_file__read(path, &whole, why_whole,
				      sizeof(why_whole)), want_err);
	err = pprof_splice__read(path, threads, &file, &s, why, sizeof(why));
	if (!err && s) {
		err = pprof_splice__finish(s);
		if (err == -EBADMSG) {
			pprof_file__free(file);
			file = NULL;
			err = pprof_splice__read_plain(s, &file, why,
						       sizeof(why));
			pprof_splice__free(s);
			s = NULL;
		}
	}
	CHECK_EQ_INT(err, want_err);
	if (want_err) {
		CHECK_EQ_STR(why, why_whole);
		CHECK(s == NULL && file == NULL);
		return false;
	}
	a_len = pack(whole->profile, &a);
	if (s) {
		spliced = true;
		CHECK_EQ_INT(file->profile->n_sample, 0);
		CHECK_EQ_INT(pprof_splice__gzip(s, file->profile, &gz, &gz_len),
			     0);
		b_len = gunzip_all(gz, gz_len, &b);
		same_prepared(path, threads, gz, gz_len);
		free(gz);
	} else {
		b_len = pack(file->profile, &b);
	}
	CHECK_EQ_INT(b_len, a_len);
	CHECK(memcmp(a, b, a_len) == 0);
	free(a);
	free(b);
	pprof_splice__free(s);
	pprof_file__free(file);
	pprof_file__free(whole);
	return spliced;
}

static void test_members(void)
{
	struct bytes all = { 0 }, rest = { 0 };
	struct gzip_member *m;
	size_t n, *cuts, ncuts, gz_len;
	uint8_t *gz;

	profile_head(&all);
	many_samples(&all, 500, 30000);
	profile_rest(&rest, 500);
	put(&all, rest.p, rest.len);
	CHECK_EQ_INT(pprof_file__cuts(all.p, all.len, &cuts, &ncuts), 0);
	/* the sample types alone, then samples by the MiB, then the rest */
	CHECK(ncuts >= 3);
	CHECK(cuts[0] < 64);
	CHECK_EQ_INT(cuts[ncuts - 1], all.len - rest.len);
	CHECK_EQ_INT(pprof_file__gzip(all.p, all.len, &gz, &gz_len), 0);
	CHECK(gzip__sized(gz, gz_len));
	CHECK_EQ_INT(gzip__members(gz, gz_len, &m, &n), 0);
	CHECK_EQ_INT(n, ncuts + 1);
	CHECK_EQ_INT(m[0].offset, 0);
	CHECK_EQ_INT(m[n - 1].offset + m[n - 1].size, gz_len);
	CHECK_EQ_INT(m[n - 1].isize, rest.len);
	free(m);
	/* one byte off the end: not a file of members */
	CHECK_EQ_INT(gzip__members(gz, gz_len - 1, &m, &n), -ENOENT);
	CHECK(!gzip__sized((const uint8_t *)"\x1f\x8b\x08\x00", 4));
	free(gz);
	free(cuts);
	free(all.p);
	free(rest.p);
}

/* A profile as the builder makes it, written, read spliced, written back
 * unchanged and changed as symbolize changes it. */
static void test_builder(void)
{
	static const struct pprof_sample_type types[] = {
		{ "alloc_objects", "count" }, { "alloc_space", "bytes" },
	};
	struct pprof_builder *b = pprof__new(types, 2, &types[1], 1);
	char *path = path_of("built.pb.gz");
	unsigned int threads[] = { 1, 4 };
	int64_t m;

	CHECK(b != NULL);
	m = pprof__add_mapping(b, 0x400000, 0x800000, 0, "/bin/x", "abcd",
			       false, false, false, false);
	CHECK(m == 1);
	for (int i = 0; i < 3000; i++)
		CHECK(pprof__add_location(b, 1, 0x400000 + (uint64_t)i * 16,
					  NULL, 0) == i + 1);
	for (int i = 0; i < 60000; i++) {
		uint64_t ids[40];
		int64_t vals[2] = { 1 + i % 5, (1 + i % 5) * (i % 1000) };
		size_t k = (size_t)(i % 40);

		for (size_t j = 0; j < k; j++)
			ids[j] = 1 + ((uint64_t)i * 31 + j * 17) % 3000;
		CHECK_EQ_INT(pprof__add_sample(b, ids, k, vals,
					       i % 2 ? i % 1000 : -1), 0);
	}
	CHECK_EQ_INT(pprof__add_comment(b, "a comment"), 0);
	CHECK_EQ_INT(pprof__write(b, path), 0);
	pprof__free(b);

	for (size_t t = 0; t < sizeof(threads) / sizeof(*threads); t++) {
		struct pprof_file *whole, *file;
		struct pprof_splice *s;
		Perftools__Profiles__Line line, *line_ptr = &line;
		Perftools__Profiles__Function fn, *fns[1] = { &fn };
		char *strings_whole[64], *strings[64], why[256];
		int64_t comments[4];
		uint8_t *a = NULL, *gz, *out;
		size_t a_len = 0, gz_len, out_len;

		CHECK(same_as_whole(path, threads[t], 0));
		/* Changed as symbolize changes it: a function, a line. */
		CHECK_EQ_INT(pprof_file__read(path, &whole, why, sizeof(why)),
			     0);
		CHECK_EQ_INT(pprof_splice__read(path, threads[t], &file, &s,
						why, sizeof(why)), 0);
		CHECK(s != NULL);
		CHECK_EQ_INT(file->profile->n_location, 3000);
		CHECK_EQ_INT(file->profile->n_mapping, 1);
		if (t % 2)	/* else changed, prepared, then finished */
			CHECK_EQ_INT(pprof_splice__finish(s), 0);
		CHECK(whole->profile->n_string_table < 60);
		perftools__profiles__function__init(&fn);
		fn.id = 1;
		perftools__profiles__line__init(&line);
		line.function_id = 1;
		line.line = 42;
		for (int w = 0; w < 2; w++) {
			pprof_profile *p = w ? file->profile : whole->profile;
			char **strs = w ? strings : strings_whole;

			memcpy(strs, p->string_table,
			       p->n_string_table * sizeof(*strs));
			strs[p->n_string_table] = (char *)"main";
			fn.name = fn.system_name = (int64_t)p->n_string_table;
			p->string_table = strs;
			p->n_string_table++;
			p->function = fns;
			p->n_function = 1;
			p->location[7]->line = &line_ptr;
			p->location[7]->n_line = 1;
			p->mapping[0]->has_functions = true;
			memcpy(comments, p->comment,
			       p->n_comment * sizeof(*comments));
			comments[p->n_comment] = 1;
			p->comment = comments;
			p->n_comment++;
			if (!w)
				a_len = pack(p, &a);
		}
		if (!(t % 2)) {
			CHECK_EQ_INT(pprof_splice__prepare(s, file->profile),
				     0);
			CHECK_EQ_INT(pprof_splice__finish(s), 0);
		}
		CHECK_EQ_INT(pprof_splice__gzip(s, file->profile, &gz, &gz_len),
			     0);
		out_len = gunzip_all(gz, gz_len, &out);
		CHECK_EQ_INT(out_len, a_len);
		CHECK(memcmp(out, a, a_len) == 0);
		free(a);
		free(gz);
		free(out);
		pprof_splice__free(s);
		pprof_file__free(file);
		pprof_file__free(whole);
	}
	free(path);
}

/* head, one odd sample among many, rest: written and compared. */
static void odd_sample(const char *name, const struct bytes *odd,
		       int want_err, bool want_spliced)
{
	struct bytes all = { 0 }, rest = { 0 };
	char *path;

	profile_head(&all);
	many_samples(&all, 100, 20000);
	put(&all, odd->p, odd->len);
	many_samples(&all, 100, 20000);
	profile_rest(&rest, 100);
	put(&all, rest.p, rest.len);
	path = write_profile(name, &all);
	CHECK_EQ_INT(same_as_whole(path, 1, want_err), want_spliced);
	CHECK_EQ_INT(same_as_whole(path, 4, want_err), want_spliced);
	free(path);
	free(all.p);
	free(rest.p);
}

static void test_encodings(void)
{
	struct bytes s = { 0 }, in = { 0 };
	uint64_t ids[] = { 1, 2, 300 % 100 + 1 };

	/* as protobuf-c packs it: spliced */
	sample(&s, ids, 3, 5, 9);
	odd_sample("canonical.pb.gz", &s, 0, true);
	free(s.p);

	/* ids one by one, not packed */
	s = (struct bytes){ 0 };
	field_varint(&in, 1, 1);
	field_varint(&in, 1, 2);
	field_varint(&in, 2, 5);
	field_bytes(&s, 2, &in);
	odd_sample("unpacked.pb.gz", &s, 0, false);
	free(s.p);
	free(in.p);

	/* an id in two bytes where one does */
	s = (struct bytes){ 0 };
	in = (struct bytes){ 0 };
	put(&in, "\x0a\x02\x81\x00\x12\x01\x05", 7);
	field_bytes(&s, 2, &in);
	odd_sample("overlong.pb.gz", &s, 0, false);
	free(s.p);
	free(in.p);

	/* a label whose num is there as 0 */
	s = (struct bytes){ 0 };
	in = (struct bytes){ 0 };
	put(&in, "\x0a\x01\x01\x12\x01\x05\x1a\x04\x08\x03\x18\x00", 12);
	field_bytes(&s, 2, &in);
	odd_sample("label0.pb.gz", &s, 0, false);
	free(s.p);
	free(in.p);

	/* value before location_id */
	s = (struct bytes){ 0 };
	in = (struct bytes){ 0 };
	put(&in, "\x12\x01\x05\x0a\x01\x01", 6);
	field_bytes(&s, 2, &in);
	odd_sample("order.pb.gz", &s, 0, false);
	free(s.p);
	free(in.p);
}

static void test_refused(void)
{
	struct bytes s = { 0 }, in = { 0 };
	uint64_t zero[] = { 3, 0 }, past[] = { 101 };
	char *path;
	uint8_t *gz;
	size_t gz_len;

	sample(&s, zero, 2, 1, 0);
	odd_sample("zero.pb.gz", &s, -EBADMSG, false);
	free(s.p);
	s = (struct bytes){ 0 };
	sample(&s, past, 1, 1, 0);
	odd_sample("past.pb.gz", &s, -EBADMSG, false);
	free(s.p);

	/* no value for the one sample type */
	s = (struct bytes){ 0 };
	put(&in, "\x0a\x01\x01", 3);
	field_bytes(&s, 2, &in);
	odd_sample("novalue.pb.gz", &s, -EBADMSG, false);
	free(s.p);
	free(in.p);

	/* a label key past the 4 strings */
	s = (struct bytes){ 0 };
	in = (struct bytes){ 0 };
	put(&in, "\x0a\x01\x01\x12\x01\x05\x1a\x02\x08\x04", 10);
	field_bytes(&s, 2, &in);
	odd_sample("string.pb.gz", &s, -EBADMSG, false);
	free(s.p);
	free(in.p);

	/* the canonical profile, cut and broken at the gzip level */
	s = (struct bytes){ 0 };
	sample(&s, past, 0, 1, 0);
	odd_sample("ok.pb.gz", &s, 0, true);
	path = path_of("ok.pb.gz");
	gz_len = read_all(path, &gz);
	free(path);
	path = path_of("cut.pb.gz");
	write_bytes(path, gz, gz_len - 3);
	same_as_whole(path, 4, -EBADMSG);
	free(path);
	/* a member's size one too many: not a file of members, but gzip
	 * all the same (the size is in a field gzip readers skip) */
	gz[16]++;
	path = path_of("size.pb.gz");
	write_bytes(path, gz, gz_len);
	CHECK(!same_as_whole(path, 4, 0));
	free(path);
	gz[16]--;
	/* a byte of a sample member changed: its CRC says so */
	gz[gz_len / 2] ^= 0x40;
	path = path_of("flip.pb.gz");
	write_bytes(path, gz, gz_len);
	same_as_whole(path, 4, -EBADMSG);
	free(path);
	free(gz);
	free(s.p);
}

/* A mapping among the samples: a member of its own, in the middle. */
static void test_middle(void)
{
	struct bytes all = { 0 }, rest = { 0 }, m = { 0 };
	char *path;

	profile_head(&all);
	many_samples(&all, 100, 40000);
	field_varint(&m, 1, 2);
	field_varint(&m, 2, 0x200000);
	field_varint(&m, 3, 0x300000);
	field_bytes(&all, 3, &m);
	many_samples(&all, 100, 40000);
	profile_rest(&rest, 100);
	put(&all, rest.p, rest.len);
	path = write_profile("middle.pb.gz", &all);
	/* one thread reads it all before taking the rest: spliced */
	CHECK(same_as_whole(path, 1, 0));
	/* in the background: found at the end, read the usual way */
	CHECK(!same_as_whole(path, 4, 0));
	free(path);
	free(all.p);
	free(rest.p);
	free(m.p);
}

int main(void)
{
	char *cmd;

	CHECK(mkdtemp(dir) != NULL);
	test_members();
	test_builder();
	test_encodings();
	test_refused();
	test_middle();
	CHECK(asprintf(&cmd, "rm -rf '%s'", dir) > 0);
	CHECK(system(cmd) == 0);
	free(cmd);
	CHECK_SUMMARY("test-pprof-splice");
	return 0;
}
