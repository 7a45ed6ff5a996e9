// SPDX-License-Identifier: MIT
/*
 * attach-idle.c - a single-threaded program that spends its life blocked
 * in one kind of system call and allocates only when told to, for the
 * attach tests (tests/e2e/run-attach-poll.sh, run-attach-again.sh,
 * run-attach-refuse.sh).
 *
 *   attach-idle MODE FIFO [seccomp]
 *
 * MODE is where the thread waits between commands:
 *
 *   poll       poll() on the command pipe, no timeout
 *   read       a blocking read() on the command pipe
 *   nanosleep  nanosleep() for 200 ms (a signal cuts it short), then a
 *              non-blocking read
 *   epoll      epoll_wait() on the command pipe, no timeout
 *
 * FIFO is a named pipe to read commands from (opened read-write, so it
 * never reports end of file), or "-" for an anonymous pipe that only the
 * signal handlers write to.  Commands are single bytes; a signal is turned
 * into one by its handler (SA_RESTART), so a test can drive the program
 * either way:
 *
 *   a  (SIGUSR1)  tick_keep keeps one block of KEEP_SIZE bytes, filled with
 *                 a pattern; tick_churn allocates CHURN_SIZE bytes and
 *                 frees them at once
 *   f  (SIGHUP)   release_all checks every kept block and frees it
 *   q  (SIGUSR2)  check every kept block, print the result, exit
 *   b             busy_spin: compute for BUSY_MS ms, with no allocation and
 *                 no system call (a request being handled, say)
 *   p             keep_malloc: keep malloc's address as the program sees
 *                 it, read from its GOT (a GLOB_DAT slot: an attached
 *                 agent's hook, while attached), as code that stores
 *                 &malloc in a table does
 *   G             from then on wait for commands as a green thread: on a
 *                 coroutine's stack (ucontext) in a block of its own
 *                 (mmap, no guard page), whose first words are the green
 *                 thread's record, below its stack (it prints "record
 *                 ADDRESS"); a second thread waits in pause() for a
 *                 tracer to borrow
 *   P             keep_in_record: keep malloc's address (from the GOT, as
 *                 'p') in that record: a word below a thread's stack
 *                 pointer, in the same mapping, and no dead stack
 *   c             call_kept: allocate and free through the address kept
 *                 (the agent's hook, if it was attached at the 'p': it
 *                 must still pass the call through, so it must still be
 *                 loaded)
 *
 * After each command it prints "done N" (N commands so far), so a test
 * knows when the command was carried out.  The last line is
 *   attach-idle MODE: E allocations, F freed, K kept, check ok
 * ("check FAILED" and exit status 1 if a block did not hold its pattern).
 *
 * With "seccomp" it installs a seccomp filter first that kills the process
 * at memfd_create (which it never calls itself, and the agent does), as
 * systemd's SystemCallFilter= kills at what it does not list: a tracer
 * must refuse to inject.  With "seccomp-thread" only a second thread
 * (which then waits in pause()) installs it, on itself: the main thread
 * says "Seccomp: 0" in /proc/PID/status.  The same source built with -static is the
 * statically linked target.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define KEEP_SIZE	4000
#define CHURN_SIZE	100
#define MAX_KEPT	100000
#define BUSY_MS		600

static int pipe_rd = -1, pipe_wr = -1;
static unsigned char *kept[MAX_KEPT];
static unsigned int kept_seed[MAX_KEPT];
static unsigned int nkept, nallocs, nfreed, seq;
static int bad;

static void on_signal(int sig)
{
	int saved = errno;
	char c = sig == SIGUSR1 ? 'a' : sig == SIGHUP ? 'f' : 'q';

	if (write(pipe_wr, &c, 1) < 0) {
		/* a full pipe: the command is dropped, the test will notice */
	}
	errno = saved;
}

static void pattern(unsigned char *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(seed * 31u + i * 7u);
}

static int pattern_ok(const unsigned char *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed * 31u + i * 7u))
			return 0;
	return 1;
}

__attribute__((noinline)) static void tick_keep(void)
{
	unsigned char *p = malloc(KEEP_SIZE);

	if (!p || nkept == MAX_KEPT) {
		bad = 1;
		free(p);
		return;
	}
	pattern(p, KEEP_SIZE, ++seq);
	kept_seed[nkept] = seq;
	kept[nkept++] = p;
	nallocs++;
}

__attribute__((noinline)) static void tick_churn(void)
{
	unsigned char *volatile p = malloc(CHURN_SIZE);

	if (!p) {
		bad = 1;
		return;
	}
	pattern(p, CHURN_SIZE, 99);
	if (!pattern_ok(p, CHURN_SIZE, 99))
		bad = 1;
	free(p);
}

static void check_all(void)
{
	unsigned int i;

	for (i = 0; i < nkept; i++)
		if (!pattern_ok(kept[i], KEEP_SIZE, kept_seed[i]))
			bad = 1;
}

__attribute__((noinline)) static void release_all(void)
{
	unsigned int i;

	check_all();
	for (i = 0; i < nkept; i++)
		free(kept[i]);
	nfreed += nkept;
	nkept = 0;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);	/* the vDSO: no system call */
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *(*volatile kept_malloc)(size_t);
static void *(*volatile *kept_rec)(size_t);
static void *co_block;		/* 'G': the green thread's record, then
				   its stack */

__attribute__((noinline)) static void keep_malloc(void)
{
	kept_malloc = malloc;
}

__attribute__((noinline)) static int keep_in_record(void)
{
	if (!co_block)
		return -1;
	kept_rec = co_block;
	*kept_rec = malloc;
	return 0;
}

__attribute__((noinline)) static void call_kept(void)
{
	void *(*f)(size_t) = kept_rec ? *kept_rec : kept_malloc;
	unsigned char *p;

	if (!f) {
		bad = 1;
		return;
	}
	p = f(CHURN_SIZE);
	if (!p) {
		bad = 1;
		return;
	}
	pattern(p, CHURN_SIZE, 7);
	if (!pattern_ok(p, CHURN_SIZE, 7))
		bad = 1;
	free(p);
}

__attribute__((noinline)) static void busy_spin(void)
{
	long long end = now_ms() + BUSY_MS;
	volatile unsigned long x = 0;

	while (now_ms() < end)
		x++;
}

static int install_seccomp(void)
{
	struct sock_filter kill_memfd[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_memfd_create, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = 4, .filter = kill_memfd };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0)) {
		perror("attach-idle: seccomp");
		return -1;
	}
	return 0;
}

static void *filtered_thread(void *arg)
{
	int *ok = arg;

	*ok = !install_seccomp();
	__atomic_store_n(ok + 1, 1, __ATOMIC_RELEASE);
	for (;;)
		pause();
	return NULL;
}

/* Wait for the next command byte, the MODE way.  -1 on error. */
static int next_command(const char *mode, int epfd)
{
	char c;
	ssize_t n;

	for (;;) {
		/* a command already there is taken without waiting (the
		 * nanosleep mode looks only between naps) */
		n = read(pipe_rd, &c, 1);
		if (n == 1)
			return (unsigned char)c;
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (!strcmp(mode, "poll")) {
			struct pollfd pfd = { .fd = pipe_rd, .events = POLLIN };

			if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
				return -1;
		} else if (!strcmp(mode, "epoll")) {
			struct epoll_event ev;

			if (epoll_wait(epfd, &ev, 1, -1) < 0 && errno != EINTR)
				return -1;
		} else if (!strcmp(mode, "nanosleep")) {
			struct timespec ts = { 0, 200 * 1000000 };

			if (nanosleep(&ts, NULL) && errno != EINTR)
				return -1;
		}
	}
}

#define CO_BLOCK	(256 * 1024)
#define CO_RECORD	4096

static const char *loop_mode;
static int loop_epfd, loop_rc;
static unsigned int done;
static ucontext_t main_ctx, co_ctx;
static int on_coroutine;

static int command_loop(void);

static void co_main(void)
{
	loop_rc = command_loop();	/* then back to main_ctx: uc_link */
}

static void *idle_thread(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* Go on waiting for commands as a green thread, with a thread waiting in
 * pause() on a stack of its own: a tracer borrows that one (never a thread
 * on a stack carved out of something else). */
static int loop_on_coroutine(void)
{
	pthread_t th;

	co_block = mmap(NULL, CO_BLOCK, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (co_block == MAP_FAILED || getcontext(&co_ctx) ||
	    pthread_create(&th, NULL, idle_thread, NULL))
		return 1;
	printf("record %p\n", co_block);
	printf("done %u\n", ++done);
	fflush(stdout);
	co_ctx.uc_stack.ss_sp = (char *)co_block + CO_RECORD;
	co_ctx.uc_stack.ss_size = CO_BLOCK - CO_RECORD;
	co_ctx.uc_link = &main_ctx;
	makecontext(&co_ctx, co_main, 0);
	on_coroutine = 1;
	if (swapcontext(&main_ctx, &co_ctx))
		return 1;
	return loop_rc;
}

static int command_loop(void)
{
	const char *mode = loop_mode;
	int c;

	while ((c = next_command(mode, loop_epfd)) >= 0) {
		switch (c) {
		case 'a':
			tick_keep();
			tick_churn();
			break;
		case 'f':
			release_all();
			break;
		case 'b':
			busy_spin();
			break;
		case 'p':
			keep_malloc();
			break;
		case 'P':
			if (keep_in_record())
				bad = 1;
			break;
		case 'G':
			if (!on_coroutine)
				return loop_on_coroutine();
			printf("done %u\n", ++done);
			fflush(stdout);
			continue;
		case 'c':
			call_kept();
			break;
		case 'q':
			check_all();
			printf("done %u\n", ++done);
			printf("attach-idle %s: %u allocations, %u freed, %u kept, check %s\n",
			       mode, nallocs, nfreed, nkept,
			       bad ? "FAILED" : "ok");
			return bad ? 1 : 0;
		default:
			continue;	/* newlines and such */
		}
		printf("done %u\n", ++done);
		fflush(stdout);
	}
	perror("attach-idle: waiting for a command");
	return 1;
}

int main(int argc, char **argv)
{
	const char *mode;
	struct sigaction sa;
	int fds[2], epfd = -1, blocking;

	if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "seccomp") &&
				     strcmp(argv[3], "seccomp-thread"))) {
		fprintf(stderr, "usage: attach-idle poll|read|nanosleep|epoll FIFO|- [seccomp|seccomp-thread]\n");
		return 2;
	}
	mode = argv[1];
	if (strcmp(mode, "poll") && strcmp(mode, "read") &&
	    strcmp(mode, "nanosleep") && strcmp(mode, "epoll")) {
		fprintf(stderr, "attach-idle: unknown mode %s\n", mode);
		return 2;
	}
	blocking = !strcmp(mode, "read");
	if (!strcmp(argv[2], "-")) {
		if (pipe2(fds, O_CLOEXEC)) {
			perror("attach-idle: pipe");
			return 1;
		}
		pipe_rd = fds[0];
		pipe_wr = fds[1];
	} else {
		pipe_rd = open(argv[2], O_RDWR | O_CLOEXEC);
		if (pipe_rd < 0) {
			perror(argv[2]);
			return 1;
		}
		pipe_wr = pipe_rd;
	}
	if (!blocking)
		fcntl(pipe_rd, F_SETFL, O_NONBLOCK);
	if (!strcmp(mode, "epoll")) {
		struct epoll_event ev = { .events = EPOLLIN };

		epfd = epoll_create1(EPOLL_CLOEXEC);
		if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, pipe_rd, &ev)) {
			perror("attach-idle: epoll");
			return 1;
		}
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) || sigaction(SIGUSR2, &sa, NULL) ||
	    sigaction(SIGHUP, &sa, NULL)) {
		perror("attach-idle: sigaction");
		return 1;
	}
	if (argc == 4 && !strcmp(argv[3], "seccomp") && install_seccomp())
		return 1;
	if (argc == 4 && !strcmp(argv[3], "seccomp-thread")) {
		static int state[2];
		pthread_t th;

		if (pthread_create(&th, NULL, filtered_thread, state))
			return 1;
		while (!__atomic_load_n(&state[1], __ATOMIC_ACQUIRE))
			usleep(1000);
		if (!state[0])
			return 1;
	}
	printf("attach-idle %s: ready\n", mode);
	fflush(stdout);
	loop_mode = mode;
	loop_epfd = epfd;
	return command_loop();
}

