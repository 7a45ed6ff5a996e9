// SPDX-License-Identifier: MIT
/*
 * procexit.c - how a process ended, told in words.
 *
 * Our own child's wait status comes from waitpid.  A process we attached
 * to is not our child: its pidfd says that it exited, and its exit code is
 * read from its zombie's /proc/PID/stat (field 52, Linux 3.5+) until its
 * parent reaps it; after that, how it ended is unknown and said so.
 */
#include "procexit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "pa_clock.h"

void procexit__describe_status(int status, char *buf, size_t len, int *code)
{
	if (WIFEXITED(status)) {
		*code = WEXITSTATUS(status);
		snprintf(buf, len, "exited with status %d", *code);
	} else if (WIFSIGNALED(status)) {
		*code = 128 + WTERMSIG(status);
		snprintf(buf, len, "was killed by signal %d (%s)%s",
			 WTERMSIG(status), strsignal(WTERMSIG(status)),
			 WCOREDUMP(status) ? ", core dumped" : "");
	} else {
		*code = 1;
		snprintf(buf, len, "ended with wait status %#x", status);
	}
}

/* Not gone and not a zombie (a zombie that is not ours may stay one). */
bool procexit__alive(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	if (kill(pid, 0) && errno == ESRCH)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno != ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

/*
 * The wait status of a process that has exited and not been reaped yet:
 * field 52 of /proc/PID/stat (exit_code, Linux 3.5+).  0, or -ESRCH.
 */
static int zombie_status(pid_t pid, int *status)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || (p[2] != 'Z' && p[2] != 'X'))
		return -ESRCH;
	/* field 3 is the state, after ") " */
	for (field = 3, p += 2; *p && field < 52; p++)
		if (*p == ' ')
			field++;
	if (field != 52 || *p < '0' || *p > '9')
		return -ESRCH;
	*status = (int)strtol(p, NULL, 10);
	return 0;
}

/* The target's comm ("" if unreadable); it changes when it exec()s. */
void procexit__comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	buf[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
}

/*
 * The exit status of pid, which has exited (its pidfd said so): from its
 * zombie, which may take a moment to become one (the pidfd is told before
 * the state is set).  0, or -ESRCH when its parent reaped it first.
 */
int procexit__status(pid_t pid, int *status)
{
	struct timespec ms = { 0, PA_NSEC_PER_MSEC };
	int i;

	for (i = 0; i < 200; i++) {
		if (!zombie_status(pid, status))
			return 0;
		if (!procexit__alive(pid) && kill(pid, 0) && errno == ESRCH)
			return -ESRCH;
		nanosleep(&ms, NULL);
	}
	return -ESRCH;
}

/*
 * How a process that is not our child ended, from its zombie: "exited
 * with status N" or "was killed by signal N", then suffix; or, when its
 * parent reaped it first, that it is unknown (an OOM kill is then told by
 * the counter alone: *sigkilled is set, *known cleared).
 */
void procexit__describe(pid_t pid, const char *suffix, char *ended,
			size_t size, bool *sigkilled, bool *known)
{
	int status, dummy;

	*known = true;
	if (!procexit__status(pid, &status)) {
		procexit__describe_status(status, ended, size, &dummy);
		strncat(ended, suffix, size - strlen(ended) - 1);
		*sigkilled = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
		return;
	}
	snprintf(ended, size, "exited%s (how is unknown: its parent reaped it first)",
		 suffix);
	*sigkilled = true;
	*known = false;
}
