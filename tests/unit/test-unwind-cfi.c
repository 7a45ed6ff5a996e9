// SPDX-License-Identifier: MIT
/*
 * test-unwind-cfi.c - the agent's walk by unwind tables (agent/unwind_cfi.c)
 * against glibc's backtrace(), which unwinds with libgcc from the same
 * .eh_frame.
 *
 * A chain of functions built without frame pointers, through libc's qsort
 * (Debian's libc keeps none either) and back, calls a probe built with
 * them, as the agent's hooks are: the probe starts the walk where a hook
 * would (its caller's return address, stack pointer and rbp) and compares
 * every frame with backtrace()'s, down to the thread's entry, which the
 * walk must reach (CFI_END_OUTERMOST).  The same in a second thread, whose
 * stack glibc mapped and whose entry is clone3.  Then the walk is given
 * garbage: random stacks and start registers, against the real tables;
 * it must end within its bounds every time.
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/agent.h"
#include "agent/unwind_cfi.h"
#include "check.h"

/* not instrumented under ASan either: the agent never is, and its frames
 * are what is compared */
#define NOFP __attribute__((noinline, optimize("omit-frame-pointer"),	\
			      no_sanitize("address", "undefined")))
#define MAX 64

static int probes;

static __attribute__((noinline, optimize("no-omit-frame-pointer"),
		      no_sanitize("address", "undefined")))
void probe(void)
{
	uintptr_t *fp = __builtin_frame_address(0);
	struct cfi_regs start = { .pc = fp[1], .sp = (uintptr_t)(fp + 2),
				  .bp = fp[0] };
	uint64_t frames[MAX];
	void *bt[MAX];
	struct cfi_walk walk;
	uintptr_t lo, hi;
	unsigned int n, i;
	int nbt, k;
	bool in_libc = false;

	CHECK_EQ_INT(agent__mapping_of(start.sp, &lo, &hi, NULL), 0);
	n = unwind_cfi(&start, start.sp, hi, frames, MAX, &walk);
	nbt = backtrace(bt, MAX);
	/* bt[0] is in the probe, bt[1] its caller: frames[0]; ASan's
	 * interceptor of backtrace() adds a frame of its own first */
	for (k = 1; k < 3 && k < nbt && (uint64_t)(uintptr_t)bt[k] != frames[0];
	     k++)
		;
	CHECK(nbt >= 3);
	for (i = 0; i < n && (int)(i + k) < nbt; i++) {
		Dl_info di;

		if (frames[i] != (uint64_t)(uintptr_t)bt[i + k]) {
			Dl_info a = { 0 }, b = { 0 };

			dladdr((void *)(uintptr_t)frames[i], &a);
			dladdr(bt[i + k], &b);
			fprintf(stderr, "frame %u: walk %#llx (%s+%#lx), backtrace %p (%s+%#lx)\n",
				i, (unsigned long long)frames[i],
				a.dli_sname ? a.dli_sname : "?",
				(unsigned long)(frames[i] - (uintptr_t)a.dli_fbase),
				bt[i + k], b.dli_sname ? b.dli_sname : "?",
				(unsigned long)((uintptr_t)bt[i + k] -
						(uintptr_t)b.dli_fbase));
			CHECK(frames[i] == (uint64_t)(uintptr_t)bt[i + k]);
		}
		if (dladdr((void *)(uintptr_t)frames[i], &di) && di.dli_fname &&
		    strstr(di.dli_fname, "libc.so"))
			in_libc = true;
	}
	printf("  walk: %u frames, end %d; backtrace: %d\n", n, walk.end,
	       nbt);
	CHECK_EQ_INT(walk.end, CFI_END_OUTERMOST);
	CHECK_EQ_INT(n, nbt - k);
	CHECK(in_libc);
	probes++;
}

static NOFP void leaf(volatile char *buf)
{
	buf[0]++;
	probe();
	buf[1]++;
}

static NOFP int compare(const void *a, const void *b)
{
	volatile char buf[200];
	static __thread int once;

	buf[0] = *(const char *)a;
	if (!once++)
		leaf(buf);
	return *(const int *)a - *(const int *)b;
}

static NOFP void sorter(int depth)
{
	volatile char pad[64 * (depth + 1)];
	int v[8] = { 5, 3, 8, 1, 9, 2, 7, 4 };

	pad[0] = 0;
	if (depth)
		sorter(depth - 1);
	else
		qsort(v, 8, sizeof(v[0]), compare);
	pad[1] = pad[0];
}

static NOFP void *thread_main(void *arg)
{
	(void)arg;
	sorter(3);
	return NULL;
}

/* Random stacks and registers: the walk stays in bounds and ends. */
static void garbage(void)
{
	static uint64_t stack[4096];
	uint64_t frames[MAX];
	struct cfi_walk walk;
	uintptr_t text = (uintptr_t)&qsort;
	unsigned int seed = 7, round, i;

	for (round = 0; round < 20000; round++) {
		struct cfi_regs start;
		uintptr_t lo = (uintptr_t)stack, hi = lo + sizeof(stack);

		for (i = 0; i < 4096; i++) {
			seed = seed * 1103515245 + 12345;
			/* mostly addresses near libc's code and into the
			 * stack, some anything */
			stack[i] = seed % 3 == 0 ? text + (seed >> 8) % 65536 :
				   seed % 3 == 1 ? lo + (seed >> 4) % sizeof(stack) :
						   (uint64_t)seed * 2654435761u;
		}
		start.pc = text + (seed >> 12) % 65536;
		start.sp = lo + (seed >> 6) % 4096 * 8;
		start.bp = stack[(seed >> 3) % 4096];
		i = unwind_cfi(&start, lo, hi, frames, MAX, &walk);
		CHECK(i <= MAX);
	}
}

int main(void)
{
	pthread_t th;

	sorter(2);
	CHECK(pthread_create(&th, NULL, thread_main, NULL) == 0);
	CHECK(pthread_join(th, NULL) == 0);
	CHECK_EQ_INT(probes, 2);
	garbage();
	{
		unsigned int modules;
		size_t bytes = unwind_cfi__memory(&modules);

		printf("  tables: %u modules, %zu KiB\n", modules, bytes >> 10);
		CHECK(modules >= 2 && bytes > 0);
	}
	CHECK_SUMMARY("test-unwind-cfi");
	return 0;
}
