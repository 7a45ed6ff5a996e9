// SPDX-License-Identifier: MIT
/*
 * attach-soak.c - threads that allocate without a pause and check their
 * own data, for attaching and detaching over and over
 * (tests/e2e/run-attach-soak.sh).
 *
 *   attach-soak FIFO THREADS
 *
 * Each worker keeps a table of SLOTS blocks.  In a loop it picks a slot
 * at random; if the slot holds a block, the block's checksum is checked
 * (every byte of it) and the block is freed or, one time in five,
 * realloc'ed (its old prefix must survive); then a new block goes into the
 * slot, from soak_malloc, soak_calloc (must come zeroed) or
 * soak_memalign (must be aligned), of a random size (now and then a big
 * one, which glibc serves with mmap), filled with bytes from the worker's
 * random stream and checksummed.
 *
 * The main thread waits in a blocking read() on FIFO (a service waiting
 * for a request); on 'q' it stops the workers, checks every block still
 * held, and prints
 *   attach-soak: T threads, N operations, M blocks checked, C corrupt
 * exiting 0 only if C is 0 and no allocation failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLOTS		512
#define MAX_THREADS	64

struct block {
	unsigned char *p;
	size_t size;
	uint64_t sum;
};

struct worker {
	pthread_t thread;
	uint64_t rng;
	struct block slots[SLOTS];
	unsigned long ops, checked, corrupt, failed;
};

static struct worker workers[MAX_THREADS];
static volatile int stopping;

static uint64_t next_random(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t checksum(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static void fill(struct worker *w, unsigned char *p, size_t from, size_t n)
{
	uint64_t r = next_random(&w->rng);
	size_t i;

	for (i = from; i < n; i++)
		p[i] = (unsigned char)(r + i * 131);
}

static size_t random_size(struct worker *w)
{
	uint64_t r = next_random(&w->rng);

	if (r % 200 == 0)
		return 128 * 1024 + r % (256 * 1024);	/* mmap'ed */
	if (r % 10 == 0)
		return 1 + r % 16384;
	return 1 + r % 512;
}

__attribute__((noinline)) static unsigned char *soak_malloc(size_t n)
{
	return malloc(n);
}

__attribute__((noinline)) static unsigned char *soak_calloc(struct worker *w,
							   size_t n)
{
	unsigned char *p = calloc(1, n);
	size_t i;

	if (p)
		for (i = 0; i < n; i++)
			if (p[i]) {
				w->corrupt++;	/* calloc must zero */
				break;
			}
	return p;
}

__attribute__((noinline)) static unsigned char *soak_memalign(struct worker *w,
							     size_t n)
{
	void *p = NULL;

	if (posix_memalign(&p, 64, n))
		return NULL;
	if ((uintptr_t)p % 64)
		w->corrupt++;
	return p;
}

__attribute__((noinline)) static unsigned char *soak_realloc(struct worker *w,
							    struct block *b,
							    size_t n)
{
	size_t keep = b->size < n ? b->size : n;
	uint64_t prefix = checksum(b->p, keep);
	unsigned char *q = realloc(b->p, n);

	if (!q)
		return NULL;
	if (checksum(q, keep) != prefix)
		w->corrupt++;
	return q;
}

static int check(struct worker *w, const struct block *b)
{
	w->checked++;
	if (checksum(b->p, b->size) == b->sum)
		return 1;
	w->corrupt++;
	return 0;
}

static void step(struct worker *w)
{
	uint64_t r = next_random(&w->rng);
	struct block *b = &w->slots[r % SLOTS];
	size_t n = random_size(w);
	unsigned char *p;

	if (b->p) {
		check(w, b);
		if (r % 5 == 0) {
			size_t old = b->size;

			p = soak_realloc(w, b, n);
			if (!p) {
				w->failed++;
				return;
			}
			if (n > old)
				fill(w, p, old, n);
			b->p = p;
			b->size = n;
			b->sum = checksum(p, n);
			w->ops++;
			return;
		}
		free(b->p);
		b->p = NULL;
	}
	switch ((r >> 8) % 8) {
	case 0:
		p = soak_calloc(w, n);
		break;
	case 1:
		p = soak_memalign(w, n);
		break;
	default:
		p = soak_malloc(n);
		break;
	}
	if (!p) {
		w->failed++;
		return;
	}
	fill(w, p, 0, n);
	*b = (struct block){ p, n, checksum(p, n) };
	w->ops++;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	while (!stopping)
		step(w);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long ops = 0, checked = 0, corrupt = 0, failed = 0;
	int fd, nthreads, i, s;
	char c;

	if (argc != 3 || (nthreads = atoi(argv[2])) < 1 ||
	    nthreads > MAX_THREADS) {
		fprintf(stderr, "usage: attach-soak FIFO THREADS\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	for (i = 0; i < nthreads; i++) {
		workers[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		if (pthread_create(&workers[i].thread, NULL, worker_main,
				   &workers[i])) {
			fprintf(stderr, "attach-soak: cannot start thread %d\n", i);
			return 1;
		}
	}
	printf("attach-soak: ready, %d threads\n", nthreads);
	fflush(stdout);
	for (;;) {
		ssize_t n = read(fd, &c, 1);

		if (n == 1 && c == 'q')
			break;
		if (n < 0 && errno != EINTR) {
			perror("attach-soak: read");
			return 1;
		}
	}
	stopping = 1;
	for (i = 0; i < nthreads; i++) {
		struct worker *w = &workers[i];

		pthread_join(w->thread, NULL);
		for (s = 0; s < SLOTS; s++)
			if (w->slots[s].p) {
				check(w, &w->slots[s]);
				free(w->slots[s].p);
			}
		ops += w->ops;
		checked += w->checked;
		corrupt += w->corrupt;
		failed += w->failed;
	}
	printf("attach-soak: %d threads, %lu operations, %lu blocks checked, %lu corrupt\n",
	       nthreads, ops, checked, corrupt);
	if (failed)
		printf("attach-soak: %lu allocations failed\n", failed);
	return corrupt || failed ? 1 : 0;
}
