// SPDX-License-Identifier: MIT
/*
 * threads.c - threads created and exiting in a loop, each allocating at
 * known sites (tests/e2e/run-threads.sh): every new thread must get fresh
 * sampler state and find its own stack bounds, whatever its stack.
 *
 *   threads ROUNDS PER_ROUND N        (N a multiple of 3)
 *
 * ROUNDS times, PER_ROUND threads are started and joined.  Their stacks
 * vary by round: round % 3 == 0 the default, 1 a small 64 KiB stack, 2 a
 * stack the program mmaps itself (pthread_attr_setstack).  Each thread:
 *
 *   thr_keep      N mallocs of 48 bytes, kept to the end
 *   thr_churn     N mallocs of 64 * (i % 3 + 1) bytes, freed at once
 *   thr_handoff   N mallocs of 200 bytes, freed by the main thread after
 *                 the join (a free on another thread than the allocation)
 *
 * and returns, or (odd threads) calls pthread_exit.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define OWN_STACK (256 * 1024)

static int n_per_thread;

struct worker {
	pthread_t thread;
	int index;
	void **kept;		/* n_per_thread */
	void **handoff;		/* n_per_thread */
	uint64_t sum;
	int bad;
};

__attribute__((noinline)) static void thr_keep(struct worker *w)
{
	int i;

	for (i = 0; i < n_per_thread; i++) {
		unsigned char *p = malloc(48);

		if (!p) {
			w->bad = 1;
			return;
		}
		p[47] = (unsigned char)i;
		w->sum += p[47];
		w->kept[i] = p;
	}
}

__attribute__((noinline)) static void thr_churn(struct worker *w)
{
	int i;

	for (i = 0; i < n_per_thread; i++) {
		size_t size = 64 * (size_t)(i % 3 + 1);
		unsigned char *p = malloc(size);

		if (!p) {
			w->bad = 1;
			return;
		}
		p[size - 1] = (unsigned char)i;
		w->sum += p[size - 1];
		free(p);
	}
}

__attribute__((noinline)) static void thr_handoff(struct worker *w)
{
	int i;

	for (i = 0; i < n_per_thread; i++) {
		unsigned char *p = malloc(200);

		if (!p) {
			w->bad = 1;
			return;
		}
		memset(p, w->index, 200);
		w->handoff[i] = p;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	thr_keep(w);
	thr_churn(w);
	thr_handoff(w);
	if (w->index % 2)
		pthread_exit(NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	int rounds, per_round, r, i, k, bad = 0;
	uint64_t sum = 0;
	struct worker *workers;
	void **stacks;

	if (argc != 4) {
		fprintf(stderr, "usage: threads ROUNDS PER_ROUND N\n");
		return 2;
	}
	rounds = atoi(argv[1]);
	per_round = atoi(argv[2]);
	n_per_thread = atoi(argv[3]);
	if (rounds < 1 || per_round < 1 || n_per_thread < 3 ||
	    n_per_thread % 3)
		return 2;
	workers = calloc((size_t)per_round, sizeof(*workers));
	stacks = calloc((size_t)per_round, sizeof(*stacks));
	if (!workers || !stacks)
		return 1;
	for (i = 0; i < per_round; i++) {
		stacks[i] = mmap(NULL, OWN_STACK, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (stacks[i] == MAP_FAILED)
			return 1;
	}

	for (r = 0; r < rounds; r++) {
		for (i = 0; i < per_round; i++) {
			struct worker *w = &workers[i];
			pthread_attr_t attr;

			memset(w, 0, sizeof(*w));
			w->index = r * per_round + i;
			w->kept = calloc((size_t)n_per_thread, sizeof(void *));
			w->handoff = calloc((size_t)n_per_thread,
					    sizeof(void *));
			if (!w->kept || !w->handoff)
				return 1;
			pthread_attr_init(&attr);
			if (r % 3 == 1)
				pthread_attr_setstacksize(&attr, 64 * 1024);
			else if (r % 3 == 2)
				pthread_attr_setstack(&attr, stacks[i],
						      OWN_STACK);
			if (pthread_create(&w->thread, &attr, worker_main, w)) {
				fprintf(stderr, "threads: cannot create a thread\n");
				return 1;
			}
			pthread_attr_destroy(&attr);
		}
		for (i = 0; i < per_round; i++) {
			struct worker *w = &workers[i];

			pthread_join(w->thread, NULL);
			bad |= w->bad;
			sum += w->sum;
			for (k = 0; k < n_per_thread; k++) {
				unsigned char *p = w->handoff[k];

				if (!p || p[199] != (unsigned char)w->index)
					bad = 1;
				free(p);
			}
			free(w->handoff);
			/* w->kept is dropped on purpose: its blocks stay */
		}
	}
	printf("threads: %d rounds x %d threads x %d allocations, checksum %llu\n",
	       rounds, per_round, n_per_thread, (unsigned long long)sum);
	if (bad)
		fprintf(stderr, "threads: data check failed\n");
	return bad;
}
