// SPDX-License-Identifier: MIT
/*
 * forker.c - fork (without exec) while other threads allocate
 * (tests/e2e/run-fork.sh).
 *
 *   forker WORKERS ITERATIONS FORKS
 *
 * WORKERS threads each call parent_worker_site ITERATIONS times: a malloc of
 * 256 bytes, every 4th one kept, the others freed.  Meanwhile the main
 * thread forks FORKS times; child i allocates 1000 blocks of 512 bytes at
 * child_site (kept: the child just exits), checks them, and exits with
 * status 10 + i % 50.  The parent waits for each child and checks its
 * status.  Halfway through their loop the workers wait until half of the
 * forks are done, so that the other half happens while they allocate.
 * After the forks, the main thread keeps one 4096-byte block at
 * parent_after_fork, FORKS times.
 *
 * At --rate 1 the profile must show exactly the parent's sites and nothing
 * of the children: a child has its own copy of the address space but
 * shares the ring with the parent, and must leave it alone.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILD_BLOCKS 1000

static long iterations;
static int go, forks_done;
static int forks;

struct worker {
	pthread_t thread;
	void **kept;
	long nkept;
	int bad;
};

__attribute__((noinline)) static void *parent_worker_site(unsigned char tag)
{
	unsigned char *p = malloc(256);

	if (p)
		memset(p, tag, 256);
	return p;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	long i;

	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		;
	for (i = 0; i < iterations; i++) {
		unsigned char *p;

		if (i == iterations / 2)
			while (__atomic_load_n(&forks_done, __ATOMIC_ACQUIRE) <
			       forks / 2)
				sched_yield();
		p = parent_worker_site((unsigned char)i);

		if (!p || p[255] != (unsigned char)i) {
			w->bad = 1;
			return NULL;
		}
		if (i % 4 == 0)
			w->kept[w->nkept++] = p;
		else
			free(p);
	}
	return NULL;
}

__attribute__((noinline)) static int child_site(int i)
{
	static unsigned char *blocks[CHILD_BLOCKS];
	int k;

	for (k = 0; k < CHILD_BLOCKS; k++) {
		blocks[k] = malloc(512);
		if (!blocks[k])
			return 1;
		memset(blocks[k], (unsigned char)(i + k), 512);
	}
	for (k = 0; k < CHILD_BLOCKS; k++)
		if (blocks[k][511] != (unsigned char)(i + k))
			return 1;
	return 0;
}

__attribute__((noinline)) static void *parent_after_fork(void)
{
	void *p = malloc(4096);

	if (p)
		memset(p, 1, 4096);
	return p;
}

int main(int argc, char **argv)
{
	struct worker *workers;
	int nworkers, i, bad = 0;
	void **after;

	if (argc != 4) {
		fprintf(stderr, "usage: forker WORKERS ITERATIONS FORKS\n");
		return 2;
	}
	nworkers = atoi(argv[1]);
	iterations = atol(argv[2]);
	forks = atoi(argv[3]);
	if (nworkers < 1 || iterations < 1 || forks < 1)
		return 2;
	workers = calloc((size_t)nworkers, sizeof(*workers));
	after = calloc((size_t)forks, sizeof(*after));
	if (!workers || !after)
		return 1;
	for (i = 0; i < nworkers; i++) {
		workers[i].kept = calloc((size_t)iterations / 4 + 1,
					 sizeof(void *));
		if (!workers[i].kept ||
		    pthread_create(&workers[i].thread, NULL, worker_main,
				   &workers[i]))
			return 1;
	}
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);

	for (i = 0; i < forks; i++) {
		int status;
		pid_t pid;

		fflush(stdout);		/* the child must not print it again */
		pid = fork();
		if (pid < 0) {
			perror("forker: fork");
			return 1;
		}
		if (pid == 0)
			exit(child_site(i) ? 1 : 10 + i % 50);
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 10 + i % 50) {
			fprintf(stderr, "forker: child %d ended with status %#x\n",
				i, status);
			bad = 1;
		}
		__atomic_store_n(&forks_done, i + 1, __ATOMIC_RELEASE);
	}
	printf("forker: %d children checked their data and exited as expected\n",
	       forks);
	for (i = 0; i < nworkers; i++) {
		pthread_join(workers[i].thread, NULL);
		bad |= workers[i].bad;
	}
	for (i = 0; i < forks; i++)
		after[i] = parent_after_fork();
	printf("forker: %d workers x %ld allocations done%s\n", nworkers,
	       iterations, bad ? ", FAILED" : "");
	return bad;
}
