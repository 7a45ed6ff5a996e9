// SPDX-License-Identifier: MIT
/*
 * gate.c - a program that runs until the test opens the gate, for
 * tests/e2e/run-output.sh (what happens to the outputs meanwhile).
 *
 *   gate READY GO STATUS   keep 10 blocks of 1000 bytes (gate_keep), write
 *                          its pid to READY, wait until the file GO exists
 *                          (checked every 10 ms; after a minute: exit 99),
 *                          then exit STATUS
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void *volatile kept[10];

__attribute__((noinline)) static void gate_keep(void)
{
	int i;

	for (i = 0; i < 10; i++)
		kept[i] = malloc(1000);
}

int main(int argc, char **argv)
{
	struct timespec tick = { 0, 10 * 1000000 };
	FILE *f;
	int i;

	if (argc != 4) {
		fprintf(stderr, "usage: gate READY GO STATUS\n");
		return 2;
	}
	gate_keep();
	f = fopen(argv[1], "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
		return 98;
	for (i = 0; access(argv[2], F_OK); i++) {
		if (i > 6000)
			return 99;
		nanosleep(&tick, NULL);
	}
	return atoi(argv[3]);
}
