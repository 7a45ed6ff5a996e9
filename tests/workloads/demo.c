// SPDX-License-Identifier: MIT
/*
 * demo.c - the program `make demo` profiles: a small "server" that builds
 * a cache it keeps (in use at exit), churns request buffers it frees
 * (allocated, not in use), leaks a little from a helper thread, and
 * halfway through builds a large index for a nightly report that it
 * frees again (the heap's peak, gone by the end).  Requests come in
 * batches a millisecond apart, so that a run lasts about a second and
 * its memory over time has a shape.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CACHE_ENTRIES 4096

struct entry {
	char key[32];
	char *value;
};

static struct entry *cache;

__attribute__((noinline)) static char *make_value(size_t n)
{
	char *v = malloc(n);

	memset(v, 'v', n);
	return v;
}

__attribute__((noinline)) static void build_cache(void)
{
	int i;

	cache = calloc(CACHE_ENTRIES, sizeof(*cache));
	for (i = 0; i < CACHE_ENTRIES; i++) {
		snprintf(cache[i].key, sizeof(cache[i].key), "key-%d", i);
		cache[i].value = make_value(16384);
	}
}

__attribute__((noinline)) static void handle_request(int i)
{
	char *buf = malloc(65536);

	memset(buf, i, 65536);
	buf = realloc(buf, 131072);
	free(buf);
}

#define INDEX_ENTRIES 24576

/* The report's index: 96 MiB of 4 KiB postings, then freed. */
__attribute__((noinline)) static void build_report_index(void)
{
	char **index = malloc(INDEX_ENTRIES * sizeof(*index));
	int i;

	for (i = 0; i < INDEX_ENTRIES; i++) {
		index[i] = malloc(4096);
		memset(index[i], 'i', 4096);
		if (i % 2048 == 0)
			usleep(2000);
	}
	for (i = 0; i < INDEX_ENTRIES; i++)
		free(index[i]);
	free(index);
}

static void *leaky_worker(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < 2000; i++) {
		void *p = malloc(4096);

		memset(p, 0, 4096);
		if (i % 4)
			free(p);
	}
	return NULL;
}

int main(void)
{
	pthread_t t;
	int i;

	build_cache();
	pthread_create(&t, NULL, leaky_worker, NULL);
	for (i = 0; i < 20000; i++) {
		handle_request(i);
		if (i % 100 == 99)
			usleep(1000);
		if (i == 10000)
			build_report_index();
	}
	pthread_join(t, NULL);
	printf("demo: cache of %d entries built, %d requests served\n",
	       CACHE_ENTRIES, i);
	return 0;
}
