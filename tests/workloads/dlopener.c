// SPDX-License-Identifier: MIT
/*
 * dlopener.c - a program that loads a library after it started and
 * allocates through it (tests/e2e/run-dlopen.sh).
 *
 *   dlopener LIBRARY N [PAUSE_MS]
 *
 * Keeps one 777-byte block at before_dlopen, dlopens LIBRARY (built from
 * dlsite.c), calls its dlsite_run(N, kept) - N kept blocks of 3000 bytes
 * at dlsite_keep, N blocks of 500 bytes allocated and freed at
 * dlsite_churn - then sleeps PAUSE_MS (default 0) and exits without
 * dlclose.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *volatile sink;

__attribute__((noinline)) static void before_dlopen(void)
{
	sink = malloc(777);
}

int main(int argc, char **argv)
{
	unsigned long (*run)(int, void **);
	void *lib, **kept;
	int n;

	if (argc < 3 || (n = atoi(argv[2])) < 1) {
		fprintf(stderr, "usage: dlopener LIBRARY N [PAUSE_MS]\n");
		return 2;
	}
	before_dlopen();
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopener: %s\n", dlerror());
		return 1;
	}
	*(void **)&run = dlsym(lib, "dlsite_run");
	if (!run) {
		fprintf(stderr, "dlopener: %s\n", dlerror());
		return 1;
	}
	kept = calloc((size_t)n, sizeof(*kept));
	if (!kept)
		return 1;
	printf("dlopener: checksum %lu\n", run(n, kept));
	if (argc > 3) {
		long ms = atol(argv[3]);
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

		nanosleep(&ts, NULL);
	}
	return 0;
}
