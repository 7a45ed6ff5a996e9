// SPDX-License-Identifier: MIT
/*
 * daemonize.c - a program that daemonizes the classic way, for
 * tests/e2e/run-follow.sh (--follow-children).
 *
 *   daemonize DIR MB
 *
 * The parent keeps 64 blocks of 64 KiB at parent_site, forks and exits.
 * The child calls setsid, forks again and exits.  The grandchild - the
 * daemon, with neither exec'd - frees the first 32 of the parent's blocks
 * it inherited, keeps MB MiB in 64 KiB blocks at daemon_site, allocates and
 * frees 32 blocks of 64 KiB at daemon_freed_site, writes its pid to
 * DIR/daemon.pid, waits until DIR/stop exists (every 10 ms; after a minute:
 * exit 99), allocates 8 more blocks at daemon_late_site (a tracer that has
 * stopped following must not mind), writes "ok" to DIR/daemon.done and
 * exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCK	(64 * 1024)

static void *volatile parent_blocks[64];
static void *volatile *daemon_blocks;

__attribute__((noinline)) static void parent_site(void)
{
	int i;

	for (i = 0; i < 64; i++) {
		parent_blocks[i] = malloc(BLOCK);
		memset(parent_blocks[i], 1, BLOCK);
	}
}

__attribute__((noinline)) static void daemon_site(int n)
{
	int i;

	for (i = 0; i < n; i++) {
		daemon_blocks[i] = malloc(BLOCK);
		memset(daemon_blocks[i], 2, BLOCK);
	}
}

__attribute__((noinline)) static void daemon_freed_site(void)
{
	int i;

	for (i = 0; i < 32; i++) {
		char *volatile p = malloc(BLOCK);

		p[0] = 3;
		free(p);
	}
}

__attribute__((noinline)) static void daemon_late_site(void)
{
	int i;

	for (i = 0; i < 8; i++) {
		char *volatile p = malloc(BLOCK);

		p[0] = 4;
	}
}

static int write_file(const char *dir, const char *name, const char *what)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(what, f);
	return fclose(f);
}

int main(int argc, char **argv)
{
	struct timespec tick = { 0, 10 * 1000000 };
	char path[4096], pid[32];
	int i, n;

	if (argc != 3 || (n = atoi(argv[2]) * 16) <= 0) {
		fprintf(stderr, "usage: daemonize DIR MB\n");
		return 2;
	}
	parent_site();
	switch (fork()) {
	case -1:
		perror("fork");
		return 1;
	case 0:
		break;
	default:
		return 0;
	}
	if (setsid() < 0)
		return 1;
	switch (fork()) {
	case -1:
		return 1;
	case 0:
		break;
	default:
		_exit(0);
	}
	for (i = 0; i < 32; i++)
		free(parent_blocks[i]);
	daemon_blocks = calloc((size_t)n, sizeof(void *));
	if (!daemon_blocks)
		return 1;
	daemon_site(n);
	daemon_freed_site();
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (write_file(argv[1], "daemon.pid", pid))
		return 1;
	snprintf(path, sizeof(path), "%s/stop", argv[1]);
	for (i = 0; access(path, F_OK); i++) {
		if (i > 6000)
			return 99;
		nanosleep(&tick, NULL);
	}
	daemon_late_site();
	return write_file(argv[1], "daemon.done", "ok\n") ? 1 : 0;
}
