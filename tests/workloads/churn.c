// SPDX-License-Identifier: MIT
/*
 * churn.c - many threads allocating as fast as they can, for the tests that
 * overload the tracer (tests/e2e/run-small-ring.sh).
 *
 *   churn THREADS ITERATIONS EXIT_STATUS
 *
 * Each thread keeps a window of 64 blocks; every iteration replaces one of
 * them by a block of a pseudo-random size (16 .. 4111 bytes, from the
 * thread's own generator, so the run is deterministic), filled with a
 * pattern that is read back and summed before the block is freed.  The
 * sum is printed, so a run under the tracer must print exactly what a
 * bare run prints; the program then exits with EXIT_STATUS.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64

static long iterations;

struct worker {
	pthread_t thread;
	unsigned int index;
	uint64_t sum;
	int bad;
};

struct block {
	unsigned char *p;
	size_t size;
	unsigned char tag;
};

static uint32_t next(uint32_t *state)
{
	*state = *state * 1103515245u + 12345u;
	return *state >> 8;
}

/* Read back a block: its pattern must be intact. */
static uint64_t consume(struct worker *w, const struct block *b)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < b->size; i++) {
		if (b->p[i] != (unsigned char)(b->tag + i)) {
			w->bad = 1;
			break;
		}
		sum += b->p[i];
	}
	return sum;
}

__attribute__((noinline)) static void churn_alloc(struct block *b, size_t size,
						  unsigned char tag)
{
	size_t i;

	b->p = malloc(size);
	b->size = size;
	b->tag = tag;
	if (!b->p)
		return;
	for (i = 0; i < size; i++)
		b->p[i] = (unsigned char)(tag + i);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct block window[WINDOW] = { { 0 } };
	uint32_t rng = 0x9e3779b9u * (w->index + 1);
	long i;
	int k;

	for (i = 0; i < iterations; i++) {
		struct block *b = &window[i % WINDOW];

		if (b->p) {
			w->sum += consume(w, b);
			free(b->p);
		}
		churn_alloc(b, 16 + next(&rng) % 4096, (unsigned char)next(&rng));
		if (!b->p) {
			w->bad = 1;
			return NULL;
		}
	}
	for (k = 0; k < WINDOW; k++)
		if (window[k].p) {
			w->sum += consume(w, &window[k]);
			free(window[k].p);
		}
	return NULL;
}

int main(int argc, char **argv)
{
	struct worker *workers;
	uint64_t sum = 0;
	int nthreads, status, i, bad = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: churn THREADS ITERATIONS EXIT_STATUS\n");
		return 2;
	}
	nthreads = atoi(argv[1]);
	iterations = atol(argv[2]);
	status = atoi(argv[3]);
	if (nthreads < 1 || iterations < 1)
		return 2;
	workers = calloc((size_t)nthreads, sizeof(*workers));
	if (!workers)
		return 1;
	for (i = 0; i < nthreads; i++) {
		workers[i].index = (unsigned int)i;
		if (pthread_create(&workers[i].thread, NULL, worker_main,
				   &workers[i]))
			return 1;
	}
	for (i = 0; i < nthreads; i++) {
		pthread_join(workers[i].thread, NULL);
		sum += workers[i].sum;
		bad |= workers[i].bad;
	}
	printf("churn: %d threads x %ld iterations, checksum %llu%s\n",
	       nthreads, iterations, (unsigned long long)sum,
	       bad ? ", DATA CORRUPTED" : "");
	return bad ? 1 : status;
}
