// SPDX-License-Identifier: MIT
/*
 * exact-churn.c - a multi-threaded allocation churn that keeps its own
 * books, for the exact checks at --rate 1 (tests/e2e/run-exact-churn.sh).
 *
 *   exact-churn THREADS ITERATIONS [wait=PATH|abort]
 *
 * wait=PATH: wait until PATH exists before starting (a tracer attaches
 * meanwhile); abort: abort() after printing (a core to read).
 * Each thread runs ITERATIONS rounds of:
 *
 *   site_small    malloc of 8 + 8 * (i % 32) bytes, freed at once
 *   site_pass     malloc of 64 * (i % 16 + 1) bytes, handed to the next
 *                 thread, which frees it (frees from another thread;
 *                 freed at once when that thread's queue is full)
 *   site_calloc   calloc(i % 3 + 1, 40); one in five kept, the rest freed
 *   site_realloc  every 8th round: realloc(NULL, 10), then to 2000, then
 *                 to 300; kept every 16th round, else freed
 *   site_keep     every 64th round: malloc of 1000 + i % 4 bytes, kept
 *
 * Every block is filled and checked.  At the end the program prints, per
 * site, what it allocated and what it still holds - "truth SITE ALLOCS
 * BYTES INUSE_OBJECTS INUSE_BYTES", counted as it went, realloc counted as
 * pprof-alloc profiles it (each call an allocation of the new size at the
 * realloc's stack, the old block freed) - and a checksum a bare run must
 * print too.  Blocks still queued between threads are freed by main.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { SMALL, PASS, CALLOC, REALLOC, KEEP, NSITES };
static const char *const site_names[NSITES] = {
	"site_small", "site_pass", "site_calloc", "site_realloc", "site_keep",
};

struct book {
	uint64_t allocs, bytes, inuse_objects, inuse_bytes;
};

#define QUEUE 256

struct worker {
	pthread_t thread;
	unsigned int index;
	long iterations;
	pthread_mutex_t lock;		/* the queue others hand blocks to */
	void *queue[QUEUE];
	size_t qsize[QUEUE];
	unsigned int head, count;
	struct book books[NSITES];
	void **kept;
	size_t nkept, kept_cap;
	uint64_t sum;
	int bad;
};

static struct worker *workers;
static int nthreads;

static void fill(unsigned char *p, size_t n, unsigned char tag)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(tag + i);
}

static uint64_t check(struct worker *w, const unsigned char *p, size_t n,
		      unsigned char tag)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i] != (unsigned char)(tag + i))
			w->bad = 1;
		sum += p[i];
	}
	return sum;
}

static void keep(struct worker *w, void *p)
{
	if (w->nkept == w->kept_cap) {
		size_t cap = w->kept_cap ? 2 * w->kept_cap : 1024;
		void **k = realloc(w->kept, cap * sizeof(*k));	/* not a site */

		if (!k) {
			w->bad = 1;
			return;
		}
		w->kept = k;
		w->kept_cap = cap;
	}
	w->kept[w->nkept++] = p;
}

static void book(struct worker *w, int site, size_t size, int kept)
{
	w->books[site].allocs++;
	w->books[site].bytes += size;
	if (kept) {
		w->books[site].inuse_objects++;
		w->books[site].inuse_bytes += size;
	}
}

__attribute__((noinline)) static void site_small(struct worker *w, long i)
{
	size_t n = 8 + 8 * (size_t)(i % 32);
	unsigned char *p = malloc(n);

	if (!p) {
		w->bad = 1;
		return;
	}
	fill(p, n, (unsigned char)i);
	w->sum += check(w, p, n, (unsigned char)i);
	free(p);
	book(w, SMALL, n, 0);
}

/* Free what other threads handed us. */
static void take_queue(struct worker *w)
{
	pthread_mutex_lock(&w->lock);
	while (w->count) {
		unsigned char *p = w->queue[w->head];
		size_t n = w->qsize[w->head];

		w->head = (w->head + 1) % QUEUE;
		w->count--;
		w->sum += check(w, p, n, (unsigned char)n);
		free(p);
	}
	pthread_mutex_unlock(&w->lock);
}

__attribute__((noinline)) static void site_pass(struct worker *w, long i)
{
	struct worker *to = &workers[(w->index + 1) % (unsigned)nthreads];
	size_t n = 64 * (size_t)(i % 16 + 1);
	unsigned char *p = malloc(n);

	if (!p) {
		w->bad = 1;
		return;
	}
	fill(p, n, (unsigned char)n);
	book(w, PASS, n, 0);
	pthread_mutex_lock(&to->lock);
	if (to->count < QUEUE) {
		to->queue[(to->head + to->count) % QUEUE] = p;
		to->qsize[(to->head + to->count) % QUEUE] = n;
		to->count++;
		p = NULL;
	}
	pthread_mutex_unlock(&to->lock);
	if (p) {	/* its queue is full (it may have finished): ours */
		w->sum += check(w, p, n, (unsigned char)n);
		free(p);
	}
}

__attribute__((noinline)) static void site_calloc(struct worker *w, long i)
{
	size_t k = (size_t)(i % 3 + 1), n = k * 40;
	unsigned char *p = calloc(k, 40);
	size_t j;

	if (!p) {
		w->bad = 1;
		return;
	}
	for (j = 0; j < n; j++)
		if (p[j])
			w->bad = 1;
	fill(p, n, 7);
	book(w, CALLOC, n, i % 5 == 0);
	if (i % 5 == 0)
		keep(w, p);
	else
		free(p);
}

__attribute__((noinline)) static void site_realloc(struct worker *w, long i)
{
	static const size_t sizes[] = { 10, 2000, 300 };
	unsigned char *p = NULL, *q;
	int kept = i % 16 == 0;
	unsigned int k;

	for (k = 0; k < 3; k++) {
		q = realloc(p, sizes[k]);
		if (!q) {
			w->bad = 1;
			free(p);
			return;
		}
		p = q;
		if (k)	/* what survived the move */
			w->sum += check(w, p, sizes[k - 1] < sizes[k] ?
					       sizes[k - 1] : sizes[k], 3);
		fill(p, sizes[k], 3);
		book(w, REALLOC, sizes[k], kept && k == 2);
	}
	if (kept)
		keep(w, p);
	else
		free(p);
}

__attribute__((noinline)) static void site_keep(struct worker *w, long i)
{
	size_t n = 1000 + (size_t)(i % 4);
	unsigned char *p = malloc(n);

	if (!p) {
		w->bad = 1;
		return;
	}
	fill(p, n, 9);
	book(w, KEEP, n, 1);
	keep(w, p);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	long i;

	for (i = 0; i < w->iterations; i++) {
		site_small(w, i);
		site_pass(w, i);
		site_calloc(w, i);
		if (i % 8 == 0)
			site_realloc(w, i);
		if (i % 64 == 0)
			site_keep(w, i);
		if (i % 32 == 0)
			take_queue(w);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct book total[NSITES] = { { 0 } };
	uint64_t sum = 0;
	long iterations;
	int i, s, bad = 0;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: exact-churn THREADS ITERATIONS [wait=PATH|abort]\n");
		return 2;
	}
	if (argc == 4 && !strncmp(argv[3], "wait=", 5)) {
		printf("waiting\n");
		fflush(stdout);
		while (access(argv[3] + 5, F_OK))
			usleep(1000);
	}
	nthreads = atoi(argv[1]);
	iterations = atol(argv[2]);
	if (nthreads < 1 || nthreads > 64 || iterations < 1)
		return 2;
	workers = calloc((size_t)nthreads, sizeof(*workers));
	if (!workers)
		return 1;
	for (i = 0; i < nthreads; i++) {
		workers[i].index = (unsigned int)i;
		workers[i].iterations = iterations;
		pthread_mutex_init(&workers[i].lock, NULL);
	}
	for (i = 0; i < nthreads; i++)
		if (pthread_create(&workers[i].thread, NULL, worker_main,
				   &workers[i]))
			return 1;
	for (i = 0; i < nthreads; i++)
		pthread_join(workers[i].thread, NULL);
	for (i = 0; i < nthreads; i++) {
		take_queue(&workers[i]);	/* main frees the rest */
		sum += workers[i].sum;
		bad |= workers[i].bad;
		for (s = 0; s < NSITES; s++) {
			total[s].allocs += workers[i].books[s].allocs;
			total[s].bytes += workers[i].books[s].bytes;
			total[s].inuse_objects += workers[i].books[s].inuse_objects;
			total[s].inuse_bytes += workers[i].books[s].inuse_bytes;
		}
	}
	for (s = 0; s < NSITES; s++)
		printf("truth %s %llu %llu %llu %llu\n", site_names[s],
		       (unsigned long long)total[s].allocs,
		       (unsigned long long)total[s].bytes,
		       (unsigned long long)total[s].inuse_objects,
		       (unsigned long long)total[s].inuse_bytes);
	printf("exact-churn: %d threads x %ld iterations, checksum %llu%s\n",
	       nthreads, iterations, (unsigned long long)sum,
	       bad ? " BAD" : "");
	fflush(stdout);
	if (argc == 4 && !strcmp(argv[3], "abort"))
		abort();
	return bad;
}
