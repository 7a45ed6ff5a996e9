// SPDX-License-Identifier: MIT
/*
 * oom.c - a program that a memory cgroup's limit kills, for
 * tests/e2e/run-oom.sh.
 *
 *   oom grow          allocate 1 MiB blocks at oom_grow_block, every page
 *                     touched, none freed, until the OOM killer ends it
 *                     (it gives up at 16 GiB: exit 4, never killed)
 *   oom exit MB       allocate MB MiB at oom_grow_block, exit 0
 *   oom hold MB       allocate MB MiB, print "ready", wait to be killed
 *   oom child         fork a child that grows until it is killed; wait
 *                     for it, print "child killed by signal N" (or how it
 *                     ended), exit 0
 *   oom wait-grow F   print "ready", wait (up to a minute: exit 5) until
 *                     file F exists, then grow
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MiB (1024 * 1024)

static void *volatile last;

__attribute__((noinline)) static void *oom_grow_block(void)
{
	char *p = malloc(MiB);

	if (!p)
		exit(3);
	memset(p, 0x5a, MiB);
	return p;
}

static void allocate(long mb)
{
	long i;

	for (i = 0; i < mb; i++)
		last = oom_grow_block();
}

static void ready(void)
{
	printf("ready\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct timespec tick = { 0, 10 * 1000000 };
	int status, i;
	pid_t child;

	if (argc == 2 && !strcmp(argv[1], "grow")) {
		allocate(16 * 1024);
		return 4;
	}
	if (argc == 3 && !strcmp(argv[1], "exit")) {
		allocate(atol(argv[2]));
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "hold")) {
		allocate(atol(argv[2]));
		ready();
		for (;;)
			pause();
	}
	if (argc == 2 && !strcmp(argv[1], "child")) {
		child = fork();
		if (child < 0)
			return 2;
		if (!child) {
			allocate(16 * 1024);
			_exit(4);
		}
		if (waitpid(child, &status, 0) != child)
			return 2;
		if (WIFSIGNALED(status))
			printf("child killed by signal %d\n", WTERMSIG(status));
		else
			printf("child exited %d\n", WEXITSTATUS(status));
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "wait-grow")) {
		ready();
		for (i = 0; access(argv[2], F_OK); i++) {
			if (i > 6000)
				return 5;
			nanosleep(&tick, NULL);
		}
		allocate(16 * 1024);
		return 4;
	}
	fprintf(stderr, "usage: oom grow | exit MB | hold MB | child | wait-grow FILE\n");
	return 2;
}
