// SPDX-License-Identifier: MIT
/*
 * nofp-calls - allocations four calls deep in code built without frame
 * pointers (the Makefile builds nofp-* with -O2 -fomit-frame-pointer), for
 * the unwinding tests: main -> level1 -> level2 -> level3 -> leaf_alloc ->
 * malloc.  A frame-pointer walk cannot see past leaf_alloc; DWARF
 * unwinding sees the whole chain.  level2 keeps STACK_PAD bytes of its own
 * on the stack, so a small --stack-bytes copy ends inside it ([truncated]).
 *
 *   nofp-calls [ROUNDS [SECONDS]]
 *
 * ROUNDS (default 400) blocks of 64 KiB are allocated and kept; with
 * SECONDS, the program then frees and allocates one block a millisecond
 * for that long (an attach target), printing "ready" first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BLOCK		(64 * 1024)
#define STACK_PAD	4096
#define KEEP		4096

#define NOIPA __attribute__((noipa))

static void *keep[KEEP];
static volatile unsigned char sink;

NOIPA void *leaf_alloc(size_t n)
{
	unsigned char *p = malloc(n);

	if (p)
		memset(p, 1, n);
	return p;
}

NOIPA void *level3(size_t n)
{
	unsigned char *p = leaf_alloc(n);

	sink = p ? p[0] : 0;	/* not a tail call */
	return p;
}

NOIPA void *level2(size_t n)
{
	volatile unsigned char pad[STACK_PAD];
	unsigned char *p;

	pad[0] = 1;
	pad[STACK_PAD - 1] = 2;
	p = level3(n);
	sink = (unsigned char)(pad[0] + pad[STACK_PAD - 1] + (p ? p[1] : 0));
	return p;
}

NOIPA void *level1(size_t n)
{
	unsigned char *p = level2(n);

	sink = p ? p[2] : 0;
	return p;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 400;
	double seconds = argc > 2 ? atof(argv[2]) : 0;
	struct timespec ms = { 0, 1000000 }, start, now;
	int i, kept = 0;

	if (rounds < 0 || rounds > KEEP)
		rounds = KEEP;
	for (i = 0; i < rounds; i++)
		if ((keep[kept] = level1(BLOCK)))
			kept++;
	if (seconds > 0) {
		printf("ready\n");
		fflush(stdout);
		clock_gettime(CLOCK_MONOTONIC, &start);
		for (i = 0;; i++) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec - start.tv_sec +
			    (now.tv_nsec - start.tv_nsec) / 1e9 >= seconds)
				break;
			if (kept) {
				free(keep[i % kept]);
				keep[i % kept] = level1(BLOCK);
			}
			nanosleep(&ms, NULL);
		}
	}
	printf("kept %d blocks\n", kept);
	return 0;
}
