// SPDX-License-Identifier: MIT
/*
 * test-pprof.c - unit test of the pprof builder (tracer/output/pprof.c).
 *
 * Everything is checked from the outside, the way a reader sees it: a
 * profile is built, encoded, gunzipped with zlib and decoded with the
 * protobuf-c unpacker, and every field is compared with what went in.  Then
 * pprof__write() is checked for its atomicity promises (the file appears
 * whole under its name, failures leave no temporary file), `go tool pprof`
 * is asked to read what we wrote, and a large profile is encoded to catch
 * quadratic behaviour and hash-table growth bugs.
 *
 * Files are written to a fresh mkdtemp() directory that is removed at the
 * end; the test needs nothing else from its environment but `go` for the
 * pprof check, which is skipped with a note when go is not on PATH.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "profile.pb-c.h"
#include "tracer/output/pprof.h"

static const struct pprof_sample_type heap_types[] = {
	{ "alloc_objects", "count" },
	{ "alloc_space", "bytes" },
	{ "inuse_objects", "count" },
	{ "inuse_space", "bytes" },
};
static const struct pprof_sample_type space_bytes = { "space", "bytes" };

#define PERIOD		524288
#define TIME_NANOS	1700000000123456789LL
#define DURATION_NANOS	2500000000LL
#define BUILD_ID	"4f2a9c1e0b7d3388aa55cc77ee99001122334455"

/* What build_heap_profile() put in, for the checks to compare against. */
struct heap_ids {
	int64_t map_exe, map_libc;
	int64_t fn_main, fn_leaf, fn_inlined, fn_malloc;
	int64_t loc_inline, loc_main, loc_libc;
};

static const int64_t sample_a[] = { 3, 3 * 64, 1, 64 };
static const int64_t sample_b[] = { 1, 4096, 1, 4096 };
static const int64_t sample_c[] = { 7, 7 * 24, 0, 0 };

static struct pprof_builder *build_heap_profile(struct heap_ids *ids)
{
	struct pprof_builder *b;
	struct pprof_line inline_lines[2], main_line[1], libc_line[1];
	uint64_t stack_a[3], stack_b[1], stack_c[2];

	b = pprof__new(heap_types, 4, &space_bytes, PERIOD);
	CHECK(b != NULL);

	ids->map_exe = pprof__add_mapping(b, 0x400000, 0x500000, 0x1000,
					  "/usr/bin/demo", BUILD_ID, true, true,
					  true, true);
	ids->map_libc = pprof__add_mapping(b, 0x7f0000000000, 0x7f0000200000,
					   0, "/lib/libc.so.6", NULL, true,
					   false, false, false);
	CHECK_EQ_INT(ids->map_exe, 1);
	CHECK_EQ_INT(ids->map_libc, 2);

	ids->fn_main = pprof__function(b, "main", "main", "demo.c", 10);
	ids->fn_leaf = pprof__function(b, "leaf_alloc", "_Z10leaf_allocv",
				       "demo.c", 20);
	ids->fn_inlined = pprof__function(b, "inlined_helper",
					  "_Z14inlined_helperv", "demo.h", 5);
	ids->fn_malloc = pprof__function(b, "malloc", NULL, NULL, 0);
	CHECK_EQ_INT(ids->fn_main, 1);
	CHECK_EQ_INT(ids->fn_leaf, 2);
	CHECK_EQ_INT(ids->fn_inlined, 3);
	CHECK_EQ_INT(ids->fn_malloc, 4);

	/* Dedup: same 4-tuple, same id; any difference, a new function. */
	CHECK_EQ_INT(pprof__function(b, "main", "main", "demo.c", 10),
		     ids->fn_main);
	CHECK_EQ_INT(pprof__function(b, "leaf_alloc", "_Z10leaf_allocv",
				     "demo.c", 20), ids->fn_leaf);
	CHECK_EQ_INT(pprof__function(b, "malloc", "", "", 0), ids->fn_malloc);

	/* lines[0] is the leaf: inlined_helper inlined into leaf_alloc. */
	inline_lines[0] = (struct pprof_line){ ids->fn_inlined, 7 };
	inline_lines[1] = (struct pprof_line){ ids->fn_leaf, 23 };
	main_line[0] = (struct pprof_line){ ids->fn_main, 14 };
	libc_line[0] = (struct pprof_line){ ids->fn_malloc, 0 };
	ids->loc_inline = pprof__add_location(b, ids->map_exe, 0x401234,
					      inline_lines, 2);
	ids->loc_main = pprof__add_location(b, ids->map_exe, 0x400abc,
					    main_line, 1);
	ids->loc_libc = pprof__add_location(b, ids->map_libc, 0x7f0000012345,
					    libc_line, 1);
	CHECK_EQ_INT(ids->loc_inline, 1);
	CHECK_EQ_INT(ids->loc_main, 2);
	CHECK_EQ_INT(ids->loc_libc, 3);

	stack_a[0] = (uint64_t)ids->loc_libc;
	stack_a[1] = (uint64_t)ids->loc_inline;
	stack_a[2] = (uint64_t)ids->loc_main;
	stack_b[0] = (uint64_t)ids->loc_main;
	stack_c[0] = (uint64_t)ids->loc_inline;
	stack_c[1] = (uint64_t)ids->loc_main;
	CHECK_EQ_INT(pprof__add_sample(b, stack_a, 3, sample_a, 64), 0);
	CHECK_EQ_INT(pprof__add_sample(b, stack_b, 1, sample_b, 4096), 0);
	CHECK_EQ_INT(pprof__add_sample(b, stack_c, 2, sample_c, -1), 0);

	CHECK_EQ_INT(pprof__add_comment(b, "pprof-alloc test profile"), 0);
	CHECK_EQ_INT(pprof__add_comment(b, "second comment"), 0);
	pprof__set_time(b, TIME_NANOS, DURATION_NANOS);
	CHECK_EQ_INT(pprof__set_default_sample_type(b, "inuse_space"), 0);
	return b;
}

/*
 * Gunzip with zlib into a malloc'd buffer, member after member (a big
 * profile is written as several, gzip__compress()), up to the last byte;
 * any error fails the test.
 */
static void gunzip(const uint8_t *in, size_t in_len, uint8_t **out,
		   size_t *out_len)
{
	size_t cap = in_len * 4 + 64, done = 0;
	uint8_t *buf = malloc(cap);

	CHECK(buf != NULL);
	while (in_len) {
		z_stream zs = { 0 };
		int zerr;

		CHECK_EQ_INT(inflateInit2(&zs, 15 + 16), Z_OK);
		zs.next_in = (Bytef *)in;
		zs.avail_in = (uInt)in_len;
		do {
			if (done + zs.total_out == cap) {
				cap *= 2;
				buf = realloc(buf, cap);
				CHECK(buf != NULL);
			}
			zs.next_out = buf + done + zs.total_out;
			zs.avail_out = (uInt)(cap - done - zs.total_out);
			zerr = inflate(&zs, Z_NO_FLUSH);
			CHECK(zerr == Z_OK || zerr == Z_STREAM_END);
		} while (zerr != Z_STREAM_END);
		done += zs.total_out;
		in += zs.total_in;
		in_len -= zs.total_in;
		inflateEnd(&zs);
	}
	*out = buf;
	*out_len = done;
}

static Perftools__Profiles__Profile *decode(const uint8_t *gz, size_t gz_len)
{
	Perftools__Profiles__Profile *p;
	uint8_t *raw;
	size_t raw_len;

	CHECK(gz_len > 10);
	CHECK_EQ_INT(gz[0], 0x1f);	/* gzip magic */
	CHECK_EQ_INT(gz[1], 0x8b);
	gunzip(gz, gz_len, &raw, &raw_len);
	p = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	CHECK(p != NULL);
	free(raw);
	return p;
}

/* The string at index i of p's table, checking the index. */
static const char *str(const Perftools__Profiles__Profile *p, int64_t i)
{
	CHECK(i >= 0 && (size_t)i < p->n_string_table);
	return p->string_table[i];
}

static void check_value_type(const Perftools__Profiles__Profile *p,
			     const Perftools__Profiles__ValueType *vt,
			     const struct pprof_sample_type *want)
{
	CHECK(vt != NULL);
	CHECK_EQ_STR(str(p, vt->type), want->type);
	CHECK_EQ_STR(str(p, vt->unit), want->unit);
}

static void check_bytes_label(const Perftools__Profiles__Profile *p,
			      const Perftools__Profiles__Sample *s,
			      int64_t bytes)
{
	CHECK_EQ_INT(s->n_label, 1);
	CHECK_EQ_STR(str(p, s->label[0]->key), "bytes");
	CHECK_EQ_INT(s->label[0]->str, 0);
	CHECK_EQ_INT(s->label[0]->num, bytes);
	CHECK_EQ_STR(str(p, s->label[0]->num_unit), "bytes");
}

static void check_sample(const Perftools__Profiles__Profile *p, size_t i,
			 const uint64_t *stack, size_t depth,
			 const int64_t *values, int64_t bytes)
{
	const Perftools__Profiles__Sample *s;
	size_t j;

	CHECK(i < p->n_sample);
	s = p->sample[i];
	CHECK_EQ_INT(s->n_location_id, depth);
	for (j = 0; j < depth; j++)
		CHECK_EQ_INT(s->location_id[j], stack[j]);
	CHECK_EQ_INT(s->n_value, 4);
	for (j = 0; j < 4; j++)
		CHECK_EQ_INT(s->value[j], values[j]);
	if (bytes >= 0)
		check_bytes_label(p, s, bytes);
	else
		CHECK_EQ_INT(s->n_label, 0);
}

static void check_function(const Perftools__Profiles__Profile *p,
			   int64_t id, const char *name,
			   const char *system_name, const char *file,
			   int64_t start_line)
{
	const Perftools__Profiles__Function *f;

	CHECK(id >= 1 && (size_t)id <= p->n_function);
	f = p->function[id - 1];
	CHECK_EQ_INT(f->id, id);
	CHECK_EQ_STR(str(p, f->name), name);
	CHECK_EQ_STR(str(p, f->system_name), system_name);
	CHECK_EQ_STR(str(p, f->filename), file);
	CHECK_EQ_INT(f->start_line, start_line);
}

/* The profile of build_heap_profile(), field by field. */
static void check_heap_profile(const Perftools__Profiles__Profile *p,
			       const struct heap_ids *ids)
{
	const Perftools__Profiles__Mapping *m;
	const Perftools__Profiles__Location *loc;
	size_t i, j;

	/* String table: "" first, every string once. */
	CHECK(p->n_string_table > 1);
	CHECK_EQ_STR(p->string_table[0], "");
	for (i = 0; i < p->n_string_table; i++)
		for (j = i + 1; j < p->n_string_table; j++)
			CHECK(strcmp(p->string_table[i],
				     p->string_table[j]) != 0);

	CHECK_EQ_INT(p->n_sample_type, 4);
	for (i = 0; i < 4; i++)
		check_value_type(p, p->sample_type[i], &heap_types[i]);
	check_value_type(p, p->period_type, &space_bytes);
	CHECK_EQ_INT(p->period, PERIOD);
	CHECK_EQ_INT(p->time_nanos, TIME_NANOS);
	CHECK_EQ_INT(p->duration_nanos, DURATION_NANOS);
	CHECK_EQ_STR(str(p, p->default_sample_type), "inuse_space");
	CHECK_EQ_INT(p->drop_frames, 0);
	CHECK_EQ_INT(p->keep_frames, 0);

	CHECK_EQ_INT(p->n_comment, 2);
	CHECK_EQ_STR(str(p, p->comment[0]), "pprof-alloc test profile");
	CHECK_EQ_STR(str(p, p->comment[1]), "second comment");

	CHECK_EQ_INT(p->n_mapping, 2);
	m = p->mapping[0];
	CHECK_EQ_INT(m->id, ids->map_exe);
	CHECK_EQ_INT(m->memory_start, 0x400000);
	CHECK_EQ_INT(m->memory_limit, 0x500000);
	CHECK_EQ_INT(m->file_offset, 0x1000);
	CHECK_EQ_STR(str(p, m->filename), "/usr/bin/demo");
	CHECK_EQ_STR(str(p, m->build_id), BUILD_ID);
	CHECK(m->has_functions && m->has_filenames && m->has_line_numbers &&
	      m->has_inline_frames);
	m = p->mapping[1];
	CHECK_EQ_INT(m->id, ids->map_libc);
	CHECK_EQ_INT(m->memory_start, 0x7f0000000000);
	CHECK_EQ_INT(m->memory_limit, 0x7f0000200000);
	CHECK_EQ_INT(m->file_offset, 0);
	CHECK_EQ_STR(str(p, m->filename), "/lib/libc.so.6");
	CHECK_EQ_INT(m->build_id, 0);	/* NULL build id: "" */
	CHECK(m->has_functions);
	CHECK(!m->has_filenames && !m->has_line_numbers &&
	      !m->has_inline_frames);

	CHECK_EQ_INT(p->n_function, 4);	/* the dedup added nothing */
	check_function(p, ids->fn_main, "main", "main", "demo.c", 10);
	check_function(p, ids->fn_leaf, "leaf_alloc", "_Z10leaf_allocv",
		       "demo.c", 20);
	check_function(p, ids->fn_inlined, "inlined_helper",
		       "_Z14inlined_helperv", "demo.h", 5);
	check_function(p, ids->fn_malloc, "malloc", "", "", 0);

	CHECK_EQ_INT(p->n_location, 3);
	loc = p->location[ids->loc_inline - 1];
	CHECK_EQ_INT(loc->id, ids->loc_inline);
	CHECK_EQ_INT(loc->mapping_id, ids->map_exe);
	CHECK_EQ_INT(loc->address, 0x401234);
	CHECK(!loc->is_folded);
	CHECK_EQ_INT(loc->n_line, 2);
	CHECK_EQ_INT(loc->line[0]->function_id, ids->fn_inlined);
	CHECK_EQ_INT(loc->line[0]->line, 7);
	CHECK_EQ_INT(loc->line[1]->function_id, ids->fn_leaf);
	CHECK_EQ_INT(loc->line[1]->line, 23);
	loc = p->location[ids->loc_main - 1];
	CHECK_EQ_INT(loc->id, ids->loc_main);
	CHECK_EQ_INT(loc->mapping_id, ids->map_exe);
	CHECK_EQ_INT(loc->address, 0x400abc);
	CHECK_EQ_INT(loc->n_line, 1);
	CHECK_EQ_INT(loc->line[0]->function_id, ids->fn_main);
	CHECK_EQ_INT(loc->line[0]->line, 14);
	loc = p->location[ids->loc_libc - 1];
	CHECK_EQ_INT(loc->id, ids->loc_libc);
	CHECK_EQ_INT(loc->mapping_id, ids->map_libc);
	CHECK_EQ_INT(loc->address, 0x7f0000012345);
	CHECK_EQ_INT(loc->n_line, 1);
	CHECK_EQ_INT(loc->line[0]->function_id, ids->fn_malloc);

	CHECK_EQ_INT(p->n_sample, 3);
	check_sample(p, 0,
		     (const uint64_t[]){ ids->loc_libc, ids->loc_inline,
					 ids->loc_main }, 3, sample_a, 64);
	check_sample(p, 1, (const uint64_t[]){ ids->loc_main }, 1, sample_b,
		     4096);
	check_sample(p, 2, (const uint64_t[]){ ids->loc_inline, ids->loc_main },
		     2, sample_c, -1);
}

static void test_strings(void)
{
	struct pprof_builder *b = pprof__new(heap_types, 4, NULL, 0);
	int64_t foo, bar;

	CHECK(b != NULL);
	CHECK_EQ_INT(pprof__string(b, ""), 0);
	CHECK_EQ_INT(pprof__string(b, NULL), 0);
	foo = pprof__string(b, "foo");
	bar = pprof__string(b, "bar");
	CHECK(foo > 0 && bar > 0 && foo != bar);
	CHECK_EQ_INT(pprof__string(b, "foo"), foo);
	CHECK_EQ_INT(pprof__string(b, "bar"), bar);
	/* The sample types were interned by pprof__new(). */
	CHECK_EQ_INT(pprof__string(b, "alloc_objects"),
		     pprof__string(b, "alloc_objects"));
	pprof__free(b);
	pprof__free(NULL);
}

static void test_bad_arguments(void)
{
	struct pprof_builder *b = pprof__new(heap_types, 4, NULL, 0);
	struct pprof_line bad_fn = { 99, 1 };
	uint64_t bad_loc = 99, zero_loc = 0;
	int64_t values[4] = { 0 };

	errno = 0;
	CHECK(pprof__new(heap_types, 0, NULL, 0) == NULL);
	CHECK_EQ_INT(errno, EINVAL);
	CHECK(b != NULL);
	CHECK_EQ_INT(pprof__add_location(b, 5, 0x1000, NULL, 0), -EINVAL);
	CHECK_EQ_INT(pprof__add_location(b, 0, 0x1000, &bad_fn, 1), -EINVAL);
	CHECK_EQ_INT(pprof__add_location(b, 0, 0x1000, NULL, 1), -EINVAL);
	CHECK_EQ_INT(pprof__add_sample(b, &bad_loc, 1, values, -1), -EINVAL);
	CHECK_EQ_INT(pprof__add_sample(b, &zero_loc, 1, values, -1), -EINVAL);
	CHECK_EQ_INT(pprof__add_sample(b, NULL, 0, NULL, -1), -EINVAL);
	CHECK_EQ_INT(pprof__set_default_sample_type(b, "no_such_type"),
		     -EINVAL);
	/* A location without mapping or lines is fine (pprof symbolizes). */
	CHECK_EQ_INT(pprof__add_location(b, 0, 0x1000, NULL, 0), 1);
	pprof__free(b);
}

static void test_roundtrip(void)
{
	Perftools__Profiles__Profile *p;
	struct pprof_builder *b;
	struct heap_ids ids;
	uint8_t *gz;
	size_t gz_len;

	b = build_heap_profile(&ids);
	CHECK_EQ_INT(pprof__encode_gzip(b, &gz, &gz_len), 0);
	p = decode(gz, gz_len);
	check_heap_profile(p, &ids);

	/* Interning identity: the builder's indices are the table's. */
	CHECK_EQ_STR(str(p, pprof__string(b, "leaf_alloc")), "leaf_alloc");
	CHECK_EQ_STR(str(p, pprof__string(b, "/usr/bin/demo")),
		     "/usr/bin/demo");
	CHECK_EQ_INT(pprof__string(b, "bytes"), p->sample[0]->label[0]->key);
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(gz);
	pprof__free(b);
}

/* Read a whole file into a malloc'd buffer. */
static void read_whole_file(const char *path, uint8_t **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long size;

	CHECK(f != NULL);
	CHECK_EQ_INT(fseek(f, 0, SEEK_END), 0);
	size = ftell(f);
	CHECK(size >= 0);
	rewind(f);
	buf = malloc((size_t)size + 1);
	CHECK(buf != NULL);
	CHECK_EQ_INT(fread(buf, 1, (size_t)size, f), size);
	fclose(f);
	*out = buf;
	*len = (size_t)size;
}

/* How many entries dir has besides . and .., and whether one has ".tmp.". */
static size_t count_entries(const char *dir, bool *has_tmp)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	CHECK(d != NULL);
	*has_tmp = false;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		n++;
		if (strstr(de->d_name, ".tmp."))
			*has_tmp = true;
	}
	closedir(d);
	return n;
}

static void test_write(const char *dir)
{
	char path[4096], bad_path[4096], dir_path[4096];
	uint8_t *gz, *file, *raw_gz, *raw_file;
	size_t gz_len, file_len, raw_gz_len, raw_file_len;
	struct pprof_builder *b;
	struct heap_ids ids;
	struct stat st;
	bool has_tmp;
	FILE *f;

	snprintf(path, sizeof(path), "%s/heap.pb.gz", dir);
	snprintf(bad_path, sizeof(bad_path), "%s/no-such-dir/heap.pb.gz", dir);
	snprintf(dir_path, sizeof(dir_path), "%s/a-directory", dir);

	/* An old file is replaced whole. */
	f = fopen(path, "w");
	CHECK(f != NULL);
	fputs("old contents", f);
	fclose(f);

	b = build_heap_profile(&ids);
	CHECK_EQ_INT(pprof__write(b, path), 0);
	CHECK_EQ_INT(stat(path, &st), 0);
	CHECK_EQ_INT(st.st_mode & 07777, 0644);
	CHECK_EQ_INT(count_entries(dir, &has_tmp), 1);
	CHECK(!has_tmp);

	/* The file is what pprof__encode_gzip() produces. */
	read_whole_file(path, &file, &file_len);
	CHECK_EQ_INT(pprof__encode_gzip(b, &gz, &gz_len), 0);
	gunzip(file, file_len, &raw_file, &raw_file_len);
	gunzip(gz, gz_len, &raw_gz, &raw_gz_len);
	CHECK_EQ_INT(raw_file_len, raw_gz_len);
	CHECK(memcmp(raw_file, raw_gz, raw_gz_len) == 0);
	free(raw_file);
	free(raw_gz);
	free(file);
	free(gz);

	/* Failing before the temporary file exists. */
	CHECK_EQ_INT(pprof__write(b, bad_path), -ENOENT);
	CHECK_EQ_INT(count_entries(dir, &has_tmp), 1);
	CHECK(!has_tmp);

	/* Failing after it exists: rename() over a directory is EISDIR. */
	CHECK_EQ_INT(mkdir(dir_path, 0755), 0);
	CHECK_EQ_INT(pprof__write(b, dir_path), -EISDIR);
	CHECK_EQ_INT(count_entries(dir, &has_tmp), 2);
	CHECK(!has_tmp);
	CHECK_EQ_INT(rmdir(dir_path), 0);

	CHECK_EQ_INT(unlink(path), 0);
	pprof__free(b);
}

/* Run `go tool pprof -raw` on a profile we wrote and look at its output. */
static void test_go_pprof(const char *dir)
{
	static const char *const names[] = {
		"main", "leaf_alloc", "inlined_helper", "malloc",
		"alloc_space/bytes", "inuse_space/bytes",
	};
	char path[4096], cmd[8192], out[65536];
	struct pprof_builder *b;
	struct heap_ids ids;
	size_t len = 0, n, i;
	FILE *pipe;
	int status;

	/* nothing is skipped: go is installed with the test dependencies */
	if (system("command -v go >/dev/null 2>&1") != 0) {
		printf("test-pprof: go is missing (contrib/install-deps.sh --test): cannot check the profile with go tool pprof\n");
		CHECK(!"go on PATH");
		return;
	}
	snprintf(path, sizeof(path), "%s/go.pb.gz", dir);
	b = build_heap_profile(&ids);
	CHECK_EQ_INT(pprof__write(b, path), 0);
	pprof__free(b);

	snprintf(cmd, sizeof(cmd), "go tool pprof -raw '%s' 2>&1", path);
	pipe = popen(cmd, "r");
	CHECK(pipe != NULL);
	while (len < sizeof(out) - 1 &&
	       (n = fread(out + len, 1, sizeof(out) - 1 - len, pipe)) > 0)
		len += n;
	out[len] = '\0';
	status = pclose(pipe);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fprintf(stderr, "go tool pprof -raw said:\n%s\n", out);
	CHECK(WIFEXITED(status));
	CHECK_EQ_INT(WEXITSTATUS(status), 0);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strstr(out, names[i]))
			fprintf(stderr, "go tool pprof -raw said:\n%s\n", out);
		CHECK(strstr(out, names[i]) != NULL);
	}
	CHECK_EQ_INT(unlink(path), 0);
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) +
	       (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/*
 * 1e5 functions and locations, 1e6 samples of 8 frames: an encoder that is
 * quadratic anywhere would not finish.  Pseudo-random stacks keep deflate
 * honest; the decoded profile is spot-checked.
 */
static void test_scale(void)
{
	enum { NLOC = 100000, NSAMPLES = 1000000, DEPTH = 8 };
	Perftools__Profiles__Profile *p;
	struct pprof_builder *b;
	struct timespec t0;
	uint64_t rng = 0x9e3779b97f4a7c15ULL, stack[DEPTH];
	int64_t values[4];
	uint8_t *gz;
	size_t gz_len, i, j;
	char name[64];

	clock_gettime(CLOCK_MONOTONIC, &t0);
	b = pprof__new(heap_types, 4, &space_bytes, PERIOD);
	CHECK(b != NULL);
	CHECK_EQ_INT(pprof__add_mapping(b, 0x400000, 0x800000, 0, "/bin/big",
					NULL, true, true, true, false), 1);
	for (i = 0; i < NLOC; i++) {
		struct pprof_line line;

		snprintf(name, sizeof(name), "fn_%zu", i);
		line.function_id = (uint64_t)pprof__function(b, name, name,
							     "big.c",
							     (int64_t)i);
		line.line = (int64_t)i + 1;
		CHECK_EQ_INT(line.function_id, i + 1);
		CHECK_EQ_INT(pprof__add_location(b, 1, 0x400000 + 16 * i,
						 &line, 1), i + 1);
	}
	for (i = 0; i < NSAMPLES; i++) {
		for (j = 0; j < DEPTH; j++) {
			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			stack[j] = rng % NLOC + 1;
		}
		values[0] = values[2] = 1;
		values[1] = values[3] = (int64_t)(i % 4096);
		if (pprof__add_sample(b, stack, DEPTH, values,
				      (int64_t)(i % 4096)) != 0)
			CHECK(!"pprof__add_sample failed");
	}
	/* Interning still finds old strings after many table growths. */
	CHECK_EQ_INT(pprof__function(b, "fn_12345", "fn_12345", "big.c",
				     12345), 12346);
	CHECK_EQ_INT(pprof__encode_gzip(b, &gz, &gz_len), 0);
	printf("test-pprof: %d samples, %d locations built and encoded "
	       "in %.2fs (%zu bytes gzipped)\n", NSAMPLES, NLOC,
	       seconds_since(&t0), gz_len);

	p = decode(gz, gz_len);
	CHECK_EQ_INT(p->n_sample, NSAMPLES);
	CHECK_EQ_INT(p->n_location, NLOC);
	CHECK_EQ_INT(p->n_function, NLOC);
	CHECK_EQ_STR(str(p, p->function[12345]->name), "fn_12345");
	CHECK_EQ_INT(p->location[NLOC - 1]->line[0]->function_id, NLOC);
	CHECK_EQ_INT(p->sample[NSAMPLES - 1]->n_location_id, DEPTH);
	CHECK_EQ_INT(p->sample[NSAMPLES - 1]->location_id[DEPTH - 1],
		     stack[DEPTH - 1]);
	check_bytes_label(p, p->sample[NSAMPLES - 1],
			  (NSAMPLES - 1) % 4096);
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(gz);
	pprof__free(b);
}

int main(void)
{
	char dir[] = "/tmp/test-pprof.XXXXXX";

	CHECK(mkdtemp(dir) != NULL);
	test_strings();
	test_bad_arguments();
	test_roundtrip();
	test_write(dir);
	test_go_pprof(dir);
	test_scale();
	CHECK_EQ_INT(rmdir(dir), 0);	/* empty: nothing was left behind */
	CHECK_SUMMARY("test-pprof");
	return 0;
}
