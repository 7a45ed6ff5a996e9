// SPDX-License-Identifier: MIT
/*
 * attach-join.c - a program with no thread in an idle system call: the
 * main thread waits in pthread_join (futex) while a worker allocates
 * without pause.  Attaching must borrow the waiting main thread
 * (tests/e2e/run-attach-join.sh).  SIGTERM ends it cleanly.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

__attribute__((noinline)) static void *spin_site(void)
{
	return malloc(100);
}

static void *worker(void *arg)
{
	unsigned long n = 0;

	(void)arg;
	while (!stop) {
		void *volatile p = spin_site();

		free(p);
		n++;
	}
	return (void *)n;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_term };
	pthread_t t;
	void *n;

	sigaction(SIGTERM, &sa, NULL);
	pthread_create(&t, NULL, worker, NULL);
	printf("ready\n");
	fflush(stdout);
	pthread_join(t, &n);
	printf("attach-join: done\n");
	return n ? 0 : 1;
}
