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
 * stack glibc mapped and whose entry is clone3; in signal handlers, on the
 * thread's stack and on an alternate one, through the signal frame; and
 * through a PLT entry a made-up signal interrupted, and through a frame
 * realigned by a DRAP register (CFI_DRAP).  A return address in
 * code whose FDE the tables cannot follow (ld.so's _dl_runtime_resolve,
 * its CFA in rbx) ends the walk there, even with rbp at a frame record
 * that looks right: code with tables need not keep frame pointers, and
 * that record is not its caller's.  Then the walk is given
 * garbage: random stacks and start registers, against the real tables;
 * it must end within its bounds every time.
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sys/auxv.h>
#include <ucontext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "agent/agent.h"
#include "agent/cfi.h"
#include "agent/unwind_cfi.h"
#include "check.h"

/* not instrumented under ASan either: the agent never is, and its frames
 * are what is compared */
#define NOFP __attribute__((noinline, optimize("omit-frame-pointer"),	\
			      no_sanitize("address", "undefined")))
#define MAX 64

static int probes;
static uint64_t restorer;		/* __restore_rt, from sigaction() */
static int signals;			/* signal frames walked through */
static uintptr_t home_lo, home_hi;	/* the main thread's stack */

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

	struct cfi_stack stack;
	stack_t ss;

	CHECK_EQ_INT(agent__mapping_of(start.sp, &lo, &hi, NULL), 0);
	stack = (struct cfi_stack){ .lo = start.sp, .hi = hi };
	if (!sigaltstack(NULL, &ss) && (ss.ss_flags & SS_ONSTACK)) {
		/* on the alternate stack: the thread's own is the home */
		stack.hi = (uintptr_t)ss.ss_sp + ss.ss_size;
		stack.home_lo = home_lo;
		stack.home_hi = home_hi;
	}
	n = unwind_cfi(&start, &stack, frames, MAX, &walk);
	nbt = backtrace(bt, MAX);
	/* bt[0] is in the probe, bt[1] its caller: frames[0]; ASan's
	 * interceptor of backtrace() adds a frame of its own first */
	for (k = 1; k < 3 && k < nbt && (uint64_t)(uintptr_t)bt[k] != frames[0];
	     k++)
		;
	CHECK(nbt >= 3);
	for (i = 0; i < n && (int)(i + k) < nbt; i++) {
		Dl_info di;

		uint64_t want = (uint64_t)(uintptr_t)bt[i + k];

		/* backtrace() gives the trampoline and the pc it
		 * interrupted as they are; the walk adds 1 to both, as to
		 * the return addresses */
		if (want == restorer || (i && frames[i - 1] == restorer + 1))
			want++;
		if (frames[i] != want) {
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
			CHECK(frames[i] == want);
		}
		if (frames[i] == restorer + 1)
			signals++;
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

/* A frame GCC realigns through a DRAP register (an over-aligned local
 * and alloca): its CFA is the word at rbp + N (CFI_DRAP) */
static NOFP void realigned(int n)
{
	_Alignas(64) volatile char big[64];
	volatile char *p = __builtin_alloca((size_t)n);

	p[0] = 1;
	big[0] = p[0];
	sorter(0);
	big[1] = big[0];
}

static NOFP void *thread_main(void *arg)
{
	(void)arg;
	sorter(3);
	return NULL;
}

static NOFP void *drap_main(void *arg)
{
	realigned(24 + (int)(uintptr_t)arg);
	return NULL;
}

/* A signal's handler, through frames without frame pointers, to the
 * probe: the walk goes through the signal frame to the code it
 * interrupted (in libc, raising it) and on to the thread's entry. */
static NOFP void handler_chain(int depth)
{
	volatile char pad[48 * (depth + 1)];

	pad[0] = 0;
	if (depth)
		handler_chain(depth - 1);
	else
		probe();
	pad[1] = pad[0];
}

static NOFP void on_signal(int sig)
{
	(void)sig;
	handler_chain(2);
}

static NOFP void raiser(int depth, int sig)
{
	volatile char pad[80 * (depth + 1)];

	pad[0] = 0;
	if (depth)
		raiser(depth - 1, sig);
	else
		raise(sig);
	pad[1] = pad[0];
}

/* SIGUSR1 on the thread's stack, SIGUSR2 on an alternate stack */
static void signals_walked(void)
{
	static char alt[64 << 10];
	struct sigaction sa = { .sa_handler = on_signal }, old;
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) };
	int before = probes;
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);

	CHECK_EQ_INT(agent__mapping_of(here, &home_lo, &home_hi, NULL), 0);
	sigemptyset(&sa.sa_mask);
	CHECK_EQ_INT(sigaction(SIGUSR1, &sa, NULL), 0);
	sa.sa_flags = SA_ONSTACK;
	CHECK_EQ_INT(sigaction(SIGUSR2, &sa, NULL), 0);
	/* glibc's sigaction gives back the restorer it installed */
	CHECK_EQ_INT(sigaction(SIGUSR1, NULL, &old), 0);
	restorer = (uint64_t)(uintptr_t)old.sa_restorer;
	CHECK(restorer != 0);
	CHECK_EQ_INT(sigaltstack(&ss, NULL), 0);
	raiser(2, SIGUSR1);
	raiser(3, SIGUSR2);
	CHECK_EQ_INT(probes - before, 2);
	CHECK_EQ_INT(signals, 2);
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);
}

/* The address of this program's .plt, from its section headers, or 0. */
static uintptr_t own_plt(void)
{
	const ElfW(Phdr) *ph = (const void *)getauxval(AT_PHDR);
	unsigned long i, phnum = getauxval(AT_PHNUM);
	uintptr_t bias = 0, plt = 0;
	ElfW(Ehdr) eh;
	ElfW(Shdr) *sh = NULL;
	char *names = NULL;
	FILE *f;

	for (i = 0; i < phnum; i++)
		if (ph[i].p_type == PT_PHDR)
			bias = (uintptr_t)ph - ph[i].p_vaddr;
	f = fopen("/proc/self/exe", "rb");
	if (!f)
		return 0;
	if (fread(&eh, sizeof(eh), 1, f) != 1 || eh.e_shstrndx >= eh.e_shnum)
		goto out;
	sh = calloc(eh.e_shnum, sizeof(*sh));
	if (!sh || fseek(f, (long)eh.e_shoff, SEEK_SET) ||
	    fread(sh, sizeof(*sh), eh.e_shnum, f) != eh.e_shnum)
		goto out;
	names = calloc(1, sh[eh.e_shstrndx].sh_size + 1);
	if (!names || fseek(f, (long)sh[eh.e_shstrndx].sh_offset, SEEK_SET) ||
	    fread(names, 1, sh[eh.e_shstrndx].sh_size, f) !=
		    sh[eh.e_shstrndx].sh_size)
		goto out;
	for (i = 0; i < eh.e_shnum; i++)
		if (sh[i].sh_name < sh[eh.e_shstrndx].sh_size &&
		    !strcmp(names + sh[i].sh_name, ".plt") &&
		    sh[i].sh_size >= 32)
			plt = bias + sh[i].sh_addr;
out:
	free(names);
	free(sh);
	fclose(f);
	return plt;
}

/*
 * A signal that interrupted a PLT entry, made up: a ucontext on a stack
 * of our own whose pc is in the second entry, before and after its push
 * (byte 11: the rule's CFA is 8 further up there).  The return address
 * the rule finds is 0, ending the walk; the word the wrong rule would
 * take is a real return address, on which the walk would go on.
 */
static void plt_walked(void)
{
	static uint64_t fake[1024];
	uintptr_t plt = own_plt();
	unsigned int at[] = { 6, 11 }, v, n;

	CHECK(plt != 0);
	if (!plt)
		return;
	for (v = 0; v < 2; v++) {
		ucontext_t *uc = (ucontext_t *)&fake[16];
		uint64_t frames[MAX];
		struct cfi_regs start;
		struct cfi_stack stack = {
			.lo = (uintptr_t)fake,
			.hi = (uintptr_t)(fake + 1024),
		};
		struct cfi_walk walk;
		uint64_t rip = plt + 16 + at[v];

		memset(fake, 0, sizeof(fake));
		uc->uc_mcontext.gregs[REG_RIP] = (greg_t)rip;
		uc->uc_mcontext.gregs[REG_RSP] = (greg_t)(uintptr_t)&fake[600];
		/* the word the wrong rule would take */
		fake[at[v] >= 11 ? 600 : 601] = restorer;
		start = (struct cfi_regs){ .pc = restorer,
					   .sp = (uintptr_t)uc };
		n = unwind_cfi(&start, &stack, frames, MAX, &walk);
		printf("  PLT entry + %u: %u frames, end %d\n", at[v], n,
		       walk.end);
		CHECK_EQ_INT(n, 2);
		CHECK(frames[0] == restorer + 1);
		CHECK(n < 2 || frames[1] == rip + 1);
		CHECK_EQ_INT(walk.end, CFI_END_ZERO);
	}
}

/* The first CFI_OPAQUE row's address in ld.so, or 0. */
static int find_opaque(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t *at = data;
	struct cfi_source src;
	struct cfi_stats st;
	struct cfi_row *rows;
	size_t max, n, k;

	(void)size;
	if (!strstr(info->dlpi_name, "ld-linux") || cfi__source_of(info, &src))
		return 0;
	max = cfi__max_rows(&src);
	rows = mmap(NULL, max * sizeof(*rows), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rows == MAP_FAILED)
		return 0;
	n = cfi__build(&src, rows, max, &st);
	for (k = 0; k + 1 < n && !*at; k++)
		/* past the row's first byte: a return address's call */
		if (rows[k].kind == CFI_OPAQUE && rows[k + 1].pc - rows[k].pc >= 2)
			*at = info->dlpi_addr + rows[k].pc + 1;
	munmap(rows, max * sizeof(*rows));
	return 1;
}

static void opaque_walked(void)
{
	static uint64_t fake[256];
	uintptr_t ra = 0;
	uint64_t frames[MAX];
	struct cfi_walk walk;
	struct cfi_regs start;
	unsigned int n;

	dl_iterate_phdr(find_opaque, &ra);
	CHECK(ra != 0);
	if (!ra)
		return;
	/* a frame record at fake[100]: the next rbp 0, then a return
	 * address in main's caller's module, which a walk by it would take */
	memset(fake, 0, sizeof(fake));
	fake[101] = (uintptr_t)&qsort + 16;
	start = (struct cfi_regs){ .pc = ra + 1, .sp = (uintptr_t)&fake[10],
				   .bp = (uintptr_t)&fake[100] };
	n = unwind_cfi(&start, &(struct cfi_stack){
				.lo = (uintptr_t)fake,
				.hi = (uintptr_t)(fake + 256) },
		       frames, MAX, &walk);
	printf("  return address in ld.so's opaque code %#lx: %u frames, end %d\n",
	       (unsigned long)ra, n, walk.end);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_INT(walk.end, CFI_END_NO_RULE);
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
		i = unwind_cfi(&start, &(struct cfi_stack){ .lo = lo, .hi = hi },
			       frames, MAX, &walk);
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
	/* compare() probes once a thread: a thread of its own */
	CHECK(pthread_create(&th, NULL, drap_main, NULL) == 0);
	CHECK(pthread_join(th, NULL) == 0);
	CHECK_EQ_INT(probes, 3);
	signals_walked();
	plt_walked();
	opaque_walked();
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
