// SPDX-License-Identifier: MIT
/*
 * signals.c - signal handlers that call malloc and free while the main
 * thread allocates (tests/e2e/run-signals.sh).
 *
 *   signals ITERATIONS
 *
 * An interval timer sends SIGALRM every 200 us and a helper thread sends
 * SIGUSR1 to the main thread every 300 us; the SIGUSR1 handler runs on an
 * alternate signal stack.  Handlers may interrupt each other.  Meanwhile
 * the main thread calls main_loop_site ITERATIONS times (malloc of 48
 * bytes, filled, summed, freed) and keeps one block of 1000 bytes at
 * main_keep_site every 1000 iterations.
 *
 * glibc's malloc is not async-signal-safe in general: an interrupted
 * malloc may hold an arena lock that the handler's malloc then waits for.
 * So the sizes are chosen so that every call here is served from the
 * thread cache (tcache) without a lock: the main loop only ever has one
 * 48-byte block out, each handler one block of its own size class
 * (ALRM 96 bytes, USR1 200 bytes), allocated and freed in the same call,
 * and each size class is warmed up before the signals start.  What is
 * left to go wrong is the agent's own reentrancy.
 *
 * stdout (compared with a bare run) gets only what does not depend on
 * timing; the handler counts go to stderr as "handled alrm=N usr1=M".
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define ALRM_SIZE 96
#define USR1_SIZE 200
#define KEEP_EVERY 1000

static volatile sig_atomic_t alrm_count, usr1_count, handler_bad;
static volatile int stop_helper;
static pthread_t main_thread;

__attribute__((noinline)) static void alrm_site(void)
{
	unsigned char *volatile p = malloc(ALRM_SIZE);

	if (!p) {
		handler_bad = 1;
		return;
	}
	memset(p, 0xa1, ALRM_SIZE);
	if (p[ALRM_SIZE - 1] != 0xa1)
		handler_bad = 1;
	free(p);
}

__attribute__((noinline)) static void usr1_site(void)
{
	unsigned char *volatile p = malloc(USR1_SIZE);

	if (!p) {
		handler_bad = 1;
		return;
	}
	memset(p, 0x51, USR1_SIZE);
	if (p[USR1_SIZE - 1] != 0x51)
		handler_bad = 1;
	free(p);
}

static void on_alrm(int sig)
{
	(void)sig;
	alrm_count++;
	alrm_site();
}

static void on_usr1(int sig)
{
	(void)sig;
	usr1_count++;
	usr1_site();
}

static void *helper_main(void *arg)
{
	struct timespec ts = { 0, 300000 };
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	while (!stop_helper) {
		pthread_kill(main_thread, SIGUSR1);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

__attribute__((noinline)) static uint64_t main_loop_site(long i)
{
	unsigned char *p = malloc(48);
	uint64_t sum = 0;
	int k;

	if (!p)
		return UINT64_MAX;
	for (k = 0; k < 48; k++)
		p[k] = (unsigned char)(i + k);
	for (k = 0; k < 48; k++)
		sum += p[k];
	free(p);
	return sum;
}

__attribute__((noinline)) static void *main_keep_site(void)
{
	void *p = malloc(1000);

	if (p)
		memset(p, 7, 1000);
	return p;
}

int main(int argc, char **argv)
{
	static unsigned char altstack[65536];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
	struct sigaction sa;
	struct itimerval it = { { 0, 200 }, { 0, 200 } }, off = { { 0, 0 }, { 0, 0 } };
	pthread_t helper;
	long iterations, i, kept = 0;
	uint64_t sum = 0;
	void **keep;

	if (argc != 2 || (iterations = atol(argv[1])) < 1) {
		fprintf(stderr, "usage: signals ITERATIONS\n");
		return 2;
	}
	keep = calloc((size_t)(iterations / KEEP_EVERY + 1), sizeof(void *));
	if (!keep)
		return 1;
	/* warm up every size class used from a handler (see above) */
	free(malloc(ALRM_SIZE));
	free(malloc(USR1_SIZE));
	free(malloc(48));

	main_thread = pthread_self();
	if (sigaltstack(&ss, NULL))
		return 1;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_alrm;
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_flags = SA_RESTART | SA_ONSTACK;
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	if (pthread_create(&helper, NULL, helper_main, NULL))
		return 1;
	setitimer(ITIMER_REAL, &it, NULL);

	for (i = 0; i < iterations; i++) {
		sum += main_loop_site(i);
		if (i % KEEP_EVERY == 0)
			keep[kept++] = main_keep_site();
	}

	setitimer(ITIMER_REAL, &off, NULL);
	stop_helper = 1;
	pthread_join(helper, NULL);
	fprintf(stderr, "signals: handled alrm=%ld usr1=%ld\n",
		(long)alrm_count, (long)usr1_count);
	printf("signals: %ld iterations, %ld blocks kept, checksum %llu\n",
	       iterations, kept, (unsigned long long)sum);
	if (handler_bad || !alrm_count || !usr1_count) {
		fprintf(stderr, "signals: %s\n", handler_bad ?
			"a handler's allocation failed" : "no signal arrived");
		return 1;
	}
	return 0;
}
