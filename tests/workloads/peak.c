// SPDX-License-Identifier: MIT
/*
 * peak.c - a program whose heap rises to a known peak at one site, falls,
 * and ends small.
 *
 *   peak BLOCKS SIZE HOLD_MS END [GATE]
 *
 * before_site keeps 2 MiB (or $PEAK_BEFORE bytes) for the whole run (in
 * use at the peak and at the end); peak_site then allocates BLOCKS blocks of SIZE bytes from
 * 2 threads (PEAK_THREADS=1: from main alone, no thread made), touching every page, holds them HOLD_MS and frees
 * them all; end_site keeps 1 MiB (in use at the end, not at the peak).
 * It prints "peak BLOCKS*SIZE" when the peak is reached and "done" at the
 * end.  END: "exit" (return from main), "_exit" (no destructors), "kill"
 * (SIGKILL itself), "wait" (for serve: print "ready" and wait until the
 * file GATE.go exists before rising, and until GATE exists before
 * exiting).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 2

static size_t blocks, size, nthreads = THREADS;
static char **held;

__attribute__((noinline)) static void *before_site(size_t n)
{
	void *p = malloc(n);

	memset(p, 1, n);
	return p;
}

__attribute__((noinline)) static void *peak_site(size_t n)
{
	void *p = malloc(n);

	memset(p, 2, n);
	return p;
}

__attribute__((noinline)) static void *end_site(size_t n)
{
	void *p = malloc(n);

	memset(p, 3, n);
	return p;
}

static void *rise(void *arg)
{
	size_t t = (size_t)arg, i;

	for (i = t; i < blocks; i += nthreads)
		held[i] = peak_site(size);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[THREADS];
	void *before, *end;
	size_t i;
	long hold;

	if (argc < 5) {
		fprintf(stderr, "usage: peak BLOCKS SIZE HOLD_MS exit|_exit|kill|wait [GATE]\n");
		return 2;
	}
	blocks = strtoul(argv[1], NULL, 0);
	size = strtoul(argv[2], NULL, 0);
	hold = strtol(argv[3], NULL, 0);
	held = calloc(blocks, sizeof(*held));
	before = before_site(getenv("PEAK_BEFORE") ?
			     strtoul(getenv("PEAK_BEFORE"), NULL, 0) : 2 << 20);
	if (!strcmp(argv[4], "wait") && argc > 5) {
		char go[4096];

		snprintf(go, sizeof(go), "%s.go", argv[5]);
		printf("ready\n");
		fflush(stdout);
		while (access(go, F_OK))
			usleep(10000);
	}
	if (getenv("PEAK_THREADS") && !strcmp(getenv("PEAK_THREADS"), "1")) {
		nthreads = 1;
		rise((void *)0);
	} else {
		for (i = 0; i < THREADS; i++)
			pthread_create(&th[i], NULL, rise, (void *)i);
		for (i = 0; i < THREADS; i++)
			pthread_join(th[i], NULL);
	}
	printf("peak %zu\n", blocks * size);
	fflush(stdout);
	usleep((useconds_t)hold * 1000);
	for (i = 0; i < blocks; i++)
		free(held[i]);
	free(held);
	end = end_site(1 << 20);
	printf("done\n");
	fflush(stdout);
	if (!strcmp(argv[4], "_exit"))
		_exit(0);
	if (!strcmp(argv[4], "kill"))
		kill(getpid(), SIGKILL);
	if (!strcmp(argv[4], "wait") && argc > 5)
		while (access(argv[5], F_OK))
			usleep(10000);
	(void)before;
	(void)end;
	return 0;
}
