// SPDX-License-Identifier: MIT
/*
 * manystacks.c - a program that allocates from 2^LEVELS distinct call
 * stacks, for the report's large profiles.
 *
 *   manystacks LEVELS
 *
 * Each allocation goes down LEVELS calls, choosing at level k between
 * lNa and lNb by bit k of its number, and allocates 16 + (its number mod
 * 1024) bytes at the bottom, kept until exit: 2^LEVELS stacks.
 * LEVELS is at most 20.
 */
#include <stdio.h>
#include <stdlib.h>

static void **kept;
static unsigned long count;

typedef void (*step_fn)(unsigned long n, int level, int levels);
static step_fn steps[20][2];

static void descend(unsigned long n, int level, int levels)
{
	if (level == levels) {
		kept[count++] = malloc(16 + (n & 1023));
		return;
	}
	steps[level][(n >> level) & 1](n, level + 1, levels);
}

/* two functions per level, never inlined, never tail calls */
#define LEVEL(k)							\
	__attribute__((noinline)) static void l##k##a(unsigned long n,	\
						      int l, int m)	\
	{								\
		descend(n, l, m);					\
		__asm__ volatile("" ::: "memory");			\
	}								\
	__attribute__((noinline)) static void l##k##b(unsigned long n,	\
						      int l, int m)	\
	{								\
		descend(n, l, m);					\
		__asm__ volatile("" ::: "memory");			\
	}
LEVEL(0) LEVEL(1) LEVEL(2) LEVEL(3) LEVEL(4) LEVEL(5) LEVEL(6) LEVEL(7)
LEVEL(8) LEVEL(9) LEVEL(10) LEVEL(11) LEVEL(12) LEVEL(13) LEVEL(14)
LEVEL(15) LEVEL(16) LEVEL(17) LEVEL(18) LEVEL(19)

#define SET(k) steps[k][0] = l##k##a; steps[k][1] = l##k##b;

int main(int argc, char **argv)
{
	int levels = argc > 1 ? atoi(argv[1]) : 17;
	unsigned long i, n;

	if (levels < 1 || levels > 20) {
		fprintf(stderr, "usage: manystacks LEVELS (1 to 20)\n");
		return 2;
	}
	SET(0) SET(1) SET(2) SET(3) SET(4) SET(5) SET(6) SET(7) SET(8)
	SET(9) SET(10) SET(11) SET(12) SET(13) SET(14) SET(15) SET(16)
	SET(17) SET(18) SET(19)
	n = 1ul << levels;
	kept = malloc(n * sizeof(*kept));
	for (i = 0; i < n; i++)
		descend(i, 0, levels);
	printf("%lu stacks\n", n);
	return 0;
}
