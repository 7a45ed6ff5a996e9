// SPDX-License-Identifier: MIT
/*
 * behave.c - small behaviours for the command-line tests
 * (tests/e2e/run-cli.sh, run-install.sh).
 *
 *   behave exit N       keep one 100-byte block at exit_site, exit N
 *   behave signal N     keep one block, then die of signal N (default action)
 *   behave pid          print "pid N" (its own pid) and exit 0
 *   behave wait FILE    keep 10 blocks of 1000 bytes at wait_keep_site,
 *                       write its pid to FILE, then allocate and free 64 bytes at
 *                       wait_loop_site every millisecond until killed
 *                       (no signal handler: SIGTERM kills it; it gives
 *                       up by itself, exit 1, after a minute or so)
 *   behave top          top_a keeps 3 x 1 MiB, top_b 2 x 1 MiB, top_c
 *                       1 x 1 MiB, top_churn allocates and frees 8 x 1 MiB
 *   behave agent        keep one 100-byte block at exit_site, print the
 *                       paths of the mapped files whose name contains
 *                       "libpprof-alloc" (which agent was preloaded)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MiB (1024 * 1024)

static void *volatile sink;

__attribute__((noinline)) static void exit_site(void)
{
	sink = malloc(100);
}

__attribute__((noinline)) static void wait_keep_site(void **kept)
{
	int i;

	for (i = 0; i < 10; i++)
		kept[i] = malloc(1000);
}

__attribute__((noinline)) static void wait_loop_site(void)
{
	unsigned char *volatile p = malloc(64);

	if (p)
		p[0] = 1;
	free(p);
}

__attribute__((noinline)) static void *top_a(void)
{
	void *p = malloc(MiB);

	if (p)
		memset(p, 'a', 4096);
	return p;
}

__attribute__((noinline)) static void *top_b(void)
{
	void *p = malloc(MiB);

	if (p)
		memset(p, 'b', 4096);
	return p;
}

__attribute__((noinline)) static void *top_c(void)
{
	void *p = malloc(MiB);

	if (p)
		memset(p, 'c', 4096);
	return p;
}

__attribute__((noinline)) static void top_churn(void)
{
	unsigned char *volatile p = malloc(MiB);

	if (p)
		p[0] = 1;
	free(p);
}

static int do_wait(const char *file)
{
	struct timespec ms = { 0, 1000000 };
	void *kept[10];
	FILE *f;
	int i;

	wait_keep_site(kept);
	sink = kept;
	f = fopen(file, "w");
	if (!f)
		return 1;
	fprintf(f, "%d\n", (int)getpid());
	if (fclose(f))
		return 1;
	for (i = 0; i < 60000; i++) {
		wait_loop_site();
		nanosleep(&ms, NULL);
	}
	return 1;
}

static int do_top(void)
{
	static void *kept[6];
	int i, n = 0;

	for (i = 0; i < 3; i++)
		kept[n++] = top_a();
	for (i = 0; i < 2; i++)
		kept[n++] = top_b();
	kept[n++] = top_c();
	for (i = 0; i < 8; i++)
		top_churn();
	for (i = 0; i < n; i++)
		if (!kept[i])
			return 1;
	printf("behave: top sites allocated\n");
	return 0;
}

static int do_agent(void)
{
	char line[4096], last[4096] = "";
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/');

		if (!path || !strstr(path, "libpprof-alloc"))
			continue;
		if (strcmp(path, last))
			fputs(path, stdout);
		snprintf(last, sizeof(last), "%s", path);
	}
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (!strcmp(mode, "exit") && argc == 3) {
		exit_site();
		return atoi(argv[2]);
	}
	if (!strcmp(mode, "signal") && argc == 3) {
		int sig = atoi(argv[2]);
		sigset_t set;

		exit_site();
		signal(sig, SIG_DFL);
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(sig);
		return 1;	/* not reached for a deadly signal */
	}
	if (!strcmp(mode, "pid")) {
		printf("pid %d\n", (int)getpid());
		return 0;
	}
	if (!strcmp(mode, "wait") && argc == 3)
		return do_wait(argv[2]);
	if (!strcmp(mode, "top"))
		return do_top();
	if (!strcmp(mode, "agent")) {
		exit_site();
		return do_agent();
	}
	fprintf(stderr, "usage: behave exit N | signal N | pid | wait FILE | top | agent\n");
	return 2;
}
