// SPDX-License-Identifier: MIT
/*
 * forkfds.c - forks that the agent's fork handling must not hurt, for
 * tests/e2e/run-follow.sh (--follow-children).
 *
 *   forkfds dlfork N    a thread calls dl_iterate_phdr without a pause
 *                       while the main thread forks N times; each child
 *                       allocates and exits.  A child made while the
 *                       other thread held the loader's lock must not
 *                       wait for it.  Prints "hung K" (children not done
 *                       in 10 s, then killed); exit 0 if K is 0.
 *   forkfds fdreuse LOG the child closes every descriptor above stderr,
 *                       opens LOG (it gets the lowest number, which the
 *                       agent's memfd had) and forks; the grandchild
 *                       writes "hello\n" there.  Exit 0 once written.
 */
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;

static int count(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)info;
	(void)size;
	++*(long *)data;
	return 0;
}

static void *iterate(void *arg)
{
	long n = 0;

	(void)arg;
	while (!stop)
		dl_iterate_phdr(count, &n);
	return NULL;
}

static int dlfork(int n)
{
	struct timespec ms = { 0, 1000000 };
	pthread_t t;
	int i, hung = 0;

	if (pthread_create(&t, NULL, iterate, NULL))
		return 1;
	for (i = 0; i < n; i++) {
		pid_t c = fork();
		int status, w = 0, j;

		if (c == 0) {
			char *volatile p = malloc(100000);

			p[0] = 1;
			_exit(0);
		}
		if (c < 0)
			break;
		for (j = 0; j < 10000; j++) {
			w = waitpid(c, &status, WNOHANG);
			if (w)
				break;
			nanosleep(&ms, NULL);
		}
		if (!w) {
			hung++;
			kill(c, SIGKILL);
			waitpid(c, &status, 0);
		}
	}
	stop = 1;
	pthread_join(t, NULL);
	printf("hung %d\n", hung);
	return hung ? 1 : 0;
}

static int fdreuse(const char *log)
{
	pid_t c = fork();
	int status;

	if (c < 0)
		return 1;
	if (c == 0) {
		pid_t g;
		int fd;

		closefrom(3);
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			_exit(1);
		g = fork();
		if (g == 0)
			_exit(write(fd, "hello\n", 6) == 6 ? 0 : 1);
		if (g < 0 || waitpid(g, &status, 0) != g)
			_exit(1);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
	}
	if (waitpid(c, &status, 0) != c)
		return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "dlfork"))
		return dlfork(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "fdreuse"))
		return fdreuse(argv[2]);
	fprintf(stderr, "usage: forkfds dlfork N | fdreuse LOG\n");
	return 2;
}
