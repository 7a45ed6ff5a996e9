// SPDX-License-Identifier: MIT
/*
 * telemetry.c - a program whose memory the readings must show.
 *
 *   telemetry hold MB SECONDS   allocate MB MiB in 1 MiB blocks (hold_block),
 *                               touch every page, print "ready", sleep,
 *                               exit holding them (so that the last
 *                               reading before the exit, however late a
 *                               loaded machine takes it, sees them all)
 *   telemetry wave STEPS MB MS  grow the heap by MB MiB (wave_block) every
 *                               MS ms for STEPS steps, then shrink it the
 *                               same way, then exit
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MiB (1024 * 1024)

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts))
		;
}

__attribute__((noinline)) static char *hold_block(void)
{
	char *p = malloc(MiB);

	if (!p)
		exit(3);
	memset(p, 0x5a, MiB);
	return p;
}

__attribute__((noinline)) static char *wave_block(void)
{
	char *p = malloc(MiB);

	if (!p)
		exit(3);
	memset(p, 0xa5, MiB);
	return p;
}

int main(int argc, char **argv)
{
	char **blocks;
	long i, n;

	if (argc == 4 && !strcmp(argv[1], "hold")) {
		n = atol(argv[2]);
		blocks = calloc((size_t)n, sizeof(*blocks));
		for (i = 0; i < n; i++)
			blocks[i] = hold_block();
		printf("ready\n");
		fflush(stdout);
		sleep_ms(atol(argv[3]) * 1000);
		return 0;
	}
	if (argc == 5 && !strcmp(argv[1], "wave")) {
		long steps = atol(argv[2]), mb = atol(argv[3]), ms = atol(argv[4]);
		long s;

		n = steps * mb;
		blocks = calloc((size_t)n, sizeof(*blocks));
		for (s = 0; s < steps; s++) {
			for (i = 0; i < mb; i++)
				blocks[s * mb + i] = wave_block();
			sleep_ms(ms);
		}
		for (s = steps - 1; s >= 0; s--) {
			for (i = 0; i < mb; i++)
				free(blocks[s * mb + i]);
			sleep_ms(ms);
		}
		free(blocks);
		return 0;
	}
	fprintf(stderr, "usage: telemetry hold MB SECONDS | wave STEPS MB MS\n");
	return 2;
}
