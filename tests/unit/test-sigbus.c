// SPDX-License-Identifier: MIT
/*
 * test-sigbus.c - the tracer's SIGBUS guard (tracer/record/sigbus.c): a mapped
 * file truncated under the mapping reads as zeros past its new end, and
 * each replaced page is counted.  First, without the guard, a child reading
 * the same way must die of SIGBUS - so the test shows the fault it guards
 * against is real here (under ASan, whose own SIGBUS handler reports it and
 * exits 1).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"
#include "tracer/record/sigbus.h"

#define PAGES	4

static int make_file(long page, char *path, size_t len)
{
	char buf[4096];
	int fd, i;

	snprintf(path, len, "%s/test-sigbus.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	fd = mkstemp(path);
	CHECK(fd >= 0);
	memset(buf, 0xab, sizeof(buf));
	for (i = 0; i < PAGES * page / (long)sizeof(buf); i++)
		CHECK(write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf));
	return fd;
}

static volatile unsigned char *map_and_cut(int fd, long page)
{
	volatile unsigned char *m = mmap(NULL, PAGES * page, PROT_READ,
					 MAP_PRIVATE, fd, 0);

	CHECK(m != MAP_FAILED);
	CHECK(m[0] == 0xab && m[3 * page] == 0xab);	/* all there */
	CHECK(ftruncate(fd, page) == 0);		/* pages 1-3 gone */
	return m;
}

int main(void)
{
	long page = sysconf(_SC_PAGESIZE);
	volatile unsigned char *m;
	char path[256];
	int fd, status;
	pid_t child;

	/* unguarded: the read past the end kills */
	fd = make_file(page, path, sizeof(path));
	child = fork();
	CHECK(child >= 0);
	if (!child) {
		m = map_and_cut(fd, page);
		_exit(m[2 * page] == 0 ? 3 : 4);
	}
	CHECK(waitpid(child, &status, 0) == child);
	/* killed by SIGBUS; under ASan, its SIGBUS handler reports and exits 1 */
	CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) ||
	      (WIFEXITED(status) && WEXITSTATUS(status) == 1));
	close(fd);
	unlink(path);

	/* guarded: zeros, counted, the page still in its place */
	CHECK_EQ_INT(sigbus__guard(), 0);
	CHECK_EQ_INT(sigbus__pages(), 0);
	fd = make_file(page, path, sizeof(path));
	m = map_and_cut(fd, page);
	CHECK(m[0] == 0xab);
	CHECK(m[2 * page + 5] == 0);
	CHECK_EQ_INT(sigbus__pages(), 1);
	CHECK(m[2 * page + 100] == 0);			/* same page: no fault */
	CHECK_EQ_INT(sigbus__pages(), 1);
	CHECK(m[3 * page] == 0 && m[page] == 0);
	CHECK_EQ_INT(sigbus__pages(), 3);
	CHECK(munmap((void *)m, PAGES * page) == 0);
	close(fd);
	unlink(path);

	/* a SIGBUS that is not a missing page still kills (default action) */
	child = fork();
	CHECK(child >= 0);
	if (!child) {
		raise(SIGBUS);
		_exit(5);
	}
	CHECK(waitpid(child, &status, 0) == child);
	CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) ||
	      (WIFEXITED(status) && WEXITSTATUS(status) == 1));
	CHECK_SUMMARY("test-sigbus");
	return 0;
}
