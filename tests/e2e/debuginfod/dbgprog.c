// SPDX-License-Identifier: MIT
/*
 * dbgprog.c - the program run-symbolize-debuginfod.sh profiles: built with
 * -g -O2, its debug info split off and served by a debuginfod server, the
 * binary stripped of DWARF (it keeps .symtab).
 *
 * Three allocation sites the test looks for by name and line.  Each line
 * that calls the allocator (or an inlined function that does) carries a
 * "site:" marker comment; the test finds the expected line numbers by
 * grepping for the markers, so editing this file cannot silently break it.
 *
 *   dbg_site_alpha   malloc(100), 10 times           kept
 *   dbg_site_beta    calls dbg_inline_make, which is always inlined and
 *                    calls calloc(1, 300), 5 times   kept
 *                    (one location, two lines: dbg_inline_make at its
 *                    calloc, then dbg_site_beta at the call)
 *   dbg_site_gamma   malloc(7000) once               freed
 *
 * Everything allocated is kept in a global array, so the sites show up in
 * the in-use view; the sites are noinline so each has its own frame.
 */
#include <stdio.h>
#include <stdlib.h>

#define MAX_KEPT 64

void *dbg_kept[MAX_KEPT];
static int nkept;

static void keep(void *p)
{
	if (!p || nkept == MAX_KEPT) {
		fprintf(stderr, "dbgprog: allocation failed\n");
		exit(1);
	}
	dbg_kept[nkept++] = p;
}

__attribute__((noinline)) void dbg_site_alpha(size_t n)
{
	void *p = malloc(n);	/* site: alpha */

	keep(p);
}

static inline __attribute__((always_inline)) void *dbg_inline_make(size_t n)
{
	return calloc(1, n);	/* site: inline */
}

__attribute__((noinline)) void dbg_site_beta(size_t n)
{
	void *p = dbg_inline_make(n);	/* site: beta */

	keep(p);
}

__attribute__((noinline)) void dbg_site_gamma(size_t n)
{
	char *volatile p = malloc(n);	/* site: gamma */

	if (!p)
		exit(1);
	p[0] = 1;
	free(p);
}

int main(void)
{
	int i;

	for (i = 0; i < 10; i++)
		dbg_site_alpha(100);
	for (i = 0; i < 5; i++)
		dbg_site_beta(300);
	dbg_site_gamma(7000);
	printf("dbgprog: %d blocks kept\n", nkept);
	return 0;
}
