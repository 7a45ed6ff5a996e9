// SPDX-License-Identifier: MIT
/*
 * vforker.c - a single-threaded program that dlopens a library and then
 * waits in vfork, for tests/e2e/run-attach-vfork.sh.
 *
 *   vforker GO BEAT CHILD_MS
 *
 * Every 20 ms: a malloc and free of 1000 bytes at beat_site, and the
 * number of beats since the vfork (0 before it) written over BEAT.  Once
 * the file GO exists: dlopen libz (a new module, which an attached tracer
 * hooks by borrowing a thread - this one, the only one, is then waiting in
 * vfork, which no interrupt ends), then vfork; the child sleeps CHILD_MS
 * and exits.  After 60 s: exit 0.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static void beat_site(void)
{
	char *volatile p = malloc(1000);

	p[0] = 1;
	free(p);
}

int main(int argc, char **argv)
{
	struct timespec tick = { 0, 20 * 1000000 };
	long beats = -1, i, child_ms;
	int fd;

	if (argc != 4) {
		fprintf(stderr, "usage: vforker GO BEAT CHILD_MS\n");
		return 2;
	}
	child_ms = atol(argv[3]);
	fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return 1;
	for (i = 0; i < 3000; i++) {
		char buf[32];
		int n;

		beat_site();
		if (beats < 0 && !access(argv[1], F_OK)) {
			pid_t child;

			if (!dlopen("libz.so.1", RTLD_NOW))
				return 1;
			child = vfork();
			if (child == 0) {
				struct timespec t = { child_ms / 1000,
						      (child_ms % 1000) * 1000000 };

				nanosleep(&t, NULL);
				_exit(0);
			}
			if (child < 0)
				return 1;
			beats = 0;
		}
		if (beats >= 0)
			beats++;
		n = snprintf(buf, sizeof(buf), "%ld\n", beats < 0 ? 0 : beats);
		if (pwrite(fd, buf, (size_t)n, 0) != n)
			return 1;
		nanosleep(&tick, NULL);
	}
	return 0;
}
