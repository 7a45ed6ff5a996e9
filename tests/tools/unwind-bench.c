// SPDX-License-Identifier: MIT
/*
 * unwind-bench.c - what the agent's unwind tables cost, for make bench.
 *
 *   unwind-bench [LIBRARY...]
 *
 * First the tables: each LIBRARY is dlopen'ed, then every module loaded
 * gets its table built as the agent builds it (cfi__source_of, then
 * cfi__build into memory of its own), printed with its FDEs, rows, size
 * and build time.  Then the walk: a chain of functions built without frame
 * pointers is walked by the agent's hook path (unwind_fp with --unwind
 * auto: the tables), and a chain with frame pointers by the frame-pointer
 * walk alone, both from the same depth, many times; the cost per frame of
 * each is printed in ns.  Exit 1 if a table cannot be built for a module
 * with an .eh_frame_hdr, or a walk does not reach the thread's entry.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include "agent/agent.h"
#include "agent/cfi.h"
#include "pa_clock.h"

#define DEPTH	30
#define WALKS	20000
#define MAX	128

static int failed;

static int one_module(struct dl_phdr_info *info, size_t size, void *data)
{
	struct cfi_source src;
	struct cfi_stats st;
	struct cfi_row *rows;
	size_t max, n, bytes;
	uint64_t t0;
	const char *name = info->dlpi_name[0] ? info->dlpi_name : "(the program)";

	(void)size;
	(void)data;
	if (strstr(name, "linux-vdso") || cfi__source_of(info, &src))
		return 0;
	max = cfi__max_rows(&src);
	bytes = max * sizeof(*rows);
	rows = max ? mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) :
		     MAP_FAILED;
	if (rows == MAP_FAILED) {
		printf("    %-40s no table\n", name);
		failed = 1;
		return 0;
	}
	t0 = pa_now_ns();
	n = cfi__build(&src, rows, max, &st);
	t0 = pa_now_ns() - t0;
	printf("    %-40s %6u FDEs %7zu rows %8.1f KiB %7.2f ms\n",
	       strrchr(name, '/') ? strrchr(name, '/') + 1 : name, st.fdes, n,
	       (double)(n * sizeof(*rows)) / 1024, (double)t0 / 1e6);
	if (!n)
		failed = 1;
	munmap(rows, bytes);
	return 0;
}

/* the walks, from the leaf of each chain */
static uint64_t walk_ns;
static unsigned int walk_frames;

static __attribute__((noinline, optimize("no-omit-frame-pointer")))
void time_walks(void)
{
	uint64_t frames[MAX], t0;
	struct fp_walk walk;
	unsigned int i, n = 0;

	t0 = pa_now_ns();
	for (i = 0; i < WALKS; i++)
		n = unwind_fp(HOOK_FRAME(), frames,
			      MAX, &walk);
	walk_ns = pa_now_ns() - t0;
	walk_frames = n;
}

#define CHAIN(name, attr)						\
static __attribute__((noinline, attr)) void name(int depth)		\
{									\
	volatile char pad[32];						\
									\
	pad[0] = (char)depth;						\
	if (depth)							\
		name(depth - 1);					\
	else								\
		time_walks();						\
	pad[1] = pad[0];						\
}
CHAIN(nofp_chain, optimize("omit-frame-pointer"))
CHAIN(fp_chain, optimize("no-omit-frame-pointer"))

static void report(const char *what)
{
	printf("  %-44s %5.1f ns a frame (%u frames, %.0f ns a walk)\n", what,
	       (double)walk_ns / WALKS / walk_frames, walk_frames,
	       (double)walk_ns / WALKS);
}

int main(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++)
		if (!dlopen(argv[i], RTLD_NOW)) {
			fprintf(stderr, "unwind-bench: %s\n", dlerror());
			return 1;
		}
	printf("  unwind tables, built as the agent builds them:\n");
	dl_iterate_phdr(one_module, NULL);

	pa_agent.max_frames = MAX;
	pa_agent.unwind_cfg = stack_copy__cfg(PA_UNWIND_AUTO, 0);
	nofp_chain(DEPTH);	/* the first walk builds the tables */
	nofp_chain(DEPTH);
	report("the agent's walk by the tables, no frame pointers:");
	if (walk_frames < DEPTH)
		failed = 1;
	pa_agent.unwind_cfg = stack_copy__cfg(PA_UNWIND_FP, 0);
	fp_chain(DEPTH);
	report("the frame-pointer walk, frame pointers:");
	if (walk_frames < DEPTH)
		failed = 1;
	return failed;
}
