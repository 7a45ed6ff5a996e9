// SPDX-License-Identifier: MIT
/*
 * stress-lib.c - the library that `stress dlstorm` (tests/workloads/
 * stress.c) loads and unloads hundreds of times; tests/e2e/
 * run-agent-stress.sh builds it with cc -shared -fPIC -DSTRESS_LIBRARY.
 *
 * Everything in it allocates: its constructor mallocs a table that its
 * destructor frees (so each real load and unload allocates and frees), its
 * thread-local variables live in dynamic TLS (which glibc mallocs per
 * thread and module), and
 *
 *   stress_lib_round(seed, &handed)
 *
 * mallocs, callocs, reallocs, checks and frees six blocks, returns a
 * checksum of them, and hands out one more block (100 + seed % 50 bytes,
 * byte i = seed + 7i + i / 256, as stress.c's fill) for the caller to free
 * after dlclose.
 *
 * The Makefile builds every tests/workloads/X.c into a program, so without
 * STRESS_LIBRARY this file also has a main that calls stress_lib_round.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned long stress_lib_round(unsigned int seed, void **handed);

static unsigned char *table;
static __thread unsigned int tls_calls;
static __thread unsigned char tls_scratch[256];

__attribute__((constructor)) static void lib_load(void)
{
	unsigned int i;

	table = malloc(256);
	if (table)
		for (i = 0; i < 256; i++)
			table[i] = (unsigned char)(i * 3);
}

__attribute__((destructor)) static void lib_unload(void)
{
	free(table);
	table = NULL;
}

unsigned long stress_lib_round(unsigned int seed, void **handed)
{
	unsigned long sum = 0;
	unsigned char *p, *q;
	unsigned int j;
	size_t n, i;

	if (!table)
		return 0;
	tls_calls++;
	tls_scratch[seed % 256] = (unsigned char)seed;
	for (j = 0; j < 6; j++) {
		n = (seed * 29u + j * 301u) % 2500 + 1;
		p = j % 2 ? calloc(1, n) : malloc(n);
		if (!p)
			return 0;
		for (i = 0; i < n; i++)
			p[i] = table[(i + j) % 256];
		q = realloc(p, n + 100);
		if (!q) {
			free(p);
			return 0;
		}
		for (i = 0; i < n; i++)
			sum += q[i] == table[(i + j) % 256] ? q[i] : 100000;
		free(q);
	}
	n = 100 + seed % 50;
	p = malloc(n);
	if (p)
		for (i = 0; i < n; i++)
			p[i] = (unsigned char)(seed + i * 7 + (i >> 8));
	*handed = p;
	return sum + tls_scratch[seed % 256] + (tls_calls > 0);
}

#ifndef STRESS_LIBRARY
int main(void)
{
	void *handed = NULL;

	printf("stress-lib: checksum %lu\n", stress_lib_round(1, &handed));
	free(handed);
	return 0;
}
#endif
