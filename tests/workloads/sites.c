// SPDX-License-Identifier: MIT
/*
 * sites.c - known allocation sites on several threads, for exact checks at
 * --rate 1 (tests/e2e/run-exact.sh computes the expected totals from the
 * arguments, with the same formulas as the comments below).
 *
 *   sites THREADS N ROUNDS        (N a multiple of 8)
 *
 * Before main, a constructor keeps one block of CTOR_SIZE at ctor_site
 * (the agent must record from the program's very start).  Then each of
 * THREADS threads calls:
 *
 *   site_keep     N mallocs, sizes 24, 100, 1000, 5000 in turn, all kept
 *   site_churn    N mallocs of 32 + 16 * (i % 8) bytes, each freed at once
 *   site_calloc   N callocs of (i % 4 + 1) x 48 bytes; the even i are freed
 *   site_realloc  ROUNDS times: realloc a NULL pointer through the sizes
 *                 16, 100, 1000, 10000, 40000, 20000 (last one shrinks),
 *                 keeping the last block
 *
 * Every block is filled and checked, so a broken hook shows up as a wrong
 * checksum or a non-zero exit.  Nothing kept is freed: it is in use at exit.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTOR_SIZE 12345

static const size_t keep_sizes[4] = { 24, 100, 1000, 5000 };
static const size_t realloc_sizes[] = { 16, 100, 1000, 10000, 40000, 20000 };
#define NREALLOC (sizeof(realloc_sizes) / sizeof(realloc_sizes[0]))

static void *ctor_block;
static int n_per_thread, rounds;

struct worker {
	pthread_t thread;
	int index;
	void **kept;		/* n_per_thread + n_per_thread / 2 + rounds */
	size_t nkept;
	uint64_t sum;
	int bad;
};

__attribute__((constructor)) __attribute__((noinline)) static void ctor_site(void)
{
	ctor_block = malloc(CTOR_SIZE);
	if (ctor_block)
		memset(ctor_block, 0x5a, CTOR_SIZE);
}

static uint64_t fill(void *p, size_t n, unsigned int seed)
{
	unsigned char *c = p;
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < n; i += 64) {
		c[i] = (unsigned char)(seed + i);
		sum += c[i];
	}
	return sum;
}

__attribute__((noinline)) static void site_keep(struct worker *w)
{
	int i;

	for (i = 0; i < n_per_thread; i++) {
		size_t size = keep_sizes[i % 4];
		void *p = malloc(size);

		if (!p) {
			w->bad = 1;
			return;
		}
		w->sum += fill(p, size, (unsigned int)i);
		w->kept[w->nkept++] = p;
	}
}

__attribute__((noinline)) static void site_churn(struct worker *w)
{
	int i;

	for (i = 0; i < n_per_thread; i++) {
		size_t size = 32 + 16 * (size_t)(i % 8);
		void *p = malloc(size);

		if (!p) {
			w->bad = 1;
			return;
		}
		w->sum += fill(p, size, (unsigned int)i);
		free(p);
	}
}

__attribute__((noinline)) static void site_calloc(struct worker *w)
{
	int i;

	for (i = 0; i < n_per_thread; i++) {
		size_t n = (size_t)(i % 4) + 1, k;
		unsigned char *p = calloc(n, 48);

		if (!p) {
			w->bad = 1;
			return;
		}
		for (k = 0; k < n * 48; k++)
			if (p[k])
				w->bad = 1;	/* calloc must zero */
		w->sum += fill(p, n * 48, (unsigned int)i);
		if (i % 2 == 0)
			free(p);
		else
			w->kept[w->nkept++] = p;
	}
}

__attribute__((noinline)) static void site_realloc(struct worker *w)
{
	int r;
	size_t i;

	for (r = 0; r < rounds; r++) {
		unsigned char *p = NULL;

		for (i = 0; i < NREALLOC; i++) {
			unsigned char *q = realloc(p, realloc_sizes[i]);

			if (!q) {
				w->bad = 1;
				free(p);
				return;
			}
			/* the first 16 bytes survive every step */
			if (i && (q[0] != (unsigned char)r || q[15] != 0xee))
				w->bad = 1;
			q[0] = (unsigned char)r;
			q[15] = 0xee;
			p = q;
		}
		w->sum += p[0];
		w->kept[w->nkept++] = p;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	site_keep(w);
	site_churn(w);
	site_calloc(w);
	site_realloc(w);
	return NULL;
}

int main(int argc, char **argv)
{
	struct worker *workers;
	uint64_t sum = 0;
	int nthreads, i, bad = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: sites THREADS N ROUNDS\n");
		return 2;
	}
	nthreads = atoi(argv[1]);
	n_per_thread = atoi(argv[2]);
	rounds = atoi(argv[3]);
	if (nthreads < 1 || n_per_thread < 8 || n_per_thread % 8 || rounds < 1) {
		fprintf(stderr, "sites: bad arguments\n");
		return 2;
	}
	if (!ctor_block || ((unsigned char *)ctor_block)[CTOR_SIZE - 1] != 0x5a) {
		fprintf(stderr, "sites: constructor allocation failed\n");
		return 1;
	}
	workers = calloc((size_t)nthreads, sizeof(*workers));
	if (!workers)
		return 1;
	for (i = 0; i < nthreads; i++) {
		workers[i].index = i;
		workers[i].kept = calloc((size_t)n_per_thread * 2 +
					 (size_t)rounds, sizeof(void *));
		if (!workers[i].kept ||
		    pthread_create(&workers[i].thread, NULL, worker_main,
				   &workers[i])) {
			fprintf(stderr, "sites: cannot start thread %d\n", i);
			return 1;
		}
	}
	for (i = 0; i < nthreads; i++) {
		pthread_join(workers[i].thread, NULL);
		sum += workers[i].sum;
		bad |= workers[i].bad;
	}
	printf("sites: %d threads x %d allocations, %d realloc rounds, checksum %llu\n",
	       nthreads, n_per_thread, rounds, (unsigned long long)sum);
	if (bad) {
		fprintf(stderr, "sites: data check failed\n");
		return 1;
	}
	return 0;
}
