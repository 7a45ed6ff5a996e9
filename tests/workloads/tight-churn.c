// SPDX-License-Identifier: MIT
/*
 * tight-churn.c - the tightest allocation churn, for the exact-mode table
 * of `make bench` (tests/bench-exact.sh): the cost of one malloc and one
 * free on glibc's fastest path, with almost nothing else around them.
 *
 *   tight-churn [THREADS [OPS_PER_THREAD]]
 *
 * Each thread keeps a window of 32 live blocks and, per operation, frees a
 * pseudo-random one and puts in its place a block of a pseudo-random size
 * from 16 to 256 bytes (the sizes of glibc's tcache bins 0..15), writing
 * its first byte.  The window is small enough that glibc serves nearly
 * every malloc and free from the thread's tcache (about 15 ns a pair
 * bare), so whatever a profiler adds per call shows at full size.  The
 * sizes, from each thread's own generator, make the run deterministic.
 *
 * It prints the time of the allocation loops alone ("seconds X", from the
 * first thread started to the last joined: not process start-up nor a
 * tracer's work after exit), the nanoseconds per operation of one thread
 * ("ns_per_op X", the seconds over OPS_PER_THREAD) and a checksum, so that
 * the work cannot be optimised away and a run under a profiler must print
 * what a bare run prints.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define WINDOW 32

static long ops = 20000000;

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* One allocation site, called, so that its stack is the loop's plus one. */
__attribute__((noinline)) static void *alloc_block(size_t n)
{
	unsigned char *p = malloc(n);

	if (p)
		p[0] = (unsigned char)n;
	return p;
}

static void *worker(void *arg)
{
	uint64_t seed = (uintptr_t)arg * 7919 + 1, sum = 0;
	void *slots[WINDOW] = { 0 };
	long i;

	for (i = 0; i < ops; i++) {
		uint64_t r = xorshift(&seed);
		size_t idx = r % WINDOW;
		size_t size = 16 + (r >> 32) % 241;

		free(slots[idx]);
		slots[idx] = alloc_block(size);
		if (!slots[idx])
			abort();
		sum += ((unsigned char *)slots[idx])[0];
	}
	for (i = 0; i < WINDOW; i++)
		free(slots[i]);
	return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 1, i;
	pthread_t t[64];
	struct timespec a, b;
	uint64_t sum = 0;
	double secs;

	if (argc > 2)
		ops = atol(argv[2]);
	if (threads < 1 || threads > 64 || ops < 1) {
		fprintf(stderr, "usage: tight-churn [THREADS [OPS_PER_THREAD]]\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1))) {
			perror("tight-churn: pthread_create");
			return 1;
		}
	for (i = 0; i < threads; i++) {
		void *r;

		pthread_join(t[i], &r);
		sum += (uintptr_t)r;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	printf("seconds %.6f ns_per_op %.2f checksum %llu\n", secs,
	       secs * 1e9 / (double)ops, (unsigned long long)sum);
	return 0;
}
