// SPDX-License-Identifier: MIT
/*
 * dlsite.c - a shared library with allocation sites, loaded with dlopen by
 * tests/workloads/dlopener.c (tests/e2e/run-dlopen.sh builds it with
 * cc -shared -fPIC -DDLSITE_LIBRARY).
 *
 * dlsite_run(n, kept) calls
 *   dlsite_keep   n mallocs of 3000 bytes, stored in kept[0..n-1]
 *   dlsite_churn  n mallocs of 500 bytes, each freed at once
 * and returns a checksum of what it wrote.
 *
 * The Makefile builds every tests/workloads/X.c into a program, so without
 * DLSITE_LIBRARY this file also has a main that runs dlsite_run directly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned long dlsite_run(int n, void **kept);

__attribute__((noinline)) static unsigned long dlsite_keep(int n, void **kept)
{
	unsigned long sum = 0;
	int i;

	for (i = 0; i < n; i++) {
		unsigned char *p = malloc(3000);

		if (!p)
			return 0;
		memset(p, i, 3000);
		sum += p[2999];
		kept[i] = p;
	}
	return sum;
}

__attribute__((noinline)) static unsigned long dlsite_churn(int n)
{
	unsigned long sum = 0;
	int i;

	for (i = 0; i < n; i++) {
		unsigned char *volatile p = malloc(500);

		if (!p)
			return 0;
		p[499] = (unsigned char)(i * 7);
		sum += p[499];
		free(p);
	}
	return sum;
}

__attribute__((visibility("default"))) unsigned long dlsite_run(int n, void **kept)
{
	return dlsite_keep(n, kept) + dlsite_churn(n);
}

#ifndef DLSITE_LIBRARY
int main(void)
{
	static void *kept[100];

	printf("dlsite: checksum %lu\n", dlsite_run(100, kept));
	return 0;
}
#endif
