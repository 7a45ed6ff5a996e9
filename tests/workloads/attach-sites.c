// SPDX-License-Identifier: MIT
/*
 * attach-sites.c - a multi-threaded service that idles until told to work,
 * then allocates known amounts at known sites, for the exact attach test
 * (tests/e2e/run-attach-exact.sh computes the expected totals with the
 * formulas below).
 *
 *   attach-sites FIFO THREADS N ROUNDS PRE        (N a multiple of 4)
 *
 * At start, pre_site keeps PRE blocks of PRE_SIZE bytes (made before any
 * tracer is attached).  THREADS workers then wait on a condition variable
 * and the main thread waits in poll() on FIFO for one-byte commands:
 *
 *   w  one round of work: every worker first checks and frees what it kept
 *      in the previous round (verify_free), then calls
 *        work_keep     N mallocs of 64, 128, 256, 512 bytes in turn, kept
 *        work_churn    N mallocs of 40 + 8 * (i % 4) bytes, freed at once
 *        work_calloc   N callocs of 2 x 50 bytes, the even i freed
 *        work_realloc  ROUNDS times realloc from NULL through 10, 200,
 *                      3000 and back to 100 bytes, the last block kept
 *        work_handoff  N mallocs of 72 bytes, which the next worker frees
 *                      (after a barrier: cross-thread frees)
 *      Meanwhile the main thread frees the PRE blocks (pre_free), checking
 *      them first, at the first round.  When every worker is done, main
 *      prints "work done R" (R rounds so far).
 *   q  check every kept block, print the result, exit.
 *
 * Per round, with T threads:
 *   work_keep     alloc T*N objects, T*N/4*960 bytes; all in use
 *   work_churn    alloc T*N objects, T*N/4*208 bytes; none in use
 *   work_calloc   alloc T*N objects, T*N*100 bytes; T*N/2, T*N*50 in use
 *   work_realloc  alloc T*ROUNDS*4 objects, T*ROUNDS*3310 bytes;
 *                 T*ROUNDS, T*ROUNDS*100 in use
 *   work_handoff  alloc T*N objects, T*N*72 bytes; none in use
 *
 * Every block is filled and checked before it is freed; the last line is
 *   attach-sites: R rounds, check ok      (or "check FAILED", exit 1)
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PRE_SIZE	333

static const size_t keep_sizes[4] = { 64, 128, 256, 512 };
static const size_t realloc_sizes[4] = { 10, 200, 3000, 100 };

struct block {
	unsigned char *p;
	size_t size;
	unsigned int seed;
};

struct worker {
	pthread_t thread;
	int index;
	struct block *kept;	/* N + N / 2 + ROUNDS */
	size_t nkept;
	void **outbox;		/* N, freed by the next worker */
	int bad;
};

static int nthreads, n_per_thread, rounds, npre;
static struct worker *workers;
static struct block *pre;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER, finished = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t handoff_barrier;
static int generation, ndone, quitting;

static void pattern(unsigned char *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(seed * 13u + i * 5u);
}

static int pattern_ok(const unsigned char *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed * 13u + i * 5u))
			return 0;
	return 1;
}

static void keep(struct worker *w, unsigned char *p, size_t size,
		 unsigned int seed)
{
	w->kept[w->nkept++] = (struct block){ p, size, seed };
}

__attribute__((noinline)) static void pre_site(void)
{
	int i;

	for (i = 0; i < npre; i++) {
		pre[i].p = malloc(PRE_SIZE);
		if (!pre[i].p) {
			fprintf(stderr, "attach-sites: out of memory\n");
			exit(1);
		}
		pre[i].size = PRE_SIZE;
		pre[i].seed = (unsigned int)i;
		pattern(pre[i].p, PRE_SIZE, pre[i].seed);
	}
}

__attribute__((noinline)) static int pre_free(void)
{
	int i, bad = 0;

	for (i = 0; i < npre; i++) {
		if (!pattern_ok(pre[i].p, pre[i].size, pre[i].seed))
			bad = 1;
		free(pre[i].p);
	}
	npre = 0;
	return bad;
}

__attribute__((noinline)) static void verify_free(struct worker *w)
{
	size_t i;

	for (i = 0; i < w->nkept; i++) {
		if (!pattern_ok(w->kept[i].p, w->kept[i].size, w->kept[i].seed))
			w->bad = 1;
		free(w->kept[i].p);
	}
	w->nkept = 0;
}

__attribute__((noinline)) static void work_keep(struct worker *w)
{
	int i;

	for (i = 0; i < n_per_thread; i++) {
		size_t size = keep_sizes[i % 4];
		unsigned char *p = malloc(size);

		if (!p) {
			w->bad = 1;
			return;
		}
		pattern(p, size, (unsigned int)i);
		keep(w, p, size, (unsigned int)i);
	}
}

__attribute__((noinline)) static void work_churn(struct worker *w)
{
	int i;

	for (i = 0; i < n_per_thread; i++) {
		size_t size = 40 + 8 * (size_t)(i % 4);
		unsigned char *p = malloc(size);

		if (!p) {
			w->bad = 1;
			return;
		}
		pattern(p, size, (unsigned int)i);
		if (!pattern_ok(p, size, (unsigned int)i))
			w->bad = 1;
		free(p);
	}
}

__attribute__((noinline)) static void work_calloc(struct worker *w)
{
	int i;
	size_t k;

	for (i = 0; i < n_per_thread; i++) {
		unsigned char *p = calloc(2, 50);

		if (!p) {
			w->bad = 1;
			return;
		}
		for (k = 0; k < 100; k++)
			if (p[k])
				w->bad = 1;	/* calloc must zero */
		pattern(p, 100, (unsigned int)i);
		if (i % 2 == 0)
			free(p);
		else
			keep(w, p, 100, (unsigned int)i);
	}
}

__attribute__((noinline)) static void work_realloc(struct worker *w)
{
	int r;
	size_t i;

	for (r = 0; r < rounds; r++) {
		unsigned char *p = NULL;

		for (i = 0; i < 4; i++) {
			unsigned char *q = realloc(p, realloc_sizes[i]);

			if (!q) {
				w->bad = 1;
				free(p);
				return;
			}
			/* the first 10 bytes survive every step */
			if (i && !pattern_ok(q, 10, (unsigned int)r))
				w->bad = 1;
			pattern(q, realloc_sizes[i], (unsigned int)r);
			p = q;
		}
		keep(w, p, 100, (unsigned int)r);
	}
}

__attribute__((noinline)) static void work_handoff(struct worker *w)
{
	int i;

	for (i = 0; i < n_per_thread; i++) {
		unsigned char *p = malloc(72);

		if (!p) {
			w->bad = 1;
			return;
		}
		pattern(p, 72, (unsigned int)(i + w->index));
		w->outbox[i] = p;
	}
}

/* Free the blocks the previous worker left in its outbox. */
static void take_handoff(struct worker *w)
{
	struct worker *from = &workers[(w->index + nthreads - 1) % nthreads];
	int i;

	for (i = 0; i < n_per_thread; i++) {
		if (!pattern_ok(from->outbox[i], 72,
				(unsigned int)(i + from->index)))
			w->bad = 1;
		free(from->outbox[i]);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int seen = 0;

	for (;;) {
		pthread_mutex_lock(&lock);
		while (generation == seen && !quitting)
			pthread_cond_wait(&go, &lock);
		if (quitting) {
			pthread_mutex_unlock(&lock);
			return NULL;
		}
		seen = generation;
		pthread_mutex_unlock(&lock);

		verify_free(w);
		work_keep(w);
		work_churn(w);
		work_calloc(w);
		work_realloc(w);
		work_handoff(w);
		pthread_barrier_wait(&handoff_barrier);
		take_handoff(w);

		pthread_mutex_lock(&lock);
		ndone++;
		pthread_cond_signal(&finished);
		pthread_mutex_unlock(&lock);
	}
}

int main(int argc, char **argv)
{
	int fd, i, bad = 0, round = 0;

	if (argc != 6) {
		fprintf(stderr, "usage: attach-sites FIFO THREADS N ROUNDS PRE\n");
		return 2;
	}
	nthreads = atoi(argv[2]);
	n_per_thread = atoi(argv[3]);
	rounds = atoi(argv[4]);
	npre = atoi(argv[5]);
	if (nthreads < 1 || n_per_thread < 4 || n_per_thread % 4 ||
	    rounds < 1 || npre < 0) {
		fprintf(stderr, "attach-sites: bad arguments\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	pre = calloc((size_t)npre + 1, sizeof(*pre));
	workers = calloc((size_t)nthreads, sizeof(*workers));
	if (!pre || !workers ||
	    pthread_barrier_init(&handoff_barrier, NULL, (unsigned)nthreads))
		return 1;
	pre_site();
	for (i = 0; i < nthreads; i++) {
		workers[i].index = i;
		workers[i].kept = calloc((size_t)n_per_thread * 2 +
					 (size_t)rounds, sizeof(struct block));
		workers[i].outbox = calloc((size_t)n_per_thread, sizeof(void *));
		if (!workers[i].kept || !workers[i].outbox ||
		    pthread_create(&workers[i].thread, NULL, worker_main,
				   &workers[i])) {
			fprintf(stderr, "attach-sites: cannot start thread %d\n", i);
			return 1;
		}
	}
	printf("attach-sites: ready, %d threads\n", nthreads);
	fflush(stdout);

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		char c;

		if (poll(&pfd, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("attach-sites: poll");
			return 1;
		}
		while (read(fd, &c, 1) == 1) {
			if (c == 'q')
				goto quit;
			if (c != 'w')
				continue;
			pthread_mutex_lock(&lock);
			ndone = 0;
			generation++;
			pthread_cond_broadcast(&go);
			pthread_mutex_unlock(&lock);
			if (npre && pre_free())
				bad = 1;
			pthread_mutex_lock(&lock);
			while (ndone < nthreads)
				pthread_cond_wait(&finished, &lock);
			pthread_mutex_unlock(&lock);
			printf("work done %d\n", ++round);
			fflush(stdout);
		}
	}
quit:
	pthread_mutex_lock(&lock);
	quitting = 1;
	pthread_cond_broadcast(&go);
	pthread_mutex_unlock(&lock);
	for (i = 0; i < nthreads; i++) {
		pthread_join(workers[i].thread, NULL);
		verify_free(&workers[i]);
		bad |= workers[i].bad;
	}
	printf("attach-sites: %d rounds, check %s\n", round,
	       bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}
