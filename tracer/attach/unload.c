// SPDX-License-Identifier: MIT
/*
 * unload.c - after a detach, an agent the tracer injected leaves the
 * process.
 *
 * A detach makes the hooks pass every call through and puts the GOT slots
 * and entries back (attach.c).  What the attach brought is still there:
 * the agent's thread, its memfd (a descriptor and a 12.6 MiB shared
 * mapping), the library, the tracer's call stub, the entry page.  So,
 * after the run's last reading (which asks the stats thread), for an
 * agent a tracer dlopened (a preloaded one is the program's malloc: it
 * says -EPERM, ends only the stats thread a tracer started, and only our
 * stub goes):
 *
 *   1. pprof_alloc_off, on a borrowed thread: the stats thread ends and
 *      its stack is unmapped, the pthread key is deleted, the memfd is
 *      closed and its mapping replaced by zeroed memory (a thread on its
 *      way out of a hook writes there harmlessly).  From here on the agent
 *      is off whatever follows: nothing of it runs unless called.
 *   2. The copies: the program may have copied a hook's address while it
 *      was in a GOT slot (code taking &malloc in a library reads it from
 *      its GLOB_DAT slot), and call it later, after an unload, into
 *      nothing.  Every page of the process's private memory the agent did
 *      not map itself, present or swapped and not a file's page as read
 *      (/proc/PID/pagemap; a RELRO page relocated, a heap, a stack), is
 *      searched for the address of an exported function of the agent (the
 *      hooks: agent/agent.map), exact values only - code addresses inside
 *      the agent are common garbage on stacks (return addresses of
 *      finished calls), an entry address stored is a pointer.  No copy can
 *      be made since the detach.  Bounded: past COPY_SCAN_MAX bytes the
 *      agent stays loaded, and says so.  Up to SCAN_HELD_MAX the thread
 *      of step 1 waits meanwhile and is used again (a borrow less); past
 *      it, it goes home first.
 *   3. The consistency check, as kernel live patching makes it: a thread
 *      is borrowed, every other one stopped (freeze.c), and each one's
 *      registers and live stack - from its stack pointer to the end of the
 *      mapping that holds it, a window of STACK_SCAN_MAX at most (a hook's
 *      frame is never that far up: what it calls does not recurse; a
 *      coroutine's stack may lie in gigabytes of heap), and through a signal
 *      frame on an alternate stack to the interrupted one - must hold no
 *      address in the agent's code, the stub or the entry page: else a
 *      thread is inside a hook, or will return into one.  A failed check
 *      lets everyone go and is tried again UNLOAD_TRIES times (a thread in
 *      a hook leaves it in microseconds; a stale word stays).  The copies
 *      found in 2 are read again: one below a thread's stack pointer is
 *      dead stack (the attach's own calls left hook addresses there),
 *      another still there is a copy.  The loader must be between two
 *      dlopens (_r_debug's r_state), and its list gives the agent's
 *      link_map (l_addr its load bias, l_ld inside its image), the handle
 *      dlclose takes.
 *   4. Still stopped: pprof_alloc_release unmaps the rest of what the agent
 *      mapped (the memfd's placeholder, unwind tables; unloading, the
 *      fork-detecting page, and __cxa_finalize drops its atfork handlers,
 *      the last way into it).  Then everyone runs again and dlclose unloads
 *      it, as any dlclose runs - it takes the loader's lock and frees
 *      memory, and under the freeze would wait for a thread stopped
 *      holding the allocator's lock.  The entry page and the stub are then
 *      unmapped by munmaps the borrowed thread makes at libc's "syscall;
 *      ret", returning through its frame (from the stub it could not).
 *
 * A copy found, or no dlclose or loader list: the agent stays loaded and
 * off (step 4 without the unload, the stub still unmapped).  A thread found
 * inside it every time: it stays loaded and off, with its stub and pages.
 * Either way one line says why.  A call made while the others are stopped
 * may wait for a lock one of them holds (__cxa_finalize takes the atfork
 * lock), or for a CPU on a loaded machine: it is given FROZEN_CALL_MS,
 * then its thread is let go to finish on its own once the others run, and
 * the whole check is made again once it is home (a release made twice
 * does nothing the second time).  A tracer that
 * dies at any step leaves the target consistent: the agent off or not,
 * the borrowed thread home through its frame, the others let go by the
 * kernel.
 *
 * The target's memory is read, never trusted: a word is only compared,
 * the loader's list walked a bounded number of steps, the entry table's
 * page taken only if maps shows such a page.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "attach.h"
#include "attach_internal.h"
#include "callstub.h"
#include "elf/elfinfo.h"
#include "elf/maps.h"
#include "elf/symtab.h"
#include "freeze.h"
#include "inject.h"
#include "machine.h"
#include "pa_clock.h"
#include "pprof_alloc_abi.h"
#include "procexit.h"
#include "unload.h"

#define UNLOAD_TRIES		10
#define UNLOAD_RETRY_MS		20
#define FROZEN_CALL_MS		500
#define STACK_SCAN_MAX		(8u << 20)
#define COPY_SCAN_MAX		(4ull << 30)
/* looked through while the thread that turned the agent off waits */
#define SCAN_HELD_MAX		(256ull << 20)
#define COPY_HITS_MAX		4096	/* dead stacks hold a few: 1 to 5 seen */
#define SIGFRAMES_MAX		4
#define CODE_RANGES_MAX		16
#define LINK_MAPS_MAX		4096
#define CHUNK			(1u << 20)
#define PAGE			4096u
#define RED_ZONE		128u
#define DEAD_MAX		(256u << 10)	/* stale words below a stack
						   pointer: a call's depth */

/* What the program can hold the address of: the agent's exported
 * functions (agent/agent.map). */
static const char *const exported[] = {
	"malloc", "free", "calloc", "realloc", "reallocarray",
	"posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc",
	"malloc_usable_size", "dlopen", PA_ATTACH_SYMBOL, PA_DETACH_SYMBOL,
	PA_RESCAN_SYMBOL, PA_OFF_SYMBOL, PA_RELEASE_SYMBOL,
};
#define NHOOKS	(sizeof(exported) / sizeof(exported[0]))

struct range {
	uint64_t lo, hi;
};

struct unload {
	pid_t pid;
	const struct attach_config *cfg;
	struct proc_maps *pm;
	const struct maps_entry *agent;	/* its mapping at offset 0 */
	uint64_t agent_lo, agent_hi;	/* its image, .bss included */
	uint64_t bias;			/* its load bias: l_addr */
	struct range code[CODE_RANGES_MAX];	/* its code, stub, entry page */
	unsigned int ncode;
	uint64_t stub, entry_page;
	bool stub_only;			/* preloaded: only the stub goes */
	bool dlclosed, pages_left;	/* see unload() */
	uint64_t hooks[NHOOKS];		/* sorted */
	unsigned int nhooks;
	uint64_t hits[COPY_HITS_MAX];	/* where a hook's address was seen */
	unsigned int nhits;
	uint64_t pages[COPY_HITS_MAX];	/* pages that could not be read */
	unsigned int npages;
	int mem;			/* /proc/PID/mem: reads what has no
					   read permission too */
	bool too_many_hits, too_much_memory;
	uint64_t scanned;		/* bytes read looking for copies */
	uint64_t restorer;		/* glibc's signal restorer, or 0 */
	uint64_t off_at, release_at, dlclose_at, r_debug;
	uint8_t *buf;			/* CHUNK bytes */
	char why[ATTACH_WHY_SIZE];	/* why it stays */
};

static void say(char *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(char *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, ATTACH_WHY_SIZE, fmt, ap);
	va_end(ap);
}

static int read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ?
	       0 : -EIO;
}

static bool is_agent_map(const struct unload *u, const struct maps_entry *m)
{
	return m->inode == u->agent->inode &&
	       m->dev_major == u->agent->dev_major &&
	       m->dev_minor == u->agent->dev_minor &&
	       !strcmp(m->path, u->agent->path);
}

static bool in_code(const struct unload *u, uint64_t a)
{
	unsigned int i;

	if (u->stub_only)
		return u->stub && a >= u->stub && a < u->stub + CALLSTUB_PAGE;

	for (i = 0; i < u->ncode; i++)
		if (a >= u->code[i].lo && a < u->code[i].hi)
			return true;
	return false;
}

static bool is_hook(const struct unload *u, uint64_t w)
{
	unsigned int lo = 0, hi = u->nhooks;

	if (!u->nhooks || w < u->hooks[0] || w > u->hooks[u->nhooks - 1])
		return false;
	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;

		if (u->hooks[mid] == w)
			return true;
		if (u->hooks[mid] < w)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* ---- what the agent is made of ---------------------------------------- */

static void add_code(struct unload *u, uint64_t lo, uint64_t hi)
{
	if (u->ncode < CODE_RANGES_MAX)
		u->code[u->ncode++] = (struct range){ lo, hi };
}

/* The agent's whole image, [lo, hi): its segments as loaded, the .bss
 * past the file's last page included (anonymous in maps, and merged there
 * with whatever anonymous mapping lies next to it). */
static int image_span(int fd, uint64_t bias, uint64_t *lo, uint64_t *hi)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	unsigned int i;

	*lo = UINT64_MAX;
	*hi = 0;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_phentsize != sizeof(ph) || eh.e_phnum > 64)
		return -ENOEXEC;
	for (i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph),
			  (off_t)(eh.e_phoff + i * sizeof(ph))) !=
		    (ssize_t)sizeof(ph))
			return -ENOEXEC;
		if (ph.p_type != PT_LOAD)
			continue;
		if (bias + (ph.p_vaddr & ~(uint64_t)(PAGE - 1)) < *lo)
			*lo = bias + (ph.p_vaddr & ~(uint64_t)(PAGE - 1));
		if (bias + ph.p_vaddr + ph.p_memsz > *hi)
			*hi = bias + ph.p_vaddr + ph.p_memsz;
	}
	*hi = (*hi + PAGE - 1) & ~(uint64_t)(PAGE - 1);
	return *hi > *lo ? 0 : -ENOEXEC;
}

/* The entry page the agent's table names, if maps shows one there. */
static void find_entry_page(struct unload *u, int fd)
{
	struct pa_entry_table t;
	const struct maps_entry *m;
	uint64_t at, size;

	if (elfsym__find_object(fd, PA_ENTRY_SYMBOL, &at, &size) ||
	    size < sizeof(t) || read_mem(u->pid, u->bias + at, &t, sizeof(t)) ||
	    t.magic != PA_ENTRY_MAGIC || !t.page)
		return;
	m = proc_maps__at(u->pm, t.page);
	if (m && m->start == t.page && m->end == t.page + PA_ENTRY_PAGE_SIZE &&
	    !m->path[0] && (m->prot & MAPS_PROT_EXEC)) {
		u->entry_page = t.page;
		add_code(u, t.page, t.page + PA_ENTRY_PAGE_SIZE);
	}
}

/* The loader's _r_debug: in ld.so, found at AT_BASE. */
static void find_r_debug(struct unload *u)
{
	uint64_t auxv[2 * 64], base = 0, value, size, bias;
	const struct maps_entry *m;
	char path[64];
	ssize_t n;
	int fd;
	size_t i;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)u->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, auxv, sizeof(auxv));
	close(fd);
	for (i = 0; n > 0 && i + 1 < (size_t)n / 8; i += 2)
		if (auxv[i] == AT_BASE)
			base = auxv[i + 1];
	m = base ? proc_maps__at(u->pm, base) : NULL;
	if (!m || m->start != base || m->offset || m->path[0] != '/')
		return;
	fd = maps_entry__open(u->pid, m);
	if (fd < 0)
		return;
	if (!elfsym__find_object(fd, "_r_debug", &value, &size) && size >= 40 &&
	    !elfinfo__load_bias(fd, m->start, 0, &bias))
		u->r_debug = bias + value;
	close(fd);
}

/* dlclose: libc's (2.34+), libdl's, or glibc's private one before. */
static void find_dlclose(struct unload *u)
{
	const struct maps_entry *libc = attach__libc_map(u->pm);
	const struct maps_entry *libdl = attach__libdl_map(u->pm);

	if (libc && !attach__symbol(u->pid, libc, NULL, "dlclose",
				    &u->dlclose_at))
		return;
	if (libdl && !attach__symbol(u->pid, libdl, NULL, "dlclose",
				     &u->dlclose_at))
		return;
	if (!libc || attach__symbol(u->pid, libc, NULL, "__libc_dlclose",
				    &u->dlclose_at))
		u->dlclose_at = 0;
}

/* Everything step 1 to 4 need to know; 0 or -errno with u->why. */
static int survey(struct unload *u)
{
	uint64_t sc, value;
	size_t i;
	int fd, err;

	err = proc_maps__read(u->pid, &u->pm);
	if (err) {
		say(u->why, "cannot read its maps: %s", strerror(-err));
		return err;
	}
	u->agent = attach__agent_map(u->pm, u->cfg->agent);
	if (!u->agent) {
		say(u->why, "it is not mapped");
		return -ENOENT;
	}
	fd = attach__open_mapped(u->pid, u->agent, u->cfg->agent);
	if (fd < 0) {
		say(u->why, "cannot read %s: %s", u->agent->path, strerror(-fd));
		return fd;
	}
	err = elfinfo__load_bias(fd, u->agent->start, 0, &u->bias);
	if (err) {
		close(fd);
		say(u->why, "cannot read %s's load address: %s",
		    u->agent->path, strerror(-err));
		return err;
	}
	for (i = 0; !err && i < NHOOKS; i++) {
		err = elfsym__find(fd, exported[i], &value);
		if (!err)
			u->hooks[u->nhooks++] = u->bias + value;
	}
	if (err) {
		close(fd);
		say(u->why, "%s has no %s: another build", u->agent->path,
		    exported[i - 1]);
		return err;
	}
	u->off_at = u->hooks[NHOOKS - 2];	/* PA_OFF_SYMBOL */
	u->release_at = u->hooks[NHOOKS - 1];	/* PA_RELEASE_SYMBOL */
	qsort(u->hooks, u->nhooks, sizeof(u->hooks[0]), cmp_u64);
	if (image_span(fd, u->bias, &u->agent_lo, &u->agent_hi)) {
		close(fd);
		say(u->why, "cannot read %s's program headers", u->agent->path);
		return -ENOEXEC;
	}
	for (i = 0; i < u->pm->count; i++) {
		const struct maps_entry *m = &u->pm->entries[i];

		if (is_agent_map(u, m) && (m->prot & MAPS_PROT_EXEC))
			add_code(u, m->start, m->end);
	}
	find_entry_page(u, fd);
	close(fd);
	if (!callstub__find(u->pid, &u->stub))
		add_code(u, u->stub, u->stub + CALLSTUB_PAGE);
	if (callstub__gadgets(u->pid, &sc, &u->restorer))
		u->restorer = 0;
	find_dlclose(u);
	find_r_debug(u);
	return 0;
}

/* ---- 2: copies of a hook's address ------------------------------------ */

static void look(struct unload *u, uint64_t at, size_t len)
{
	const uint64_t *w = (const uint64_t *)u->buf;
	size_t i;

	for (i = 0; i < len / 8; i++) {
		if (!is_hook(u, w[i]))
			continue;
		if (u->nhits == COPY_HITS_MAX) {
			u->too_many_hits = true;
			return;
		}
		u->hits[u->nhits++] = at + i * 8;
	}
}

/* Read len bytes at at through /proc/PID/mem.  0 or -EIO. */
static int read_any(const struct unload *u, uint64_t at, void *buf, size_t len)
{
	return u->mem >= 0 && at <= INT64_MAX - len &&
	       pread(u->mem, buf, len, (off_t)at) == (ssize_t)len ? 0 : -EIO;
}

/* Read [at, at + len) and look through it; false past the budget.  A
 * chunk that cannot be read whole is read page by page, and a page that
 * cannot be read is noted: the check reads it again, and unless it is
 * gone by then, the agent stays. */
static bool read_run(struct unload *u, uint64_t at, uint64_t len)
{
	while (len) {
		size_t n = len < CHUNK ? (size_t)len : CHUNK, p;

		if (u->scanned + n > COPY_SCAN_MAX) {
			u->too_much_memory = true;
			return false;
		}
		u->scanned += n;
		if (!read_any(u, at, u->buf, n)) {
			look(u, at, n);
		} else {
			for (p = 0; p < n; p += PAGE) {
				if (!read_any(u, at + p, u->buf, PAGE)) {
					look(u, at + p, PAGE);
					continue;
				}
				if (u->npages == COPY_HITS_MAX) {
					u->too_many_hits = true;
					return false;
				}
				u->pages[u->npages++] = at + p;
			}
		}
		at += n;
		len -= n;
	}
	return true;
}

static bool scan_mapping(struct unload *u, const struct maps_entry *m,
			 int pagemap)
{
	bool shared = m->prot & MAPS_SHARED;
	static uint64_t entries[CHUNK / PAGE];
	uint64_t at;

	for (at = m->start; at < m->end;) {
		uint64_t n = m->end - at < CHUNK ? m->end - at : CHUNK;
		size_t pages = (size_t)(n / PAGE), p, run = 0;

		if (pagemap < 0 ||
		    pread(pagemap, entries, pages * 8, (off_t)(at / PAGE * 8)) !=
			    (ssize_t)(pages * 8)) {
			if (!read_run(u, at, n))
				return false;
			at += n;
			continue;
		}
		/* runs of pages that are present or swapped, and anonymous
		 * in private memory: a file's page as read holds no address
		 * of ours (in shared memory every page is "file or shared") */
		for (p = 0; p <= pages; p++) {
			bool want = p < pages &&
				    (entries[p] >> 62) != 0 &&
				    (shared || !(entries[p] >> 61 & 1));

			if (want) {
				run++;
				continue;
			}
			if (run && !read_run(u, at + (p - run) * PAGE,
					     run * PAGE))
				return false;
			run = 0;
		}
		at += n;
	}
	return true;
}

/* Is m memory the program may keep a copy in?  Its private memory,
 * readable or not now (a collector may protect its heap for a while), and
 * the shared memory it can write, less what the agent mapped and the
 * kernel's pages.  (Mappings that reserve address space hold no page, and
 * cost only their pagemap entries.) */
static bool scanned(const struct unload *u, const struct maps_entry *m)
{
	return (!(m->prot & MAPS_SHARED) || (m->prot & MAPS_PROT_WRITE)) &&
	       !is_agent_map(u, m) && strncmp(m->path, "[v", 2) &&
	       m->start != u->stub && m->start != u->entry_page;
}

/* At most how many bytes scan_copies reads: the mappings' sizes. */
static uint64_t scan_bound(const struct unload *u)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < u->pm->count; i++)
		if (scanned(u, &u->pm->entries[i]))
			n += u->pm->entries[i].end - u->pm->entries[i].start;
	return n;
}

static void scan_copies(struct unload *u)
{
	char path[64];
	size_t i;
	int pagemap;

	if (u->mem < 0)
		return;		/* the check says so */
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)u->pid);
	pagemap = open(path, O_RDONLY | O_CLOEXEC);
	for (i = 0; i < u->pm->count && !u->too_many_hits; i++) {
		struct maps_entry m = u->pm->entries[i];

		if (!scanned(u, &m))
			continue;
		/* the agent's own (its .bss: its tables hold its hooks) is
		 * not the program's; the part of a mapping merged with it
		 * that is not the agent's is */
		if (m.start < u->agent_hi && m.end > u->agent_lo) {
			struct maps_entry below = m;

			below.end = u->agent_lo;
			if (below.start < below.end &&
			    !scan_mapping(u, &below, pagemap))
				break;
			m.start = u->agent_hi;
			if (m.start >= m.end)
				continue;
		}
		if (!scan_mapping(u, &m, pagemap))
			break;
	}
	if (pagemap >= 0)
		close(pagemap);
}

/* ---- 3: the consistency check ------------------------------------------ */

struct thread_state {
	pid_t tid;
	const struct user_regs_struct *regs;
};

/* The live stack from sp: no word in the agent's code.  Through a signal
 * frame whose interrupted stack is another mapping (an alternate signal
 * stack), that one too, depth frames deep at most. */
static bool stack_clear(struct unload *u, pid_t tid, uint64_t sp, int depth,
			const struct proc_maps *pm)
{
	const struct maps_entry *m = proc_maps__at(pm, sp);
	uint64_t at = sp & ~7ull, end, lo = at;

	if (!m) {
		if (depth)
			return true;	/* no frame after all */
		say(u->why, "thread %d's stack pointer %#llx is in no mapping",
		    (int)tid, (unsigned long long)sp);
		return false;
	}
	/* a bounded window: a hook's frame is never that far from the
	 * stack pointer (what it calls does not recurse), and a coroutine's
	 * stack may lie in a mapping of the heap's gigabytes */
	end = m->end - at > STACK_SCAN_MAX ? at + STACK_SCAN_MAX : m->end;
	while (at < end) {
		size_t n = end - at < CHUNK ? (size_t)(end - at) : CHUNK, i;
		const uint64_t *w = (const uint64_t *)u->buf;

		if (read_mem(u->pid, at, u->buf, n)) {
			say(u->why, "cannot read thread %d's stack", (int)tid);
			return false;
		}
		for (i = 0; i < n / 8; i++) {
			uint64_t other;

			if (in_code(u, w[i])) {
				say(u->why, "thread %d's stack holds %#llx (at %#llx), in the agent's code",
				    (int)tid, (unsigned long long)w[i],
				    (unsigned long long)(at + i * 8));
				return false;
			}
			if (!u->restorer || w[i] != u->restorer ||
			    depth >= SIGFRAMES_MAX)
				continue;
			other = machine__sigframe_sp(u->pid, at + i * 8);
			/* an alternate stack, its own mapping or not (an
			 * array on main's stack): the interrupted one is
			 * outside this window */
			if (other && (other < lo || other >= end) &&
			    !stack_clear(u, tid, other, depth + 1, pm))
				return false;
			w = (const uint64_t *)u->buf;	/* read again below */
			if (read_mem(u->pid, at, u->buf, n))
				return false;
		}
		at += n;
	}
	return true;
}

static bool thread_clear(struct unload *u, const struct thread_state *t,
			 const struct proc_maps *pm)
{
	uint64_t v[MACHINE_GREGS_MAX];
	const char *name[MACHINE_GREGS_MAX];
	size_t i, n = machine__gregs(t->regs, v, name);

	uint64_t sp = machine__gregs_sp(t->regs), other;

	for (i = 0; i < n; i++)
		if (in_code(u, v[i])) {
			say(u->why, "thread %d's %s holds %#llx, in the agent's code",
			    (int)t->tid, name[i], (unsigned long long)v[i]);
			return false;
		}
	/* a handler that has saved nothing yet (aarch64: its way back in
	 * x30): its frame is at sp, and the stack it interrupted may be
	 * another (an alternate signal stack's) */
	if (u->restorer && machine__gregs_lr(t->regs) == u->restorer &&
	    sp >= 8 && (other = machine__sigframe_sp(u->pid, sp - 8)) &&
	    !stack_clear(u, t->tid, other, 1, pm))
		return false;
	return stack_clear(u, t->tid, sp, 0, pm);
}

/* Below a thread's stack pointer (and its red zone), by at most DEAD_MAX,
 * in a stack of its own (proc_maps__own_stack: not a coroutine's carved
 * out of the heap, whose data lies below it): dead (the calls of an attach or a detach, or of
 * the agent's own thread, left hook addresses there). */
static bool dead_stack(const struct thread_state *ts, size_t n,
		       const struct proc_maps *pm, uint64_t a)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t sp = machine__gregs_sp(ts[i].regs);
		const struct maps_entry *m = proc_maps__at(pm, sp);

		if (m && proc_maps__own_stack(pm, m) && a >= m->start &&
		    sp >= RED_ZONE + 8 && a + 8 <= sp - RED_ZONE &&
		    sp - a <= DEAD_MAX)
			return true;
	}
	return false;
}

/* A copy of a hook's address still there, outside a dead stack, or a
 * word or page looked at that is still mapped but cannot be read (then
 * *unreadable): its address, or 0. */
static uint64_t live_copy(struct unload *u, const struct thread_state *ts,
			  size_t n, const struct proc_maps *pm,
			  bool *unreadable)
{
	const uint64_t *w = (const uint64_t *)u->buf;
	unsigned int i, j;

	*unreadable = false;
	for (i = 0; i < u->nhits; i++) {
		if (dead_stack(ts, n, pm, u->hits[i]) ||
		    !proc_maps__at(pm, u->hits[i]))
			continue;	/* dead, or unmapped since */
		if (read_any(u, u->hits[i], u->buf, 8)) {
			*unreadable = true;
			return u->hits[i];
		}
		if (is_hook(u, w[0]))
			return u->hits[i];
	}
	for (i = 0; i < u->npages; i++) {
		if (!proc_maps__at(pm, u->pages[i]))
			continue;
		if (read_any(u, u->pages[i], u->buf, PAGE)) {
			*unreadable = true;
			return u->pages[i];
		}
		for (j = 0; j < PAGE / 8; j++)
			if (is_hook(u, w[j]) &&
			    !dead_stack(ts, n, pm, u->pages[i] + j * 8))
				return u->pages[i] + j * 8;
	}
	return 0;
}

/* The agent's link_map, from the loader's list; 0 with u->why if none.
 * -EAGAIN: a dlopen or dlclose is under way. */
static int find_link_map(struct unload *u, uint64_t *lm)
{
	struct {
		int32_t version, pad;
		uint64_t map, brk;
		int32_t state, pad2;
		uint64_t ldbase;
	} rd;
	uint64_t l[5], p;
	unsigned int i;

	if (!u->r_debug || read_mem(u->pid, u->r_debug, &rd, sizeof(rd))) {
		say(u->why, "the loader's list of libraries (_r_debug) was not found");
		return -ENOENT;
	}
	if (rd.state != 0) {		/* RT_CONSISTENT */
		say(u->why, "a library was being loaded or unloaded each time");
		return -EAGAIN;
	}
	for (p = rd.map, i = 0; p && i < LINK_MAPS_MAX; i++, p = l[3]) {
		if (read_mem(u->pid, p, l, sizeof(l)))
			break;
		/* l_addr, l_name, l_ld, l_next, l_prev */
		if (l[0] == u->bias && l[2] >= u->agent_lo && l[2] < u->agent_hi) {
			*lm = p;
			return 0;
		}
	}
	say(u->why, "it is not in the loader's list of libraries");
	return -ENOENT;
}

enum check {
	CHECK_RETRY,		/* a thread inside: let go, try again */
	CHECK_RELEASE,		/* nothing inside, but it must stay */
	CHECK_UNLOAD,		/* nothing inside, nothing copied */
	CHECK_STAYS,		/* released or unloaded only in part */
};

static enum check check(struct unload *u, const struct remote *r,
			const struct freeze *fr, uint64_t *lm)
{
	struct thread_state *ts;
	struct proc_maps *pm = NULL;
	enum check res = CHECK_RETRY;
	bool unreadable;
	uint64_t copy;
	size_t i, n = 0;
	int err;

	ts = calloc(fr->n + 1, sizeof(*ts));
	if (!ts || proc_maps__read(u->pid, &pm)) {
		say(u->why, "out of memory, or cannot read its maps");
		goto out_free;
	}
	ts[n++] = (struct thread_state){ r->tid, &r->saved.r };
	for (i = 0; i < fr->n; i++)
		ts[n++] = (struct thread_state){ fr->t[i].tid, &fr->t[i].regs };
	for (i = 0; i < n; i++)
		if (!thread_clear(u, &ts[i], pm))
			goto out_free;
	res = CHECK_RELEASE;
	if (u->stub_only)
		goto out_free;
	res = CHECK_RETRY;
	err = find_link_map(u, lm);
	if (err == -EAGAIN)
		goto out_free;
	res = CHECK_RELEASE;
	if (err)
		goto out_free;
	if (u->mem < 0) {
		say(u->why, "its memory cannot be read (/proc/%d/mem) to look for copies of the agent's functions' addresses",
		    (int)u->pid);
	} else if (u->too_many_hits) {
		say(u->why, "its functions' addresses are in its memory in more than %u places, or as many of its pages cannot be read",
		    COPY_HITS_MAX);
	} else if (u->too_much_memory) {
		say(u->why, "it has more than %llu GiB of memory to look through for copies of the agent's functions' addresses",
		    COPY_SCAN_MAX >> 30);
	} else if ((copy = live_copy(u, ts, n, pm, &unreadable))) {
		const struct maps_entry *m = proc_maps__at(pm, copy);

		if (unreadable)
			say(u->why, "its memory at %#llx%s%s cannot be read to look for copies of the agent's functions' addresses",
			    (unsigned long long)copy,
			    m && m->path[0] ? ", in " : "",
			    m && m->path[0] ? m->path : "");
		else
			say(u->why, "the program keeps the address of one of the agent's functions (at %#llx%s%s), and may call it",
			    (unsigned long long)copy,
			    m && m->path[0] ? ", in " : "",
			    m && m->path[0] ? m->path : "");
	} else if (!u->dlclose_at) {
		say(u->why, "no dlclose in its libc");
	} else {
		res = CHECK_UNLOAD;
	}
out_free:
	proc_maps__free(pm);
	free(ts);
	return res;
}

/* ---- 1 to 4 ------------------------------------------------------------ */

/* Step 1 on the borrowed thread r.  0, -EPERM (preloaded), or -errno
 * with u->why. */
static int turn_off(struct unload *u, struct remote *r)
{
	const char *reason = NULL;
	uint64_t ret = 0;
	int err;

	err = remote__call(r, u->off_at, NULL, 0, &ret, u->cfg->timeout_ms,
			   &reason);
	if (err) {
		say(u->why, "it could not be turned off: %s", reason);
		return err;
	}
	if ((int)ret == -EPERM)
		return -EPERM;
	if ((int)ret) {
		say(u->why, "it could not be turned off: %s%s",
		    strerror(-(int)ret),
		    (int)ret == -ETIMEDOUT ? " (its thread was answering)" : "");
		return (int)ret < 0 ? (int)ret : -EPROTO;
	}
	return 0;
}

/* Step 4 on the borrowed thread r, the others stopped: the rest of what
 * the agent mapped.  0, or -errno with u->why; *abandoned when the call
 * overran and its thread was let go to finish it (the caller tries again:
 * a release made twice does nothing the second time). */
static int release(struct unload *u, struct remote *r, bool unloading,
		   bool *abandoned)
{
	const char *reason = NULL;
	uint64_t flags = unloading ? PA_RELEASE_UNLOADING : 0, ret = 0;
	int err;

	err = remote__call(r, u->release_at, &flags, 1, &ret, FROZEN_CALL_MS,
			   &reason);
	if (err) {
		*abandoned = !r->seized;
		say(u->why, "%s%s", reason,
		    *abandoned ? "; that thread finishes it on its own" : "");
		return err;
	}
	if ((int)ret) {
		say(u->why, "the agent refused to let go: %s",
		    strerror(-(int)ret));
		return -EPROTO;
	}
	return 0;
}

static bool still_mapped(pid_t pid, const struct unload *u)
{
	struct proc_maps *pm;
	bool there = false;
	size_t i;

	if (proc_maps__read(pid, &pm))
		return true;
	for (i = 0; i < pm->count && !there; i++)
		there = is_agent_map(u, &pm->entries[i]);
	proc_maps__free(pm);
	return there;
}

/* Step 4, the others running again: dlclose (it may wait for the loader's
 * and the allocator's locks, as any dlclose), then the entry page and the
 * stub.  0, or -errno with u->why (u->dlclosed: dlclose was called, and
 * returned or was let go to finish; u->pages_left: the entry page or the
 * stub stays). */
static int unload(struct unload *u, struct remote *r, bool unloading,
		  uint64_t lm, bool *abandoned)
{
	const char *reason = NULL;
	uint64_t ret = 0;
	int err = 0;

	if (unloading) {
		err = remote__call(r, u->dlclose_at, &lm, 1, &ret,
				   u->cfg->timeout_ms, &reason);
		if (err) {
			*abandoned = !r->seized;
			u->dlclosed = *abandoned;
			u->pages_left = true;
			say(u->why, "dlclose: %s", reason);
			return err;
		}
		if (ret) {
			say(u->why, "dlclose failed");
			return -EPROTO;
		}
		u->dlclosed = true;
		/* another reference keeps it: so does the entry page, its
		 * hooks' way to the original functions */
		if (still_mapped(u->pid, u))
			unloading = false;
	}
	/* the entry page, after the agent: its hooks' way to the
	 * original functions ran through it */
	if (unloading && u->entry_page)
		err = remote__munmap(r, u->entry_page, PA_ENTRY_PAGE_SIZE,
				     u->cfg->timeout_ms, &reason);
	if (!err && r->stub)
		err = remote__munmap(r, r->stub, CALLSTUB_PAGE,
				     u->cfg->timeout_ms, &reason);
	if (err) {
		*abandoned = !r->seized;
		u->pages_left = true;
		say(u->why, "%s", reason);
	}
	return err;
}

/* Borrow a thread, trying a few times (a busy program's threads are in a
 * system call now and then).  0 or -errno with u->why. */
static int borrow(struct unload *u, struct remote *r, const char *doing)
{
	struct timespec retry = { 0, UNLOAD_RETRY_MS * PA_NSEC_PER_MSEC };
	char why[ATTACH_WHY_SIZE];
	int i, err = -EBUSY;

	for (i = 0; i < UNLOAD_TRIES; i++) {
		if (i)
			nanosleep(&retry, NULL);
		err = attach__borrow(r, u->pid, u->cfg->timeout_ms, why);
		if (!err || err == -ESRCH)
			break;
	}
	if (err)
		say(u->why, "%s: %s", doing, why);
	return err;
}

static void note_stops(struct attach_stats *st, const struct remote *r,
		       const struct freeze *fr)
{
	if (r->longest_stop_ns > st->longest_stop_ns)
		st->longest_stop_ns = r->longest_stop_ns;
	if (fr->longest_ns > st->longest_stop_ns)
		st->longest_stop_ns = fr->longest_ns;
	if (fr->longest_ns > st->unload_stop_ns)
		st->unload_stop_ns = fr->longest_ns;
}

int unload__agent(pid_t pid, const struct attach_config *cfg,
		  struct attach_stats *st, char *why)
{
	struct unload *u = calloc(1, sizeof(*u));
	struct timespec retry = { 0, UNLOAD_RETRY_MS * PA_NSEC_PER_MSEC };
	struct timespec stub_wait = { 0, CALLSTUB_WAIT_NSEC + 50 * PA_NSEC_PER_MSEC };
	enum check res = CHECK_RETRY;
	bool abandoned = false, late = false, held;
	char path[32];
	struct remote r;
	int tries, err, ret = UNLOAD_STAYS;

	if (!u)
		return -ENOMEM;
	if (!procexit__alive(pid)) {
		free(u);
		return UNLOAD_NOTHING;	/* it ended meanwhile */
	}
	u->pid = pid;
	u->cfg = cfg;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	u->mem = open(path, O_RDONLY | O_CLOEXEC);
	u->buf = malloc(CHUNK);
	err = u->buf ? survey(u) : -ENOMEM;
	if (err) {
		ret = err == -ENOENT && !u->agent ? UNLOAD_NOTHING : err;
		goto out_free;
	}
	/* 1: off, on a thread that the rest borrows again, if it can */
	err = borrow(u, &r, "it could not be turned off");
	if (err) {
		ret = err;
		goto out_free;
	}
	err = turn_off(u, &r);
	if (r.stub && !u->stub) {	/* mapped for this call */
		u->stub = r.stub;
		add_code(u, u->stub, u->stub + CALLSTUB_PAGE);
	}
	held = true;
	if (err == -EPERM) {
		u->stub_only = true;	/* preloaded: only our stub goes */
	} else if (err) {
		remote__release(&r);
		note_stops(st, &r, &(struct freeze){ 0 });
		ret = err;
		goto out_free;
	} else if (scan_bound(u) <= SCAN_HELD_MAX) {
		/* 2: a small process is looked through while that thread
		 * waits; a big one runs whole meanwhile */
		scan_copies(u);
	} else {
		remote__release(&r);
		note_stops(st, &r, &(struct freeze){ 0 });
		held = false;
		scan_copies(u);
	}
	for (tries = 0; tries < UNLOAD_TRIES; tries++) {
		struct freeze fr = { 0 };
		uint64_t lm = 0;

		/* a release let go to finish on its own: its thread is home
		 * once the stub's wait is over (the check would find it in
		 * the stub); what it did, done again, does nothing */
		if (!held && tries)
			nanosleep(late ? &stub_wait : &retry, NULL);
		late = false;
		if (!held && borrow(u, &r, "no thread to borrow"))
			break;
		held = false;
		/* 3, then 4 */
		err = freeze__others(pid, r.tid, &fr, u->why, sizeof(u->why));
		if (!err) {
			res = check(u, &r, &fr, &lm);
			if ((res == CHECK_RELEASE || res == CHECK_UNLOAD) &&
			    !u->stub_only &&
			    release(u, &r, res == CHECK_UNLOAD, &late))
				res = late ? CHECK_RETRY : CHECK_STAYS;
			freeze__thaw(&fr);
		}
		if (!err && (res == CHECK_RELEASE || res == CHECK_UNLOAD) &&
		    unload(u, &r, res == CHECK_UNLOAD, lm, &abandoned))
			res = CHECK_STAYS;
		remote__release(&r);
		note_stops(st, &r, &fr);
		if (!err && res != CHECK_RETRY)
			break;
	}
	if (late)
		say(u->why, "its release, made while the program was stopped, did not return in time, every time");
	if (u->stub_only) {
		ret = UNLOAD_NOTHING;
	/* (after UNLOAD_TRIES retries, u->why names the last thread found
	 * inside; a thread let go in dlclose may have finished it by now) */
	} else if (u->dlclosed && !still_mapped(pid, u)) {
		ret = UNLOAD_DONE;
		if (!u->pages_left)
			u->why[0] = '\0';
		else {
			char cause[ATTACH_WHY_SIZE];

			snprintf(cause, sizeof(cause), "%s", u->why);
			say(u->why, "its call stub%s stay%s mapped (%.200s)",
			    u->entry_page ? " and entry page" : "",
			    u->entry_page ? "" : "s", cause);
		}
	} else if (u->dlclosed && abandoned) {
		say(u->why, "its dlclose did not return in time; the thread was let go to finish it, and the agent may leave then");
	} else if (u->dlclosed) {
		say(u->why, "dlclose left it mapped (another reference to it?)");
	}
out_free:
	snprintf(why, ATTACH_WHY_SIZE, "%s", u->why);
	if (u->mem >= 0)
		close(u->mem);
	if (u->pm)
		proc_maps__free(u->pm);
	free(u->buf);
	free(u);
	return ret;
}
