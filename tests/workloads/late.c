// SPDX-License-Identifier: MIT
/*
 * late.c - allocates before any tracer is there, then waits.
 *
 * Run with the agent preloaded and no tracer (PPROF_ALLOC_RATE=1): it keeps
 * KEPT blocks of 100 bytes from kept_early and churns CHURN blocks through
 * churn_early - far more records than the standalone agent's ring holds -
 * prints "ready", and waits in poll() until SIGTERM.  A tracer that
 * connects then must find every kept block in use, with its stack, from
 * the agent's live and stack tables (tests/e2e/run-attach-late.sh).
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEPT 20000
#define CHURN 100000

static volatile sig_atomic_t done;
static void *kept[KEPT];
static void *volatile escape;	/* so the compiler keeps malloc/free pairs */

static void on_term(int sig)
{
	(void)sig;
	done = 1;
}

__attribute__((noinline)) static void *kept_early(void)
{
	void *p = malloc(100);

	memset(p, 1, 100);
	return p;
}

__attribute__((noinline)) static void churn_early(void)
{
	void *p = malloc(64);

	memset(p, 2, 64);
	escape = p;
	free(escape);
}

int main(void)
{
	unsigned long sum = 0;
	int i;

	signal(SIGTERM, on_term);
	for (i = 0; i < KEPT; i++)
		kept[i] = kept_early();
	for (i = 0; i < CHURN; i++)
		churn_early();
	printf("ready\n");
	fflush(stdout);
	while (!done)
		poll(NULL, 0, 50);
	for (i = 0; i < KEPT; i++)
		sum += ((unsigned char *)kept[i])[99];
	printf("late: %lu\n", sum);
	return sum == KEPT ? 0 : 1;
}
