// SPDX-License-Identifier: MIT
/*
 * survivor.c - a target that checks, from the inside, that a tracer
 * borrowing its threads (or dying while it does) leaves no trace.
 *
 * survivor [SECONDS [IDLE]]: one thread, IDLE, waits in a system call a
 * tracer borrows from; the others wait in a plain FUTEX_WAIT with a
 * timeout, which a tracer never borrows (a low-level lock's wait).  Every
 * wait is a raw system call with registers holding patterns across it,
 * checked after: on x86-64 rbx, r12-r15 and ymm8-ymm15 (xmm8-15 without
 * AVX); on aarch64 x7 (which a syscall-stop hides from the tracer), x9-x11,
 * x19-x21, x28 and v8-v15:
 *   - "main" (the default): poll with a timeout (a restart block; ppoll on
 *     aarch64, which has no poll); it checks its signal mask;
 *   - "sleeper": nanosleep (a restart block); it has its own signal mask
 *     (SIGUSR2 and SIGWINCH blocked) and an alternate signal stack;
 *   - "reader": read of a pipe that main writes every 10 ms (restarted:
 *     never EINTR);
 *   - "builder" builds and frees checksummed lists with malloc.
 * An interrupted poll or nanosleep may return EINTR (a tracer that died
 * mid-call leaves it no restart block); those are counted ("eintr N"), not
 * failures here: with every tracer alive there must be none, which the
 * tests check.
 *
 * Runs until SIGTERM (or SECONDS), then prints one line:
 * "survivor: ok ..." with counts, or "survivor: FAIL what" and exits 1.
 * "survivor: ready" on stderr once every thread has gone round once.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static const char *idle = "main";
static int pipefd[2];
static long sleeps, reads, lists, polls, eintr;
static char failed[256];

static void fail(const char *fmt, const char *what, long v)
{
	if (!failed[0])
		snprintf(failed, sizeof(failed), fmt, what, v);
	stop = 1;
}

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

/*
 * A raw system call with the callee-saved registers and eight vector
 * registers full of a pattern; 0 if all came back, else which.
 */
#if defined(__aarch64__)
static int regs_across(long nr, long a0, long a1, long a2, long a3,
		       long *ret)
{
	uint64_t pat = 0x0123456789abcdefull ^ (uint64_t)(uintptr_t)&pat;
	struct {
		uint64_t g_in[8], g_out[8];		/* at 0, 64 */
		uint8_t v_in[8 * 16], v_out[8 * 16];	/* at 128, 256 */
	} b;
	register long x0 __asm__("x0") = a0;
	register long x1 __asm__("x1") = a1;
	register long x2 __asm__("x2") = a2;
	register long x3 __asm__("x3") = a3;
	register long x8 __asm__("x8") = nr;
	int i;

	for (i = 0; i < 8; i++)
		b.g_in[i] = pat * (uint64_t)(i + 3);
	for (i = 0; i < (int)sizeof(b.v_in); i++)
		b.v_in[i] = (uint8_t)(pat >> (i % 56)) ^ (uint8_t)i;
	memset(b.v_out, 0, sizeof(b.v_out));
	__asm__ volatile(
		"ldp q8, q9, [%[b], #128]\n\t"
		"ldp q10, q11, [%[b], #160]\n\t"
		"ldp q12, q13, [%[b], #192]\n\t"
		"ldp q14, q15, [%[b], #224]\n\t"
		"ldp x7, x9, [%[b], #0]\n\t"
		"ldp x10, x11, [%[b], #16]\n\t"
		"ldp x19, x20, [%[b], #32]\n\t"
		"ldp x21, x28, [%[b], #48]\n\t"
		"svc #0\n\t"
		"stp x7, x9, [%[b], #64]\n\t"
		"stp x10, x11, [%[b], #80]\n\t"
		"stp x19, x20, [%[b], #96]\n\t"
		"stp x21, x28, [%[b], #112]\n\t"
		"stp q8, q9, [%[b], #256]\n\t"
		"stp q10, q11, [%[b], #288]\n\t"
		"stp q12, q13, [%[b], #320]\n\t"
		"stp q14, q15, [%[b], #352]\n\t"
		: "+r"(x0)
		: "r"(x1), "r"(x2), "r"(x3), "r"(x8), [b] "r"(&b)
		: "x7", "x9", "x10", "x11", "x19", "x20", "x21", "x28",
		  "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15",
		  "memory");
	*ret = x0;
	for (i = 0; i < 8; i++)
		if (b.g_in[i] != b.g_out[i])
			return 1;
	for (i = 0; i < 8; i++)
		if (memcmp(b.v_in + 16 * i, b.v_out + 16 * i, 16))
			return 2 + i;
	return 0;
}
#else
static int regs_across(long nr, long a0, long a1, long a2, long a3,
		       long *ret)
{
	uint64_t pat = 0x0123456789abcdefull ^ (uint64_t)(uintptr_t)&pat;
	struct {
		uint64_t g_in[5], g_out[5];		/* at 0, 40 */
		uint8_t v_in[8 * 32], v_out[8 * 32];	/* at 80, 336 */
	} b;
	int i, avx = __builtin_cpu_supports("avx");
	register long r10 __asm__("r10") = a3;
	long rax;

	for (i = 0; i < 5; i++)
		b.g_in[i] = pat * (uint64_t)(i + 3);
	for (i = 0; i < (int)sizeof(b.v_in); i++)
		b.v_in[i] = (uint8_t)(pat >> (i % 56)) ^ (uint8_t)i;
	memset(b.v_out, 0, sizeof(b.v_out));
	if (avx)
		__asm__ volatile(
			"vmovdqu 80(%[b]), %%ymm8\n\t"
			"vmovdqu 112(%[b]), %%ymm9\n\t"
			"vmovdqu 144(%[b]), %%ymm10\n\t"
			"vmovdqu 176(%[b]), %%ymm11\n\t"
			"vmovdqu 208(%[b]), %%ymm12\n\t"
			"vmovdqu 240(%[b]), %%ymm13\n\t"
			"vmovdqu 272(%[b]), %%ymm14\n\t"
			"vmovdqu 304(%[b]), %%ymm15\n\t"
			"mov 0(%[b]), %%rbx\n\t"
			"mov 8(%[b]), %%r12\n\t"
			"mov 16(%[b]), %%r13\n\t"
			"mov 24(%[b]), %%r14\n\t"
			"mov 32(%[b]), %%r15\n\t"
			"syscall\n\t"
			"mov %%rbx, 40(%[b])\n\t"
			"mov %%r12, 48(%[b])\n\t"
			"mov %%r13, 56(%[b])\n\t"
			"mov %%r14, 64(%[b])\n\t"
			"mov %%r15, 72(%[b])\n\t"
			"vmovdqu %%ymm8, 336(%[b])\n\t"
			"vmovdqu %%ymm9, 368(%[b])\n\t"
			"vmovdqu %%ymm10, 400(%[b])\n\t"
			"vmovdqu %%ymm11, 432(%[b])\n\t"
			"vmovdqu %%ymm12, 464(%[b])\n\t"
			"vmovdqu %%ymm13, 496(%[b])\n\t"
			"vmovdqu %%ymm14, 528(%[b])\n\t"
			"vmovdqu %%ymm15, 560(%[b])\n\t"
			"vzeroupper\n\t"
			: "=a"(rax)
			: "a"(nr), "D"(a0), "S"(a1), "d"(a2), [b] "r"(&b),
			  "r"(r10)
			: "rbx", "r12", "r13", "r14", "r15", "rcx", "r11",
			  "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13",
			  "xmm14", "xmm15", "memory");
	else
		__asm__ volatile(
			"movdqu 80(%[b]), %%xmm8\n\t"
			"movdqu 112(%[b]), %%xmm9\n\t"
			"movdqu 144(%[b]), %%xmm10\n\t"
			"movdqu 176(%[b]), %%xmm11\n\t"
			"movdqu 208(%[b]), %%xmm12\n\t"
			"movdqu 240(%[b]), %%xmm13\n\t"
			"movdqu 272(%[b]), %%xmm14\n\t"
			"movdqu 304(%[b]), %%xmm15\n\t"
			"mov 0(%[b]), %%rbx\n\t"
			"mov 8(%[b]), %%r12\n\t"
			"mov 16(%[b]), %%r13\n\t"
			"mov 24(%[b]), %%r14\n\t"
			"mov 32(%[b]), %%r15\n\t"
			"syscall\n\t"
			"mov %%rbx, 40(%[b])\n\t"
			"mov %%r12, 48(%[b])\n\t"
			"mov %%r13, 56(%[b])\n\t"
			"mov %%r14, 64(%[b])\n\t"
			"mov %%r15, 72(%[b])\n\t"
			"movdqu %%xmm8, 336(%[b])\n\t"
			"movdqu %%xmm9, 368(%[b])\n\t"
			"movdqu %%xmm10, 400(%[b])\n\t"
			"movdqu %%xmm11, 432(%[b])\n\t"
			"movdqu %%xmm12, 464(%[b])\n\t"
			"movdqu %%xmm13, 496(%[b])\n\t"
			"movdqu %%xmm14, 528(%[b])\n\t"
			"movdqu %%xmm15, 560(%[b])\n\t"
			: "=a"(rax)
			: "a"(nr), "D"(a0), "S"(a1), "d"(a2), [b] "r"(&b),
			  "r"(r10)
			: "rbx", "r12", "r13", "r14", "r15", "rcx", "r11",
			  "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13",
			  "xmm14", "xmm15", "memory");
	*ret = rax;
	if (memcmp(b.g_in, b.g_out, sizeof(b.g_in)))
		return 1;
	for (i = 0; i < 8; i++)
		if (memcmp(b.v_in + 32 * i, b.v_out + 32 * i, avx ? 32 : 16))
			return 2 + i;
	return 0;
}
#endif

/* Wait ms milliseconds in a system call: nr's, if this thread is the idle
 * one (args a0..a2), else a FUTEX_WAIT that times out. */
static long wait_in(const char *who, long nr, long a0, long a1, long a2,
		    long ms)
{
	static int never;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	long ret;
	int bad;

	if (strcmp(who, idle)) {
		nr = SYS_futex;
		a0 = (long)&never;
		a1 = FUTEX_WAIT | FUTEX_PRIVATE_FLAG;
		a2 = 0;
		bad = regs_across(nr, a0, a1, a2, (long)&ts, &ret);
		if (ret == -ETIMEDOUT || ret == -EINTR)
			ret = 0;
	} else {
		bad = regs_across(nr, a0, a1, a2, 0, &ret);
	}
	if (bad)
		fail("%s: register %ld changed across a system call", who, bad);
	if (ret == -EINTR) {
		if (!stop)	/* not our own SIGTERM's */
			__atomic_add_fetch(&eintr, 1, __ATOMIC_RELAXED);
		ret = 0;
	}
	return ret;
}

static void check_mask(const char *who, const sigset_t *want)
{
	sigset_t cur;
	int s;

	pthread_sigmask(SIG_SETMASK, NULL, &cur);
	for (s = 1; s < 32; s++)
		if (sigismember(&cur, s) != sigismember(want, s))
			fail("%s: signal mask changed at signal %ld", who, s);
}

static void *sleeper(void *arg)
{
	static char alt[65536];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) }, now;
	struct timespec ts = { 0, 5000000 };
	sigset_t want;
	long ret;

	(void)arg;
	sigemptyset(&want);
	sigaddset(&want, SIGUSR2);
	sigaddset(&want, SIGWINCH);
	pthread_sigmask(SIG_SETMASK, &want, NULL);
	if (sigaltstack(&ss, NULL))
		fail("%s: sigaltstack failed (%ld)", "sleeper", errno);
	while (!stop) {
		ret = wait_in("sleeper", SYS_nanosleep, (long)&ts, 0, 0, 5);
		if (ret)
			fail("%s: nanosleep returned %ld", "sleeper", ret);
		check_mask("sleeper", &want);
		if (sigaltstack(NULL, &now) || now.ss_sp != alt ||
		    now.ss_size != sizeof(alt) || now.ss_flags)
			fail("%s: alternate stack changed (flags %ld)",
			     "sleeper", now.ss_flags);
		__atomic_add_fetch(&sleeps, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *reader(void *arg)
{
	bool reads_pipe = !strcmp(idle, "reader");
	char c;
	long ret;

	(void)arg;
	while (!stop) {
		ret = wait_in("reader", SYS_read, pipefd[0], (long)&c, 1, 5);
		if (ret != reads_pipe)
			fail("%s: read returned %ld", "reader", ret);
		__atomic_add_fetch(&reads, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

struct node {
	struct node *next;
	uint64_t v;
};

static void *builder(void *arg)
{
	uint64_t seed = 88172645463325252ull;

	(void)arg;
	while (!stop) {
		struct node *head = NULL, *n;
		uint64_t sum = 0, check = 0;
		int i, len = 1000;

		for (i = 0; i < len; i++) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			n = malloc(sizeof(*n) + (seed & 255));
			if (!n) {
				fail("%s: malloc failed (%ld)", "builder", errno);
				return NULL;
			}
			n->v = seed;
			n->next = head;
			head = n;
			sum += seed;
		}
		while (head) {
			n = head;
			check += n->v;
			head = n->next;
			free(n);
		}
		if (check != sum)
			fail("%s: list checksum wrong after %ld lists",
			     "builder", lists);
		__atomic_add_fetch(&lists, 1, __ATOMIC_RELAXED);
		wait_in("builder", SYS_nanosleep, 0, 0, 0, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 0;
	pthread_t t[3];
	struct timespec start, now;
	sigset_t want;
	bool said = false;
	int i;

	if (argc > 2)
		idle = argv[2];
	if (strcmp(idle, "main") && strcmp(idle, "sleeper") &&
	    strcmp(idle, "reader")) {
		fprintf(stderr, "usage: survivor [SECONDS [main|sleeper|reader]]\n");
		return 2;
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	if (pipe(pipefd))
		return 2;
	sigemptyset(&want);
	sigaddset(&want, SIGPIPE);
	pthread_sigmask(SIG_SETMASK, &want, NULL);
	pthread_create(&t[0], NULL, sleeper, NULL);
	pthread_create(&t[1], NULL, reader, NULL);
	pthread_create(&t[2], NULL, builder, NULL);
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (!stop) {
#ifdef SYS_poll
		long ret = wait_in("main", SYS_poll, 0, 0, 10, 10);
#else
		struct timespec ts = { 0, 10000000 };
		long ret = wait_in("main", SYS_ppoll, 0, 0, (long)&ts, 10);
#endif

		if (ret)
			fail("%s: poll returned %ld", "main", ret);
		check_mask("main", &want);
		if (!strcmp(idle, "reader") && write(pipefd[1], "x", 1) != 1)
			fail("%s: write failed (%ld)", "main", errno);
		polls++;
		if (!said && sleeps && reads && lists) {
			fprintf(stderr, "survivor: ready\n");
			said = true;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (seconds > 0 && (now.tv_sec - start.tv_sec) +
				   (now.tv_nsec - start.tv_nsec) / 1e9 >= seconds)
			stop = 1;
	}
	if (!strcmp(idle, "reader") &&	/* the reader's last read */
	    write(pipefd[1], "x", 1) != 1)
		fail("%s: write failed (%ld)", "main", errno);
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	if (failed[0]) {
		printf("survivor: FAIL %s\n", failed);
		return 1;
	}
	printf("survivor: ok sleeps %ld reads %ld lists %ld polls %ld eintr %ld\n",
	       sleeps, reads, lists, polls, eintr);
	return 0;
}
