// SPDX-License-Identifier: MIT
/*
 * preload.c - the malloc family, interposed.
 *
 * These are the only symbols the agent exports (agent/agent.map).  Each one
 * forwards to the definition the process would have called without the
 * agent - the next one after us in the loader's list (what dlsym(RTLD_NEXT)
 * would say, looked up by dynsym.c without libdl), which is glibc's malloc,
 * or jemalloc's/tcmalloc's when one of those is linked or preloaded after
 * us - and then, on the rare slow path, records.
 *
 * Whatever allocates while we look the real malloc up (another thread, a
 * constructor calling in first) is served from a static bootstrap arena,
 * never freed, and recognised by address in free/realloc/
 * malloc_usable_size.  Only if the lookup finds nothing (an odd link
 * order) do we fall back to glibc's __libc_* entry points.
 *
 * Accounting rules: requested sizes; calloc counts n*s; realloc is a free
 * of the old block and an allocation of the new block at the realloc's
 * stack; failed calls record nothing - a failed realloc leaves the old block
 * live, so realloc reports its free only after the real realloc succeeded
 * (free reports before the real free, so its address cannot be reused and
 * recorded ahead of its free).  Stacks start in the caller: no agent frame
 * is ever recorded.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <dlfcn.h>	/* dlopen: ours, hooked */
#include "agent.h"
#include "got.h"
#include "entry.h"
#include "dynsym.h"

#define HOOK __attribute__((visibility("default")))
#define HOOK_FP HOOK_FRAME()

struct real_allocator {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*reallocarray)(void *, size_t, size_t);	/* to unpatch */
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*malloc_usable_size)(void *);
	void *(*dlopen)(const char *, int);
};

static void *first_malloc(size_t size);
static void first_free(void *p);
static void *first_dlopen(const char *file, int mode);

/* malloc and free start as trampolines that resolve, so that the fast
 * paths need no "resolved yet?" test. */
/* Where the real functions are looked up: the next definition after us
 * when preloaded; the global resolution when injected (we are then not in
 * the global scope, and the next after us would skip an allocator the
 * program links before libc). */
static bool global_scope;

static struct real_allocator real = {
	.malloc = first_malloc,
	.free = first_free,
	.dlopen = first_dlopen,
};
static int resolve_state;	/* 0 not yet, 1 in progress, 2 done */
/* The real malloc's definition: not real.malloc, which entry patching
 * turns into relocated code in the agent's entry page. */
static void *malloc_defined;

/* glibc's own entry points, for when the lookup finds nothing. */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

/* ---- bootstrap arena ------------------------------------------------- */

#define BOOT_SIZE (256u * 1024)
static _Alignas(64) unsigned char boot_heap[BOOT_SIZE];
static size_t boot_used;

struct boot_block {
	size_t size;
	size_t pad;
};

static void *boot_alloc(size_t size, size_t align)
{
	size_t start, need, used;
	uintptr_t base = (uintptr_t)boot_heap;

	if (align < 16)
		align = 16;
	if (size > BOOT_SIZE || (align & (align - 1)) || align > 4096)
		goto out_nomem;
	used = __atomic_load_n(&boot_used, __ATOMIC_RELAXED);
	do {
		start = (base + used + sizeof(struct boot_block) + align - 1) &
			~(align - 1);
		need = start + size - base;
		if (need > BOOT_SIZE)
			goto out_nomem;
	} while (!__atomic_compare_exchange_n(&boot_used, &used, need, 1,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	((struct boot_block *)start)[-1].size = size;
	/* A sticky filter mark sends its free() to the slow path. */
	__atomic_store_n(&pa_live_filter[live_filter_slot(start)], 255,
			 __ATOMIC_RELAXED);
	return (void *)start;	/* static storage is zero: calloc is fine */
out_nomem:
	errno = ENOMEM;
	return NULL;
}

static inline bool is_boot(const void *p)
{
	return (const unsigned char *)p >= boot_heap &&
	       (const unsigned char *)p < boot_heap + BOOT_SIZE;
}

static size_t boot_size(const void *p)
{
	return ((const struct boot_block *)p)[-1].size;
}

/* ---- finding the real allocator ------------------------------------- */

/*
 * The definition of name that the dynamic linker binds modules to, or
 * NULL: the first module of the loader's list that defines it itself
 * (dynsym.c).  Not dlsym(RTLD_DEFAULT), which glibc before 2.34 keeps in
 * libdl.so.2, and which, for a program built without PIE that takes the
 * function's address (Debian's python3 does, for malloc and free),
 * returns the program's own PLT stub - the "canonical PLT entry" - which
 * jumps through the program's GOT: to our hook, once we are in.
 * Forwarding there recursed until the stack ran out.
 */
static void *global_definition(const char *name)
{
	return dynsym__global(name);
}

/* The real name: never one of our own hooks (looked up globally, a
 * preloaded agent finds its own definitions of what the program does not
 * define itself - then the next one after us is the real one). */
#define NEXT(name, fallback) do {					\
	void *sym = global_scope ? global_definition(#name) :		\
		dynsym__next(#name, (void *)pa_own_##name);		\
	if (sym == (void *)pa_own_##name)				\
		sym = dynsym__next(#name, (void *)pa_own_##name);	\
	real.name = sym ? (__typeof__(real.name))sym : (fallback);	\
} while (0)

/* Our own malloc, bound locally: a plain reference to "malloc" from this
 * library would resolve to the global definition. */
extern void *pa_own_malloc(size_t) __attribute__((alias("malloc"),
						   copy(malloc),
						   visibility("hidden")));

/* Each hook's own address, bound locally (see pa_own_malloc). */
#define OWN(ret, fn, ...) \
	extern ret pa_own_##fn(__VA_ARGS__) \
		__attribute__((alias(#fn), copy(fn), visibility("hidden")))
OWN(void, free, void *);
OWN(void *, calloc, size_t, size_t);
OWN(void *, realloc, void *, size_t);
OWN(void *, reallocarray, void *, size_t, size_t);
OWN(int, posix_memalign, void **, size_t, size_t);
OWN(void *, aligned_alloc, size_t, size_t);
OWN(void *, memalign, size_t, size_t);
OWN(void *, valloc, size_t);
OWN(void *, pvalloc, size_t);
OWN(size_t, malloc_usable_size, void *);
OWN(void *, dlopen, const char *, int);
#undef OWN

/* 0 when real.* is usable; -EAGAIN while resolving (use the arena). */
static int resolve(void)
{
	int expected = 0;

	if (likely(__atomic_load_n(&resolve_state, __ATOMIC_ACQUIRE) == 2))
		return 0;
	if (!__atomic_compare_exchange_n(&resolve_state, &expected, 1, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return expected == 2 ? 0 : -EAGAIN;

	/*
	 * Decided here, not in our constructor: another library's constructor
	 * may call into us (dlopen, reallocarray...) first.  When our malloc
	 * is not the process's - we were dlopened by a tracer, or the program
	 * defines its own malloc family, which then wins over a preload - the
	 * real functions are the global ones, not the next after us.
	 */
	if (global_definition("malloc") != (void *)pa_own_malloc) {
		pa_agent.attached = 1;
		global_scope = true;
	}
	/* the pthread functions too, before any hook can want them (none
	 * on an old glibc without libpthread: stats.c and counters.c do
	 * without) */
	dynsym__find_threads();

	NEXT(free, __libc_free);
	NEXT(malloc, __libc_malloc);
	NEXT(calloc, __libc_calloc);
	NEXT(realloc, __libc_realloc);
	NEXT(reallocarray, NULL);
	NEXT(posix_memalign, NULL);
	NEXT(aligned_alloc, __libc_memalign);
	NEXT(memalign, __libc_memalign);
	NEXT(valloc, __libc_valloc);
	NEXT(pvalloc, __libc_pvalloc);
	NEXT(malloc_usable_size, NULL);
	NEXT(dlopen, first_dlopen);
	malloc_defined = (void *)real.malloc;
	__atomic_store_n(&resolve_state, 2, __ATOMIC_RELEASE);
	return 0;
}

static void *first_malloc(size_t size)
{
	if (resolve())
		return boot_alloc(size, 16);
	return real.malloc(size);
}

static void first_free(void *p)
{
	if (!p || is_boot(p) || resolve())
		return;		/* before resolution only boot blocks exist */
	real.free(p);
}


/*
 * Preloaded (our malloc is the process's malloc): start at once.  Injected
 * with dlopen by a tracer: look the real functions up globally and wait to
 * be told to attach (pprof_alloc_attach), which hooks through the GOTs.
 * Preloaded into a program that defines malloc itself: launched by a
 * tracer, start and hook as an attach does; alone, wait for a tracer.
 */
__attribute__((constructor)) static void agent_constructor(void)
{
	if (resolve())
		return;
	if (!pa_agent.attached)
		agent__start();
	else if (getenv(PA_ENV_FD) && !agent__start())
		/* launched, and the program defines malloc itself: its
		 * libraries' calls are hooked in their GOTs now, its own
		 * calls by the tracer patching its functions' entries while
		 * we wait for it (entry.c) */
		agent__hook_new_modules();
}

/* ---- the hooks ------------------------------------------------------- */

static inline void *after_alloc(void *p, size_t size,
				struct hook_frame fp)
{
	if (unlikely(sampler__due(size)) && p && sampler__take(size))
		agent__record_alloc(p, size, fp);
	return p;
}

/*
 * malloc and free are the hottest functions in most programs, so their
 * fast paths are a compare and a tail jump to the real function, with no
 * frame of their own (omit-frame-pointer on these two only).  Their slow
 * paths are separate functions reached by a tail jump too, so the slow
 * path's frame sits directly on the caller's and its return address is in
 * the caller: the stack walk from there shows no agent frame.
 */
#define FAST_HOOK HOOK __attribute__((optimize("omit-frame-pointer")))

__attribute__((noinline)) static void *malloc_slow(size_t size)
{
	void *p = real.malloc(size);

	if (p && sampler__take(size))
		agent__record_alloc(p, size, HOOK_FP);
	return p;
}

FAST_HOOK void *malloc(size_t size)
{
	struct pa_thread *t = &pa_thread;

	count_call(PA_HOOK_MALLOC, size);
	if (likely(size < t->bytes_left)) {
		t->bytes_left -= size;
		return real.malloc(size);
	}
	return malloc_slow(size);
}

__attribute__((noinline)) static void free_slow(void *p)
{
	if (!p || is_boot(p))
		return;
	/* reported before the real free: the address cannot be reused and
	 * recorded again ahead of its free */
	agent__free_watched_block(p);
	real.free(p);
}

/* Every 2^16 frees: the thread's counts go to the header (counters.c). */
__attribute__((noinline)) static void free_flush(void *p)
{
	agent__flush_counts();
	if (likely(!agent__free_watched(p)))
		return real.free(p);
	return free_slow(p);
}

FAST_HOOK void free(void *p)
{
	if (unlikely(!count_free()))
		return free_flush(p);
	if (likely(!agent__free_watched(p)))
		return real.free(p);
	return free_slow(p);
}

HOOK void *calloc(size_t n, size_t size)
{
	size_t total;

	if (unlikely(resolve())) {
		if (__builtin_mul_overflow(n, size, &total)) {
			errno = ENOMEM;
			return NULL;
		}
		return boot_alloc(total, 16);
	}
	if (__builtin_mul_overflow(n, size, &total)) {
		count_call(PA_HOOK_CALLOC, 0);
		return real.calloc(n, size);	/* fails as it should */
	}
	count_call(PA_HOOK_CALLOC, total);
	return after_alloc(real.calloc(n, size), total, HOOK_FP);
}

/*
 * The common part of realloc and reallocarray; size is the new size.
 * reallocarray does its own overflow check and comes here too, never to
 * glibc's reallocarray, which calls realloc through the PLT - that is, back
 * into our realloc, which would record the block a second time.
 */
static void *do_realloc(void *p, size_t size, struct hook_frame fp)
{
	if (unlikely(is_boot(p))) {
		void *q = real.malloc(size);

		if (q)
			memcpy(q, p, boot_size(p) < size ? boot_size(p) : size);
		return after_alloc(q, size, fp);
	}
	return agent__resize(p, size, fp, real.realloc, NULL, 0);
}

HOOK HOOK_KEEPS_FRAME void *realloc(void *p, size_t size)
{
	if (unlikely(resolve())) {
		void *q = boot_alloc(size, 16);

		if (q && p && is_boot(p))
			memcpy(q, p, boot_size(p) < size ? boot_size(p) : size);
		return q;
	}
	count_call(PA_HOOK_REALLOC, size);
	return do_realloc(p, size, HOOK_FP);
}

HOOK HOOK_KEEPS_FRAME void *reallocarray(void *p, size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	if (unlikely(resolve()))
		return boot_alloc(total, 16);
	count_call(PA_HOOK_REALLOCARRAY, total);
	return do_realloc(p, total, HOOK_FP);
}

HOOK int posix_memalign(void **out, size_t align, size_t size)
{
	int err;

	if (unlikely(resolve())) {
		if (!align || (align & (align - 1)) || align % sizeof(void *))
			return EINVAL;
		*out = boot_alloc(size, align);
		return *out ? 0 : ENOMEM;
	}
	count_call(PA_HOOK_POSIX_MEMALIGN, size);
	if (!real.posix_memalign) {
		if (!align || (align & (align - 1)) || align % sizeof(void *))
			return EINVAL;
		*out = real.memalign(align, size);
		err = *out ? 0 : ENOMEM;
	} else {
		err = real.posix_memalign(out, align, size);
	}
	if (!err)
		after_alloc(*out, size, HOOK_FP);
	return err;
}

HOOK void *aligned_alloc(size_t align, size_t size)
{
	if (unlikely(resolve()))
		return boot_alloc(size, align);
	count_call(PA_HOOK_ALIGNED_ALLOC, size);
	return after_alloc(real.aligned_alloc(align, size), size, HOOK_FP);
}

HOOK void *memalign(size_t align, size_t size)
{
	if (unlikely(resolve()))
		return boot_alloc(size, align);
	count_call(PA_HOOK_MEMALIGN, size);
	return after_alloc(real.memalign(align, size), size, HOOK_FP);
}

HOOK void *valloc(size_t size)
{
	if (unlikely(resolve()))
		return boot_alloc(size, 4096);
	count_call(PA_HOOK_VALLOC, size);
	return after_alloc(real.valloc(size), size, HOOK_FP);
}

HOOK void *pvalloc(size_t size)
{
	if (unlikely(resolve()))
		return boot_alloc(size, 4096);
	count_call(PA_HOOK_PVALLOC, size);
	return after_alloc(real.pvalloc(size), size, HOOK_FP);
}

/*
 * dlopen: count the call and jump to the real dlopen, so that it still sees
 * its caller's address (it picks the namespace and RUNPATH by it); the next
 * samples notice the count and report the new module (modules.c).
 */
FAST_HOOK void *dlopen(const char *file, int mode)
{
	struct pa_header *hdr = pa_agent.hdr;

	/* read by the next samples (modules.c) and by an attached tracer,
	 * which then has us rescan */
	if (hdr)
		__atomic_add_fetch(&hdr->dlopen_calls, 1, __ATOMIC_RELAXED);
	return real.dlopen(file, mode);
}

/*
 * No dlopen was found after us when resolving: glibc < 2.34 keeps it in
 * libdl.so.2, which a module loaded since (an NSS or gconv module's
 * dependency) may have brought; look again, once a call comes.  Still
 * none: nobody can load anything yet.
 */
__attribute__((optimize("omit-frame-pointer")))
static void *first_dlopen(const char *file, int mode)
{
	if (resolve())
		return NULL;
	if (__atomic_load_n(&real.dlopen, __ATOMIC_ACQUIRE) == first_dlopen) {
		NEXT(dlopen, first_dlopen);	/* the same by any thread */
		if (real.dlopen == first_dlopen)
			return NULL;
	}
	return real.dlopen(file, mode);
}

HOOK size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	if (is_boot(p))
		return boot_size(p);
	if (unlikely(resolve()) || !real.malloc_usable_size)
		return 0;
	return real.malloc_usable_size(p);
}

void *agent__real_malloc(void)
{
	return resolve() ? NULL : malloc_defined;
}

/* ---- attach and detach (injected agent) ------------------------------ */


static unsigned int hook_table(struct got_hook *h)
{
	unsigned int n = 0;

#define HOOK_ENTRY(fn, is_free_) do {					\
	h[n].name = #fn;						\
	h[n].hook = (void *)pa_own_##fn;				\
	h[n].real = (void *)real.fn;					\
	h[n].is_free = (is_free_);					\
	if (h[n].real)							\
		n++;							\
} while (0)
	HOOK_ENTRY(free, true);
	HOOK_ENTRY(realloc, true);	/* frees too: patched first */
	HOOK_ENTRY(reallocarray, true);
	HOOK_ENTRY(malloc, false);
	HOOK_ENTRY(calloc, false);
	HOOK_ENTRY(posix_memalign, false);
	HOOK_ENTRY(aligned_alloc, false);
	HOOK_ENTRY(memalign, false);
	HOOK_ENTRY(valloc, false);
	HOOK_ENTRY(pvalloc, false);
	HOOK_ENTRY(malloc_usable_size, false);
	HOOK_ENTRY(dlopen, false);
#undef HOOK_ENTRY
	return n;
}

void preload__entry_slots(uint64_t *hook, uint64_t *slot)
{
#define SLOT(fn, FN) do {						\
	hook[PA_EP_##FN] = (uintptr_t)pa_own_##fn;			\
	slot[PA_EP_##FN] = (uintptr_t)&real.fn;				\
} while (0)
	SLOT(malloc, MALLOC);
	SLOT(free, FREE);
	SLOT(calloc, CALLOC);
	SLOT(realloc, REALLOC);
	SLOT(posix_memalign, POSIX_MEMALIGN);
	SLOT(aligned_alloc, ALIGNED_ALLOC);
	SLOT(memalign, MEMALIGN);
	SLOT(valloc, VALLOC);
	SLOT(pvalloc, PVALLOC);
#undef SLOT
}

/* attach.c calls this to know what to patch (NULL in unit tests, which
 * link the agent without its interposers). */
__attribute__((constructor)) static void register_hook_table(void)
{
	pa_hook_table = hook_table;
}
