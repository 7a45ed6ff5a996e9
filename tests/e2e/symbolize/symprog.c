// SPDX-License-Identifier: MIT
/*
 * symprog.c - known allocation sites for the symbolize tests
 * (tests/e2e/run-symbolize-*.sh), which build it themselves: -g -O2 with
 * frame pointers, with gcc and with clang, then strip it, split its debug
 * information off, and check that `pprof-alloc symbolize` (and the live
 * path with --debug-dir) finds its functions, files and lines again.
 *
 *   symprog RECORDS TABLES [DIR]
 *
 *   make_records  RECORDS blocks of RECORD_SIZE bytes, all kept.  The
 *                 malloc is in fill_buffer(), a static inline function
 *                 inlined into make_records: the leaf location has two
 *                 lines, fill_buffer's malloc (@fill_buffer_malloc) and
 *                 make_records' call of it (@make_records_call).
 *   make_table    TABLES calloc(TABLE_ROWS, TABLE_ROW) blocks, each freed
 *                 after use (@make_table_calloc).
 *
 * With DIR (for attaching), the program first writes its pid to DIR/ready
 * and waits for DIR/go to exist, then allocates, creates DIR/done, and
 * waits for DIR/exit.  The waiting allocates nothing (open, access,
 * nanosleep).
 *
 * The tests find the line numbers by the "@name" markers, so the file may
 * be edited freely.  The counts come from the command line, so the
 * compiler cannot specialise (constprop-clone) the named functions.
 * -DSYMPROG_VARIANT=1 changes the code, hence the build ID: the decoy
 * "same program, other build" of run-symbolize-lookup.sh.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RECORD_SIZE	4096
#define TABLE_ROWS	10
#define TABLE_ROW	100
#define MAX_RECORDS	100000

#ifndef SYMPROG_VARIANT
#define SYMPROG_VARIANT 0
#endif

static char *records[MAX_RECORDS];
static volatile unsigned long checksum;

static inline __attribute__((always_inline)) char *fill_buffer(size_t n, int seed)
{
	char *p = malloc(n);	/* @fill_buffer_malloc */

	if (p)
		memset(p, 'a' + seed % 26, n);
	return p;
}

__attribute__((noinline)) void make_records(int n)
{
	int i;

	for (i = 0; i < n; i++) {
		records[i] = fill_buffer(RECORD_SIZE, i);	/* @make_records_call */
		checksum += (unsigned char)records[i][i % RECORD_SIZE];
	}
}

__attribute__((noinline)) void make_table(int n)
{
	int i, r;

	for (i = 0; i < n; i++) {
		unsigned char *t = calloc(TABLE_ROWS, TABLE_ROW);	/* @make_table_calloc */

		if (!t)
			exit(3);
		for (r = 0; r < TABLE_ROWS; r++)
			t[r * TABLE_ROW] = (unsigned char)(r + i + SYMPROG_VARIANT);
		checksum += t[(i % TABLE_ROWS) * TABLE_ROW];
		free(t);
	}
}

static void wait_for_file(const char *dir, const char *name)
{
	char path[4096];
	struct timespec ts = { 0, 10 * 1000 * 1000 };

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	while (access(path, F_OK) != 0)
		nanosleep(&ts, NULL);
}

static void create_file(const char *dir, const char *name, const char *text)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s.tmp", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		exit(4);
	close(fd);
	{
		char final[4096];

		snprintf(final, sizeof(final), "%s/%s", dir, name);
		if (rename(path, final) != 0)
			exit(4);
	}
}

int main(int argc, char **argv)
{
	int records_n, tables_n;
	char pid[32];

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: symprog RECORDS TABLES [DIR]\n");
		return 2;
	}
	records_n = atoi(argv[1]);
	tables_n = atoi(argv[2]);
	if (records_n < 0 || records_n > MAX_RECORDS || tables_n < 0)
		return 2;
	if (argc == 4) {
		snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
		create_file(argv[3], "ready", pid);
		wait_for_file(argv[3], "go");
	}
	make_records(records_n);
	make_table(tables_n);
	if (argc == 4) {
		create_file(argv[3], "done", "done\n");
		wait_for_file(argv[3], "exit");
	}
#if SYMPROG_VARIANT
	printf("symprog variant %d\n", SYMPROG_VARIANT);
#endif
	return checksum == 0;	/* never 0: every block is filled with letters */
}
