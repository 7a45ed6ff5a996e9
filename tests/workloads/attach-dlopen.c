// SPDX-License-Identifier: MIT
/*
 * attach-dlopen.c - a service that loads a library with dlopen only when
 * told to (after a tracer attached, in tests/e2e/run-attach-dlopen.sh) and
 * then allocates through it for a while.
 *
 *   attach-dlopen FIFO LIBRARY_A LIBRARY_B LIBRARY_C MS
 *
 * Both libraries export "unsigned long dl_work(void **slot)", which keeps
 * one block in *slot and allocates and frees another (the test builds
 * them, with site names of their own).  The main thread waits in poll() on
 * FIFO for one-byte commands:
 *
 *   a  dlopen LIBRARY_A, then at once allocate and free one block at
 *      after_dlopen (a sampled allocation in a hooked module right after
 *      the dlopen, which is when the agent hooks the new library), then
 *      call its dl_work every millisecond for MS ms, and at least
 *      MIN_CALLS times; print "A calls N"
 *   b  dlopen LIBRARY_B and call its dl_work the same way, with no
 *      allocation of our own right after the dlopen: only after every
 *      HEARTBEAT calls does heartbeat allocate and free a block (the
 *      first after call HEARTBEAT); print "B calls N"
 *   c  LIBRARY_C is a colon-separated list; for each library in turn:
 *      start a thread that allocates and frees at busy_site without a
 *      pause, wait 1 ms, dlopen the library, allocate at after_dlopen,
 *      stop the thread, and call its dl_work as for 'a' for MS / (number
 *      of libraries) ms; print "C calls N" (all the libraries' calls).
 *      The agent must not touch a new library's GOT while the loader is
 *      still relocating it, though sampled allocations - and so module
 *      rescans - happen all through the dlopen.
 *   q  free every kept block and exit; the last line is
 *      "attach-dlopen: A calls N, B calls M, C calls L, checksum S"
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_CALLS 100000
#define HEARTBEAT 50
#define MIN_CALLS 150	/* per library, however slow the machine */

typedef unsigned long (*dl_work_fn)(void **slot);

static void *kept[3][MAX_CALLS];
static unsigned long ncalls[3], checksum;
static volatile int busy_stop;
static long run_ms;

static void *volatile sink;

__attribute__((noinline)) static void after_dlopen(void)
{
	sink = malloc(56);
	free(sink);
}

__attribute__((noinline)) static void heartbeat(void)
{
	sink = malloc(88);
	free(sink);
}

__attribute__((noinline)) static void busy_site(void)
{
	sink = malloc(16);
	free(sink);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Allocates without a pause until told to stop (5 s at most). */
static void *busy_main(void *arg)
{
	long long end = now_ms() + 5000;

	(void)arg;
	while (!busy_stop && now_ms() < end)
		busy_site();
	return NULL;
}

/* dlopen path (with a busy thread allocating meanwhile if busy), then
 * allocate at after_dlopen if settle, then call its dl_work every
 * millisecond for ms milliseconds, and at least MIN_CALLS times (on a
 * busy machine 500 ms made 84 calls, and run-attach-dlopen wants 100).
 * 0 or -1. */
static int load_and_run(int which, const char *path, int settle, int busy,
			long ms)
{
	struct timespec one_ms = { 0, 1000000 };
	pthread_t busy_thread;
	dl_work_fn work;
	unsigned long calls;
	long long end;
	void *lib;

	if (busy) {
		busy_stop = 0;
		if (pthread_create(&busy_thread, NULL, busy_main, NULL))
			return -1;
		nanosleep(&one_ms, NULL);
	}
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (settle)
		after_dlopen();
	if (busy) {
		busy_stop = 1;
		pthread_join(busy_thread, NULL);
	}
	if (!lib) {
		fprintf(stderr, "attach-dlopen: %s\n", dlerror());
		return -1;
	}
	*(void **)&work = dlsym(lib, "dl_work");
	if (!work) {
		fprintf(stderr, "attach-dlopen: %s\n", dlerror());
		return -1;
	}
	end = now_ms() + ms;
	calls = ncalls[which] + MIN_CALLS;
	while ((now_ms() < end || ncalls[which] < calls) &&
	       ncalls[which] < MAX_CALLS) {
		checksum += work(&kept[which][ncalls[which]]);
		ncalls[which]++;
		if (!settle && ncalls[which] % HEARTBEAT == 0)
			heartbeat();
		nanosleep(&one_ms, NULL);
	}
	return 0;	/* never dlclosed: the samples keep their mapping */
}

/* Command c: every library of the colon-separated list in turn. */
static int run_c(char *list)
{
	char *path, *save = NULL;
	int n = 1;

	for (path = list; *path; path++)
		n += *path == ':';
	for (path = strtok_r(list, ":", &save); path;
	     path = strtok_r(NULL, ":", &save))
		if (load_and_run(2, path, 1, 1, run_ms / n))
			return -1;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long i;
	int fd, w;

	if (argc != 6 || (run_ms = atol(argv[5])) < 1) {
		fprintf(stderr, "usage: attach-dlopen FIFO LIBRARY_A LIBRARY_B LIBRARY_C MS\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	printf("attach-dlopen: ready\n");
	fflush(stdout);
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		char c;

		if (poll(&pfd, 1, -1) < 0 && errno != EINTR) {
			perror("attach-dlopen: poll");
			return 1;
		}
		while (read(fd, &c, 1) == 1) {
			if ((c == 'a' && load_and_run(0, argv[2], 1, 0, run_ms)) ||
			    (c == 'b' && load_and_run(1, argv[3], 0, 0, run_ms)) ||
			    (c == 'c' && run_c(argv[4])))
				return 1;
			if (c >= 'a' && c <= 'c') {
				printf("%c calls %lu\n", 'A' + c - 'a', ncalls[c - 'a']);
				fflush(stdout);
			}
			if (c == 'q')
				goto quit;
		}
	}
quit:
	for (w = 0; w < 3; w++)
		for (i = 0; i < ncalls[w]; i++)
			free(kept[w][i]);
	printf("attach-dlopen: A calls %lu, B calls %lu, C calls %lu, checksum %lu\n",
	       ncalls[0], ncalls[1], ncalls[2], checksum);
	return 0;
}
