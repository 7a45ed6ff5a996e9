// SPDX-License-Identifier: MIT
/*
 * service.c - a long-running program with known allocation sites, for the
 * `pprof-alloc serve` tests.
 *
 *   service SECONDS [THREADS [MODE]]
 *
 * Prints "ready", then for SECONDS (or until SIGTERM) THREADS workers (2)
 * each loop:
 *
 *   site_request  a 4000-byte block, filled and freed at once
 *   site_cache    a 16000-byte block kept in a ring of 256 per thread (the
 *                 oldest freed): in use all along
 *
 * and sleep 1 ms every SERVICE_BATCH loops (the environment's, 64 if it
 * names none), so that a thread is now and then in a system call (for the
 * attach).  At 64 a worker takes about a fifth of a CPU and allocates a
 * GB a second (2500 samples at the default rate): the e2e tests run beside
 * others, and at 4096, which the throughput soaks in tests/long/ ask for,
 * two workers would keep both CPUs of a 2-core machine busy all through
 * run-serve, run-serve-slow and run-detach.  MODE "stacks" also has each
 * loop allocate 512 bytes (freed at once) at the end of a chain of 20
 * calls chosen by the bits of a counter: a new stack almost every time,
 * for the bounded-memory test.
 * At the end it prints "ops N", the loops done: the throughput.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CACHE	256
#define DEPTH	20

static volatile sig_atomic_t stop;
static double seconds;
static int stacks_mode;
static long batch = 64;
static volatile unsigned char sink;
static void *volatile seen;	/* so that no malloc/free pair is elided */

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

__attribute__((noinline)) static void site_request(void)
{
	unsigned char *p = malloc(4000);

	if (p) {
		memset(p, 7, 4000);
		sink = p[123];
	}
	free(p);
}

__attribute__((noinline)) static void *site_cache(void)
{
	unsigned char *p = malloc(16000);

	if (p)
		memset(p, 3, 16000);
	return p;
}

/* A chain of calls chosen by the bits of path: 2^DEPTH stacks. */
__attribute__((noinline)) static void branch(unsigned long path, int depth);

__attribute__((noinline)) static void left(unsigned long path, int depth)
{
	branch(path >> 1, depth - 1);
	sink++;
}

__attribute__((noinline)) static void right(unsigned long path, int depth)
{
	branch(path >> 1, depth - 1);
	sink++;
}

__attribute__((noinline)) static void branch(unsigned long path, int depth)
{
	if (!depth) {
		unsigned char *p = malloc(512);

		seen = p;
		free(p);
		return;
	}
	if (path & 1)
		right(path, depth);
	else
		left(path, depth);
	sink++;
}

static double elapsed(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) +
	       (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

static void *worker(void *arg)
{
	unsigned long *ops = arg, n = 0, path = (unsigned long)(uintptr_t)arg;
	void *cache[CACHE] = { 0 };
	struct timespec t0, ms = { 0, 1000000 };
	int i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stop && elapsed(&t0) < seconds) {
		for (i = 0; i < batch; i++, n++) {
			site_request();
			free(cache[n % CACHE]);
			cache[n % CACHE] = site_cache();
			if (stacks_mode)
				branch(path = path * 6364136223846793005ul + 1442695040888963407ul,
				       DEPTH);
		}
		nanosleep(&ms, NULL);
	}
	for (i = 0; i < CACHE; i++)
		free(cache[i]);
	*ops = n;
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 2, i;
	unsigned long ops[64] = { 0 }, total = 0;
	pthread_t t[64];

	seconds = argc > 1 ? atof(argv[1]) : 10;
	if (getenv("SERVICE_BATCH"))
		batch = atol(getenv("SERVICE_BATCH"));
	stacks_mode = argc > 3 && !strcmp(argv[3], "stacks");
	if (threads < 1 || threads > 64 || seconds <= 0 || batch < 1) {
		fprintf(stderr, "usage: service SECONDS [THREADS [stacks]]\n");
		return 2;
	}
	signal(SIGTERM, on_term);
	printf("ready\n");
	fflush(stdout);
	for (i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, &ops[i]);
	for (i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		total += ops[i];
	}
	printf("ops %lu\n", total);
	return 0;
}
