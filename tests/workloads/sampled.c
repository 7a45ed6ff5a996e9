// SPDX-License-Identifier: MIT
/*
 * sampled.c - large totals for checking the sampler's estimates at the
 * default rate (tests/e2e/run-sampled.sh).
 *
 *   sampled THREADS BIG_BLOCKS SMALL_BLOCKS
 *
 * Each of THREADS threads, interleaved so that the three sites mix:
 *
 *   big_churn   BIG_BLOCKS mallocs of 64 KiB, each freed at once
 *   big_keep    BIG_BLOCKS mallocs of 64 KiB, kept to the end
 *   small_churn SMALL_BLOCKS mallocs of 128 bytes, each freed at once
 *
 * Kept memory is never written (only malloc's own header is), so a GiB of
 * it costs little resident memory.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define BIG   65536
#define SMALL 128

static long big_blocks, small_blocks;

struct worker {
	pthread_t thread;
	void **kept;
	long nkept;
	int bad;
};

__attribute__((noinline)) static void big_churn(struct worker *w)
{
	volatile unsigned char *p = malloc(BIG);

	if (!p) {
		w->bad = 1;
		return;
	}
	p[0] = 1;
	free((void *)p);
}

__attribute__((noinline)) static void big_keep(struct worker *w)
{
	void *p = malloc(BIG);

	if (!p) {
		w->bad = 1;
		return;
	}
	w->kept[w->nkept++] = p;
}

__attribute__((noinline)) static void small_churn(struct worker *w)
{
	volatile unsigned char *p = malloc(SMALL);

	if (!p) {
		w->bad = 1;
		return;
	}
	p[SMALL - 1] = 1;
	free((void *)p);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	long i, j = 0, per = small_blocks / big_blocks;

	for (i = 0; i < big_blocks; i++) {
		long k;

		big_churn(w);
		big_keep(w);
		for (k = 0; k < per && j < small_blocks; k++, j++)
			small_churn(w);
	}
	for (; j < small_blocks; j++)
		small_churn(w);
	return NULL;
}

int main(int argc, char **argv)
{
	struct worker *workers;
	int nthreads, i, bad = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: sampled THREADS BIG_BLOCKS SMALL_BLOCKS\n");
		return 2;
	}
	nthreads = atoi(argv[1]);
	big_blocks = atol(argv[2]);
	small_blocks = atol(argv[3]);
	if (nthreads < 1 || big_blocks < 1 || small_blocks < 0)
		return 2;
	workers = calloc((size_t)nthreads, sizeof(*workers));
	if (!workers)
		return 1;
	for (i = 0; i < nthreads; i++) {
		workers[i].kept = calloc((size_t)big_blocks, sizeof(void *));
		if (!workers[i].kept ||
		    pthread_create(&workers[i].thread, NULL, worker_main,
				   &workers[i]))
			return 1;
	}
	for (i = 0; i < nthreads; i++) {
		pthread_join(workers[i].thread, NULL);
		bad |= workers[i].bad;
	}
	printf("sampled: %d threads, %ld x %d B churned and kept, %ld x %d B churned\n",
	       nthreads, big_blocks, BIG, small_blocks, SMALL);
	return bad;
}
