// SPDX-License-Identifier: MIT
/*
 * span.c - the wall time of a program's life, from its exec to its exit,
 * written to a file: for the benchmarks that time a stock program under a
 * profiler without counting the profiler's work after the program ends.
 *
 *   span FILE PROG [ARG...]
 *
 * span reads the monotonic clock, then execs PROG in its own process, so
 * that PROG is whatever runs span: `pprof-alloc -- span F sqlite3` profiles
 * sqlite3 (the tracer follows a command's execs) and F gets sqlite3's own
 * time, while `span F pprof-alloc -- sqlite3` times the whole run, the
 * tracer's symbolizing and writing included.  The time is taken by a
 * watcher process that holds the read end of a pipe whose write end PROG
 * inherits: the read returns end-of-file when the last process holding it
 * has exited (PROG, or any child it left running with the descriptor), and
 * the watcher writes the seconds ("%.6f\n") to FILE.tmp and renames it to
 * FILE, so that FILE appears whole, shortly after PROG's exit.  The caller
 * waits for FILE.
 *
 * The watcher is a grandchild, reparented at once, so that PROG has no
 * child it did not make; it closes every descriptor but the pipe's read
 * end, so that it holds no one's output open.  span's exit status is
 * PROG's; a failure before the exec: a line on stderr and exit 127.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The watcher: wait for the pipe to close, write the time, exit. */
static void watch(int rfd, double start, const char *file)
{
	char buf[64], tmp[4096];
	ssize_t n;
	int fd, len;

	for (fd = 0; fd < 1024; fd++)
		if (fd != rfd)
			close(fd);
	do
		n = read(rfd, buf, sizeof(buf));
	while (n > 0 || (n < 0 && errno == EINTR));
	len = snprintf(buf, sizeof(buf), "%.6f\n", now() - start);
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", file) >= (int)sizeof(tmp))
		_exit(1);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, buf, (size_t)len) != len || close(fd) != 0 ||
	    rename(tmp, file) != 0)
		_exit(1);
	_exit(0);
}

int main(int argc, char **argv)
{
	double start;
	int p[2], status;
	pid_t pid;

	if (argc < 3) {
		fprintf(stderr, "usage: span FILE PROG [ARG...]\n");
		return 127;
	}
	start = now();
	if (pipe(p) != 0) {
		perror("span: pipe");
		return 127;
	}
	pid = fork();
	if (pid < 0) {
		perror("span: fork");
		return 127;
	}
	if (pid == 0) {
		close(p[1]);
		pid = fork();
		if (pid == 0)
			watch(p[0], start, argv[1]);
		_exit(pid < 0 ? 1 : 0);
	}
	close(p[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		fprintf(stderr, "span: the watcher did not start\n");
		return 127;
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "span: %s: %s\n", argv[2], strerror(errno));
	return 127;
}
