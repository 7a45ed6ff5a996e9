// SPDX-License-Identifier: MIT
/*
 * glibc-sites.c - known allocations on command, for the old-glibc test
 * (tests/long/run-old-glibc.sh), which builds it against Debian 11's glibc
 * twice: as is, a program that never links libpthread, and with
 * -DWITH_THREADS -pthread, one whose rounds run on a thread of their own
 * (glibc 2.31: libpthread.so.0 is then needed).  The suite's own build
 * (the Makefile) compiles it as is.
 *
 *   glibc-sites FIFO N
 *
 * Prints "glibc-sites: ready", then reads one-byte commands from FIFO:
 *   w  a round: the blocks kept by the last round are checked and freed,
 *      then work_keep keeps N blocks of 256 bytes (filled) and work_churn
 *      allocates and frees N blocks of 48 bytes; prints "work done R".
 *   q  checks the kept blocks, prints "glibc-sites: R rounds, check ok"
 *      (or "check FAILED", exit 1) and exits.
 * Per round: work_keep alloc N objects, N*256 bytes, all in use;
 * work_churn alloc N objects, N*48 bytes, none in use.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef WITH_THREADS
#include <pthread.h>
#endif

#define KEEP_SIZE	256
#define CHURN_SIZE	48

static unsigned char **kept;
static unsigned long n, rounds;
static int bad;

static void check_kept(void)
{
	unsigned long i;
	int j;

	for (i = 0; rounds && i < n; i++)
		for (j = 0; j < KEEP_SIZE; j++)
			if (kept[i][j] != (unsigned char)(i + rounds + j))
				bad = 1;
}

__attribute__((noinline)) static void work_keep(void)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		kept[i] = malloc(KEEP_SIZE);
		if (!kept[i])
			exit(2);
		for (int j = 0; j < KEEP_SIZE; j++)
			kept[i][j] = (unsigned char)(i + rounds + j);
	}
}

__attribute__((noinline)) static void work_churn(void)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		volatile unsigned char *p = malloc(CHURN_SIZE);

		if (!p)
			exit(2);
		p[0] = 1;
		free((void *)p);
	}
}

static void *round_body(void *unused)
{
	unsigned long i;

	(void)unused;
	check_kept();
	for (i = 0; i < n; i++)
		free(kept[i]);
	rounds++;
	work_keep();
	work_churn();
	return NULL;
}

int main(int argc, char **argv)
{
	char c;
	int fd;

	if (argc != 3 || !(n = strtoul(argv[2], NULL, 10))) {
		fprintf(stderr, "usage: glibc-sites FIFO N\n");
		return 2;
	}
	kept = calloc(n, sizeof(*kept));
	fd = open(argv[1], O_RDWR);	/* never EOF: we are a writer too */
	if (!kept || fd < 0) {
		perror("glibc-sites");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("glibc-sites: ready\n");
	while (read(fd, &c, 1) == 1) {
		if (c == 'w') {
#ifdef WITH_THREADS
			pthread_t th;

			if (pthread_create(&th, NULL, round_body, NULL) ||
			    pthread_join(th, NULL))
				return 2;
#else
			round_body(NULL);
#endif
			printf("work done %lu\n", rounds);
		} else if (c == 'q') {
			break;
		}
	}
	check_kept();
	printf("glibc-sites: %lu rounds, check %s\n", rounds,
	       bad ? "FAILED" : "ok");
	return bad;
}
