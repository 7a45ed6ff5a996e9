// SPDX-License-Identifier: MIT
/*
 * entry.c - hooks for an allocator linked into the program.
 *
 * A program that defines malloc itself (jemalloc, tcmalloc or mimalloc
 * linked in), or jemalloc under je_ or Rust's _rjem_ names, calls it
 * directly: no GOT slot to point elsewhere, and a preloaded malloc loses
 * to the program's own.  The tracer patches those functions' first
 * instructions with a jump instead (tracer/attach/entry.c: it decodes and
 * relocates them; nothing here reads machine code).  This file is the
 * agent's half:
 *
 *   - pprof_alloc_entry, the exported table the tracer reads: for each
 *     family (name prefix) and function, the hook a patched entry jumps
 *     to and the pointer through which that hook calls the original (the
 *     tracer stores there the address of the relocated first instructions,
 *     which jump back past the patch).  The plain family's malloc..pvalloc
 *     are preload.c's hooks, whose real pointers are then set to the
 *     relocated code too, so that a call through a GOT slot we patched and
 *     a direct call meet the same hook once;
 *   - the entry page: PA_ENTRY_PAGE_SIZE bytes, read and execute, mapped
 *     within a rel32 jump of the program on the tracer's request, where the
 *     tracer writes its stubs and relocated code through /proc/PID/mem;
 *   - the hooks of the other families and of jemalloc's *allocx calls,
 *     generated per family: they count and sample as preload.c's do.
 *
 * The page and the table are not unmapped or cleared at a detach: a thread
 * may be inside relocated code, or hold a hook's address, long after.
 * The tracer unmaps the page once it has unloaded an injected agent, having
 * found, every thread stopped, none inside it (tracer/attach/unload.c).
 */
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <sys/mman.h>
#include "agent.h"
#include "entry.h"

#define EP_HOOK __attribute__((noinline))
#define EP_FAST __attribute__((noinline, optimize("omit-frame-pointer")))
#define EP_FP HOOK_FRAME()

__thread uint32_t pa_entry_nest;

/* Where each hook finds the original: written by the tracer while every
 * thread of the process is stopped, before any patched entry can run. */
static void *ep_real[PA_ENTRY_FAMILIES][PA_EP_FNS];

#define REAL(f, fn, type) ((type)ep_real[f][PA_EP_##fn])

__attribute__((visibility("default")))
struct pa_entry_table pprof_alloc_entry = {
	.magic = PA_ENTRY_MAGIC,
	.abi_version = PA_ABI_VERSION,
	.families = PA_ENTRY_FAMILIES,
	.fns = PA_EP_FNS,
	.page_size = PA_ENTRY_PAGE_SIZE,
};

/* ---- the slow paths, shared by every family ------------------------- */

static inline void *after_alloc(void *p, size_t size,
				struct hook_frame fp)
{
	if (unlikely(sampler__due(size)) && p && sampler__take(size))
		agent__record_alloc(p, size, fp);
	return p;
}

void *agent__resize(void *p, size_t size, struct hook_frame fp,
		    void *(*re)(void *, size_t),
		    void *(*rx)(void *, size_t, int), int flags)
{
	struct pa_live_entry old;
	bool had = false;
	void *q;

	if (unlikely(pa_entry_nest)) {
		/* the allocator's own, inside a call: a sample it moves or
		 * frees is freed; what it makes is part of the outer call */
		had = p && agent__take_live(p, &old);
		q = re ? re(p, size) : rx(p, size, flags);
		if (had && !q && (size || !p))
			agent__unfree(&old);
		else if (had)
			agent__emit_free(p, &old);
		return q;
	}
	if (p && unlikely(agent__free_watched(p)))
		had = agent__take_live(p, &old);
	q = re ? re(p, size) : rx(p, size, flags);
	if (!q && (size || !p)) {
		/* failed: the old block is still there, and still live */
		if (had)
			agent__unfree(&old);
		return NULL;
	}
	/* Freed (or moved): reported now, after the fact, with the old
	 * block's identity - see struct pa_rec_free for why that is safe. */
	if (p && unlikely(agent__free_watched(p) || had))
		agent__emit_free(p, had ? &old : NULL);
	if (!q)
		return NULL;		/* realloc(p, 0) freed p */
	return after_alloc(q, size, fp);
}

/* The sampled allocation's frame is the hook's caller's: called by a tail
 * jump, this function's frame sits right on it. */
EP_HOOK static void *alloc_slow(void *p, size_t size)
{
	if (p && sampler__take(size))
		agent__record_alloc(p, size, EP_FP);
	return p;
}

void agent__free_watched_block(void *p)
{
	struct pa_live_entry old;
	bool had;

	if (agent__end_mapped(p))
		return;
	had = agent__take_live(p, &old);

	/* inside the allocator (a realloc's old block, a cache it drops):
	 * a sample is still freed, an unknown block is nobody's */
	if (had || !pa_entry_nest)
		agent__emit_free(p, had ? &old : NULL);
}


/* ---- the hooks, one set per family ---------------------------------- */

#define EP_FAMILY(f)							\
EP_FAST static void *ep_malloc_##f(size_t size)				\
{									\
	struct pa_thread *t = &pa_thread;				\
									\
	count_call(PA_HOOK_MALLOC, size);				\
	if (likely(size < t->bytes_left)) {				\
		t->bytes_left -= size;					\
		return REAL(f, MALLOC, void *(*)(size_t))(size);	\
	}								\
	return alloc_slow(REAL(f, MALLOC, void *(*)(size_t))(size), size); \
}									\
EP_FAST static void *ep_mallocx_##f(size_t size, int flags)		\
{									\
	struct pa_thread *t = &pa_thread;				\
	void *(*fn)(size_t, int) = REAL(f, MALLOCX, void *(*)(size_t, int)); \
									\
	count_call(PA_HOOK_MALLOC, size);				\
	if (likely(size < t->bytes_left)) {				\
		t->bytes_left -= size;					\
		return fn(size, flags);					\
	}								\
	return alloc_slow(fn(size, flags), size);			\
}									\
EP_FAST static void ep_free_##f(void *p)				\
{									\
	if (unlikely(!count_free()))					\
		agent__flush_counts();					\
	if (unlikely(p && agent__free_watched(p)))			\
		agent__free_watched_block(p);			\
	REAL(f, FREE, void (*)(void *))(p);				\
}									\
EP_FAST static void ep_sdallocx_##f(void *p, size_t size, int flags)	\
{									\
	if (unlikely(!count_free()))					\
		agent__flush_counts();					\
	if (unlikely(p && agent__free_watched(p)))			\
		agent__free_watched_block(p);			\
	REAL(f, SDALLOCX, void (*)(void *, size_t, int))(p, size, flags); \
}									\
EP_FAST static void ep_dallocx_##f(void *p, int flags)			\
{									\
	if (unlikely(!count_free()))					\
		agent__flush_counts();					\
	if (unlikely(p && agent__free_watched(p)))			\
		agent__free_watched_block(p);			\
	REAL(f, DALLOCX, void (*)(void *, int))(p, flags);		\
}									\
EP_HOOK static void *ep_calloc_##f(size_t n, size_t size)		\
{									\
	size_t total;							\
									\
	if (__builtin_mul_overflow(n, size, &total))			\
		total = 0;	/* fails as it should, recorded nowhere */ \
	count_call(PA_HOOK_CALLOC, total);				\
	return after_alloc(REAL(f, CALLOC, void *(*)(size_t, size_t))(n, size), \
			   total, EP_FP);				\
}									\
EP_HOOK HOOK_KEEPS_FRAME						\
static void *ep_realloc_##f(void *p, size_t size)			\
{									\
	count_call(PA_HOOK_REALLOC, size);				\
	return agent__resize(p, size, EP_FP,				\
			     REAL(f, REALLOC, void *(*)(void *, size_t)), \
			     NULL, 0);					\
}									\
EP_HOOK HOOK_KEEPS_FRAME						\
static void *ep_rallocx_##f(void *p, size_t size, int flags)		\
{									\
	count_call(PA_HOOK_REALLOC, size);				\
	return agent__resize(p, size, EP_FP, NULL,			\
			     REAL(f, RALLOCX, void *(*)(void *, size_t, int)), \
			     flags);					\
}									\
EP_HOOK static int ep_posix_memalign_##f(void **out, size_t align,	\
					  size_t size)			\
{									\
	int err;							\
									\
	count_call(PA_HOOK_POSIX_MEMALIGN, size);			\
	err = REAL(f, POSIX_MEMALIGN, int (*)(void **, size_t, size_t))( \
		out, align, size);					\
	if (!err)							\
		after_alloc(*out, size, EP_FP);				\
	return err;							\
}									\
EP_HOOK static void *ep_aligned_alloc_##f(size_t align, size_t size)	\
{									\
	count_call(PA_HOOK_ALIGNED_ALLOC, size);			\
	return after_alloc(REAL(f, ALIGNED_ALLOC,			\
				void *(*)(size_t, size_t))(align, size), \
			   size, EP_FP);				\
}									\
EP_HOOK static void *ep_memalign_##f(size_t align, size_t size)		\
{									\
	count_call(PA_HOOK_MEMALIGN, size);				\
	return after_alloc(REAL(f, MEMALIGN,				\
				void *(*)(size_t, size_t))(align, size), \
			   size, EP_FP);				\
}									\
EP_HOOK static void *ep_valloc_##f(size_t size)				\
{									\
	count_call(PA_HOOK_VALLOC, size);				\
	return after_alloc(REAL(f, VALLOC, void *(*)(size_t))(size),	\
			   size, EP_FP);				\
}									\
EP_HOOK static void *ep_pvalloc_##f(size_t size)			\
{									\
	count_call(PA_HOOK_PVALLOC, size);				\
	return after_alloc(REAL(f, PVALLOC, void *(*)(size_t))(size),	\
			   size, EP_FP);				\
}									\
static void fill_##f(void)						\
{									\
	static void *const hooks[PA_EP_FNS] = {				\
		[PA_EP_MALLOC] = (void *)ep_malloc_##f,			\
		[PA_EP_FREE] = (void *)ep_free_##f,			\
		[PA_EP_CALLOC] = (void *)ep_calloc_##f,			\
		[PA_EP_REALLOC] = (void *)ep_realloc_##f,		\
		[PA_EP_POSIX_MEMALIGN] = (void *)ep_posix_memalign_##f,	\
		[PA_EP_ALIGNED_ALLOC] = (void *)ep_aligned_alloc_##f,	\
		[PA_EP_MEMALIGN] = (void *)ep_memalign_##f,		\
		[PA_EP_VALLOC] = (void *)ep_valloc_##f,			\
		[PA_EP_PVALLOC] = (void *)ep_pvalloc_##f,		\
		[PA_EP_MALLOCX] = (void *)ep_mallocx_##f,		\
		[PA_EP_RALLOCX] = (void *)ep_rallocx_##f,		\
		[PA_EP_SDALLOCX] = (void *)ep_sdallocx_##f,		\
		[PA_EP_DALLOCX] = (void *)ep_dallocx_##f,		\
	};								\
	unsigned int i;							\
									\
	for (i = 0; i < PA_EP_FNS; i++) {				\
		pprof_alloc_entry.hook[f][i] = (uintptr_t)hooks[i];	\
		pprof_alloc_entry.real_slot[f][i] =			\
			(uintptr_t)&ep_real[f][i];			\
	}								\
}

EP_FAMILY(0)
EP_FAMILY(1)
EP_FAMILY(2)

/* The table is filled at load: the tracer may read it any time after.
 * Before the agent's own start (preload.c's constructor, which may wait
 * for a tracer that reads it): a priority, not the link's order, which
 * -flto does not keep. */
__attribute__((constructor(101))) static void entry_table_init(void)
{
	uintptr_t tp = pa_arch_tp();

	pprof_alloc_entry.nest_tls = (int64_t)((uintptr_t)&pa_entry_nest - tp);
	pprof_alloc_entry.bytes_left_tls =
		(int64_t)((uintptr_t)&pa_thread.bytes_left - tp);
	fill_0();
	fill_1();
	fill_2();
	/* the plain family's libc-named functions are preload.c's hooks
	 * (absent from unit tests, which link the agent without them) */
	if (preload__entry_slots)
		preload__entry_slots(pprof_alloc_entry.hook[0],
				     pprof_alloc_entry.real_slot[0]);
}

/* ---- the entry page -------------------------------------------------- */

struct span {
	uintptr_t lo, hi;
};

/* The main program's loaded range (the first object dl_iterate_phdr
 * reports). */
static int main_span(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct span *s = arg;
	unsigned int i;

	(void)size;
	s->lo = UINTPTR_MAX;
	s->hi = 0;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD)
			continue;
		if (a < s->lo)
			s->lo = a;
		if (a + ph->p_memsz > s->hi)
			s->hi = a + ph->p_memsz;
	}
	return 1;
}

bool entry__in_program(uintptr_t addr)
{
	struct span s = { 0, 0 };

	dl_iterate_phdr(main_span, &s);
	return addr >= s.lo && addr < s.hi;
}

/* A rel32 jump reaches +-2 GiB; the page must be that close to every byte
 * of the program. */
#define REACH ((uintptr_t)1 << 31)

static bool within_reach(uintptr_t page, const struct span *s)
{
	uintptr_t end = page + PA_ENTRY_PAGE_SIZE;

	return (page >= s->lo ? end - s->lo : s->hi - page) < REACH - 4096;
}

/*
 * Map the entry page just below the program (or, failing that, above its
 * end with room left for its brk heap), as a hint the kernel takes only
 * when the range is free - which works on every kernel, unlike
 * MAP_FIXED_NOREPLACE.  Called from the constructor of a launched program
 * or on a thread the tracer borrowed; raw mmap, no allocation.  0 or
 * -errno; the page is kept for later attaches.
 */
int entry__map_page(void)
{
	struct span s = { 0, 0 };
	uintptr_t hint;
	unsigned int i;

	if (pprof_alloc_entry.page)
		return 0;
	dl_iterate_phdr(main_span, &s);
	if (!s.hi || s.lo >= s.hi)
		return -ENOENT;
	for (i = 0; i < 64; i++) {
		void *p;

		if (i < 32) {
			if (s.lo < (uintptr_t)(i + 1) * 65536 + (1u << 20))
				continue;
			hint = (s.lo & ~(uintptr_t)0xffff) -
			       (uintptr_t)(i + 1) * 65536;
		} else {
			hint = ((s.hi + 0xffff) & ~(uintptr_t)0xffff) +
			       (uintptr_t)(i - 31) * (64u << 20);
		}
		if (!within_reach(hint, &s))
			continue;
		p = mmap((void *)hint, PA_ENTRY_PAGE_SIZE,
			 PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
		if (p == MAP_FAILED)
			continue;
		if ((uintptr_t)p == hint) {
			__atomic_store_n(&pprof_alloc_entry.page, (uintptr_t)p,
					 __ATOMIC_RELEASE);
			return 0;
		}
		munmap(p, PA_ENTRY_PAGE_SIZE);
	}
	return -ENOMEM;
}
