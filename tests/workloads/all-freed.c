// SPDX-License-Identifier: MIT
/*
 * all-freed.c - four threads allocate and free a great deal, and free
 * everything before exit.  Under a ring too small to hold the records, many
 * frees are lost; the tracer must still report nothing of churn_site in use
 * (it reconciles with the agent's live table).  Run by
 * tests/e2e/run-reconcile.sh.  The threads pause 2 ms every 5000 rounds:
 * on a loaded machine the tracer might otherwise not run before the end,
 * and read only the last records (the final frees with their allocations,
 * nothing to reconcile).  A block lives for WINDOW rounds of its thread,
 * long enough for its free to be lost: a free that follows its allocation
 * closely often finds room in the ring the allocation found (a free record
 * is small), and then no allocation received has lost its free, and
 * there is nothing to reconcile.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ROUNDS 200000
#define WINDOW 4096
#define THREADS 4

/* not on the stack: the agent copies stacks (--unwind dwarf) */
static void *held_by[THREADS][WINDOW];

__attribute__((noinline)) static void *churn_site(size_t n)
{
	return malloc(n);
}

static void *work(void *arg)
{
	void **held = held_by[(long)arg];
	long i;

	for (i = 0; i < ROUNDS; i++) {
		free(held[i % WINDOW]);
		held[i % WINDOW] = churn_site(32 + (size_t)(i % 200));
		if (i % 5000 == 4999)
			usleep(2000);
	}
	for (i = 0; i < WINDOW; i++)
		free(held[i]);
	return NULL;
}

int main(void)
{
	pthread_t t[THREADS];
	long i;

	for (i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, work, (void *)i);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	puts("all freed");
	return 0;
}
