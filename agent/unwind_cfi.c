// SPDX-License-Identifier: MIT
/*
 * unwind_cfi.c - the stack walk by unwind tables (cfi.c), for code built
 * without frame pointers.
 *
 * Tables are built a module at a time: by the builder ahead (below), or
 * by the first walk that meets an address in a module without one, which
 * finds the module with dl_iterate_phdr - so it is loaded, and stays
 * loaded while the callback runs under the loader's lock - and builds its
 * table into memory the agent maps itself.  Only one thread builds a
 * given table; a walk that meets a table being built stops there (the
 * caller falls back), unless the builder builds it.  The
 * A forked child builds none until a module scan has shown the loader's
 * lock free (a thread of the parent's may have held it at the fork, and
 * dl_iterate_phdr would wait for ever).  The
 * registry is append-only and read without a lock: an entry is published
 * by the release store of its state.  An entry made before a dlopen since
 * is confirmed once with dl_iterate_phdr before it is trusted again: one
 * whose module is gone is marked dead, and the module loaded where it was
 * gets a newer entry.  The tables' memory is bounded
 * (CFI_MEMORY_MAX); past it, modules get no table.  They are unmapped
 * only when an injected agent is released before it is unloaded
 * (unwind_cfi__free), while the tracer holds every other thread stopped.
 *
 * A step reads only the stack between the current stack pointer and the
 * top of the stack's mapping (found by the caller): the CFA must lie above
 * the stack pointer and within the mapping, 8-aligned, and every frame's
 * stack pointer is strictly above the last.  A return address of 0, a row
 * marked outermost (the thread's entry: _start, clone3) end the walk
 * cleanly; an address without a rule ends it as cut - unless rbp is
 * known and points at a frame record on the stack above the stack
 * pointer: code without tables is mostly code generated at run time (in
 * no module) or into a module by a JIT's build (V8's builtins), and those
 * keep frame pointers, so the walk goes on by that record.
 *
 * A signal frame (__restore_rt's row) gives the interrupted registers from
 * the ucontext the kernel pushed: the trampoline itself and the next pc
 * are exact, not return addresses (both written + 1, as libdwfl's
 * activations are by elf/unwind.c), and may be in a PLT entry, whose rule depends on the offset in
 * the entry.  The interrupted stack pointer must be above the frame on
 * the same stack, or, when the handler ran on an alternate stack, on the
 * thread's own - a switch allowed once, so the walk still always ends.
 *
 * Walks repeat: a loop allocates from the same place, on the same stack,
 * again and again, and each walk would look the same rows up and apply
 * them to the same words.  A walk is a function of its first registers,
 * the stack's bounds, the tables and the words it read; so a whole walk
 * of at most MEMO_FRAMES frames that ended cleanly is remembered with the
 * words it read (address and value) and the frames it gave, and a walk
 * that starts with the same registers on the same stack, the tables
 * unchanged (memo_gen, the loader's dlopen count), reads those words
 * again: all the same, it gives the same frames without a lookup.  Exact
 * by construction: any word that differs, and the walk is done afresh.
 * The memo is a small table shared by all threads (a thread's stack
 * addresses are its own), each entry guarded by a sequence count: a
 * reader that sees it change, or odd, walks afresh.
 */
#include <link.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <ucontext.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include "agent.h"
#include "cfi.h"
#include "dynsym.h"
#include "unwind_cfi.h"
#include "pa_clock.h"

#define CFI_MODULES_MAX		512
#define CFI_MEMORY_MAX		(256u << 20)

enum { MOD_EMPTY, MOD_BUILDING, MOD_READY, MOD_FAILED, MOD_DEAD };

/* The rows are indexed by page of code: pages[p] is the first row at or
 * past the module's code's page p, so a lookup searches one page's rows */
#define CFI_PAGE_SHIFT	12
/*
 * And the lookups of each module are remembered: allocations come from a
 * few call sites, so the same return addresses are looked up again and
 * again.  A slot holds the row itself, not its index: a walk that missed
 * the memo reads one line per frame instead of two (the slot, then the
 * row, each a cache miss on a program with many call sites: sqlite3).
 * Its two words each start with the key, pc - bias + 1 (so that an empty
 * slot's zeros match nothing): a = key << 32 | cfa_off,
 * b = key << 32 | rbp_off << 16 | kind << 8 | cfa_reg.
 * Written and read a word at a time, so racing threads can read halves
 * of two entries, but only entries of the same key - the same row, as a
 * module's rows never change - or see the keys differ, and miss.
 */
#define CFI_HOT_BITS	10
#define CFI_HOT_SLOTS	(1u << CFI_HOT_BITS)

struct hot_slot {
	uint64_t a, b;
};

struct cfi_module {
	uintptr_t text_lo, text_hi, bias;
	const struct cfi_row *rows;
	size_t n;
	const uint32_t *pages;	/* (code pages + 1) entries, or NULL */
	struct hot_slot *hot;	/* CFI_HOT_SLOTS recent lookups, or NULL */
	size_t bytes;
	int state;
	uint32_t gen;		/* dlopen calls when last seen loaded */
};

/*
 * The builder (unwind_cfi__builder_on): the agent's own thread builds the
 * tables of every module loaded before a launched program runs, one a
 * call, so that the program's walks find them made.  It takes `adding`
 * only inside its dl_iterate_phdr callback, and only if it is free: it
 * never waits for anything while it holds the loader's lock, and never
 * holds `adding` while it waits for that lock - so a walk on a program's
 * thread that holds the loader's lock (inside a dl_iterate_phdr callback
 * of its own, or a constructor in dlopen) never waits for the builder.
 * A walk that meets the very table the builder is building waits for it
 * (bounded: BUILD_WAIT_NS); any other table a walk needs it builds itself,
 * as without a builder, and the header counts it (unwind_inline_builds).
 * Once the program exits (unwind_cfi__cancel_builds), a build under way
 * stops where it is and none starts: the tracer's last reading asks the
 * same thread for the allocator's statistics, and the program's exit
 * waits for that reading.
 */
#define BUILD_WAIT_NS	(200 * PA_NSEC_PER_MSEC)
static int builder_on;
static int builder_ahead;	/* ... and builds what a dlopen loads */
static void (*builder_wake)(void);
/* requests for a pass of the builder, and the request the last pass that
 * found nothing to build started from: it is wanted while they differ */
static uint32_t want_gen, done_gen;
static int builder_in_pass;	/* in unwind_cfi__build_wanted ... */
static int builder_waiting;	/* ... waiting for the loader's lock */
static int builder_adding;	/* it holds `adding` */
static struct cfi_module *builder_entry;	/* the table it builds */
static __thread bool is_builder;

static void want_pass(void)
{
	__atomic_add_fetch(&want_gen, 1, __ATOMIC_ACQ_REL);
}

static bool pass_wanted(void)
{
	return __atomic_load_n(&want_gen, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&done_gen, __ATOMIC_ACQUIRE);
}

static struct cfi_module mods[CFI_MODULES_MAX];
static unsigned int nmods;		/* published entries */
static int adding;			/* one thread appends at a time */
static int builds_off;			/* a forked child: see unwind_cfi__forget */
static int builds_cancelled;		/* the program exits: no table more */
static size_t memory_used;
static unsigned int tables_made;	/* modules with a table */
/*
 * Ranges of addresses found in no module (a JIT's code: the gap between
 * the modules around it): not looked for again until a module is loaded
 * (unwind_cfi__modules_added), so that such code costs a dl_iterate_phdr
 * once, not at every sample.
 */
#define NOMOD_RANGES	8
static struct { uintptr_t lo, hi; } nomod[NOMOD_RANGES];
static unsigned int nomod_next;

/* The newest live entry whose code holds pc, or NULL. */
static struct cfi_module *module_at(uintptr_t pc)
{
	unsigned int k = __atomic_load_n(&nmods, __ATOMIC_ACQUIRE);

	while (k-- > 0)
		if (pc >= mods[k].text_lo && pc < mods[k].text_hi &&
		    __atomic_load_n(&mods[k].state, __ATOMIC_ACQUIRE) !=
			    MOD_DEAD)
			return &mods[k];
	return NULL;
}

static bool in_no_module(uintptr_t pc)
{
	unsigned int i;

	for (i = 0; i < NOMOD_RANGES; i++)
		if (pc >= __atomic_load_n(&nomod[i].lo, __ATOMIC_ACQUIRE) &&
		    pc < __atomic_load_n(&nomod[i].hi, __ATOMIC_ACQUIRE))
			return true;
	return false;
}

/* The dlopen calls the agent's hook has seen: a module loaded where an
 * unloaded one was needs one of them. */
static uint32_t dl_gen(void)
{
	return pa_agent.hdr ? __atomic_load_n(&pa_agent.hdr->dlopen_calls,
					      __ATOMIC_RELAXED) : 0;
}

/*
 * The memo of whole walks (see above).  An entry holds a walk of at most
 * MEMO_FRAMES frames and MEMO_READS stack words read, ended by the
 * thread's entry or a return address of 0, with no signal frame in it.
 */
#define MEMO_FRAMES	CFI_FRAMES_ROOM
#define MEMO_READS	(2 * MEMO_FRAMES)
#define MEMO_BITS	8
#define MEMO_SLOTS	(1u << MEMO_BITS)
_Static_assert(CFI_FRAMES_ROOM <= PA_MAX_FRAMES, "a walk's array holds a memo's");

struct memo {
	uint64_t seq;		/* odd while being written */
	uintptr_t pc, sp, bp, hi;
	uint32_t gen, dl;
	uint8_t nframes, nreads, end, pad;
	uint64_t tag;		/* the caller's (unwind_cfi__memo_tag) */
	uintptr_t addr[MEMO_READS], val[MEMO_READS];
	uint64_t frames[MEMO_FRAMES];
};

static struct memo *memo;	/* MEMO_SLOTS entries, mapped at the first
				   walk; NULL when that failed */
static int memo_state;		/* 0 not yet, 1 mapping, 2 done */
/* bumped whenever a walk through the same words could now go elsewhere:
 * a module's entry made or found gone, a range of no module changed */
static uint32_t memo_gen;

/* A walk's words read, as it goes: too many, and it is not remembered. */
struct memo_log {
	unsigned int n;
	bool off;
	uintptr_t addr[MEMO_READS], val[MEMO_READS];
};

static void memo_bump(void)
{
	__atomic_add_fetch(&memo_gen, 1, __ATOMIC_RELEASE);
}

static struct memo *memo_slot(uintptr_t pc, uintptr_t sp)
{
	uint64_t x = (pc ^ (sp * 0x9e3779b97f4a7c15ULL)) * 0xbf58476d1ce4e5b9ULL;

	if (__atomic_load_n(&memo_state, __ATOMIC_ACQUIRE) != 2) {
		int expected = 0;
		void *m;

		if (!__atomic_compare_exchange_n(&memo_state, &expected, 1, 0,
						 __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			return NULL;	/* another thread maps it */
		m = mmap(NULL, MEMO_SLOTS * sizeof(struct memo),
			 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
		__atomic_store_n(&memo, m == MAP_FAILED ? NULL : m,
				 __ATOMIC_RELEASE);
		__atomic_store_n(&memo_state, 2, __ATOMIC_RELEASE);
	}
	if (!memo)
		return NULL;
	return &memo[(x >> 32) & (MEMO_SLOTS - 1)];
}

/* The remembered walk from start on stack, into frames: its frames, or 0
 * when there is none or a word it read has changed. */
static unsigned int memo_get(const struct cfi_regs *start,
			     const struct cfi_stack *stack, uint64_t *frames,
			     unsigned int max, struct cfi_walk *walk)
{
	struct memo *e = memo_slot(start->pc, start->sp);
	/* a word may be read at [sp, hi - 8] */
	uintptr_t sp = start->sp, span = stack->hi - 8 - sp;
	uint64_t seq, tag;
	unsigned int i, n, reads;
	uint8_t end;

	if (!e)
		return 0;
	seq = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
	if ((seq & 1) || !seq || e->pc != start->pc || e->sp != start->sp ||
	    e->bp != start->bp || e->hi != stack->hi ||
	    e->gen != __atomic_load_n(&memo_gen, __ATOMIC_ACQUIRE) ||
	    e->dl != dl_gen())
		return 0;
	n = e->nframes;
	reads = e->nreads;
	if (n > max || n > MEMO_FRAMES || reads > MEMO_READS)
		return 0;
	for (i = 0; i < reads; i++) {
		uintptr_t at = e->addr[i];

		/* read before, within this very stack: still mapped */
		if (at - sp > span || *(const uintptr_t *)at != e->val[i])
			return 0;
	}
	/* the whole memo's frames: the caller's array holds PA_MAX_FRAMES
	 * (a fixed size copies in a few moves), only n of them count */
	memcpy(frames, e->frames, sizeof(e->frames));
	end = e->end;
	tag = __atomic_load_n(&e->tag, __ATOMIC_RELAXED);
	/* a writer came in between: what was read may be half its (the
	 * tag too: it is the walk's only once this holds) */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) != seq)
		return 0;
	walk->tag = tag;
	walk->end = (enum cfi_end)end;
	walk->truncated = false;
	walk->memo = e;
	walk->memo_seq = seq;
	return n;
}

static void memo_put(const struct cfi_regs *start,
		     const struct cfi_stack *stack, const uint64_t *frames,
		     unsigned int n, struct cfi_walk *walk,
		     const struct memo_log *log, uint32_t gen, uint32_t dl)
{
	enum cfi_end end = walk->end;
	struct memo *e;
	uint64_t seq;
	unsigned int i;

	if (log->off || !n || n > MEMO_FRAMES)
		return;
	e = memo_slot(start->pc, start->sp);
	if (!e)
		return;
	seq = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
	if ((seq & 1) || !__atomic_compare_exchange_n(&e->seq, &seq, seq + 1,
						      0, __ATOMIC_ACQUIRE,
						      __ATOMIC_RELAXED))
		return;		/* another thread writes it */
	e->pc = start->pc;
	e->sp = start->sp;
	e->bp = start->bp;
	e->hi = stack->hi;
	e->gen = gen;
	e->dl = dl;
	e->nframes = (uint8_t)n;
	e->nreads = (uint8_t)log->n;
	e->end = (uint8_t)end;
	for (i = 0; i < log->n; i++) {
		e->addr[i] = log->addr[i];
		e->val[i] = log->val[i];
	}
	for (i = 0; i < n; i++)
		e->frames[i] = frames[i];
	e->tag = 0;
	__atomic_store_n(&e->seq, seq + 2, __ATOMIC_RELEASE);
	walk->memo = e;
	walk->memo_seq = seq + 2;
}

void unwind_cfi__memo_tag(const struct cfi_walk *w, uint64_t tag)
{
	struct memo *e = w->memo;
	uint64_t seq = w->memo_seq;

	/* from the very sequence count the walk saw: the entry holds its
	 * frames still, and nobody else writes it meanwhile */
	if (!e || !tag || (seq & 1) ||
	    !__atomic_compare_exchange_n(&e->seq, &seq, seq + 1, 0,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&e->tag, tag, __ATOMIC_RELAXED);
	__atomic_store_n(&e->seq, seq + 2, __ATOMIC_RELEASE);
}

/*
 * A walk that meets m being built by the builder (or, m NULL, `adding`
 * held by it): wait until it is done, at most BUILD_WAIT_NS.  True if it
 * is.  The builder holds the loader's lock then, so this thread holds
 * nothing it waits for.
 */
static bool wait_builder(const struct cfi_module *m)
{
	const struct cfi_module *b =
		__atomic_load_n(&builder_entry, __ATOMIC_ACQUIRE);
	uint64_t end = 0;

	if (is_builder || (m ? m != b :
			   !__atomic_load_n(&builder_adding, __ATOMIC_ACQUIRE)))
		return false;
	for (;;) {
		if (m ? __atomic_load_n(&m->state, __ATOMIC_ACQUIRE) !=
				MOD_BUILDING :
			!__atomic_load_n(&adding, __ATOMIC_ACQUIRE))
			return true;
		/* `adding` is not the builder's (it tried, and a walk had
		 * it): not waited for */
		if (!m && !__atomic_load_n(&builder_adding, __ATOMIC_ACQUIRE))
			return false;
		if (!end)
			end = pa_now_ns() + BUILD_WAIT_NS;
		else if (pa_now_ns() >= end)
			return false;
		sched_yield();
	}
}

/*
 * A walk on a program's thread that meets pc in a module without an entry
 * while a launched program's tables are being built ahead: wait for the
 * builder to get to it, at most BUILD_WAIT_NS, and only while the builder
 * is not itself waiting for the loader's lock (this thread may hold it:
 * a dl_iterate_phdr callback of the program's, allocating).  True if pc
 * has an entry now.
 */
static bool wait_ahead(uintptr_t pc)
{
	uint64_t end = 0, stalled = 0, now;

	if (is_builder || !__atomic_load_n(&builder_ahead, __ATOMIC_ACQUIRE))
		return false;
	while (pass_wanted()) {
		if (module_at(pc))
			return true;
		now = pa_now_ns();
		if (!end)
			end = now + BUILD_WAIT_NS;
		if (now >= end)
			return false;
		/* only while it builds: not between passes (answering, or
		 * asleep after a wake it missed), not waiting for the
		 * loader's lock (this thread may hold it), for a moment */
		if (__atomic_load_n(&builder_in_pass, __ATOMIC_ACQUIRE) &&
		    !__atomic_load_n(&builder_waiting, __ATOMIC_ACQUIRE))
			stalled = 0;
		else if (!stalled)
			stalled = now;
		else if (now - stalled >= PA_NSEC_PER_MSEC)
			return false;
		sched_yield();
	}
	return module_at(pc) != NULL;
}

struct find {
	uintptr_t pc;
	uint32_t gen;
	struct cfi_module *m;	/* the entry made, or NULL */
	struct cfi_module *check;	/* an entry to confirm, or NULL */
	bool confirmed;
	uintptr_t gap_lo, gap_hi;	/* no module: the modules around pc */
};

/* The page index of m's n rows (see CFI_PAGE_SHIFT), its mapped size in
 * *bytes; NULL (and 0) if it cannot be mapped: lookups search all rows. */
static const uint32_t *index_pages(const struct cfi_module *m,
				   const struct cfi_row *rows, size_t n,
				   size_t *bytes)
{
	size_t npages = ((m->text_hi - m->text_lo) >> CFI_PAGE_SHIFT) + 1;
	uint64_t base = m->text_lo - m->bias;
	uint32_t *pages;
	size_t p, r = 0;

	/* within what the tables may take, and not for a module whose code
	 * is far apart (an index much bigger than its rows) */
	if (n > UINT32_MAX || npages > CFI_MEMORY_MAX / sizeof(*pages) ||
	    npages > 16 * n + 1024)
		goto out_none;
	*bytes = ((npages + 1) * sizeof(*pages) + 4095) & ~(size_t)4095;
	if (__atomic_load_n(&memory_used, __ATOMIC_RELAXED) + *bytes >
	    CFI_MEMORY_MAX)
		goto out_none;
	pages = mmap(NULL, *bytes, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED)
		goto out_none;
	for (p = 0; p <= npages; p++) {
		uint64_t start = base + ((uint64_t)p << CFI_PAGE_SHIFT);

		while (r < n && rows[r].pc < start)
			r++;
		pages[p] = (uint32_t)r;
	}
	(void)mprotect(pages, *bytes, PROT_READ);	/* best effort */
	return pages;
out_none:
	*bytes = 0;
	return NULL;
}

/* The row for at, an address in m's code, found in the rows. */
static const struct cfi_row *search(const struct cfi_module *m, uintptr_t at,
				    uintptr_t rel)
{
	const struct cfi_row *r;
	size_t p, lo, hi;

	if (!m->pages)
		return cfi__find(m->rows, m->n, (uint32_t)rel);
	p = (at - m->text_lo) >> CFI_PAGE_SHIFT;
	lo = m->pages[p];
	hi = m->pages[p + 1];
	/* the last row at or below at: on its page, or the one before */
	r = cfi__find(m->rows + lo, hi - lo, (uint32_t)rel);
	return r ? r : lo ? &m->rows[lo - 1] : NULL;
}

/* The row for at, an address in m's code, into *out (its pc is not
 * kept): remembered, or searched.  False if there is none. */
static bool row_at(const struct cfi_module *m, uintptr_t at,
		   struct cfi_row *out)
{
	uintptr_t rel = at - m->bias;
	const struct cfi_row *r;
	struct hot_slot *slot;
	uint64_t a, b;

	if (rel >= UINT32_MAX)
		return false;
	if (!m->hot) {
		r = search(m, at, rel);
		if (r)
			*out = *r;
		return r != NULL;
	}
	slot = &m->hot[(uint32_t)(rel * 0x9e3779b1u) >> (32 - CFI_HOT_BITS)];
	a = __atomic_load_n(&slot->a, __ATOMIC_RELAXED);
	b = __atomic_load_n(&slot->b, __ATOMIC_RELAXED);
	if (a >> 32 == rel + 1 && b >> 32 == rel + 1) {
		out->cfa_off = (int32_t)(uint32_t)a;
		out->rbp_off = (int16_t)(uint16_t)(b >> 16);
		out->kind = (uint8_t)(b >> 8);
		out->cfa_reg = (uint8_t)b;
		return true;
	}
	r = search(m, at, rel);
	if (!r)
		return false;
	*out = *r;
	__atomic_store_n(&slot->a, (uint64_t)(rel + 1) << 32 |
				   (uint32_t)r->cfa_off,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&slot->b, (uint64_t)(rel + 1) << 32 |
				   (uint64_t)(uint16_t)r->rbp_off << 16 |
				   (uint64_t)r->kind << 8 | r->cfa_reg,
			 __ATOMIC_RELAXED);
	return true;
}

/* The table of the module loaded at info, into m (state BUILDING). */
static void build(const struct dl_phdr_info *info, struct cfi_module *m)
{
	struct cfi_source src;
	struct cfi_stats st;
	struct cfi_row *rows;
	size_t max, bytes, used, n;

	if (cfi__source_of(info, &src) || src.text_lo != m->text_lo ||
	    src.text_hi != m->text_hi)
		goto out_failed;
	src.cancel = &builds_cancelled;
	max = cfi__max_rows(&src);
	if (!max || max > CFI_MEMORY_MAX / sizeof(*rows))
		goto out_failed;
	bytes = (max * sizeof(*rows) + 4095) & ~(size_t)4095;
	used = __atomic_load_n(&memory_used, __ATOMIC_RELAXED);
	if (used > CFI_MEMORY_MAX)
		goto out_failed;
	rows = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (rows == MAP_FAILED)
		goto out_failed;
	n = cfi__build(&src, rows, max, &st);
	if (!n) {
		munmap(rows, bytes);
		goto out_failed;
	}
	/* give back what the rows did not take; past the cap, all of it */
	used = (n * sizeof(*rows) + 4095) & ~(size_t)4095;
	if (__atomic_load_n(&memory_used, __ATOMIC_RELAXED) + used >
	    CFI_MEMORY_MAX) {
		munmap(rows, bytes);
		goto out_failed;
	}
	if (used < bytes)
		munmap((uint8_t *)rows + used, bytes - used);
	mprotect(rows, used, PROT_READ);
	m->pages = index_pages(m, rows, n, &bytes);
	used += bytes;
	m->hot = mmap(NULL, CFI_HOT_SLOTS * sizeof(*m->hot),
		      PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		      -1, 0);
	if (m->hot == MAP_FAILED)
		m->hot = NULL;	/* searched every time */
	else
		used += CFI_HOT_SLOTS * sizeof(*m->hot);
	__atomic_add_fetch(&memory_used, used, __ATOMIC_RELAXED);
	__atomic_add_fetch(&tables_made, 1, __ATOMIC_RELAXED);
	unwind_cfi__publish();
	m->rows = rows;
	m->n = n;
	m->bytes = used;
	__atomic_store_n(&m->state, MOD_READY, __ATOMIC_RELEASE);
	return;
out_failed:
	__atomic_store_n(&m->state, MOD_FAILED, __ATOMIC_RELEASE);
}

static int find_module(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find *f = data;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	unsigned int k;
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (start < lo)
			lo = start;
		if (start + ph->p_memsz > hi)
			hi = start + ph->p_memsz;
	}
	if (!hi)
		return 0;
	if (f->pc < lo || f->pc >= hi) {
		if (hi <= f->pc && hi > f->gap_lo)
			f->gap_lo = hi;
		if (lo > f->pc && lo < f->gap_hi)
			f->gap_hi = lo;
		return 0;
	}
	if (f->check) {
		/* the module the entry was made for, still loaded here? */
		f->confirmed = f->check->bias == info->dlpi_addr &&
			       f->check->text_lo == lo && f->check->text_hi == hi;
		if (f->confirmed)
			return 1;
		__atomic_store_n(&f->check->state, MOD_DEAD, __ATOMIC_RELEASE);
		memo_bump();
	}
	/* loaded, and held so while we are here: make its entry */
	k = __atomic_load_n(&nmods, __ATOMIC_RELAXED);
	if (k == CFI_MODULES_MAX)
		return 1;
	mods[k] = (struct cfi_module){ .text_lo = lo, .text_hi = hi,
				       .bias = info->dlpi_addr,
				       .state = MOD_BUILDING, .gen = f->gen };
	__atomic_store_n(&nmods, k + 1, __ATOMIC_RELEASE);
	memo_bump();
	f->m = &mods[k];
	if (is_builder)
		__atomic_store_n(&builder_entry, f->m, __ATOMIC_RELEASE);
	build(info, f->m);
	if (is_builder)
		__atomic_store_n(&builder_entry, NULL, __ATOMIC_RELEASE);
	if (!is_builder && pa_agent.hdr)
		__atomic_add_fetch(&pa_agent.hdr->unwind_inline_builds, 1,
				   __ATOMIC_RELAXED);
	return 1;
}

/* The entry for pc, from dl_iterate_phdr (the caller holds `adding`):
 * m, if given, confirmed or marked dead, and a new entry made if need be. */
static struct cfi_module *look_up(uintptr_t pc, struct cfi_module *m,
				  uint32_t gen)
{
	struct find f = { .pc = pc, .gen = gen, .check = m,
			  .gap_hi = UINTPTR_MAX };

	dl_iterate_phdr(find_module, &f);
	if (m && f.confirmed) {
		__atomic_store_n(&m->gen, gen, __ATOMIC_RELAXED);
		return m;
	}
	if (m) {	/* its module is gone */
		__atomic_store_n(&m->state, MOD_DEAD, __ATOMIC_RELEASE);
		memo_bump();
	}
	if (!f.m) {
		/* in no module: the gap between those around it (emptied
		 * first, so a reader never sees half of two ranges) */
		unsigned int i = nomod_next++ % NOMOD_RANGES;

		__atomic_store_n(&nomod[i].hi, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&nomod[i].lo, f.gap_lo, __ATOMIC_RELEASE);
		__atomic_store_n(&nomod[i].hi, f.gap_hi, __ATOMIC_RELEASE);
		memo_bump();
	}
	return f.m;
}

/*
 * The table for pc: made now if no entry holds pc; an entry made before a
 * dlopen since is confirmed first (a module unloaded since, and another
 * loaded where it was, gets an entry of its own).  NULL while another
 * thread builds it, or if it has none.
 */
/* m's table once it is made (one the builder is making is waited for);
 * NULL if it has none, or not yet. */
static const struct cfi_module *ready(const struct cfi_module *m)
{
	if (__atomic_load_n(&m->state, __ATOMIC_ACQUIRE) == MOD_BUILDING)
		wait_builder(m);
	return __atomic_load_n(&m->state, __ATOMIC_ACQUIRE) == MOD_READY ?
	       m : NULL;
}

static const struct cfi_module *table_for(uintptr_t pc)
{
	struct cfi_module *m = module_at(pc);
	uint32_t gen = dl_gen();

	if (m && __atomic_load_n(&m->gen, __ATOMIC_RELAXED) == gen)
		return ready(m);
	if (!m && in_no_module(pc))
		return NULL;	/* in no module, a moment ago */
	if (__atomic_load_n(&builds_off, __ATOMIC_RELAXED))
		return NULL;
	/* the builder may be about to make it */
	if (!m && wait_ahead(pc)) {
		m = module_at(pc);
		if (m && __atomic_load_n(&m->gen, __ATOMIC_RELAXED) == gen)
			return ready(m);
	}
	if (__atomic_exchange_n(&adding, 1, __ATOMIC_ACQUIRE)) {
		/* the builder's, most likely making this very table */
		if (!wait_builder(NULL))
			return NULL;	/* another thread is adding one */
		m = module_at(pc);
		if (m && __atomic_load_n(&m->gen, __ATOMIC_RELAXED) == gen)
			return ready(m);
		if (__atomic_exchange_n(&adding, 1, __ATOMIC_ACQUIRE))
			return NULL;
	}
	m = look_up(pc, module_at(pc), gen);
	__atomic_store_n(&adding, 0, __ATOMIC_RELEASE);
	return m ? ready(m) : NULL;
}

/* A word of the stack in [lo, hi), 8-aligned. */
static bool stack_word(uintptr_t at, uintptr_t lo, uintptr_t hi,
		       uintptr_t *v)
{
	if (at < lo || at > hi - 8 || (at & 7))
		return false;
	*v = *(const uintptr_t *)at;
	return true;
}

/* The same, logged for the memo. */
static bool logged_word(struct memo_log *log, uintptr_t at, uintptr_t lo,
			uintptr_t hi, uintptr_t *v)
{
	if (!stack_word(at, lo, hi, v))
		return false;
	if (log->n == MEMO_READS) {
		log->off = true;
	} else {
		log->addr[log->n] = at;
		log->val[log->n++] = *v;
	}
	return true;
}

/*
 * A signal frame: the kernel's ucontext is at *sp (the handler's CFA: its
 * return address, __restore_rt, was the word below).  The interrupted
 * registers into *pc, *sp, *bp; its stack pointer must lie above the
 * frame on this stack, or on the thread's own stack when the handler ran
 * on an alternate one (a switch made once: *hi and the home range are
 * updated).
 */
static bool signal_frame(uintptr_t *pc, uintptr_t *sp, uintptr_t *bp,
			 uintptr_t *hi, uintptr_t *home_lo, uintptr_t *home_hi)
{
	uintptr_t uc = *sp + PA_ARCH_SIGFRAME_UC, rip, rsp, rbp;

	if (!stack_word(uc + PA_ARCH_UC_PC, uc, *hi, &rip) ||
	    !stack_word(uc + PA_ARCH_UC_SP, uc, *hi, &rsp) ||
	    !stack_word(uc + PA_ARCH_UC_FP, uc, *hi, &rbp))
		return false;
	if (rsp <= uc || rsp >= *hi) {
		if (!(rsp >= *home_lo && rsp < *home_hi))
			return false;
		*hi = *home_hi;
		*home_lo = *home_hi = 0;
	}
	*pc = rip;
	*sp = rsp;
	*bp = rbp;
	return true;
}

unsigned int unwind_cfi(const struct cfi_regs *start,
			const struct cfi_stack *stack, uint64_t *frames,
			unsigned int max, struct cfi_walk *walk)
{
	uintptr_t pc = start->pc, sp = start->sp, bp = start->bp;
	uintptr_t hi = stack->hi;
	uintptr_t home_lo = stack->home_lo, home_hi = stack->home_hi;
	bool bp_known = true;
	bool exact = false;	/* pc was interrupted, not a return address */
	const struct cfi_module *m = NULL;	/* the last frame's */
	struct memo_log log;
	uint32_t gen, dl;
	unsigned int n = 0;

	walk->end = CFI_END_CUT;
	walk->truncated = false;
	walk->memo = NULL;
	walk->memo_seq = 0;
	walk->tag = 0;
	if (hi < 16 || sp < stack->lo || sp >= hi)
		return 0;
	/* the tables as they are before the walk: a change during it is
	 * not remembered as this walk */
	gen = __atomic_load_n(&memo_gen, __ATOMIC_ACQUIRE);
	dl = dl_gen();
	n = memo_get(start, stack, frames, max, walk);
	if (n)
		return n;
	log.n = 0;
	log.off = false;
	while (pc) {
		const struct cfi_row *row;
		struct cfi_row row_v;
		uintptr_t cfa, ra, at;

		if (n == max) {
			walk->truncated = true;
			return n;
		}
		/* a return address: the call is the byte before */
		at = exact ? pc : pc - 1;
		frames[n++] = at + 1;
		/* callers are mostly in the callee's module: that table,
		 * found once in this walk, serves again */
		if (!m || at < m->text_lo || at >= m->text_hi)
			m = table_for(at);
		row = m && row_at(m, at, &row_v) ? &row_v : NULL;
		if ((!row || row->kind == CFI_NONE) && !exact && bp_known &&
		    (m || in_no_module(at))) {
			/* code without unwind tables: compiled at run time
			 * (in no module: V8's, the JVM's, LuaJIT's), or
			 * generated into a module without CFI (V8's
			 * builtins); those keep frame pointers, so a frame
			 * record at bp on this stack, above sp, takes the
			 * walk on to its caller */
			uintptr_t next_bp;

			if (bp < sp || !logged_word(&log, bp, sp, hi, &next_bp) ||
			    !logged_word(&log, bp + 8, sp, hi, &ra) || !ra) {
				walk->end = m ? CFI_END_NO_RULE :
						CFI_END_NO_TABLE;
				return n;
			}
			sp = bp + 16;
			bp = next_bp;
			pc = ra;
			continue;
		}
		if (!m) {
			walk->end = CFI_END_NO_TABLE;
			return n;
		}
		if (!row || row->kind == CFI_NONE) {
			walk->end = CFI_END_NO_RULE;
			return n;
		}
		switch (row->kind) {
		case CFI_OUTERMOST:
			walk->end = CFI_END_OUTERMOST;
			memo_put(start, stack, frames, n, walk, &log, gen,
				 dl);
			return n;
		case CFI_SIGNAL:
			/* the trampoline was not called: its own pc, + 1 */
			log.off = true;	/* not remembered */
			frames[n - 1] = pc + 1;
			if (!signal_frame(&pc, &sp, &bp, &hi, &home_lo, &home_hi))
				return n;
			bp_known = true;
			exact = true;
			continue;
		case CFI_PLT:
			/* only an interrupted pc is in a PLT entry (they jump,
			 * never call); rbp is untouched there */
			if (!exact) {
				walk->end = CFI_END_NO_RULE;
				return n;
			}
			cfa = sp + (intptr_t)row->cfa_off +
			      ((pc & 15) >= (uintptr_t)row->rbp_off ? 8 : 0);
			if (cfa <= sp || cfa > hi ||
			    !stack_word(cfa - 8, sp, hi, &ra))
				return n;
			break;
		case CFI_FRAME:
			if (row->cfa_reg == CFI_RBP && !bp_known)
				return n;
			cfa = (row->cfa_reg == CFI_RSP ? sp : bp) +
			      (intptr_t)row->cfa_off;
			if (cfa <= sp || cfa > hi || (cfa & 7) ||
			    !logged_word(&log, cfa - 8, sp, hi, &ra))
				return n;
			if (row->rbp_off == CFI_RBP_LOST) {
				bp_known = false;
			} else if (row->rbp_off != CFI_RBP_SAME) {
				if (!logged_word(&log, cfa + (intptr_t)row->rbp_off,
						 sp, hi, &bp))
					return n;
				bp_known = true;
			}
			break;
		case CFI_DRAP: {
			/* realigned: the CFA was saved at rbp + cfa_off,
			 * the caller's rbp at rbp (both on this stack) */
			uintptr_t slot = bp + (intptr_t)row->cfa_off;

			if (!bp_known || bp < sp ||
			    !logged_word(&log, slot, sp, hi, &cfa) ||
			    cfa <= sp || cfa > hi || (cfa & 7) ||
			    !logged_word(&log, cfa - 8, sp, hi, &ra) ||
			    !logged_word(&log, bp, sp, hi, &bp))
				return n;
			break;
		}
		default:
			walk->end = CFI_END_NO_RULE;
			return n;
		}
		sp = cfa;
		pc = ra;
		exact = false;
	}
	walk->end = CFI_END_ZERO;
	memo_put(start, stack, frames, n, walk, &log, gen, dl);
	return n;
}

size_t unwind_cfi__memory(unsigned int *modules)
{
	*modules = __atomic_load_n(&tables_made, __ATOMIC_RELAXED);
	return __atomic_load_n(&memory_used, __ATOMIC_RELAXED);
}

/* *at = v unless it holds more already: two threads publishing at once
 * never leave the older, smaller figure; a few tries only, as the header
 * is shared and must never make the agent spin */
#define STORE_MAX(at, v)						\
	do {								\
		__typeof__(*(at)) old_ = __atomic_load_n(at,		\
							 __ATOMIC_RELAXED); \
		int tries_ = 8;						\
									\
		while (old_ < (v) && tries_-- > 0 &&			\
		       !__atomic_compare_exchange_n(at, &old_, (v), true, \
						    __ATOMIC_RELAXED,	\
						    __ATOMIC_RELAXED))	\
			;						\
	} while (0)

void unwind_cfi__publish(void)
{
	struct pa_header *hdr = pa_agent.hdr;

	if (!hdr)
		return;
	/* both only grow */
	STORE_MAX(&hdr->unwind_modules,
		  __atomic_load_n(&tables_made, __ATOMIC_RELAXED));
	STORE_MAX(&hdr->unwind_table_bytes,
		  (uint64_t)__atomic_load_n(&memory_used, __ATOMIC_RELAXED));
}

void unwind_cfi__forget(void)
{
	unsigned int k, n = __atomic_load_n(&nmods, __ATOMIC_RELAXED);

	/* the tables the parent built are the child's too; one being built
	 * by a thread the child does not have never will be */
	for (k = 0; k < n; k++)
		if (mods[k].state == MOD_BUILDING)
			mods[k].state = MOD_DEAD;	/* made again */
	memo_bump();
	adding = 0;
	builds_off = 1;
	builds_cancelled = 0;	/* the child has not exited */
	/* the builder is a thread the child does not have */
	builder_on = 0;
	builder_ahead = 0;
	builder_wake = NULL;
	builder_entry = NULL;
	builder_waiting = 0;
	builder_in_pass = 0;
	builder_adding = 0;
	done_gen = want_gen;
	/* a thread of the parent's that was mapping the memo never will */
	if (__atomic_load_n(&memo_state, __ATOMIC_RELAXED) == 1)
		memo_state = 0;
	memo_bump();
}

void unwind_cfi__free(void)
{
	unsigned int k, n = __atomic_load_n(&nmods, __ATOMIC_ACQUIRE);

	for (k = 0; k < n; k++) {
		struct cfi_module *m = &mods[k];
		size_t npages = ((m->text_hi - m->text_lo) >> CFI_PAGE_SHIFT) + 1;

		if (m->state != MOD_READY && m->state != MOD_DEAD)
			continue;
		if (m->rows)
			munmap((void *)m->rows,
			       (m->n * sizeof(*m->rows) + 4095) & ~(size_t)4095);
		if (m->pages)
			munmap((void *)m->pages,
			       ((npages + 1) * sizeof(*m->pages) + 4095) &
				       ~(size_t)4095);
		if (m->hot)
			munmap(m->hot, CFI_HOT_SLOTS * sizeof(*m->hot));
	}
	memset(mods, 0, sizeof(mods));
	__atomic_store_n(&nmods, 0, __ATOMIC_RELEASE);
	if (memo)
		munmap(memo, MEMO_SLOTS * sizeof(struct memo));
	memo = NULL;
	memo_state = 0;
	memory_used = 0;
	tables_made = 0;
	adding = 0;
	unwind_cfi__modules_added();
}

void unwind_cfi__modules_added(void)
{
	void (*wake)(void) = __atomic_load_n(&builder_wake, __ATOMIC_ACQUIRE);
	unsigned int i;

	/* a launched program dlopened: the builder makes the new modules'
	 * tables, likely before a walk needs them (a wake lost between its
	 * look and its sleep leaves them to the walks, as without it) */
	if (__atomic_load_n(&builder_ahead, __ATOMIC_ACQUIRE) && wake) {
		want_pass();
		wake();
	}


	for (i = 0; i < NOMOD_RANGES; i++) {
		__atomic_store_n(&nomod[i].hi, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&nomod[i].lo, 0, __ATOMIC_RELEASE);
	}
	memo_bump();
}

void unwind_cfi__loader_usable(void)
{
	__atomic_store_n(&builds_off, 0, __ATOMIC_RELAXED);
}

void unwind_cfi__builder_on(bool ahead, void (*wake)(void))
{
	is_builder = true;
	__atomic_store_n(&builder_wake, wake, __ATOMIC_RELEASE);
	__atomic_store_n(&builder_ahead, ahead, __ATOMIC_RELEASE);
	__atomic_store_n(&builder_on, 1, __ATOMIC_RELEASE);
	if (ahead)
		want_pass();
}

void unwind_cfi__builder_off(void)
{
	__atomic_store_n(&builder_on, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&builder_ahead, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&builder_wake, NULL, __ATOMIC_RELEASE);
	__atomic_store_n(&done_gen, __atomic_load_n(&want_gen,
						    __ATOMIC_ACQUIRE),
			 __ATOMIC_RELEASE);
}

struct build_pass {
	uint32_t gen;
	bool built;		/* a table made */
	bool busy;		/* `adding` was held: try again */
	bool full;		/* no entry left to make */
};

/*
 * dl_iterate_phdr's callback on the builder: entries of an older
 * generation confirmed (or found dead) as it goes; the first module whose
 * code no live entry covers gets one, built, and the pass stops there.
 * Under the loader's lock, so `adding` is only tried, never waited for.
 */
static int build_one(struct dl_phdr_info *info, size_t size, void *data)
{
	struct build_pass *bp = data;
	struct find f = { .gen = bp->gen, .gap_hi = UINTPTR_MAX };
	struct cfi_module *m;
	uintptr_t lo = UINTPTR_MAX;
	int i;

	__atomic_store_n(&builder_waiting, 0, __ATOMIC_RELEASE);
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) &&
		    ph->p_memsz && info->dlpi_addr + ph->p_vaddr < lo)
			lo = info->dlpi_addr + ph->p_vaddr;
	}
	/* none, or the agent's own: no walk goes through it */
	if (lo == UINTPTR_MAX || dynsym__holds(info, (uintptr_t)&build_one))
		return 0;
	m = module_at(lo);
	if (m && __atomic_load_n(&m->gen, __ATOMIC_RELAXED) == bp->gen)
		return 0;
	__atomic_store_n(&builder_adding, 1, __ATOMIC_RELEASE);
	if (__atomic_exchange_n(&adding, 1, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&builder_adding, 0, __ATOMIC_RELEASE);
		bp->busy = true;
		return 1;
	}
	/* as a walk's look_up would: m confirmed or dead, else made */
	f.pc = lo;
	f.check = module_at(lo);
	find_module(info, size, &f);
	if (f.check && f.confirmed)
		__atomic_store_n(&f.check->gen, bp->gen, __ATOMIC_RELAXED);
	__atomic_store_n(&adding, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&builder_adding, 0, __ATOMIC_RELEASE);
	if (f.check && f.confirmed)
		return 0;	/* on to the next: a dlopen's is last */
	if (!f.m) {
		bp->full = true;	/* CFI_MODULES_MAX entries */
		return 1;
	}
	bp->built = true;
	return 1;
}

void unwind_cfi__cancel_builds(void)
{
	__atomic_store_n(&builds_cancelled, 1, __ATOMIC_RELAXED);
}

bool unwind_cfi__build_wanted(void)
{
	struct build_pass bp = { 0 };
	uint32_t want = __atomic_load_n(&want_gen, __ATOMIC_ACQUIRE);

	if (__atomic_load_n(&builds_cancelled, __ATOMIC_RELAXED)) {
		/* no pass will come: walks must not wait for one */
		__atomic_store_n(&done_gen, want, __ATOMIC_RELEASE);
		return false;
	}
	if (want == __atomic_load_n(&done_gen, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&builds_off, __ATOMIC_RELAXED))
		return false;
	bp.gen = dl_gen();
	__atomic_store_n(&builder_in_pass, 1, __ATOMIC_RELEASE);
	/* until the callback runs, it waits for the loader's lock */
	__atomic_store_n(&builder_waiting, 1, __ATOMIC_RELEASE);
	dl_iterate_phdr(build_one, &bp);
	__atomic_store_n(&builder_waiting, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&builder_in_pass, 0, __ATOMIC_RELEASE);
	if (bp.busy) {
		sched_yield();	/* a walk holds `adding` for a moment */
		return true;
	}
	/* nothing left (or no room): done with the requests up to the one
	 * this pass started from; a later one asks again */
	if (!bp.built || bp.full)
		__atomic_store_n(&done_gen, want, __ATOMIC_RELEASE);
	/* a request made during the pass (its wake may have come before
	 * the caller sleeps): another pass at once */
	return (bp.built && !bp.full) ||
	       __atomic_load_n(&want_gen, __ATOMIC_ACQUIRE) != want;
}
