/* SPDX-License-Identifier: MIT */
/*
 * test-gunzip.c - the streaming gunzip (tracer/output/gzip.c) as a reader of a
 * pipe sees it: input and output in pieces of any size.
 *
 *  - several members (gzip__compress past 1 MiB, an empty member, members
 *    put end to end) come out whole whatever the pieces: one byte of
 *    input or output at a time, odd sizes, everything at once; so a
 *    member's magic split between two pieces is found, and the counts of
 *    bytes in and out are exact;
 *  - input that has not ended is waited for, never taken as truncated;
 *  - what follows the last member is ignored unless it starts like one:
 *    a lone 0x1f at the end, a second member's header cut short, a member
 *    cut anywhere are "truncated"; a changed byte is "corrupt".
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "tracer/output/gzip.h"

/* What came out of one run, and how it ended. */
struct run {
	uint8_t *out;
	size_t len;
	int err;
	uint64_t in_used;
	char why[128];
};

/*
 * Gunzip in[0..len) handed over in pieces of in_step bytes (the last one
 * marked), with out_step bytes of room at a time.  Every step must make
 * progress or ask for what it lacks.
 */
static struct run gunzip_pieces(const uint8_t *in, size_t len, size_t in_step,
				size_t out_step, size_t max_out)
{
	struct gunzip g;
	struct run r = { 0 };
	size_t at = 0;

	r.out = malloc(max_out + out_step);
	CHECK(r.out != NULL);
	CHECK_EQ_INT(gunzip__init(&g), 0);
	for (;;) {
		size_t n = len - at < in_step ? len - at : in_step;
		bool last = at + n == len;
		size_t used = 0, made = 0;

		r.err = gunzip__step(&g, in + at, n, last, &used, r.out + r.len,
				     out_step, &made, r.why, sizeof(r.why));
		CHECK(used <= n && made <= out_step);
		at += used;
		r.len += made;
		if (r.err)
			break;
		/* 0: it wanted all the input there was, or more room. */
		CHECK(used == n || made == out_step);
		CHECK(!last || made == out_step);
		CHECK(r.len <= max_out);
	}
	r.in_used = g.in_used;
	CHECK_EQ_INT(g.out_made, r.len);
	gunzip__fini(&g);
	return r;
}

static void expect_whole(const uint8_t *gz, size_t gz_len, const uint8_t *want,
			 size_t want_len, size_t in_step, size_t out_step)
{
	struct run r = gunzip_pieces(gz, gz_len, in_step, out_step, want_len);

	if (r.err != 1)
		fprintf(stderr, "in %zu out %zu: %d %s\n", in_step, out_step,
			r.err, r.why);
	CHECK_EQ_INT(r.err, 1);
	CHECK_EQ_INT(r.len, want_len);
	CHECK(memcmp(r.out, want, want_len) == 0);
	free(r.out);
}

static void expect_error(const uint8_t *gz, size_t gz_len, size_t in_step,
			 const char *words)
{
	struct run r = gunzip_pieces(gz, gz_len, in_step, 4096, 16u << 20);

	CHECK_EQ_INT(r.err, -EBADMSG);
	if (!strstr(r.why, words)) {
		fprintf(stderr, "reason '%s' lacks '%s'\n", r.why, words);
		CHECK(!"reason");
	}
	free(r.out);
}

static uint8_t *text_of(size_t n)
{
	uint8_t *text = malloc(n + 1);
	uint32_t x = 1;

	CHECK(text != NULL);
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245 + 12345;
		text[i] = (uint8_t)('a' + (x >> 16) % 16);
	}
	return text;
}

/* a + b, freshly allocated (with room for 4 more bytes). */
static uint8_t *cat(const uint8_t *a, size_t a_len, const uint8_t *b,
		    size_t b_len)
{
	uint8_t *out = malloc(a_len + b_len + 4);

	CHECK(out != NULL);
	memcpy(out, a, a_len);
	memcpy(out + a_len, b, b_len);
	return out;
}

static void test_pieces(void)
{
	size_t n = (2u << 20) + 777, gz_len, small_len, empty_len, both_len;
	uint8_t *text = text_of(n), *gz, *small, *empty, *both, *want;
	static const size_t steps[][2] = {
		{ 1, 1 }, { 1, 4096 }, { 2, 3 }, { 7, 1 }, { 4096, 5 },
		{ 65536, 1u << 20 }, { SIZE_MAX, SIZE_MAX },
	};
	struct run r;

	CHECK_EQ_INT(gzip__compress(text, n, &gz, &gz_len), 0);
	CHECK_EQ_INT(gzip__compress(text, 5000, &small, &small_len), 0);
	CHECK_EQ_INT(gzip__compress(text, 0, &empty, &empty_len), 0);
	/* Three members of gzip__compress, an empty one, then 5000 bytes. */
	both = cat(gz, gz_len, empty, empty_len);
	both_len = gz_len + empty_len;
	{
		uint8_t *more = cat(both, both_len, small, small_len);

		free(both);
		both = more;
		both_len += small_len;
	}
	want = cat(text, n, text, 5000);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		size_t in = steps[i][0] > both_len ? both_len : steps[i][0];
		size_t out = steps[i][1] > n + 5000 ? n + 5000 : steps[i][1];

		/* One byte at a time through 2 MiB is slow: the small file
		 * alone then, which still has a member boundary after the
		 * empty one. */
		if (in * out < 64) {
			uint8_t *two = cat(empty, empty_len, small, small_len);

			expect_whole(two, empty_len + small_len, text, 5000,
				     in, out);
			free(two);
			continue;
		}
		expect_whole(both, both_len, want, n + 5000, in, out);
	}
	/* Exact counts: every byte of input was used. */
	r = gunzip_pieces(both, both_len, 4096, 4096, n + 5000);
	CHECK_EQ_INT(r.err, 1);
	CHECK_EQ_INT(r.in_used, both_len);
	free(r.out);

	/* Input that stops mid-member without being the last: a wait. */
	{
		struct gunzip g;
		uint8_t out[8192];
		size_t used, made;
		char why[64];

		CHECK_EQ_INT(gunzip__init(&g), 0);
		CHECK_EQ_INT(gunzip__step(&g, small, small_len / 2, false,
					  &used, out, sizeof(out), &made, why,
					  sizeof(why)), 0);
		CHECK_EQ_INT(used, small_len / 2);
		/* Then nothing, still not the last: a wait again. */
		CHECK_EQ_INT(gunzip__step(&g, NULL, 0, false, &used, out,
					  sizeof(out), &made, why,
					  sizeof(why)), 0);
		CHECK_EQ_INT(used, 0);
		/* The end now: cut short. */
		CHECK_EQ_INT(gunzip__step(&g, NULL, 0, true, &used, out,
					  sizeof(out), &made, why,
					  sizeof(why)), -EBADMSG);
		CHECK(strstr(why, "truncated") != NULL);
		gunzip__fini(&g);
	}
	free(text);
	free(gz);
	free(small);
	free(empty);
	free(both);
	free(want);
}

static void test_ends(void)
{
	uint8_t *text = text_of(5000), *gz, *buf;
	size_t gz_len;

	CHECK_EQ_INT(gzip__compress(text, 5000, &gz, &gz_len), 0);
	buf = cat(gz, gz_len, (const uint8_t *)"", 0);

	/* Not a member: ignored, in one piece or one byte at a time. */
	memcpy(buf + gz_len, "junk", 4);
	expect_whole(buf, gz_len + 4, text, 5000, 4096, 4096);
	expect_whole(buf, gz_len + 4, text, 5000, 1, 4096);
	buf[gz_len] = 0x1f;
	buf[gz_len + 1] = 0x00;
	expect_whole(buf, gz_len + 2, text, 5000, 1, 4096);

	/* The start of another member: cut short. */
	expect_error(buf, gz_len + 1, 4096, "truncated");
	expect_error(buf, gz_len + 1, 1, "truncated");
	buf[gz_len + 1] = 0x8b;
	expect_error(buf, gz_len + 2, 4096, "truncated");
	expect_error(buf, gz_len + 2, 1, "truncated");

	/* A member cut anywhere: in its header, its data, its trailer. */
	expect_error(gz, 5, 4096, "truncated");
	expect_error(gz, gz_len / 2, 3, "truncated");
	expect_error(gz, gz_len - 1, 4096, "truncated");

	/* A byte changed in the trailer's CRC. */
	memcpy(buf, gz, gz_len);
	buf[gz_len - 6] ^= 0x55;
	expect_error(buf, gz_len, 4096, "corrupt");
	free(text);
	free(gz);
	free(buf);
}

int main(void)
{
	test_pieces();
	test_ends();
	CHECK_SUMMARY("test-gunzip");
	return 0;
}
