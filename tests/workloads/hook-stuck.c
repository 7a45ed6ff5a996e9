// SPDX-License-Identifier: MIT
/*
 * hook-stuck.c - a thread that stays inside the agent's code, for the
 * detach test (tests/e2e/run-detach.sh): the tracer must find it there,
 * keep the agent loaded, and the thread must come back out of it alive.
 *
 *   hook-stuck FIFO
 *
 * A worker calls free(NULL) and free(malloc(48)) without pause: while an
 * agent is attached, every call goes through its hooks, and at --rate 1
 * mostly through the slow path that samples.  Another thread sends it SIGUSR1
 * every 200 us.  Once armed, the handler parks the worker (in a futex
 * wait) the first time it has interrupted it with its instruction pointer
 * inside the agent's code - the executable mapping of libpprof-alloc,
 * which the main thread looks up in /proc/self/maps every 10 ms - and
 * says "parked" on stdout; released, it returns into the agent's code and
 * the worker goes on.  The main thread waits for commands in poll() (a
 * thread a tracer may borrow):
 *
 *   k  arm the handler
 *   r  release the parked worker; it says "released" once out of the
 *      handler
 *   q  print "hook-stuck: ok N" (N calls) and exit
 */
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static uintptr_t agent_lo, agent_hi;	/* the agent's code, or 0 */
static int armed, parked, released, stop;
static unsigned long calls;
static pthread_t worker_th;

static void say(const char *s)
{
	ssize_t n = write(1, s, strlen(s));

	(void)n;
}

static void on_usr1(int sig, siginfo_t *si, void *ctx)
{
#ifdef __aarch64__
	uintptr_t ip = (uintptr_t)((ucontext_t *)ctx)->uc_mcontext.pc;
#else
	uintptr_t ip = (uintptr_t)((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RIP];
#endif
	uintptr_t lo = __atomic_load_n(&agent_lo, __ATOMIC_ACQUIRE);
	uintptr_t hi = __atomic_load_n(&agent_hi, __ATOMIC_ACQUIRE);

	(void)sig;
	(void)si;
	if (!__atomic_load_n(&armed, __ATOMIC_ACQUIRE) || ip < lo || ip >= hi)
		return;
	__atomic_store_n(&armed, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&parked, 1, __ATOMIC_RELEASE);
	say("parked\n");
	while (!__atomic_load_n(&released, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, &released, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	__atomic_store_n(&parked, 0, __ATOMIC_RELEASE);
	say("released\n");
}

static void *worker(void *arg)
{
	void *volatile none = NULL;

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		free(none);
		/* at --rate 1 every one is sampled: most of the time in
		 * the agent is then in its slow path */
		free(malloc(48));
		__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *kicker(void *arg)
{
	struct timespec t = { 0, 200 * 1000 };

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(&armed, __ATOMIC_ACQUIRE))
			pthread_kill(worker_th, SIGUSR1);
		nanosleep(&t, NULL);
	}
	return NULL;
}

/*
 * The agent's executable mapping, from /proc/self/maps.  Its bounds pass
 * through this function's frame (and sscanf's): stale words that the
 * tracer, scanning every word of a live stack, would take for a thread
 * inside the agent - the poll() main waits in does not overwrite them
 * all.  So scrub() wipes the stack below main's frame afterwards: only
 * the parked worker is inside the agent.
 */
__attribute__((noinline)) static void find_agent(void)
{
	char line[512];
	unsigned long lo = 0, hi = 0, a, b;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "pprof-alloc") && strstr(line, " r-xp ") &&
		    sscanf(line, "%lx-%lx", &a, &b) == 2) {
			lo = a;
			hi = b;
		}
	fclose(f);
	__atomic_store_n(&agent_hi, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&agent_lo, lo, __ATOMIC_RELEASE);
	__atomic_store_n(&agent_hi, hi, __ATOMIC_RELEASE);
}

__attribute__((noinline)) static void scrub(void)
{
	volatile unsigned char pad[32768];
	size_t i;

	for (i = 0; i < sizeof(pad); i++)
		pad[i] = 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	pthread_t kick_th;
	struct pollfd pfd;
	char c;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: hook-stuck FIFO\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_usr1;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) ||
	    pthread_create(&worker_th, NULL, worker, NULL) ||
	    pthread_create(&kick_th, NULL, kicker, NULL)) {
		perror("hook-stuck");
		return 1;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	printf("hook-stuck: ready\n");
	for (;;) {
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 10) > 0 && read(fd, &c, 1) == 1) {
			if (c == 'k') {
				__atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
			} else if (c == 'r') {
				__atomic_store_n(&released, 1, __ATOMIC_RELEASE);
				syscall(SYS_futex, &released, FUTEX_WAKE_PRIVATE,
					1, NULL, NULL, 0);
			} else if (c == 'q') {
				break;
			}
		}
		if (!__atomic_load_n(&parked, __ATOMIC_ACQUIRE)) {
			find_agent();
			scrub();
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(worker_th, NULL);
	pthread_join(kick_th, NULL);
	printf("hook-stuck: ok %lu\n", __atomic_load_n(&calls, __ATOMIC_RELAXED));
	return 0;
}
