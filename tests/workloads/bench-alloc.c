// SPDX-License-Identifier: MIT
/*
 * bench-alloc.c - the allocation-heavy workload `make bench` measures.
 *
 *   bench-alloc [THREADS [OPS_PER_THREAD]]
 *
 * Each thread keeps a window of 4096 live blocks and replaces a random one
 * per operation with a block of a random size (mostly 16..1024 bytes, one
 * in 64 up to 64 KiB), writing its first bytes, like a server's request
 * path.  It prints the time of the allocation loop alone (not process
 * start-up) so that tracer start-up does not dilute the ratio, and a
 * checksum so the work cannot be optimised away.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WINDOW 4096

static long ops = 2000000;

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

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
	void **slots = calloc(WINDOW, sizeof(*slots));
	long i;

	for (i = 0; i < ops; i++) {
		uint64_t r = xorshift(&seed);
		size_t idx = r % WINDOW;
		size_t size = (r >> 20) % 64 == 0 ? 1024 + (r >> 32) % 65536 :
						    16 + (r >> 32) % 1008;

		free(slots[idx]);
		slots[idx] = alloc_block(size);
		sum += (uintptr_t)slots[idx] & 0xff;
	}
	for (i = 0; i < WINDOW; i++)
		free(slots[i]);
	free(slots);
	return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 2, i;
	pthread_t t[64];
	struct timespec a, b;
	uint64_t sum = 0;

	if (argc > 2)
		ops = atol(argv[2]);
	if (threads < 1 || threads > 64 || ops < 1) {
		fprintf(stderr, "usage: bench-alloc [THREADS [OPS]]\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	for (i = 0; i < threads; i++) {
		void *r;

		pthread_join(t[i], &r);
		sum += (uintptr_t)r;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("seconds %.6f checksum %llu\n",
	       (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9,
	       (unsigned long long)sum);
	return 0;
}
