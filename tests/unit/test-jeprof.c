// SPDX-License-Identifier: MIT
/*
 * test-jeprof.c - unit test of tracer/output/jeprof_dump.c: jemalloc's heap
 * profile dump read strictly, and jeprof's unbiasing.
 *
 * A dump as jemalloc 5.3 writes it (threads with names, stacks with their
 * per-thread lines, a frame written "0", the mapped libraries after) is
 * read whole; variations jemalloc also writes (no MAPPED_LIBRARIES, no
 * final newline, blank lines) are read; and each way a dump can be wrong
 * is refused with the line it is on: another format, a period that is no
 * power of two, counts out of form or that do not go together, a number
 * past 64 bits, a frame out of form, past 16 hex digits or outside user
 * space, a stack too deep, a stack without its counts, a line too long, a
 * NUL, a control character in a thread's name.  The unbiasing is checked
 * against what jemalloc itself counts: 2000 blocks of 64 KiB sampled
 * every 4 KiB on average, as 5.3 writes them (prof_unbias), come out as
 * 2000 x 65536 bytes; and a raw count against the formula.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tracer/output/jeprof_dump.h"

static const char good[] =
	"heap_v2/4096\n"
	"  t*: 2003: 131160385 [0: 0]\n"
	"  t0: 2002: 131078465 [0: 0] main thread\n"
	"  t7: 1: 81920 [0: 0]\n"
	"@ 0x7fdda3ca2630 0x7fdda3ca2d21 0x555c3431b162 0\n"
	"  t*: 2000: 131071985 [0: 0]\n"
	"  t0: 2000: 131071985 [0: 0]\n"
	"@ 0x7fdda3ca2630\n"
	"  t*: 1: 81920 [3: 245760]\n"
	"  t7: 1: 81920 [3: 245760]\n"
	"\n"
	"MAPPED_LIBRARIES:\n"
	"555c3431a000-555c3431b000 r--p 00000000 fe:00 10955087 /tmp/t\n";

/* Parse text; 0 or the error, why filled. */
static int parse(const char *text, struct jeprof_dump *d, char *why,
		 size_t n)
{
	int err;

	why[0] = 0;
	err = jeprof_dump__parse(d, text, strlen(text), why, n);
	return err;
}

static void refused(const char *text, const char *what, int line)
{
	struct jeprof_dump d;
	char why[256], at[32];

	CHECK_EQ_INT(parse(text, &d, why, sizeof(why)), -EINVAL);
	if (!strstr(why, what))
		fprintf(stderr, "want \"%s\" in \"%s\"\n", what, why);
	CHECK(strstr(why, what) != NULL);
	snprintf(at, sizeof(at), "(line %d)", line);
	if (!strstr(why, at))
		fprintf(stderr, "want \"%s\" in \"%s\"\n", at, why);
	CHECK(strstr(why, at) != NULL);
	jeprof_dump__fini(&d);
}

static void check_good(void)
{
	struct jeprof_dump d;
	char why[256];

	CHECK_EQ_INT(parse(good, &d, why, sizeof(why)), 0);
	CHECK_EQ_INT(d.period, 4096);
	CHECK_EQ_INT(d.objs, 2003);
	CHECK_EQ_INT(d.bytes, 131160385);
	CHECK_EQ_INT(d.nstacks, 2);
	CHECK_EQ_INT(d.stacks[0].nframes, 4);
	CHECK_EQ_INT(d.frames[d.stacks[0].frames_at], 0x7fdda3ca2630);
	CHECK_EQ_INT(d.frames[d.stacks[0].frames_at + 2], 0x555c3431b162);
	CHECK_EQ_INT(d.frames[d.stacks[0].frames_at + 3], 0);
	CHECK_EQ_INT(d.stacks[0].objs, 2000);
	CHECK_EQ_INT(d.stacks[0].bytes, 131071985);
	CHECK_EQ_INT(d.stacks[1].nframes, 1);
	CHECK_EQ_INT(d.stacks[1].accum_objs, 3);
	CHECK_EQ_INT(d.stacks[1].accum_bytes, 245760);
	jeprof_dump__fini(&d);

	/* no mapped libraries, blank lines, no final newline */
	CHECK_EQ_INT(parse("heap_v2/524288\n  t*: 1: 8 [0: 0]\n\n"
			   "@ 0x10\n  t*: 1: 8 [0: 0]\n\n\n"
			   "@ 0x20 0x30\n  t*: 1: 8 [0: 0]",
			   &d, why, sizeof(why)), 0);
	CHECK_EQ_INT(d.nstacks, 2);
	CHECK_EQ_INT(d.stacks[1].nframes, 2);
	jeprof_dump__fini(&d);
	/* an empty heap; a stack of no frames */
	CHECK_EQ_INT(parse("heap_v2/1\n  t*: 0: 0 [0: 0]\n@\n  t*: 0: 0 [0: 0]\n",
			   &d, why, sizeof(why)), 0);
	CHECK_EQ_INT(d.nstacks, 1);
	CHECK_EQ_INT(d.stacks[0].nframes, 0);
	jeprof_dump__fini(&d);
}

/* A dump of one stack of n frames (malloc'd). */
static char *deep_stack(size_t n)
{
	char *text = malloc(64 + n * 8);
	size_t i;

	CHECK(text != NULL);
	strcpy(text, "heap_v2/4096\n  t*: 1: 8 [0: 0]\n@");
	for (i = 0; i < n; i++)
		strcat(text, " 0x1000");
	strcat(text, "\n  t*: 1: 8 [0: 0]\n");
	return text;
}

static void check_refused(void)
{
	static const struct {
		const char *text, *what;
		int line;
	} cases[] = {
		{ "heap profile: 1: 8 [1: 8] @ heap_v2/524288\n", "not a jemalloc 4 or 5 heap profile", 1 },
		{ "", "not a jemalloc 4 or 5 heap profile", 0 },
		{ "heap_v2/3000\n  t*: 0: 0 [0: 0]\n", "power of two", 1 },
		{ "heap_v2/0\n", "power of two", 1 },
		{ "heap_v2/4096 \n", "power of two", 1 },
		{ "heap_v2/4096\n@ 0x10\n", "totals", 2 },
		{ "heap_v2/4096\n  t*: 1: 8\n", "counts not as", 2 },
		{ "heap_v2/4096\n  t*: -1: 8 [0: 0]\n", "counts not as", 2 },
		{ "heap_v2/4096\n  t*: 1: 18446744073709551616 [0: 0]\n", "counts not as", 2 },
		{ "heap_v2/4096\n  t*: 1: 0 [0: 0]\n", "do not go with", 2 },
		{ "heap_v2/4096\n  t*: 9: 8 [0: 0]\n", "do not go with", 2 },
		{ "heap_v2/4096\n  t*: 1: 8 [1: 0]\n", "do not go with", 2 },
		{ "heap_v2/4096\n  t*: 1: 8 [0: 0] x\n", "after the counts", 2 },
		{ "heap_v2/4096\n  t*: 1: 8 [0: 0]\n  t1: 1: 8 [0: 0] a\x01\n", "control character", 3 },
		{ "heap_v2/4096\n  t*: 1: 8 [0: 0]\n  tx: 1: 8 [0: 0]\n", "thread line", 3 },
		{ "heap_v2/4096\n  t*: 1: 8 [0: 0]\nhello\n", "no stack", 3 },
		{ "heap_v2/4096\n  t*: 1: 8 [0: 0]\n@ 0x10\n", "without its", 3 },
		{ "heap_v2/4096\n  t*: 1: 8 [0: 0]\n@ 0x10\n  t1: 1: 8 [0: 0]\n", "without its", 4 },
		{ "heap_v2/4096\n  t*: 1: 8 [0: 0]\n@ 0x10\n  t*: 1: 8 [0: 0] x\n", "after the counts", 4 },
		{ "heap_v2/4096\n  t*: 1: 8 [0: 0]\n@ 0xABC\n  t*: 1: 8 [0: 0]\n", "a frame not as", 3 },
		{ "heap_v2/4096\n  t*: 1: 8 [0: 0]\n@ 10\n  t*: 1: 8 [0: 0]\n", "a frame not as", 3 },
		{ "heap_v2/4096\n  t*: 1: 8 [0: 0]\n@ 0x\n  t*: 1: 8 [0: 0]\n", "a frame not as", 3 },
		{ "heap_v2/4096\n  t*: 1: 8 [0: 0]\n@  0x10\n  t*: 1: 8 [0: 0]\n", "a frame not as", 3 },
		{ "heap_v2/4096\n  t*: 1: 8 [0: 0]\n@ 0x10000000000000000\n  t*: 1: 8 [0: 0]\n", "a frame not as", 3 },
		{ "heap_v2/4096\n  t*: 1: 8 [0: 0]\n@ 0xffffffffffffe000\n  t*: 1: 8 [0: 0]\n", "outside user space", 3 },
		{ "heap_v2/4096\n  t*: 1: 8 [0: 0]\n@ 0x10\0\n  t*: 1: 8 [0: 0]\n", "without its", 3 },	/* strlen stops at the NUL */
	};
	char *deep, *longline;
	size_t i, n;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		refused(cases[i].text, cases[i].what, cases[i].line);

	/* 257 frames: too deep; 256: fine */
	deep = deep_stack(257);
	refused(deep, "too deep", 3);
	free(deep);
	deep = deep_stack(256);
	{
		struct jeprof_dump d;
		char why[256];

		CHECK_EQ_INT(parse(deep, &d, why, sizeof(why)), 0);
		CHECK_EQ_INT(d.stacks[0].nframes, 256);
		jeprof_dump__fini(&d);
	}
	free(deep);

	/* a line past JEPROF_MAX_LINE */
	longline = malloc(JEPROF_MAX_LINE + 64);
	CHECK(longline != NULL);
	strcpy(longline, "heap_v2/4096\n  t*: 1: 8 [0: 0]\n  t1: 1: 8 [0: 0] ");
	n = strlen(longline);
	memset(longline + n, 'a', JEPROF_MAX_LINE);
	longline[n + JEPROF_MAX_LINE] = 0;
	refused(longline, "too long", 3);
	free(longline);

	/* a NUL inside, as the tracer reads it (a length, not a string) */
	{
		static const char nul[] = "heap_v2/4096\n  t*: 1: 8 [0: 0]\n  t1: 1: 8 [0: 0] a\0b\n";
		struct jeprof_dump d;
		char why[256];

		CHECK_EQ_INT(jeprof_dump__parse(&d, nul, sizeof(nul) - 1, why,
						sizeof(why)), -EINVAL);
		CHECK(strstr(why, "NUL") != NULL);
		jeprof_dump__fini(&d);
	}
}

static void check_scale(void)
{
	double objs, bytes, f;

	/* as jemalloc 5.3 wrote 2000 live blocks of 64 KiB (prof_unbias) */
	jeprof__scale(2000, 131071985, 4096, &objs, &bytes);
	CHECK(fabs(objs - 2000) < 0.01);
	CHECK(fabs(bytes - 2000.0 * 65536) < 100);
	/* raw counts (prof_unbias:false, or jemalloc before 5.3): pprof's
	 * estimate, 1 / (1 - e^(-avg/period)) */
	jeprof__scale(4, 2048, 524288, &objs, &bytes);
	f = 1.0 / (1.0 - exp(-512.0 / 524288.0));
	CHECK(fabs(objs - 4 * f) < 1e-6 * 4 * f);
	CHECK(fabs(bytes - 2048 * f) < 1e-6 * 2048 * f);
	CHECK(objs > 4000 && objs < 4200);	/* ~1024 per sample */
	jeprof__scale(0, 0, 4096, &objs, &bytes);
	CHECK(objs == 0 && bytes == 0);
}

int main(void)
{
	check_good();
	check_refused();
	check_scale();
	CHECK_SUMMARY("test-jeprof");
	return 0;
}
