// SPDX-License-Identifier: MIT
/*
 * bench-mixed.c - an allocation-heavy workload that also does work with
 * its memory, the shape of a cache or a request-handling server.
 *
 *   bench-mixed [THREADS [OPS_PER_THREAD]]
 *   bench-mixed THREADS 0 SECONDS     timed: runs SECONDS, printing
 *                                     "t_ms ops" (all threads) every 100 ms
 *
 * Each thread owns a chained hash map of string keys.  An operation is an
 * insert (a node and a key string of 8..200 bytes, filled), a lookup (hash
 * and compare), or a delete (free key and node), in proportions 2:3:2 -
 * roughly one allocation or free per operation, as in a busy service.  It
 * prints the time of the operation loop alone and a checksum.
 * (bench-alloc is the other extreme: nothing but malloc and free.)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUCKETS 65536
#define KEYS 200000

struct node {
	struct node *next;
	uint64_t hash;
	size_t len;
	char *key;
	uint64_t value;
};

static long ops = 1500000;
static volatile int stop;		/* timed mode */
static long done_ops[64];
static char *key_text[KEYS];	/* made once, before timing */
static size_t key_len[KEYS];

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t fnv(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	while (n--)
		h = (h ^ (unsigned char)*p++) * 1099511628211ULL;
	return h;
}

/* The key for number k: deterministic text of 8..200 bytes. */
static size_t make_key(char *buf, uint64_t k)
{
	uint64_t s = k * 0x9e3779b97f4a7c15ULL + 1;
	size_t len = 8 + xorshift(&s) % 193, i;

	for (i = 0; i < len; i++)
		buf[i] = (char)('a' + (xorshift(&s) >> 32) % 26);
	return len;
}

__attribute__((noinline)) static struct node *new_node(const char *key,
						       size_t len, uint64_t h)
{
	struct node *n = malloc(sizeof(*n));

	n->key = malloc(len);
	memcpy(n->key, key, len);
	n->len = len;
	n->hash = h;
	n->value = h >> 7;
	return n;
}

static void *worker(void *arg)
{
	struct node **map = calloc(BUCKETS, sizeof(*map));
	uint64_t seed = (uintptr_t)arg * 7919 + 1, sum = 0;
	long i;

	for (i = 0; ops ? i < ops : !stop; i++) {
		uint64_t r = xorshift(&seed), k = r % KEYS;

		if (!ops && !(i & 255))
			__atomic_store_n(&done_ops[(uintptr_t)arg - 1], i,
					 __ATOMIC_RELAXED);
		const char *key = key_text[k];
		size_t len = key_len[k];
		uint64_t h = fnv(key, len);
		struct node **pp = &map[h % BUCKETS], *n;
		unsigned int op = (r >> 40) % 7;

		while (*pp && ((*pp)->hash != h || (*pp)->len != len ||
			       memcmp((*pp)->key, key, len)))
			pp = &(*pp)->next;
		n = *pp;
		if (op < 2) {			/* insert */
			if (!n) {
				n = new_node(key, len, h);
				n->next = map[h % BUCKETS];
				map[h % BUCKETS] = n;
			}
		} else if (op < 5) {		/* lookup */
			if (n)
				sum += n->value;
		} else if (n) {			/* delete */
			*pp = n->next;
			free(n->key);
			free(n);
		}
	}
	for (i = 0; i < BUCKETS; i++) {
		struct node *n = map[i], *next;

		for (; n; n = next) {
			next = n->next;
			sum += n->len;
			free(n->key);
			free(n);
		}
	}
	free(map);
	return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 2, i;
	pthread_t t[64];
	struct timespec a, b;
	uint64_t sum = 0;

	double seconds = argc > 3 ? atof(argv[3]) : 0;

	if (argc > 2)
		ops = atol(argv[2]);
	if (threads < 1 || threads > 64 || ops < 0 || (!ops && seconds <= 0)) {
		fprintf(stderr, "usage: bench-mixed [THREADS [OPS]] | THREADS 0 SECONDS\n");
		return 2;
	}
	for (i = 0; i < KEYS; i++) {
		char buf[256];

		key_len[i] = make_key(buf, (uint64_t)i);
		key_text[i] = malloc(key_len[i]);
		memcpy(key_text[i], buf, key_len[i]);
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	if (!ops) {
		struct timespec tick = { 0, 100000000 }, now;
		double t_ms = 0;

		setvbuf(stdout, NULL, _IOLBF, 0);
		while (t_ms < seconds * 1000) {
			long total = 0;
			int k;

			nanosleep(&tick, NULL);
			clock_gettime(CLOCK_MONOTONIC, &now);
			t_ms = (double)(now.tv_sec - a.tv_sec) * 1e3 +
			       (double)(now.tv_nsec - a.tv_nsec) / 1e6;
			for (k = 0; k < threads; k++)
				total += __atomic_load_n(&done_ops[k],
							 __ATOMIC_RELAXED);
			printf("%.1f %ld\n", t_ms, total);
		}
		stop = 1;
	}
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
