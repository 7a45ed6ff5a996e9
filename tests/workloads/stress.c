// SPDX-License-Identifier: MIT
/*
 * stress.c - what allocator interposers get wrong, one mode at a time
 * (tests/e2e/run-agent-stress.sh).  Every mode prints only what depends
 * neither on timing nor on addresses, so a run with the agent - preloaded,
 * launched by the tracer or attached - must print exactly what a bare run
 * prints and exit with the same status.
 *
 *   stress [--hold] edge [ROUNDS]                    (default 50)
 *   stress [--hold] threads [THREADS]                (default 2000)
 *   stress [--hold] forkmt [FORKS]                   (default 100)
 *   stress [--hold] dlstorm ROUNDS LIBRARY...
 *   stress [--hold] sigidle [SIGNALS]                (default 2000)
 *
 * edge     the corners of the malloc API, one line per call: pointer or
 *          NULL, errno (set to 0 before each call), posix_memalign's
 *          return code and whether it left *out alone, alignment, whether
 *          realloc kept the contents (also of a block a failed realloc
 *          left behind), whether calloc zeroed reused memory, whether free
 *          kept errno; then blocks grown by libc itself (open_memstream,
 *          getline, asprintf).  ROUNDS times: at the default sampling
 *          rate only some rounds are sampled, and all must say the same.
 * threads  THREADS threads, 16 at a time, of six kinds by index % 6:
 *          joined after returning; joined after pthread_exit, holding a
 *          thread-specific block (freed by the key's destructor), a
 *          __thread block (left behind) and a block handed to the joiner;
 *          detached; detached and leaving by pthread_exit with a
 *          thread-specific block (whose destructor tells the main thread
 *          it is done); one that starts and joins a
 *          thread of its own (64 KiB stack); one cancelled while blocked,
 *          its block freed by a cleanup handler.  Odd threads run on a
 *          64 KiB stack.  Each allocates, reallocs, checks and frees a
 *          pattern; the checksum and the counts are printed.
 * forkmt   3 threads malloc, calloc, realloc and free without pause while
 *          the main thread forks FORKS times without exec.  Child i frees
 *          and reallocs blocks inherited from the parent, allocates and
 *          checks its own, and by i % 5 exits with exit(), with _exit(),
 *          after a thread of its own, through a grandchild of its own, or
 *          killed by SIGUSR2; its exit status is a checksum, which the
 *          parent predicts.  A child that has not ended after 10 s is
 *          killed and reported as hung (a deadlock in the child is the
 *          failure this mode looks for).
 * dlstorm  2 threads each dlopen (NOW or LAZY, LOCAL or GLOBAL) and
 *          dlclose the LIBRARYs in turn ROUNDS times, calling its
 *          allocating function (tests/workloads/stress-lib.c: constructor,
 *          destructor and dynamic TLS allocate too) and freeing, after the
 *          dlclose, a block it handed out.  Afterwards no LIBRARY may still
 *          be loaded.
 * sigidle  two threads - the kind a tracer borrows to inject the agent -
 *          each sleep in nanosleep between SIGUSR2s sent to the other
 *          with pthread_kill, 100 us apart, SIGNALS times; then the main
 *          thread cancels the other.  Every signal must arrive as sent,
 *          from this process (SI_TKILL): glibc ignores a SIGCANCEL with
 *          another sender, and pthread_cancel then hangs.  The number of
 *          signals that came with someone else's siginfo is printed.
 *
 * --hold: print the first repetition's report, say "stress: ready" on
 * stderr, and repeat the mode until SIGUSR1 arrives (a tracer attaches
 * meanwhile; threads then leaves each thread to be cancelled in pause for
 * a millisecond, where a tracer is likely to borrow it, while the main
 * thread spins in no system call, so that it is not the one borrowed).
 * Every repetition - also edge's ROUNDS - must report what the first did;
 * the last line of stdout says whether they all did.  This file is one
 * program for all modes, so that one build serves the whole test.
 *
 * Exit status 0, or 1 if any check failed (each failure is said on
 * stderr); 2 for a usage error.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- report and checks ----------------------------------------------- */

static char report[1 << 17];
static size_t report_len;
static int failed;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(report + report_len, sizeof(report) - report_len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n + 2 > sizeof(report) - report_len) {
		fprintf(stderr, "stress: report too long\n");
		exit(1);
	}
	report_len += (size_t)n;
	report[report_len++] = '\n';
	report[report_len] = 0;
}

static void bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void bad(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("stress: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
}

/* A byte pattern that depends on the position only, so that a prefix
 * survives any realloc. */
static void fill(void *p, size_t n, unsigned int seed)
{
	unsigned char *c = p;
	size_t i;

	for (i = 0; i < n; i++)
		c[i] = (unsigned char)(seed + i * 7 + (i >> 8));
}

static bool holds(const void *p, size_t n, unsigned int seed)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (c[i] != (unsigned char)(seed + i * 7 + (i >> 8)))
			return false;
	return true;
}

static unsigned long byte_sum(const void *p, size_t n)
{
	const unsigned char *c = p;
	unsigned long sum = 0;
	size_t i;

	for (i = 0; i < n; i++)
		sum += c[i];
	return sum;
}

/* ---- edge ------------------------------------------------------------ */

/* p, in a way the compiler cannot see through: a free(NULL), or a malloc
 * whose block is only written and freed, must not be optimised away. */
static void *opaque(void *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

/* volatile: the compiler must neither fold these calls nor warn about
 * sizes it would know to be too large */
static volatile size_t v_zero = 0, v_size_max = SIZE_MAX,
	v_over = (size_t)PTRDIFF_MAX + 1, v_half = SIZE_MAX / 2, v_four = 4;

#define TRY(p, call) do { errno = 0; (p) = (call); e = errno; } while (0)

static const char *errname(int e)
{
	static char other[16];

	switch (e) {
	case 0: return "0";
	case ENOMEM: return "ENOMEM";
	case EINVAL: return "EINVAL";
	}
	snprintf(other, sizeof(other), "%d", e);
	return other;
}

static void said(const char *call, const void *p, int e)
{
	say("%s: %s errno=%s", call, p ? "ptr" : "NULL", errname(e));
}

static const char *alignment(const void *p, size_t align)
{
	if (!p || !align || (align & (align - 1)))
		return "-";
	return (uintptr_t)p % align ? "MISALIGNED" : "aligned";
}

__attribute__((noinline)) static void edge_malloc(void)
{
	unsigned char *p;
	size_t usable;
	int e;

	TRY(p, malloc(v_zero));
	usable = malloc_usable_size(p);
	if (p)
		memset(p, 0x5a, usable);	/* every usable byte is ours */
	say("malloc(0): %s errno=%s, usable bytes %s", p ? "ptr" : "NULL",
	    errname(e), usable < 4096 ? "writable" : "TOO MANY");
	free(p);
	TRY(p, malloc(v_size_max));
	said("malloc(SIZE_MAX)", p, e);
	free(p);
	TRY(p, malloc(v_over));
	said("malloc(PTRDIFF_MAX+1)", p, e);
	free(p);
	TRY(p, malloc(v_over - 1));
	said("malloc(PTRDIFF_MAX)", p, e);
	free(p);
	TRY(p, malloc(v_size_max - 4095));
	said("malloc(SIZE_MAX-4095)", p, e);
	free(p);
	say("malloc_usable_size(NULL): %zu", malloc_usable_size(NULL));
}

__attribute__((noinline)) static void edge_calloc(void)
{
	static const size_t reused[] = { 24, 1000, 100000, 300000 };
	unsigned char *p, *dirty;
	unsigned int i;
	size_t k;
	int e;

	TRY(p, calloc(v_zero, 16));
	said("calloc(0, 16)", p, e);
	free(p);
	TRY(p, calloc(16, v_zero));
	said("calloc(16, 0)", p, e);
	free(p);
	TRY(p, calloc(v_half, v_four));
	said("calloc(SIZE_MAX/2, 4)", p, e);
	free(p);
	TRY(p, calloc(v_size_max, v_size_max));
	said("calloc(SIZE_MAX, SIZE_MAX)", p, e);
	free(p);
	TRY(p, calloc(v_over, 1));
	said("calloc(PTRDIFF_MAX+1, 1)", p, e);
	free(p);
	for (i = 0; i < sizeof(reused) / sizeof(reused[0]); i++) {
		dirty = malloc(reused[i]);
		if (dirty)
			memset(dirty, 0xee, reused[i]);
		free(opaque(dirty));
		TRY(p, calloc(1, reused[i]));
		for (k = 0; p && k < reused[i] && !p[k]; k++)
			;
		say("calloc(1, %zu) after a dirty free: %s errno=%s, %s",
		    reused[i], p ? "ptr" : "NULL", errname(e),
		    p && k == reused[i] ? "zeroed" : "NOT ZEROED");
		free(p);
	}
}

__attribute__((noinline)) static void edge_realloc(void)
{
	static const size_t sizes[] = { 1000, 10, 200000, 300000, 150,
					5000000, 64 };
	unsigned char *p, *q;
	size_t old = 100;
	unsigned int i;
	int e;

	TRY(p, realloc(NULL, old));
	said("realloc(NULL, 100)", p, e);
	if (!p)
		return;
	fill(p, old, 1);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		TRY(q, realloc(p, sizes[i]));
		if (!q) {
			said("realloc(p, grown or shrunk)", q, e);
			free(p);
			return;
		}
		say("realloc(p, %zu): ptr errno=%s, contents %s", sizes[i],
		    errname(e), holds(q, old < sizes[i] ? old : sizes[i], 1) ?
		    "kept" : "LOST");
		p = q;
		old = sizes[i];
		fill(p, old, 1);
	}
	TRY(q, realloc(opaque(p), v_size_max));	/* fails: p stays */
	say("realloc(p, SIZE_MAX): %s errno=%s, old block %s", q ? "ptr" : "NULL",
	    errname(e), holds(p, old, 1) ? "intact" : "DAMAGED");
	if (q)
		p = q;
	TRY(q, realloc(opaque(p), v_over));
	say("realloc(p, PTRDIFF_MAX+1): %s errno=%s, old block %s",
	    q ? "ptr" : "NULL", errname(e), holds(p, old, 1) ? "intact" : "DAMAGED");
	if (q)
		p = q;
	TRY(q, realloc(p, v_zero));	/* glibc: frees p, returns NULL */
	said("realloc(p, 0)", q, e);
	free(q);
	TRY(p, realloc(NULL, v_zero));
	said("realloc(NULL, 0)", p, e);
	free(p);

	/* an aligned block and a large (mmapped) one, reallocated */
	if (posix_memalign((void **)&p, 4096, 100))
		return;
	fill(p, 100, 2);
	TRY(q, realloc(p, 10000));
	say("realloc(posix_memalign 4096 block, 10000): %s errno=%s, contents %s",
	    q ? "ptr" : "NULL", errname(e), q && holds(q, 100, 2) ? "kept" : "LOST");
	free(q ? q : p);
	p = malloc(400000);
	if (!p)
		return;
	fill(p, 400000, 3);
	TRY(q, realloc(p, v_zero));
	said("realloc(400000-byte block, 0)", q, e);
	free(q);
}

__attribute__((noinline)) static void edge_reallocarray(void)
{
	unsigned char *p, *q;
	int e;

	TRY(p, reallocarray(NULL, 10, 10));
	said("reallocarray(NULL, 10, 10)", p, e);
	if (!p)
		return;
	fill(p, 100, 4);
	TRY(q, reallocarray(opaque(p), v_half, v_four));	/* fails */
	say("reallocarray(p, SIZE_MAX/2, 4): %s errno=%s, old block %s",
	    q ? "ptr" : "NULL", errname(e), holds(p, 100, 4) ? "intact" : "DAMAGED");
	if (q)
		p = q;
	TRY(q, reallocarray(p, 30, 30));
	say("reallocarray(p, 30, 30): %s errno=%s, contents %s", q ? "ptr" : "NULL",
	    errname(e), q && holds(q, 100, 4) ? "kept" : "LOST");
	if (q)
		p = q;
	TRY(q, reallocarray(p, v_zero, 30));	/* realloc(p, 0) */
	said("reallocarray(p, 0, 30)", q, e);
	free(q);
}

__attribute__((noinline)) static void edge_free(void)
{
	static const size_t sizes[] = { 100, 300000 };
	unsigned int i;
	void *p;

	errno = EDOM;
	free(opaque(NULL));
	say("free(NULL): errno %s", errno == EDOM ? "kept" : "CHANGED");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		p = opaque(malloc(sizes[i]));
		errno = EDOM;
		free(opaque(p));
		say("free(%zu-byte block): errno %s", sizes[i],
		    errno == EDOM ? "kept" : "CHANGED");
	}
}

/* { alignment, size } */
static volatile size_t pm_cases[][2] = {
	{ 0, 100 }, { 1, 100 }, { 3, 100 }, { sizeof(void *) / 2, 100 },
	{ sizeof(void *), 100 }, { 16, 100 }, { 24, 100 }, { 48, 100 },
	{ 64, 100 }, { 4096, 100 }, { 1 << 20, 100 }, { SIZE_MAX / 4 + 1, 100 },
	{ SIZE_MAX / 2 + 1, 100 }, { SIZE_MAX, 100 }, { 64, 0 },
	{ 64, SIZE_MAX }, { 64, (size_t)PTRDIFF_MAX + 1 }, { 4096, 5000000 },
};

__attribute__((noinline)) static void edge_posix_memalign(void)
{
	static char untouched;
	unsigned int i;
	void *out;
	int rc, e;

	for (i = 0; i < sizeof(pm_cases) / sizeof(pm_cases[0]); i++) {
		size_t align = pm_cases[i][0], size = pm_cases[i][1];

		out = &untouched;
		errno = 0;
		rc = posix_memalign(&out, align, size);
		e = errno;
		say("posix_memalign(align %#zx, size %#zx): returned %s errno=%s, "
		    "*out %s, %s", align, size, errname(rc), errname(e),
		    out == &untouched ? "untouched" : out ? "ptr" : "NULL",
		    out == &untouched ? "-" : alignment(out, align));
		if (!rc && out != &untouched)
			free(out);
	}
}

__attribute__((noinline)) static void edge_aligned(void)
{
	static volatile size_t cases[][2] = {
		{ 0, 100 }, { 3, 100 }, { 24, 48 }, { 64, 100 }, { 64, 128 },
		{ 4096, 4096 }, { SIZE_MAX / 2 + 1, 16 }, { 64, SIZE_MAX },
	};
	unsigned int i;
	void *p;
	int e;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t align = cases[i][0], size = cases[i][1];

		TRY(p, aligned_alloc(align, size));
		say("aligned_alloc(%#zx, %#zx): %s errno=%s, %s", align, size,
		    p ? "ptr" : "NULL", errname(e), alignment(p, align));
		free(p);
		TRY(p, memalign(align, size));
		say("memalign(%#zx, %#zx): %s errno=%s, %s", align, size,
		    p ? "ptr" : "NULL", errname(e), alignment(p, align));
		free(p);
	}
}

__attribute__((noinline)) static void edge_page(void)
{
	static volatile size_t sizes[] = { 0, 100, 5000, SIZE_MAX, SIZE_MAX - 4095 };
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned int i;
	void *p;
	int e;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t size = sizes[i];

		TRY(p, valloc(size));
		say("valloc(%#zx): %s errno=%s, %s", size, p ? "ptr" : "NULL",
		    errname(e), alignment(p, page));
		free(p);
		TRY(p, pvalloc(size));
		say("pvalloc(%#zx): %s errno=%s, %s, usable %s", size,
		    p ? "ptr" : "NULL", errname(e), alignment(p, page),
		    !p ? "-" : malloc_usable_size(p) >= (size + page - 1) / page * page
		    ? "a whole page multiple" : "SHORT");
		free(p);
	}
}

/* Blocks that libc grows itself, by calls that reach us through its PLT. */
__attribute__((noinline)) static void edge_libc(void)
{
	char *buf = NULL, *line = NULL, *s = NULL, text[50001];
	size_t size = 0, cap = 0, i;
	ssize_t got;
	FILE *f;
	int n;

	f = open_memstream(&buf, &size);
	if (!f) {
		bad("open_memstream failed");
		return;
	}
	for (i = 0; i < 1000; i++)
		fprintf(f, "%099zu", i);
	fclose(f);
	say("open_memstream: %zu bytes, sum %lu", size, byte_sum(buf, size));
	free(buf);

	memset(text, 'x', sizeof(text) - 1);
	text[sizeof(text) - 1] = 0;
	f = fmemopen(text, sizeof(text) - 1, "r");
	if (!f) {
		bad("fmemopen failed");
		return;
	}
	got = getline(&line, &cap, f);
	fclose(f);
	say("getline: %zd bytes", got);
	free(line);

	n = asprintf(&s, "%0*d", 20000, 42);
	say("asprintf: %d bytes, sum %lu", n, n > 0 ? byte_sum(s, (size_t)n) : 0);
	free(s);
	s = strdup(text);
	say("strdup: %s", s && !strcmp(s, text) ? "equal" : "DIFFERENT");
	free(s);
}

static void edge_run(unsigned int rounds, char **libs, int nlibs)
{
	(void)libs;
	(void)nlibs;
	say("edge: %u rounds", rounds);
	edge_malloc();
	edge_calloc();
	edge_realloc();
	edge_reallocarray();
	edge_free();
	edge_posix_memalign();
	edge_aligned();
	edge_page();
	edge_libc();
}

/* ---- threads --------------------------------------------------------- */

#define T_BATCH 16
#define T_SMALL_STACK (64 * 1024)

enum { T_RETURN, T_EXIT, T_DETACHED, T_DETACHED_EXIT, T_NESTED, T_CANCELLED,
       T_KINDS };

struct tsd_block {
	bool post;			/* a detached thread's: post t_done */
	unsigned char data[500];
};

static bool holding;		/* --hold */
static pthread_key_t t_key;
static __thread void *t_left_behind;
static unsigned long t_sum, t_destructors, t_cleanups, t_inner;
static sem_t t_done, t_blocked;

static void sem_wait_intr(sem_t *s)
{
	while (sem_wait(s) && errno == EINTR)
		;
}

/* 8 blocks, calloc'd or malloc'd, some grown, filled, checked, freed;
 * every 16th thread also one of 200000 bytes (mmapped). */
__attribute__((noinline)) static unsigned long thread_work(unsigned int index)
{
	unsigned long sum = 0;
	unsigned char *b, *grown;
	unsigned int j;
	size_t n;

	for (j = 0; j < 8; j++) {
		n = (index * 131u + j * 977u) % 6000 + 1;
		if (j == 7 && index % 16 == 0)
			n = 200000;
		b = j % 2 ? calloc(1, n) : malloc(n);
		if (!b || (j % 2 && b[n - 1])) {
			bad("thread %u: block %u missing or not zeroed", index, j);
			free(b);
			continue;
		}
		fill(b, n, index + j);
		if (j % 3 == 0 && (grown = realloc(b, 2 * n))) {
			b = grown;
			if (!holds(b, n, index + j))
				bad("thread %u: realloc lost contents", index);
		}
		if (!holds(b, n, index + j))
			bad("thread %u: block %u damaged", index, j);
		sum += byte_sum(b, n);
		free(b);
	}
	return sum;
}

static void tsd_destructor(void *value)
{
	struct tsd_block *blk = value;
	bool post = blk->post;

	if (!holds(blk->data, sizeof(blk->data), 9))
		bad("thread-specific block damaged");
	free(blk);
	__atomic_add_fetch(&t_destructors, 1, __ATOMIC_RELAXED);
	if (post)
		sem_post(&t_done);
}

__attribute__((noinline)) static void exit_holding(bool detached)
{
	struct tsd_block *blk = malloc(sizeof(*blk));
	unsigned char *handed = malloc(300);

	if (!blk || !handed) {
		bad("thread: no memory to exit with");
		pthread_exit(NULL);
	}
	blk->post = detached;
	fill(blk->data, sizeof(blk->data), 9);
	pthread_setspecific(t_key, blk);
	t_left_behind = malloc(64);
	fill(handed, 300, 11);
	if (detached) {
		free(handed);
		handed = NULL;
	}
	pthread_exit(handed);
}

static void *inner_main(void *arg)
{
	unsigned int index = (unsigned int)(uintptr_t)arg;
	unsigned long *sum = malloc(sizeof(*sum));

	if (sum)
		*sum = thread_work(index + 100000);
	return sum;
}

static void cleanup_free(void *p)
{
	free(p);
	__atomic_add_fetch(&t_cleanups, 1, __ATOMIC_RELAXED);
}

static void *thread_main(void *arg)
{
	unsigned int index = (unsigned int)(uintptr_t)arg;
	unsigned long *inner_sum;
	pthread_attr_t attr;
	pthread_t inner;
	void *held;

	__atomic_add_fetch(&t_sum, thread_work(index), __ATOMIC_RELAXED);
	switch (index % T_KINDS) {
	case T_EXIT:
		exit_holding(false);
		break;
	case T_DETACHED:
		sem_post(&t_done);
		break;
	case T_DETACHED_EXIT:
		exit_holding(true);
		break;
	case T_NESTED:
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, T_SMALL_STACK);
		if (pthread_create(&inner, &attr, inner_main, arg)) {
			bad("thread %u: cannot start its own thread", index);
		} else {
			pthread_join(inner, (void **)&inner_sum);
			if (inner_sum)
				__atomic_add_fetch(&t_sum, *inner_sum, __ATOMIC_RELAXED);
			free(inner_sum);
			__atomic_add_fetch(&t_inner, 1, __ATOMIC_RELAXED);
		}
		pthread_attr_destroy(&attr);
		break;
	case T_CANCELLED:
		held = malloc(700);
		pthread_cleanup_push(cleanup_free, held);
		sem_post(&t_blocked);
		for (;;)
			pause();	/* a cancellation point */
		pthread_cleanup_pop(1);
		break;
	}
	return NULL;
}

/*
 * Spin for us microseconds - in no system call: a thread idle in one is
 * what a tracer borrows to inject the agent, and the thread that a tracer
 * should borrow here is the other one, idle in pause.
 */
static void spin(long us)
{
	struct timespec now, end;

	clock_gettime(CLOCK_MONOTONIC, &end);	/* the vDSO: no system call */
	end.tv_nsec += us * 1000;
	end.tv_sec += end.tv_nsec / 1000000000;
	end.tv_nsec %= 1000000000;
	do
		clock_gettime(CLOCK_MONOTONIC, &now);
	while (now.tv_sec < end.tv_sec ||
	       (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
}

static void threads_run(unsigned int count, char **libs, int nlibs)
{
	unsigned int kinds[T_KINDS] = { 0 }, handed_ok = 0, base, i, detached;
	pthread_t thread[T_BATCH];
	pthread_attr_t attr;
	void *ret;

	(void)libs;
	(void)nlibs;
	t_sum = t_destructors = t_cleanups = t_inner = 0;
	for (base = 0; base < count; base += T_BATCH) {
		detached = 0;
		for (i = base; i < count && i < base + T_BATCH; i++) {
			unsigned int kind = i % T_KINDS;

			pthread_attr_init(&attr);
			if (i % 2)
				pthread_attr_setstacksize(&attr, T_SMALL_STACK);
			if (kind == T_DETACHED || kind == T_DETACHED_EXIT)
				pthread_attr_setdetachstate(&attr,
							    PTHREAD_CREATE_DETACHED);
			if (pthread_create(&thread[i - base], &attr, thread_main,
					   (void *)(uintptr_t)i)) {
				bad("cannot create thread %u", i);
				exit(1);
			}
			pthread_attr_destroy(&attr);
			kinds[kind]++;
			if (kind == T_DETACHED || kind == T_DETACHED_EXIT)
				detached++;
			if (kind == T_CANCELLED) {
				sem_wait_intr(&t_blocked);
				if (holding)
					spin(1000);	/* see --hold */
				pthread_cancel(thread[i - base]);
			}
		}
		for (i = base; i < count && i < base + T_BATCH; i++) {
			unsigned int kind = i % T_KINDS;

			if (kind == T_DETACHED || kind == T_DETACHED_EXIT)
				continue;
			pthread_join(thread[i - base], &ret);
			if (kind == T_CANCELLED && ret != PTHREAD_CANCELED)
				bad("thread %u was not cancelled", i);
			if (kind == T_EXIT) {
				if (ret && holds(ret, 300, 11))
					handed_ok++;
				free(ret);
			}
		}
		while (detached--)
			sem_wait_intr(&t_done);
	}
	say("threads: %u started: %u returned, %u pthread_exit, %u detached, "
	    "%u detached pthread_exit, %u nested, %u cancelled", count,
	    kinds[T_RETURN], kinds[T_EXIT], kinds[T_DETACHED],
	    kinds[T_DETACHED_EXIT], kinds[T_NESTED], kinds[T_CANCELLED]);
	say("threads: %u blocks handed back intact, %lu thread-specific blocks "
	    "destroyed, %lu cleanup handlers, %lu inner threads", handed_ok,
	    t_destructors, t_cleanups, t_inner);
	say("threads: checksum %lu", t_sum);
}

/* ---- forkmt ---------------------------------------------------------- */

#define FM_WORKERS 3
#define FM_SLOTS 64
#define FM_INHERITED 50
#define FM_DEADLINE_MS 10000

static int fm_stop;

static unsigned int next_random(unsigned int *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 17;
	*state ^= *state << 5;
	return *state;
}

static void *fm_worker(void *arg)
{
	unsigned int state = (unsigned int)(uintptr_t)arg * 2654435761u + 1;
	unsigned char *block[FM_SLOTS] = { NULL }, *p;
	size_t size[FM_SLOTS] = { 0 }, n;
	unsigned int r, slot;

	while (!__atomic_load_n(&fm_stop, __ATOMIC_RELAXED)) {
		r = next_random(&state);
		slot = r % FM_SLOTS;
		n = r % 64 == 0 ? 150000 : (r >> 8) % 4000 + 1;
		if (block[slot] && !holds(block[slot], size[slot], slot))
			bad("forkmt worker: block damaged");
		if (block[slot] && r % 3 == 0) {
			p = realloc(block[slot], n);
			if (p && !holds(p, n < size[slot] ? n : size[slot], slot))
				bad("forkmt worker: realloc lost contents");
		} else {
			free(block[slot]);
			p = r % 3 == 1 ? calloc(1, n) : malloc(n);
		}
		block[slot] = p;
		size[slot] = p ? n : 0;
		if (p)
			fill(p, n, slot);
	}
	for (slot = 0; slot < FM_SLOTS; slot++)
		free(block[slot]);
	return NULL;
}

/* What child i computes: 200 blocks, half kept to the end. */
__attribute__((noinline)) static unsigned long child_work(unsigned int i)
{
	unsigned char *kept[100];
	unsigned long sum = 0;
	unsigned int j;

	for (j = 0; j < 200; j++) {
		size_t n = (i * 37u + j * 11u) % 3000 + 1;
		unsigned char *p = malloc(n);

		if (!p)
			return 0;
		fill(p, n, i + j);
		sum += byte_sum(p, n);
		if (j % 2)
			free(p);
		else
			kept[j / 2] = p;
	}
	for (j = 0; j < 100; j++)
		free(kept[j]);
	return sum;
}

static void *child_thread(void *arg)
{
	unsigned long *sum = malloc(sizeof(*sum));

	if (sum)
		*sum = child_work((unsigned int)(uintptr_t)arg);
	return sum;
}

static int expected_status(unsigned int i)
{
	return 10 + (int)(child_work(i) % 100);
}

/* Child i: never returns. */
static void child_main(unsigned int i, void **inherited)
{
	unsigned long *sum = NULL;
	pthread_t thread;
	unsigned int k;
	void *grown;
	int code, status;
	pid_t pid;

	for (k = 0; k < FM_INHERITED; k++) {
		if (!holds(inherited[k], 1000, k))
			_exit(2);
		if (k % 2) {
			free(inherited[k]);
		} else if ((grown = realloc(inherited[k], 5000))) {
			if (!holds(grown, 1000, k))
				_exit(3);
			free(grown);
		}
	}
	code = expected_status(i);
	switch (i % 5) {
	case 0:
		exit(code);
	case 1:
		_exit(code);
	case 2:
		if (pthread_create(&thread, NULL, child_thread, (void *)(uintptr_t)i) ||
		    pthread_join(thread, (void **)&sum) || !sum)
			_exit(4);
		exit(10 + (int)(*sum % 100));
	case 3:
		pid = fork();
		if (pid == 0)
			_exit(expected_status(i));
		if (pid < 0 || waitpid(pid, &status, 0) != pid ||
		    !WIFEXITED(status))
			_exit(5);
		exit(WEXITSTATUS(status));
	default:
		signal(SIGUSR2, SIG_DFL);
		raise(SIGUSR2);
		_exit(6);
	}
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Wait for child i at most FM_DEADLINE_MS; kill it if it hangs. */
static void reap_child(unsigned int i, pid_t pid)
{
	struct timespec pause_ts = { 0, 200000 };
	uint64_t deadline = now_ms() + FM_DEADLINE_MS;
	int status, want = expected_status(i);
	pid_t got;

	while ((got = waitpid(pid, &status, WNOHANG)) == 0 &&
	       now_ms() < deadline)
		nanosleep(&pause_ts, NULL);
	if (got == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		say("child %u: HUNG (killed after %d s)", i, FM_DEADLINE_MS / 1000);
		bad("child %u hung", i);
		return;
	}
	if (got < 0) {
		bad("waitpid: %s", strerror(errno));
		return;
	}
	if (WIFEXITED(status)) {
		say("child %u: exit %d", i, WEXITSTATUS(status));
		if (i % 5 == 4 || WEXITSTATUS(status) != want)
			bad("child %u: exit %d, want %d", i, WEXITSTATUS(status),
			    i % 5 == 4 ? -SIGUSR2 : want);
	} else {
		say("child %u: signal %s", i, sigabbrev_np(WTERMSIG(status)) ?
		    sigabbrev_np(WTERMSIG(status)) : "other");
		if (i % 5 != 4 || WTERMSIG(status) != SIGUSR2)
			bad("child %u: killed by signal %d", i, WTERMSIG(status));
	}
}

__attribute__((noinline)) static void forkmt_run(unsigned int forks,
						 char **libs, int nlibs)
{
	void *inherited[FM_INHERITED];
	pthread_t worker[FM_WORKERS];
	unsigned int i, k;
	pid_t pid;

	(void)libs;
	(void)nlibs;
	for (k = 0; k < FM_INHERITED; k++) {
		inherited[k] = malloc(1000);
		if (!inherited[k]) {
			bad("forkmt: no memory");
			return;
		}
		fill(inherited[k], 1000, k);
	}
	__atomic_store_n(&fm_stop, 0, __ATOMIC_RELAXED);
	for (k = 0; k < FM_WORKERS; k++)
		if (pthread_create(&worker[k], NULL, fm_worker, (void *)(uintptr_t)k)) {
			bad("forkmt: cannot start worker %u", k);
			exit(1);
		}
	say("forkmt: %u forks while %d threads allocate", forks, FM_WORKERS);
	for (i = 0; i < forks; i++) {
		fflush(NULL);	/* nothing buffered is written twice */
		pid = fork();
		if (pid == 0)
			child_main(i, inherited);
		if (pid < 0) {
			bad("fork: %s", strerror(errno));
			break;
		}
		reap_child(i, pid);
	}
	__atomic_store_n(&fm_stop, 1, __ATOMIC_RELAXED);
	for (k = 0; k < FM_WORKERS; k++)
		pthread_join(worker[k], NULL);
	for (k = 0; k < FM_INHERITED; k++) {
		if (!holds(inherited[k], 1000, k))
			bad("forkmt: the parent's block %u changed", k);
		free(inherited[k]);
	}
}

/* ---- dlstorm --------------------------------------------------------- */

#define DL_THREADS 2

struct dl_storm {
	unsigned int index, rounds;
	char **libs;
	int nlibs;
	unsigned long sum;
};

static const int dl_modes[] = {
	RTLD_NOW | RTLD_LOCAL, RTLD_LAZY | RTLD_LOCAL, RTLD_NOW | RTLD_GLOBAL,
};

static void *dl_main(void *arg)
{
	struct dl_storm *s = arg;
	unsigned long (*run)(unsigned int, void **);
	unsigned int r, seed;
	void *lib, *handed;

	for (r = 0; r < s->rounds; r++) {
		seed = s->index * 100000 + r;
		lib = dlopen(s->libs[(r + s->index) % (unsigned int)s->nlibs],
			     dl_modes[r % 3]);
		if (!lib) {
			bad("dlopen: %s", dlerror());
			continue;
		}
		*(void **)&run = dlsym(lib, "stress_lib_round");
		handed = NULL;
		if (run)
			s->sum += run(seed, &handed);
		else
			bad("dlsym: %s", dlerror());
		if (dlclose(lib))
			bad("dlclose: %s", dlerror());
		if (handed && !holds(handed, 100 + seed % 50, seed))
			bad("a block from the library is damaged");
		free(handed);
	}
	return NULL;
}

static void dlstorm_run(unsigned int rounds, char **libs, int nlibs)
{
	struct dl_storm storm[DL_THREADS];
	pthread_t thread[DL_THREADS];
	unsigned long sum = 0;
	unsigned int t;
	void *lib;
	int l;

	for (t = 0; t < DL_THREADS; t++) {
		storm[t] = (struct dl_storm){ t, rounds, libs, nlibs, 0 };
		if (pthread_create(&thread[t], NULL, dl_main, &storm[t])) {
			bad("dlstorm: cannot start thread %u", t);
			exit(1);
		}
	}
	for (t = 0; t < DL_THREADS; t++) {
		pthread_join(thread[t], NULL);
		sum += storm[t].sum;
	}
	say("dlstorm: %u threads x %u rounds over %d libraries, checksum %lu",
	    DL_THREADS, rounds, nlibs, sum);
	for (l = 0; l < nlibs; l++) {
		lib = dlopen(libs[l], RTLD_NOW | RTLD_NOLOAD);
		say("dlstorm: library %d after the storm: %s", l,
		    lib ? "STILL LOADED" : "unloaded");
		if (lib)
			dlclose(lib);
	}
	lib = dlopen("libstress-missing.so", RTLD_NOW);
	say("dlopen(missing): %s, %s", lib ? "ptr" : "NULL",
	    lib ? "-" : dlerror());
	lib = dlopen(NULL, RTLD_NOW);
	say("dlopen(NULL): %s", lib ? "ptr" : "NULL");
}

/* ---- sigidle ---------------------------------------------------------- */

#define SI_GAP_NS 100000

static volatile sig_atomic_t si_foreign;
static pthread_t si_main;

/* A signal sent with pthread_kill comes from this process (SI_TKILL):
 * glibc ignores its own (SIGCANCEL, SIGSETXID) when they do not. */
static void on_usr2(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)ctx;
	if (si->si_code != SI_TKILL || si->si_pid != getpid())
		si_foreign++;
}

/* Signal the main thread, sleep, again - until cancelled (nanosleep is a
 * cancellation point). */
static void *peer_main(void *arg)
{
	struct timespec gap = { 0, SI_GAP_NS };

	(void)arg;
	for (;;) {
		pthread_kill(si_main, SIGUSR2);
		nanosleep(&gap, NULL);
	}
	return NULL;
}

__attribute__((noinline)) static void sigidle_run(unsigned int count,
						  char **libs, int nlibs)
{
	struct timespec gap = { 0, SI_GAP_NS };
	struct sigaction sa;
	unsigned int i;
	pthread_t peer;
	void *ret = NULL;

	(void)libs;
	(void)nlibs;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_usr2;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);
	si_foreign = 0;
	si_main = pthread_self();
	if (pthread_create(&peer, NULL, peer_main, NULL)) {
		bad("sigidle: cannot start the peer thread");
		exit(1);
	}
	for (i = 0; i < count; i++) {
		pthread_kill(peer, SIGUSR2);
		nanosleep(&gap, NULL);
	}
	pthread_cancel(peer);
	pthread_join(peer, &ret);
	say("sigidle: %u signals sent each way, %d received with the siginfo "
	    "of another process", count, (int)si_foreign);
	say("sigidle: the peer thread %s", ret == PTHREAD_CANCELED ?
	    "was cancelled" : "was NOT CANCELLED");
}

/* ---- main ------------------------------------------------------------ */

static const struct stress_mode {
	const char *name;
	void (*run)(unsigned int n, char **libs, int nlibs);
	unsigned int default_n;
	bool repeat_n;		/* N is the number of repetitions */
	bool needs_libs;
} modes[] = {
	{ "edge", edge_run, 50, true, false },
	{ "threads", threads_run, 2000, false, false },
	{ "forkmt", forkmt_run, 100, false, false },
	{ "dlstorm", dlstorm_run, 0, false, true },
	{ "sigidle", sigidle_run, 2000, false, false },
};

static volatile sig_atomic_t hold_released;

static void on_usr1(int sig)
{
	(void)sig;
	hold_released = 1;
}

static int usage(void)
{
	fprintf(stderr, "usage: stress [--hold] edge|threads|forkmt|sigidle [N]\n"
			"       stress [--hold] dlstorm ROUNDS LIBRARY...\n");
	return 2;
}

int main(int argc, char **argv)
{
	const struct stress_mode *mode = NULL;
	unsigned int n, rep, repeats;
	bool hold = false, same = true;
	struct sigaction sa;
	char *first;
	size_t m;

	if (argc > 1 && !strcmp(argv[1], "--hold")) {
		hold = true;
		argv++;
		argc--;
	}
	for (m = 0; argc > 1 && m < sizeof(modes) / sizeof(modes[0]); m++)
		if (!strcmp(argv[1], modes[m].name))
			mode = &modes[m];
	if (!mode || (mode->needs_libs ? argc < 4 : argc > 3))
		return usage();
	n = argc > 2 ? (unsigned int)atoi(argv[2]) : mode->default_n;
	if (n < 1)
		return usage();
	if (pthread_key_create(&t_key, tsd_destructor) ||
	    sem_init(&t_done, 0, 0) || sem_init(&t_blocked, 0, 0))
		return 1;
	if (hold) {
		holding = true;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_usr1;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGUSR1, &sa, NULL);
	}

	mode->run(n, argv + 3, argc - 3);
	first = strdup(report);
	if (!first)
		return 1;
	fputs(report, stdout);
	fflush(stdout);
	if (hold)
		fputs("stress: ready\n", stderr);
	repeats = mode->repeat_n ? n : 1;
	for (rep = 1; rep < repeats || (hold && !hold_released); rep++) {
		report_len = 0;
		report[0] = 0;
		mode->run(n, argv + 3, argc - 3);
		if (same && strcmp(report, first)) {
			same = false;
			bad("repetition %u reported otherwise:\n%s", rep + 1, report);
		}
	}
	if (hold)
		fprintf(stderr, "stress: %u repetitions\n", rep);
	printf("stress: %s\n", repeats > 1 || hold ?
	       (same ? "every repetition reported the same" :
		"REPETITIONS DIFFER") : "done");
	free(first);
	return failed ? 1 : 0;
}
