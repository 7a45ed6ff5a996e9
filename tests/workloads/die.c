// SPDX-License-Identifier: MIT
/*
 * die.c - a program that holds known memory and then dies.
 *
 *   die MODE   keep 8 blocks of 1 MiB (die_keep) and 4 of 64 KiB
 *              (die_keep_small), free 2 others (die_freed), then:
 *     segv     write through a NULL pointer
 *     abort    abort()
 *     kill     print "ready" and wait to be killed (SIGKILL, as the OOM
 *              killer does)
 *     exit     _exit(7): no atexit handlers, no destructors
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile kept[16];

__attribute__((noinline)) static void *die_keep(void)
{
	void *p = malloc(1 << 20);

	memset(p, 1, 1 << 20);
	return p;
}

__attribute__((noinline)) static void *die_keep_small(void)
{
	return malloc(64 << 10);
}

__attribute__((noinline)) static void die_freed(void)
{
	kept[14] = malloc(256 << 10);	/* through memory: not elided */
	free(kept[14]);
	kept[14] = NULL;
}

int main(int argc, char **argv)
{
	int i;

	if (argc != 2) {
		fprintf(stderr, "usage: die segv|abort|kill|exit\n");
		return 2;
	}
	for (i = 0; i < 8; i++)
		kept[i] = die_keep();
	for (i = 0; i < 4; i++)
		kept[8 + i] = die_keep_small();
	die_freed();
	die_freed();
	if (!strcmp(argv[1], "segv"))
		*(volatile int *)kept[15] = 1;	/* kept[15] is NULL */
	if (!strcmp(argv[1], "abort"))
		abort();
	if (!strcmp(argv[1], "exit"))
		_exit(7);
	if (!strcmp(argv[1], "kill")) {
		printf("ready\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	return 2;
}
