// SPDX-License-Identifier: MIT
/*
 * agent.c - the agent's life: start, record, fork.
 *
 * Start (from the library constructor, never lazily from inside malloc,
 * where environment and atfork locks may be held):
 *   - launched by the tracer: PPROF_ALLOC_FD names an inherited memfd that
 *     the tracer created, sized, sealed and filled in.  The agent checks
 *     seals, size and header, maps it, marks the fd close-on-exec and
 *     removes the variable so that the program's children do not try to
 *     reuse a descriptor they do not have.
 *   - a descendant of a launched program (PPROF_ALLOC_SESSION without
 *     PPROF_ALLOC_FD): stays off and tells the tracer so (session.c);
 *   - on its own (LD_PRELOAD without a tracer): it makes the memfd itself
 *     (PPROF_ALLOC_RATE and PPROF_ALLOC_MAX_FRAMES may set the config), so
 *     a tracer that comes later can find it in /proc/PID/fd.
 * Every size the agent uses is kept in struct pa_agent, not re-read from
 * the shared header.  The mapping is not populated: a page of the ring or a
 * table is made when a sample first touches it, so the memory is what is
 * used (pprof_alloc_memfd.h).
 *
 * Record: a sampled allocation goes into the live table and the ring; a
 * free of a sampled address leaves the table and goes into the ring before
 * the real free runs (so the address cannot be handed out, sampled and
 * recorded again ahead of its free).  A full ring drops and counts; a full
 * live table makes the agent report every free from then on (marked
 * unverified) so that no sampled free is ever missed.
 *
 * Fork: the child shares the parent's memfd mapping, so it must never write
 * to it.  The atfork child handler disables the agent, unmaps the ring and
 * closes the fd (telling a launching tracer, session.c); the child's
 * allocations then pass straight through.  A
 * child made without atfork handlers (_Fork, a raw fork or clone system
 * call) is caught by a MADV_WIPEONFORK page: its "armed" byte reads 0 in
 * any child, and every slow path checks it before touching shared state.
 *
 * Followed (--follow-children: PPROF_ALLOC_FOLLOW with the session), a
 * descendant records too, into a memfd of its own that it hands to the
 * tracer (session.c): an exec'd one from its constructor, with the sizes
 * the variable gives; a forked one from the atfork handler, with its
 * parent's, after wiping what it inherited (free filter, module list,
 * thread counts).  Only a fork with atfork handlers is followed: a raw
 * one is noticed inside an allocation, where the agent does not start over.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "agent.h"
#include "blockmap.h"
#include "entry.h"
#include "unwind_cfi.h"
#include "pprof_alloc_memfd.h"
#include "pa_clock.h"
#include "pa_futex.h"

#define STANDALONE_RING_SIZE	(1u << 20)
#define STANDALONE_LIVE		(1u << 16)
#define DEFAULT_RATE		524288u
#define DEFAULT_MAX_FRAMES	64u

struct pa_agent pa_agent = { .fd = -1 };
__thread struct pa_thread pa_thread;

int pa_watch_frees;
uint8_t pa_live_filter[LIVE_FILTER_SIZE];

static int live_overflowed;

/*
 * A sample the live table had no room for (its probe run was full): its
 * free must still be reported.  Its filter granule is made sticky (255),
 * so frees there reach the slow path, and a free there that is not in the
 * table is reported as unverified (the tracer matches it by address).
 * Only that granule pays; the rest of the process is unaffected.
 */
static void untracked(uint64_t addr)
{
	__atomic_store_n(&pa_live_filter[live_filter_slot(addr)], 255,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&live_overflowed, 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&pa_agent.hdr->live_overflow, 1, __ATOMIC_RELAXED);
}

static uint32_t thread_id(void)
{
	struct pa_thread *t = &pa_thread;

	if (!t->tid)
		t->tid = agent__gettid();
	return t->tid;
}

/* lost_samples and lost_bytes with release: a tracer that sees them sees
 * the lost_records added before (tracer/record/ringfile.c reads in reverse) */
static void count_lost_sample(uint64_t size)
{
	__atomic_add_fetch(&pa_agent.hdr->lost_records, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&pa_agent.hdr->lost_samples, 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&pa_agent.hdr->lost_bytes, size, __ATOMIC_RELEASE);
}

static void end_block(void *p, const struct pa_live_entry *old);

/*
 * Exact mode: a sample the ring had no room for (the tracer stopped
 * reading, or this thread may not wait) is counted at the site of the
 * stack the agent has for it - the frame-pointer walk where a copy was to
 * be unwound - rather than lost: its live entry takes the site, so its
 * free counts there too.  True if so.
 */
/* Exact mode: --rate 1 with the site table the memfd was made with. */
static inline bool exact(void)
{
	return pa_agent.sites.entries && pa_agent.rate == 1;
}

/*
 * Exact mode: the calling thread's site lane (its counters and site
 * cache), claimed at its first count; none (NULL) when every lane is held
 * or in a nested call (a signal handler's), which counts in the shared
 * entries.  The pointers are recomputed when the table was made again.
 */
static const struct site_lane *thread_lane_slow(uint32_t gen, bool claim)
{
	static const struct site_lane none;
	struct pa_thread *t = &pa_thread;
	int lane;

	/* only the outermost slow path of the thread claims (depth 1): a
	 * signal handler's, in between, would claim a second lane */
	if (t->lane == LANE_NONE || t->depth != 1 || (!t->lane && !claim))
		return &none;
	if (t->lane) {
		sites__lane_of(&pa_agent.sites, t->lane - 1, &t->lane_at);
	} else {
		lane = sites__claim_lane(&pa_agent.sites, &t->lane_at);
		if (lane < 0) {
			t->lane = LANE_NONE;
			return &none;
		}
		t->lane = (uint8_t)(lane + 1);
	}
	t->lane_gen = gen;
	return &t->lane_at;
}

/* claim: the thread may take a lane now (an allocation's path: the
 * allocations' hook registers the exit handler that gives it back; a
 * thread that only frees counts in the entries) */
static inline const struct site_lane *thread_lane(bool claim)
{
	struct pa_thread *t = &pa_thread;
	uint32_t gen = __atomic_load_n(&pa_agent.sites.gen, __ATOMIC_ACQUIRE);

	if (likely(t->lane && t->lane != LANE_NONE && t->lane_gen == gen))
		return &t->lane_at;
	return thread_lane_slow(gen, claim);
}

void agent__release_lane(void)
{
	struct pa_thread *t = &pa_thread;
	uint8_t lane = t->lane;

	/* not ours before it is free: a signal handler in between counts
	 * in the entries, never in a lane another thread may have by then;
	 * and a thread past its exit handler does not claim again */
	t->lane = LANE_NONE;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (lane && lane != LANE_NONE)
		sites__release_lane(lane - 1);
}

/* The requested size of the site at index + 1 (the agent's own table). */
static uint64_t site_size(uint32_t site)
{
	if (!site || site > pa_agent.sites.capacity || !pa_agent.sites.entries)
		return 0;
	return pa_agent.sites.entries[site - 1].size;
}

/* The block map's entry of a block, as the live table's would be. */
static void site_entry(struct pa_live_entry *e, uint64_t addr, uint32_t site)
{
	memset(e, 0, sizeof(*e));
	e->key = addr;
	e->site = site;
	e->size = site_size(site);
	e->stack_id = site <= pa_agent.sites.capacity && pa_agent.sites.entries ?
		      pa_agent.sites.entries[site - 1].stack_id : PA_STACK_NONE;
}

/*
 * Exact mode: the block at p counts at site (index + 1), in the block map
 * rather than the live table (blockmap.c).  Its filter granule is made
 * sticky (LIVE_FILTER_MAPPED) - a plain store, once: at rate 1 every free
 * goes to the slow path anyway, and counting granules up and down would
 * bounce their lines between threads.  Not 255, which says a block the
 * live table could not hold may be there (its frees go out unverified).  A block there already is one whose free the hooks
 * never saw: it ends here.  False when the map has no room: the live table
 * takes it.
 */
static bool to_blockmap(void *p, uint32_t site, size_t size)
{
	uint8_t *mark = &pa_live_filter[live_filter_slot((uintptr_t)p)];
	struct pa_live_entry stale;
	uint32_t was;

	if (blockmap__put((uintptr_t)p, site, &was))
		return false;
	if (__atomic_load_n(mark, __ATOMIC_RELAXED) < LIVE_FILTER_MAPPED)
		__atomic_store_n(mark, LIVE_FILTER_MAPPED, __ATOMIC_RELAXED);
	if (was) {
		site_entry(&stale, (uintptr_t)p, was);
		end_block(p, &stale);
		agent__count_inuse((int64_t)size - (int64_t)stale.size);
	} else {
		agent__count_live(1);
		agent__count_inuse((int64_t)size);
	}
	return true;
}

static bool to_site(void *p, uint32_t stack_id, size_t size,
		    const struct fp_walk *walk)
{
	uint32_t site;

	if (!exact())
		return false;
	site = sites__intern(&pa_agent.sites, stack_id, size,
			     walk->truncated ? PA_SITE_TRUNCATED : 0);
	if (site == PA_SITE_NONE ||
	    !live__set_site(&pa_agent.live, (uintptr_t)p, site + 1))
		return false;
	sites__count_alloc(&pa_agent.sites, NULL, NULL, site);
	return true;
}

/*
 * Exact mode: whether a record this thread writes now would be read - a
 * tracer drains (its token is set and the agent has not given up on it)
 * and this thread may wait for room (ring__thread_may_wait): not a
 * borrowed thread, not a scan, not a signal handler on top of an open
 * record of its own.
 */
static bool ring_read(void)
{
	uint32_t token = __atomic_load_n(&pa_agent.hdr->draining,
					 __ATOMIC_RELAXED);

	return token && token != __atomic_load_n(&pa_agent.hdr->gave_up_on,
						 __ATOMIC_RELAXED) &&
	       ring__thread_may_wait(0);
}

void agent__record_alloc(void *p, size_t size, struct hook_frame fp)
{
	struct pa_thread *t = &pa_thread;
	uint64_t frames[PA_MAX_FRAMES];
	struct pa_rec_alloc *rec;
	struct pa_rec_hdr *h;
	struct fp_walk walk;
	struct pa_live_entry stale;
	uint64_t seq, time_ns, id;
	unsigned int n;
	uint32_t copy, stack_id, site = 0, last, stack_gen;
	int ret;
	uint16_t flags = 0;
	uint32_t tid;
	int saved_errno = errno;
	const struct site_lane *lane = NULL;

	t->depth++;
	live__prefetch(&pa_agent.live, (uintptr_t)p);
	seq = ++t->seq;
	tid = thread_id();
	id = pa_alloc_id(tid, seq);
	n = unwind_fp(fp, frames, pa_agent.max_frames, &walk);
	if (walk.truncated)
		flags |= PA_ALLOC_TRUNCATED;
	if (walk.complete)
		flags |= PA_ALLOC_WHOLE;
	copy = stack_copy__size(fp, frames, n, &walk);
	agent__count_sample();
	if (walk.tables_gave_out)
		__atomic_add_fetch(&pa_agent.hdr->unwind_fallbacks, 1,
				   __ATOMIC_RELAXED);
	/* exact mode with no tracer reading the ring for this thread (see
	 * ring_read): a copy nobody would unwind would only be lost; the
	 * frame-pointer frames are counted at their site instead */
	if (copy && exact() && !ring_read())
		copy = 0;
	/* the thread's last stack and site first: a loop allocates from one
	 * place (a hit compares every frame: it is the same stack).  Each
	 * read once: a signal handler's sample may change them under us */
	/* a walk the unwind memo gave, tagged with its stack's id in this
	 * table: that id, with no lookup (the memo proved the frames the
	 * same) */
	stack_gen = pa_agent.stacks.gen;
	if (walk.complete && walk.cfi.memo && walk.cfi.tag &&
	    (uint32_t)(walk.cfi.tag >> 32) == stack_gen) {
		stack_id = (uint32_t)walk.cfi.tag;
	} else {
		last = __atomic_load_n(&t->last_stack, __ATOMIC_RELAXED);
		stack_id = stacks__same(&pa_agent.stacks, last, frames, n) ?
			   last : stacks__intern(&pa_agent.stacks, frames, n);
		__atomic_store_n(&t->last_stack, stack_id, __ATOMIC_RELAXED);
		if (walk.complete && stack_id != PA_STACK_NONE)
			unwind_cfi__memo_tag(&walk.cfi,
					     (uint64_t)stack_gen << 32 |
					     stack_id);
	}
	/* exact mode: a stack the agent walked itself is counted at its
	 * site, not written to the ring (sites.c) */
	if (exact() && !copy) {
		uint16_t sflags = walk.truncated ? PA_SITE_TRUNCATED : 0;
		uint32_t *cached;

		/* the lane's cache of sites, else the last site: a hit
		 * compares the key (sites__same), so it is the same site */
		lane = thread_lane(true);
		cached = lane->cache ?
			 &lane->cache[sites__cache_slot(stack_id, size,
							sflags)] :
			 &t->last_site;
		last = __atomic_load_n(cached, __ATOMIC_RELAXED);
		if (sites__same(&pa_agent.sites, last, stack_id, size,
				sflags)) {
			site = last - 1;
		} else {
			site = sites__intern(&pa_agent.sites, stack_id, size,
					     sflags);
			__atomic_store_n(cached,
					 site == PA_SITE_NONE ? 0 : site + 1,
					 __ATOMIC_RELAXED);
		}
		if (site == PA_SITE_NONE) {
			site = 0;
			__atomic_add_fetch(&pa_agent.hdr->site_misses, 1,
					   __ATOMIC_RELAXED);
		} else {
			site++;
		}
	}
	if (site && to_blockmap(p, site, size)) {
		/* after the entry: nobody can free p before we return */
		sites__count_alloc(&pa_agent.sites, lane->counts,
				   &t->lane_busy, site - 1);
		modules__after_count();
		goto out;
	}
	time_ns = site ? pa_coarse_ns() : pa_now_ns();
	ret = live__insert(&pa_agent.live, (uintptr_t)p, size, id, time_ns,
			   stack_id, site, &stale);
	if (ret == 1) {
		/* p was live already: its free was never seen (a free the
		 * hooks missed); it ends here, where it is counted */
		end_block(p, &stale);
		agent__count_inuse((int64_t)size - (int64_t)stale.size);
		ret = 0;
	} else if (ret == 0) {
		agent__count_live(1);
		agent__count_inuse((int64_t)size);
	}
	if (ret) {
		/* its free could not find the site: the ring takes both */
		if (site)
			__atomic_add_fetch(&pa_agent.hdr->site_misses, 1,
					   __ATOMIC_RELAXED);
		site = 0;
		flags |= PA_ALLOC_UNTRACKED;
		untracked((uintptr_t)p);
	}
	if (site) {
		/* after the live entry: nobody can free p before we return */
		sites__count_alloc(&pa_agent.sites, lane->counts,
				   &t->lane_busy, site - 1);
		modules__after_sample(time_ns);
		goto out;
	}

	h = ring__reserve_quiet(&pa_agent.ring,
				(uint32_t)pa_alloc_rec_size(n, copy != 0, copy),
				PA_REC_ALLOC);
	if (!h && to_site(p, stack_id, size, &walk))
		goto out;	/* exact mode: counted at its site after all */
	if (!h) {
		__atomic_add_fetch(&pa_agent.hdr->lost_records, 1,
				   __ATOMIC_RELAXED);
		__atomic_add_fetch(&pa_agent.hdr->lost_samples, 1,
				   __ATOMIC_RELEASE);
		__atomic_add_fetch(&pa_agent.hdr->lost_bytes, size,
				   __ATOMIC_RELEASE);
		goto out;
	}
	rec = (struct pa_rec_alloc *)h;
	rec->seq = seq;
	rec->time_ns = time_ns;
	rec->addr = (uintptr_t)p;
	rec->size = size;
	rec->tid = tid;
	rec->nframes = n;
	memcpy(rec->frames, frames, n * sizeof(uint64_t));
	if (copy) {
		flags |= PA_ALLOC_STACK;
		stack_copy__fill((struct pa_stack_copy *)&rec->frames[n], fp,
				 frames[0], copy, &walk);
	}
	h->flags = flags;
	ring__commit(&pa_agent.ring, h);
	modules__after_sample(time_ns);
out:
	t->depth--;
	errno = saved_errno;
}

int ring__thread_may_wait(unsigned int own)
{
	return !pa_thread.in_scan && !pa_thread.no_wait &&
	       pa_thread.open_records <= own;
}

void ring__opened(void)
{
	pa_thread.open_records++;
}

void ring__closed(void)
{
	pa_thread.open_records--;
}

void agent__skip_nested(size_t size)
{
	if (__atomic_load_n(&pa_agent.state, __ATOMIC_ACQUIRE) == AGENT_RUNNING &&
	    pa_agent.hdr)
		count_lost_sample(size);
}

static bool watching(void)
{
	return __atomic_load_n(&pa_watch_frees, __ATOMIC_ACQUIRE) != WATCH_NONE;
}

bool agent__end_mapped(void *p)
{
	struct pa_thread *t = &pa_thread;
	uint32_t site;

	if (!exact() || !watching() || t->depth >= AGENT_MAX_DEPTH ||
	    agent__forked())
		return false;
	/* a thread that only frees joins the in-use count too: its exit
	 * handler flushes it (as the allocations' hook registers it) */
	if (unlikely(!t->counts_registered))
		agent__register_counts();
	t->depth++;
	site = blockmap__take((uintptr_t)p);
	if (site) {
		agent__count_live(-1);
		agent__count_inuse(-(int64_t)site_size(site));
		/* bounded by the table the agent made, whatever the map says */
		if (site <= pa_agent.sites.capacity)
			sites__count_free(&pa_agent.sites,
					  thread_lane(false)->counts,
					  &t->lane_busy, site - 1);
	}
	t->depth--;
	return site != 0;
}

bool agent__take_live(void *p, struct pa_live_entry *old)
{
	struct pa_thread *t = &pa_thread;
	bool found;

	if (!watching() || t->depth >= AGENT_MAX_DEPTH || agent__forked())
		return false;
	t->depth++;
	if (exact()) {
		uint32_t site = blockmap__take((uintptr_t)p);

		if (site) {
			site_entry(old, (uintptr_t)p, site);
			agent__count_live(-1);
			agent__count_inuse(-(int64_t)old->size);
			t->depth--;
			return true;
		}
	}
	found = live__remove(&pa_agent.live, (uintptr_t)p, old);
	if (found) {
		agent__count_live(-1);
		agent__count_inuse(-(int64_t)old->size);
	}
	t->depth--;
	return found;
}

void agent__emit_free(void *p, const struct pa_live_entry *old)
{
	struct pa_thread *t = &pa_thread;

	if (!watching() || t->depth >= AGENT_MAX_DEPTH || agent__forked())
		return;
	if (!old && (!__atomic_load_n(&live_overflowed, __ATOMIC_ACQUIRE) ||
		     __atomic_load_n(&pa_live_filter[live_filter_slot((uintptr_t)p)],
				     __ATOMIC_RELAXED) != 255))
		return;
	end_block(p, old);
}

/*
 * The block at p ended: old, its live entry, taken out of the table (or
 * NULL: an unverified free).  Counted at its site, or a free record.
 * Also for a stale entry an allocation found in its place, whatever the
 * depth: it is out of the table, and nothing else would end it.
 */
static void end_block(void *p, const struct pa_live_entry *old)
{
	struct pa_thread *t = &pa_thread;
	struct pa_rec_free *rec;
	struct pa_rec_hdr *h;
	int saved_errno;

	if (old && old->site) {
		/* counted at its site (exact mode): bounded by the table the
		 * agent made, whatever the entry says */
		if (old->site <= pa_agent.sites.capacity &&
		    pa_agent.sites.entries)
			sites__count_free(&pa_agent.sites,
					  thread_lane(false)->counts,
					  &t->lane_busy, old->site - 1);
		return;
	}
	saved_errno = errno;
	t->depth++;
	h = ring__reserve(&pa_agent.ring, sizeof(*rec), PA_REC_FREE);
	if (h) {
		rec = (struct pa_rec_free *)h;
		h->flags = old ? 0 : PA_FREE_UNVERIFIED;
		rec->alloc_id = old ? old->alloc_id : 0;
		rec->time_ns = pa_now_ns();
		rec->addr = (uintptr_t)p;
		rec->size = old ? old->size : 0;
		rec->tid = thread_id();
		rec->reserved = 0;
		ring__commit(&pa_agent.ring, h);
	}
	t->depth--;
	errno = saved_errno;
}

/*
 * A block counted at its site that the live table cannot hold again (a
 * failed realloc put it back while the table was full): its free would
 * not find the site.  It leaves the site now and comes back through the
 * ring, with the stack the stack table holds for it, untracked - so its
 * free is reported unverified and the tracer matches it by address.
 */
static void site_to_ring(const struct pa_live_entry *old)
{
	uint64_t frames[PA_MAX_FRAMES];
	struct pa_rec_alloc *rec;
	struct pa_rec_hdr *h;
	int got;
	uint32_t n;

	uint16_t flags = PA_ALLOC_UNTRACKED | PA_ALLOC_MOVED;

	if (old->site > pa_agent.sites.capacity || !pa_agent.sites.entries)
		return;
	if (pa_agent.sites.entries[old->site - 1].flags & PA_SITE_TRUNCATED)
		flags |= PA_ALLOC_TRUNCATED;
	sites__count_free(&pa_agent.sites, NULL, NULL, old->site - 1);
	untracked(old->key);
	got = stacks__get(&pa_agent.stacks, old->stack_id, frames);
	if (got < 0)
		return;
	n = (uint32_t)got;
	h = ring__reserve(&pa_agent.ring, (uint32_t)pa_alloc_rec_size(n, 0, 0),
			  PA_REC_ALLOC);
	if (!h) {
		__atomic_add_fetch(&pa_agent.hdr->lost_samples, 1,
				   __ATOMIC_RELEASE);
		__atomic_add_fetch(&pa_agent.hdr->lost_bytes, old->size,
				   __ATOMIC_RELEASE);
		return;
	}
	rec = (struct pa_rec_alloc *)h;
	rec->seq = old->alloc_id & ((1ull << 40) - 1);
	rec->time_ns = old->time_ns;
	rec->addr = old->key;
	rec->size = old->size;
	rec->tid = (uint32_t)(old->alloc_id >> 40);
	rec->nframes = n;
	memcpy(rec->frames, frames, n * sizeof(uint64_t));
	h->flags = flags;
	ring__commit(&pa_agent.ring, h);
}

void agent__unfree(const struct pa_live_entry *old)
{
	struct pa_live_entry stale;
	int ret;

	if (!watching())
		return;
	/* a block of the map goes back there */
	if (old->site && exact() &&
	    to_blockmap((void *)(uintptr_t)old->key, old->site, old->size))
		return;
	ret = live__insert(&pa_agent.live, old->key, old->size, old->alloc_id,
			   old->time_ns, old->stack_id, old->site, &stale);
	if (ret == 1) {
		end_block((void *)(uintptr_t)stale.key, &stale);
		agent__count_inuse((int64_t)old->size - (int64_t)stale.size);
	} else if (!ret) {
		agent__count_live(1);
		agent__count_inuse((int64_t)old->size);
	}
	else if (old->site)
		site_to_ring(old);
	else
		untracked(old->key);
}

static volatile uint8_t *armed;	/* a MADV_WIPEONFORK page */

/* The memfd's identity, to close pa_agent.fd only while it is ours: a
 * program may close every descriptor and open its own at that number. */
static dev_t memfd_dev;
static ino_t memfd_ino;

/* fstat by the system call (on x86-64 the kernel's struct stat is glibc's):
 * glibc's fstat symbol is 2.33+, before it an inline over __fxstat, and the
 * agent needs nothing newer than 2.17 (glibc_compat.h).  0 or -errno. */
static int fd_stat(int fd, struct stat *st)
{
	return syscall(SYS_fstat, fd, st) ? -errno : 0;
}

static void remember_fd(int fd)
{
	struct stat st;

	if (!fd_stat(fd, &st)) {
		memfd_dev = st.st_dev;
		memfd_ino = st.st_ino;
	}
}

static void close_own_fd(int fd)
{
	struct stat st;

	if (fd >= 0 && !fd_stat(fd, &st) && st.st_dev == memfd_dev &&
	    st.st_ino == memfd_ino)
		close(fd);
}

/* Off, and the parent's ring let go of (a forked child). */
static void leave_parent(void)
{
	__atomic_store_n(&pa_agent.state, AGENT_DISABLED, __ATOMIC_RELEASE);
	__atomic_store_n(&pa_watch_frees, WATCH_NONE, __ATOMIC_RELAXED);
	pa_thread.bytes_left = UINT64_MAX;
	pa_thread.tid = 0;
	pa_thread.depth = 0;
	if (pa_agent.hdr)
		munmap(pa_agent.hdr, pa_agent.map_size);
	pa_agent.hdr = NULL;
	close_own_fd(pa_agent.fd);
	pa_agent.fd = -1;
}

static int follow_fork(void);
/* --follow-children: descendants record (PPROF_ALLOC_FOLLOW) */
static bool following;

/* A forked child: followed (may_follow: from the atfork handler), or off
 * and announced as unprofiled. */
static void forked_child(bool may_follow)
{
	/* a parent whose tracer stopped following it (detached) does not
	 * pass following on */
	bool recording = __atomic_load_n(&pa_agent.state, __ATOMIC_ACQUIRE) ==
			 AGENT_RUNNING;

	leave_parent();
	unwind_cfi__forget();
	if (may_follow && recording && !follow_fork())
		return;
	session__announce();	/* a launched program's child: unprofiled */
}

static void atfork_child(void)
{
	stats__fork_end(true);
	forked_child(true);
}

/*
 * Whether the process has no thread but the caller and the agent's stats
 * thread, and that one is not answering (stats__fork_begin: it may look
 * symbols up): then no thread can hold the loader's lock across the fork,
 * and a followed child may build unwind tables at once.  /proc/self/
 * stat's num_threads (its 20th field); false when it cannot be read.
 */
static bool single_threaded(bool stats_quiet)
{
	char buf[1024], *p;
	long threads, ours = 0;
	ssize_t n;
	int fd, field;

	fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strrchr(buf, ')');	/* comm may hold spaces and parentheses */
	if (!p)
		return false;
	for (field = 2; field < 20 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return false;
	threads = strtol(p + 1, NULL, 10);
	if (stats_quiet && pa_agent.hdr &&
	    __atomic_load_n(&pa_agent.hdr->stats_thread, __ATOMIC_ACQUIRE) ==
		    PA_STATS_READY)
		ours = 1;
	return threads >= 1 && threads - ours <= 1;
}

/* Before a fork, in the parent: followed children learn whether the
 * loader's lock is surely free in them (follow_fork). */
static void atfork_prepare(void)
{
	pa_thread.fork_single = false;
	pa_thread.fork_began = false;
	if (!following ||
	    __atomic_load_n(&pa_agent.state, __ATOMIC_ACQUIRE) != AGENT_RUNNING)
		return;
	pa_thread.fork_began = true;
	pa_thread.fork_single = single_threaded(stats__fork_begin());
}

/* After the fork, in the parent: the stats thread may answer again (the
 * child has no stats thread; its handler ends the same way). */
static void atfork_parent(void)
{
	if (pa_thread.fork_began)
		stats__fork_end(false);
}

static void arm(void)
{
	void *page;

	if (armed)
		return;
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return;
	if (madvise(page, 4096, MADV_WIPEONFORK)) {
		munmap(page, 4096);	/* old kernel: atfork only */
		return;
	}
	*(volatile uint8_t *)page = 1;
	armed = page;
}

bool agent__forked(void)
{
	if (likely(!armed || *armed))
		return false;
	if (__atomic_load_n(&pa_agent.state, __ATOMIC_ACQUIRE) !=
	    AGENT_DISABLED)
		forked_child(false);
	return true;
}

static uint64_t env_u64(const char *name, uint64_t def, uint64_t lo,
			uint64_t hi)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return def;
	return v;
}

/*
 * Config read from a header: each field is read once, here, and only the
 * private copy is used afterwards.
 */
struct ring_config {
	uint64_t data_size, live_capacity, rate;
	uint64_t site_capacity;		/* the memfd's, for life */
	uint32_t max_frames;
	uint32_t unwind, stack_bytes;	/* enum pa_unwind */
};

/* The config recording started with (a followed fork records the same). */
static struct ring_config cur_cfg;
/* Whether an unwind mode and stack size can be used with this ring (fp
 * takes any size: it copies nothing). */
static bool unwind_ok(const struct ring_config *cfg)
{
	return cfg->unwind == PA_UNWIND_FP ||
	       ((cfg->unwind == PA_UNWIND_DWARF ||
		 cfg->unwind == PA_UNWIND_AUTO) &&
		pa_stack_bytes_fit(cfg->stack_bytes, cfg->data_size,
				   cfg->max_frames));
}

/* The unwind mode for samples from now on (header and private copy). */
static void set_unwind(struct pa_header *hdr, uint32_t mode,
		       uint32_t stack_bytes)
{
	uint64_t cfg = stack_copy__cfg(mode, stack_bytes);
	uint32_t old = (uint32_t)__atomic_load_n(&pa_agent.unwind_cfg,
						 __ATOMIC_RELAXED);

	__atomic_store_n(&pa_agent.unwind_cfg, cfg, __ATOMIC_RELAXED);
	hdr->unwind_mode = mode;
	hdr->stack_bytes = (uint32_t)(cfg >> 32);
	/* modules seen before auto was asked for are classified now */
	if (mode == PA_UNWIND_AUTO && old != PA_UNWIND_AUTO)
		modules__rescan_all();
}

int pa_unwind_check;

/* PPROF_ALLOC_UNWIND_CHECK=1: see agent.h (a test's knob; a launching
 * tracer that has it set passes it on in the environment) */
static void env_unwind_check(void)
{
	const char *s = getenv("PPROF_ALLOC_UNWIND_CHECK");

	pa_unwind_check = s && !strcmp(s, "1");
}

/* Preloaded on its own: PPROF_ALLOC_UNWIND=fp|dwarf|auto (auto, as the
 * tracer's default) and PPROF_ALLOC_STACK_BYTES; a bad value gives the
 * default, as the other variables do. */
static void env_unwind(struct ring_config *cfg)
{
	const char *mode = getenv("PPROF_ALLOC_UNWIND");

	cfg->unwind = PA_UNWIND_AUTO;
	if (mode && !strcmp(mode, "fp"))
		cfg->unwind = PA_UNWIND_FP;
	else if (mode && !strcmp(mode, "dwarf"))
		cfg->unwind = PA_UNWIND_DWARF;
	cfg->stack_bytes = (uint32_t)env_u64("PPROF_ALLOC_STACK_BYTES",
					     PA_STACK_BYTES_DEFAULT,
					     PA_STACK_BYTES_MIN,
					     PA_STACK_BYTES_MAX) & ~7u;
	if (!unwind_ok(cfg))
		cfg->stack_bytes = PA_STACK_BYTES_DEFAULT;
	if (!unwind_ok(cfg))
		cfg->unwind = PA_UNWIND_FP;
}

/* Map a memfd that the tracer prepared; validates everything it uses. */
static int map_given(int fd, struct ring_config *cfg)
{
	volatile struct pa_header *vh;
	struct pa_header *hdr;
	struct stat st;
	int seals;
	uint64_t fsize;

	if (fd_stat(fd, &st) || !S_ISREG(st.st_mode))
		return -EBADF;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) !=
			 (F_SEAL_SHRINK | F_SEAL_GROW))
		return -EPERM;
	if ((uint64_t)st.st_size < PA_HEADER_SIZE)
		return -EINVAL;
	hdr = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
		   MAP_SHARED, fd, 0);
	if (hdr == MAP_FAILED)
		return -errno;
	vh = hdr;
	cfg->data_size = vh->data_size;
	cfg->live_capacity = vh->live_capacity;
	cfg->rate = vh->sample_rate;
	cfg->max_frames = vh->max_frames;
	cfg->unwind = vh->unwind_mode;
	cfg->stack_bytes = vh->stack_bytes;
	cfg->site_capacity = vh->site_capacity;
	fsize = pa_layout_file_size(cfg->data_size, cfg->live_capacity,
				    cfg->max_frames, cfg->site_capacity);
	if (vh->magic != PA_MAGIC || vh->abi_version != PA_ABI_VERSION ||
	    !fsize || fsize != (uint64_t)st.st_size ||
	    vh->file_size != fsize || vh->data_offset != PA_HEADER_SIZE ||
	    vh->live_offset != PA_HEADER_SIZE + cfg->data_size ||
	    vh->stack_offset != pa_stack_offset(cfg->data_size,
						cfg->live_capacity) ||
	    vh->stack_capacity != pa_stack_capacity(cfg->live_capacity,
						    cfg->site_capacity != 0,
						    cfg->max_frames) ||
	    vh->site_offset != pa_site_offset(cfg->data_size,
					      cfg->live_capacity,
					      cfg->site_capacity != 0,
					      cfg->max_frames) ||
	    !cfg->rate || !cfg->max_frames || cfg->max_frames > PA_MAX_FRAMES ||
	    !unwind_ok(cfg)) {
		munmap(hdr, (size_t)st.st_size);
		return -EPROTO;
	}
	pa_agent.hdr = hdr;
	pa_agent.off = 0;
	pa_agent.map_size = (size_t)st.st_size;
	pa_agent.fd = fd;
	remember_fd(fd);
	unwind_cfi__publish();
	return 0;
}

/* Make our own memfd, so that a tracer can attach later. */
static int map_own(struct ring_config *cfg)
{
	struct pa_header *hdr = NULL;
	int fd = -1, err;

	err = pa_memfd_create(cfg->data_size, cfg->live_capacity, cfg->rate,
			      cfg->max_frames, &fd, &hdr);
	if (err)
		return err;
	cfg->site_capacity = pa_sites_for_rate(cfg->rate, cfg->live_capacity);
	pa_agent.hdr = hdr;
	pa_agent.off = 0;
	pa_agent.map_size = pa_layout_file_size(cfg->data_size,
						cfg->live_capacity,
						cfg->max_frames,
						cfg->site_capacity);
	pa_agent.fd = fd;
	remember_fd(fd);
	unwind_cfi__publish();
	return 0;
}

/* Launched by a tracer: give it the moment it needs to read our maps
 * (it wakes the futex on tracer_state when it has) */
static void wait_for_tracer(struct pa_header *hdr)
{
	pa_futex_wait_until(&hdr->tracer_state, PA_TRACER_NONE,
			    pa_now_ns() +
				    PA_TRACER_WAIT_MS * PA_NSEC_PER_MSEC);
}

/* How recording starts (start_recording). */
enum start_how {
	START_SCAN	= 1,	/* report the modules now (dl_iterate_phdr) */
	START_STATS	= 2,	/* the stats thread, if the tracer wants it */
	START_WAIT	= 4,	/* wait for the tracer to have read our maps */
	START_LAUNCHED	= START_SCAN | START_STATS | START_WAIT,
};

/* Everything after the memfd is mapped: the private copies, then go. */
static void start_recording(const struct ring_config *cfg, unsigned int how)
{
	struct pa_header *hdr = pa_agent.hdr;
	uint8_t *base = (uint8_t *)hdr;

	/* the program defines allocator functions itself: the tracer
	 * patches their entries while we wait, into a page mapped near it
	 * before it can see us running */
	if ((how & START_WAIT) && hdr->entry_wanted)
		entry__map_page();
	cur_cfg = *cfg;
	pa_agent.rate = cfg->rate;
	pa_agent.max_frames = cfg->max_frames;
	pa_agent.unwind_cfg = stack_copy__cfg(cfg->unwind, cfg->stack_bytes);
	hdr->unwind_mode = cfg->unwind;
	hdr->stack_bytes = (uint32_t)(pa_agent.unwind_cfg >> 32);
	ring_producer__init(&pa_agent.ring, hdr, base + PA_HEADER_SIZE,
			    cfg->data_size);
	live__init(&pa_agent.live,
		   (struct pa_live_entry *)(base + PA_HEADER_SIZE +
					    cfg->data_size),
		   cfg->live_capacity, pa_live_filter);
	stacks__init(&pa_agent.stacks,
		     base + pa_stack_offset(cfg->data_size, cfg->live_capacity),
		     pa_stack_capacity(cfg->live_capacity,
				       cfg->site_capacity != 0,
				       cfg->max_frames),
		     cfg->max_frames, &hdr->stack_words_used);
	sites__init(&pa_agent.sites,
		    base + pa_site_offset(cfg->data_size, cfg->live_capacity,
					  cfg->site_capacity != 0,
					  cfg->max_frames),
		    cfg->site_capacity, &hdr->sites_used,
		    &hdr->site_lanes_used);
	pa_agent.ring.wait = cfg->rate == 1;
	agent__inuse_reset(hdr);
	/* an agent turned off and started again: what the map held is the
	 * old memfd's */
	blockmap__reset(false);
	if (!pa_agent.atfork_done) {
		pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
		pa_agent.atfork_done = 1;
	}
	arm();
	hdr->agent_pid = (uint32_t)getpid();
	hdr->agent_start_ns = pa_now_ns();
	/* the stats thread comes below: a tracer woken by RUNNING that
	 * asks first waits for it, rather than hear there is none
	 * (stats__start moves STARTING on, to READY or why not) */
	if ((how & START_STATS) &&
	    __atomic_load_n(&hdr->stats_wanted, __ATOMIC_ACQUIRE)) {
		uint32_t none = PA_STATS_NONE;

		__atomic_compare_exchange_n(&hdr->stats_thread, &none,
					    PA_STATS_STARTING, false,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&hdr->agent_state, PA_STATE_RUNNING,
			 __ATOMIC_RELEASE);
	/* a tracer that launched us waits on it for our maps */
	if (how & START_WAIT)
		pa_futex_wake(&hdr->agent_state);
	if (how & START_SCAN)
		modules__scan();
	/* a tracer is there to ask for allocator stats: the thread that
	 * answers starts now, in a constructor or a borrowed thread (not for
	 * a program preloaded on its own, nor its children: a thread more
	 * changes what unshare(2) and sandboxes allow) */
	if ((how & START_STATS) &&
	    __atomic_load_n(&hdr->stats_wanted, __ATOMIC_ACQUIRE)) {
		stats__hold_builds(how & START_WAIT);
		stats__start(true);	/* before the program runs */
	}
	if (how & START_WAIT) {
		wait_for_tracer(hdr);
		stats__hold_builds(false);
	}
	/* Frees are watched from here on; allocations from the next one. */
	__atomic_store_n(&pa_watch_frees, WATCH_FILTER, __ATOMIC_RELEASE);
	__atomic_store_n(&pa_agent.state, AGENT_RUNNING, __ATOMIC_RELEASE);
}

/*
 * "rate:max_frames:ring_size:live_size:unwind:stack_bytes:stats", from
 * PPROF_ALLOC_FOLLOW or the tail of PPROF_ALLOC_EXEC, checked as a memfd
 * header would be.  0 or -EINVAL.
 */
static int parse_sizes(const char *s, struct ring_config *cfg, bool *stats)
{
	unsigned long long v[7];
	char *end;
	int i;

	for (i = 0; i < 7; i++) {
		errno = 0;
		v[i] = strtoull(s, &end, 10);
		if (errno || end == s || *end != (i < 6 ? ':' : 0))
			return -EINVAL;
		s = end + 1;
	}
	cfg->rate = v[0];
	cfg->max_frames = (uint32_t)v[1];
	cfg->data_size = v[2];
	cfg->live_capacity = v[3];
	cfg->unwind = (uint32_t)v[4];
	cfg->stack_bytes = (uint32_t)v[5];
	*stats = v[6] != 0;
	if (!cfg->rate || cfg->rate > 1ull << 40 || !cfg->max_frames ||
	    v[1] > PA_MAX_FRAMES || v[4] > PA_UNWIND_AUTO ||
	    v[5] > PA_STACK_BYTES_MAX ||
	    !pa_layout_file_size(cfg->data_size, cfg->live_capacity,
				 cfg->max_frames,
				 pa_sites_for_rate(cfg->rate,
						   cfg->live_capacity)) ||
	    !unwind_ok(cfg))
		return -EINVAL;
	return 0;
}

/* PPROF_ALLOC_FOLLOW (stats is not used: descendants run no stats
 * thread).  0, -ENOENT (unset) or -EINVAL. */
static int follow_env(struct ring_config *cfg, bool *stats)
{
	const char *s = getenv(PA_ENV_FOLLOW);

	return s ? parse_sizes(s, cfg, stats) : -ENOENT;
}

/* width digits at s into *v; false if one is not a digit. */
static bool get_digits(const char *s, int width, unsigned long long *v)
{
	int i;

	*v = 0;
	for (i = 0; i < width; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		*v = *v * 10 + (unsigned long long)(s[i] - '0');
	}
	return true;
}

/* PPROF_ALLOC_EXEC, if it names this process: 0; -ENOENT when it is unset
 * or names another (a descendant), -EINVAL when it is malformed. */
static int exec_env(struct ring_config *cfg, bool *stats)
{
	const char *s = getenv(PA_ENV_EXEC);
	unsigned long long pid, ns, own_ns;

	if (!s)
		return -ENOENT;
	if (!get_digits(s, PA_EXEC_PID_DIGITS, &pid) ||
	    s[PA_EXEC_PID_DIGITS] != ':' ||
	    !get_digits(s + PA_EXEC_PID_DIGITS + 1, PA_EXEC_NS_DIGITS, &ns) ||
	    s[PA_EXEC_PID_DIGITS + 1 + PA_EXEC_NS_DIGITS] != ':')
		return -EINVAL;
	if (!pid || pid != (unsigned long long)getpid())
		return -ENOENT;
	/* the same number in another pid namespace is another process */
	own_ns = pa_pidns_inode();
	if (ns && own_ns && ns != own_ns)
		return -ENOENT;
	return parse_sizes(s + PA_EXEC_PID_DIGITS + PA_EXEC_NS_DIGITS + 2, cfg,
			   stats);
}

/* Let go of a memfd of our own that nobody will read. */
static void drop_own(void)
{
	munmap(pa_agent.hdr, pa_agent.map_size);
	close(pa_agent.fd);
	pa_agent.hdr = NULL;
	pa_agent.fd = -1;
}

/* A memfd of our own, not populated, handed to the tracer (exec: as the
 * launched process's new image; stats: its stats thread wanted).  0 or
 * -errno (nothing left behind). */
static int hand_over_own(struct ring_config *cfg, bool exec, bool stats)
{
	int err = map_own(cfg);

	if (err)
		return err;
	pa_agent.hdr->stats_wanted = stats;
	err = exec ? session__hand_over_exec(pa_agent.fd) :
		     session__hand_over(pa_agent.fd);
	if (err)
		drop_own();
	return err;
}

/*
 * A followed child, in the atfork handler: a memfd of its own, with its
 * parent's sizes, handed to the tracer; then record as the parent did.
 * Not populated: a child that execs at once (a shell's) pays four system
 * calls, not the ring's pages.  0 or -errno (then off).
 */
static int follow_fork(void)
{
	struct ring_config cfg = cur_cfg;
	int err;

	if (!following)
		return -ENOENT;
	err = hand_over_own(&cfg, false, false);
	if (err)
		return err;
	memset(pa_live_filter, 0, sizeof(pa_live_filter));
	blockmap__reset(true);
	live_overflowed = 0;
	memset(pa_thread.calls, 0, sizeof(pa_thread.calls));
	pa_thread.last_stack = pa_thread.last_site = 0;
	/* the lanes were the parent's threads' */
	sites__forget_lanes();
	pa_thread.lane = 0;
	memset(pa_thread.bytes, 0, sizeof(pa_thread.bytes));
	pa_thread.samples = 0;
	pa_thread.live_delta = 0;
	pa_thread.initialized = 0;
	pa_thread.bytes_left = 0;
	modules__forget();
	if (armed)
		*armed = 1;	/* wiped in the child: this one records */
	/* No module scan here: a thread of the parent, which the child does
	 * not have, may have held the loader's lock at the fork, and
	 * dl_iterate_phdr would wait for it for ever.  The child's modules
	 * are its parent's: its follower reads them from /proc while the
	 * child waits (at most 2 s); a later dlopen rescans.  A parent with
	 * no other thread (a daemon's master: nginx, postgres) held no lock:
	 * its child builds the unwind tables it needs from the start. */
	if (pa_thread.fork_single)
		unwind_cfi__loader_usable();
	start_recording(&cfg, START_WAIT);
	return 0;
}

/* A descendant exec'd with PPROF_ALLOC_FOLLOW: record, handed over.  0 or
 * -errno (then off, and announced as unprofiled by the caller). */
static int follow_exec(void)
{
	struct ring_config cfg = { 0 };
	bool stats = false;
	int err;

	err = follow_env(&cfg, &stats);
	if (err)
		return err;
	/* not populated: a descendant may live a millisecond (a shell's
	 * commands), and 13 MB zeroed for each is most of its cost */
	err = hand_over_own(&cfg, false, false);
	if (err)
		return err;
	/* as launched, but without the stats thread: a thread more in every
	 * descendant changes what unshare(2) and sandboxes allow */
	(void)stats;
	start_recording(&cfg, START_SCAN | START_WAIT);
	return 0;
}

/*
 * The launched process exec'd another program and this is its new image
 * (PPROF_ALLOC_EXEC names our pid): record as launched, into a memfd of
 * our own handed over, which the tracer reads from now on.  0 or -errno
 * (-ENOENT: not the launched process; then off, announced by the caller).
 */
static int exec_main(void)
{
	struct ring_config cfg = { 0 };
	bool stats = false;
	int err;

	err = exec_env(&cfg, &stats);
	if (err)
		return err;
	/* not populated: most images of a launcher's chain (a shim's bash,
	 * env, nice) live a few milliseconds */
	err = hand_over_own(&cfg, true, stats);
	if (err)
		return err;
	start_recording(&cfg, START_LAUNCHED);
	return 0;
}

int agent__start(void)
{
	bool launched = false;
	const char *env = getenv(PA_ENV_FD);
	struct ring_config cfg = { 0 };
	int err = -ENOENT;

	bool session = session__init();

	env_unwind_check();
	following = session && getenv(PA_ENV_FOLLOW);
	if (env) {
		char *end;
		long fd = strtol(env, &end, 10);

		if (!*end && fd >= 0 && fd < 1 << 20) {
			err = map_given((int)fd, &cfg);
			if (!err) {
				fcntl((int)fd, F_SETFD, FD_CLOEXEC);
				launched = true;
			}
		}
		unsetenv(PA_ENV_FD);
	}
	if (!launched && session) {
		/* a descendant of a launched program (one whose environment
		 * still names the memfd, as a shell passes on main's envp,
		 * included): followed, or off and said so; or the launched
		 * process itself in a program it exec'd */
		if (!exec_main())
			return 0;
		if (following && !follow_exec())
			return 0;
		session__announce();
		__atomic_store_n(&pa_agent.state, AGENT_DISABLED,
				 __ATOMIC_RELEASE);
		return -ECHILD;
	}
	if (err) {
		cfg.rate = env_u64("PPROF_ALLOC_RATE", DEFAULT_RATE, 1,
				   1ull << 40);
		cfg.max_frames = (uint32_t)env_u64("PPROF_ALLOC_MAX_FRAMES",
						   DEFAULT_MAX_FRAMES, 1,
						   PA_MAX_FRAMES);
		cfg.data_size = STANDALONE_RING_SIZE;
		cfg.live_capacity = STANDALONE_LIVE;
		env_unwind(&cfg);
		err = map_own(&cfg);
	}
	if (err) {
		__atomic_store_n(&pa_agent.state, AGENT_DISABLED,
				 __ATOMIC_RELEASE);
		return err;
	}
	start_recording(&cfg, launched ? START_LAUNCHED : START_SCAN);
	return 0;
}

/* A DETACH command is done: clear it, but never a STATS request that a
 * tracer wrote since (the stats thread answers that one). */
static void clear_detach(struct pa_header *hdr)
{
	uint32_t expected = PA_CMD_DETACH;

	__atomic_compare_exchange_n(&hdr->command, &expected, PA_CMD_NONE, 0,
				    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/*
 * Attached by a tracer (it called pprof_alloc_attach in the target).  The
 * first time the memfd is made with the tracer's sizes; later attaches
 * reuse it.  What the live table held went stale while nobody watched the
 * frees: the tracer empties it through its own mapping before it calls us
 * (tens of MB at --rate 1, not work for a borrowed thread).
 */
int agent__attach(uint64_t rate, uint64_t max_frames, uint64_t ring_size,
		  uint64_t live_size, uint64_t flags)
{
	struct ring_config cfg = {
		.data_size = ring_size, .live_capacity = live_size,
		.rate = rate, .max_frames = (uint32_t)max_frames,
		.unwind = PA_ATTACH_UNWIND_MODE(flags),
		.stack_bytes = PA_ATTACH_STACK_BYTES(flags),
	};
	int state = __atomic_load_n(&pa_agent.state, __ATOMIC_ACQUIRE);
	int err;

	if (state == AGENT_RUNNING) {
		/* preloaded, or attached already: the ring is the one there
		 * is; the tracer's unwind mode applies if it fits */
		cfg.data_size = pa_agent.ring.size;
		cfg.max_frames = pa_agent.max_frames;
		if (unwind_ok(&cfg))
			set_unwind(pa_agent.hdr, cfg.unwind, cfg.stack_bytes);
		if (flags & PA_ATTACH_STATS)
			stats__start(false);	/* preloaded: a tracer is here now */
		return 0;
	}
	if (state == AGENT_DISABLED)
		return -ENOTRECOVERABLE;
	/* turned off (agent__off): no memfd any more, start as the first
	 * attach did */
	if (state == AGENT_DETACHED && pa_agent.off) {
		state = AGENT_NOT_STARTED;
		counters__restart();
		modules__forget();
		live_overflowed = 0;
	}
	if (!rate || rate > 1ull << 40 || !max_frames ||
	    max_frames > PA_MAX_FRAMES ||
	    !pa_layout_file_size(ring_size, live_size, (uint32_t)max_frames,
				 pa_sites_for_rate(rate, live_size)))
		return -EINVAL;
	if (state == AGENT_DETACHED) {
		cfg.data_size = pa_agent.ring.size;
		cfg.max_frames = pa_agent.max_frames;
	}
	if (!unwind_ok(&cfg))
		return -EINVAL;
	if (state == AGENT_DETACHED) {
		struct pa_header *hdr = pa_agent.hdr;

		/* Nobody reads the header while detached, so the sampling
		 * config may change; the sizes are the memfd's for life. */
		/* (max_frames sizes the stack table: it stays) */
		pa_agent.rate = rate;
		hdr->sample_rate = rate;
		/* exact mode needs the site table the memfd was made with;
		 * without one every record goes through the ring, waited for */
		pa_agent.ring.wait = rate == 1;
		set_unwind(hdr, cfg.unwind, cfg.stack_bytes);
		memset(pa_live_filter, 0, sizeof(pa_live_filter));
		blockmap__reset(false);
		live_overflowed = 0;
		__atomic_store_n(&hdr->live_entries, 0, __ATOMIC_RELAXED);
		agent__inuse_reset(hdr);
		if (flags & PA_ATTACH_STATS)
			stats__start(false);
		clear_detach(hdr);
		__atomic_store_n(&pa_watch_frees, WATCH_FILTER,
				 __ATOMIC_RELEASE);
		__atomic_store_n(&hdr->agent_state, PA_STATE_RUNNING,
				 __ATOMIC_RELEASE);
		__atomic_store_n(&pa_agent.state, AGENT_RUNNING,
				 __ATOMIC_RELEASE);
		return 0;
	}
	/* not populated (pprof_alloc_memfd.h): our caller is a thread
	 * borrowed from the program, whose stop should be short */
	err = map_own(&cfg);
	if (err)
		return err;
	start_recording(&cfg, START_SCAN);
	if (flags & PA_ATTACH_STATS)
		stats__start(false);
	return 0;
}

/*
 * Where the memfd of an agent turned off was: zeroed memory of our own,
 * which a thread still on its way out of a hook may read and write
 * harmlessly, unmapped at the release.  Past PLACEHOLDERS of them (turned
 * off that many times with no release between) the next is not tracked:
 * it stays mapped for good, as a thread could still be in it.
 */
#define PLACEHOLDERS 8
static struct {
	void *at;
	size_t size;
} placeholders[PLACEHOLDERS];

/*
 * An injected agent, detached, turns itself off (pprof_alloc_off): its
 * thread ends and its stack is unmapped, its pthread key is deleted, its
 * memfd is closed and its mapping replaced by zeroed anonymous memory.
 * The replacement is made aside and moved over the memfd's range with
 * mremap(MREMAP_FIXED), which swaps the range in one step: no instant
 * leaves it unmapped, and a failure leaves the memfd mapped as it was.
 * pa_agent.hdr keeps its value: a thread still in a hook's slow path (a
 * signal handler may hold one there for seconds) reads and writes the
 * placeholder, never a NULL header.  Every path asks pa_agent.off instead.
 * Returns 0 (off, or off already), -EPERM (a preloaded agent: it stays,
 * only the stats thread a tracer started ends), -EINVAL (not detached),
 * -ETIMEDOUT (the thread did not end: it is answering), -EBUSY, -errno.
 */
int agent__off(void)
{
	struct pa_header *hdr = pa_agent.hdr;
	unsigned int i;
	void *p, *q;
	int err;

	if (__atomic_load_n(&pa_agent.state, __ATOMIC_ACQUIRE) !=
	    AGENT_DETACHED)
		return -EINVAL;
	if (!pa_agent.injected) {
		/* preloaded: it stays, memfd and all, as it was before a
		 * tracer came - without the thread that tracer started */
		stats__stop();
		return -EPERM;
	}
	if (pa_agent.off || !hdr)
		return 0;
	err = stats__stop();
	if (!err)
		err = counters__stop();
	if (err)
		return err;
	p = mmap(NULL, pa_agent.map_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	q = mremap(p, pa_agent.map_size, pa_agent.map_size,
		   MREMAP_MAYMOVE | MREMAP_FIXED, hdr);
	if (q == MAP_FAILED) {
		err = -errno;
		munmap(p, pa_agent.map_size);
		return err;
	}
	for (i = 0; i < PLACEHOLDERS && placeholders[i].at; i++)
		;
	if (i < PLACEHOLDERS) {
		placeholders[i].at = q;
		placeholders[i].size = pa_agent.map_size;
	}
	__atomic_store_n(&pa_agent.off, 1, __ATOMIC_RELEASE);
	close_own_fd(pa_agent.fd);
	pa_agent.fd = -1;
	return 0;
}

/* crtbeginS.o's: this library's handle for __cxa_atexit, __register_atfork
 * (our pthread_atfork) and __cxa_finalize. */
extern void *__dso_handle;
extern void __cxa_finalize(void *dso);

/*
 * The rest of an agent turned off, while the tracer holds every other
 * thread stopped and has found none inside the agent (pprof_alloc_release):
 * the placeholders and the unwind tables; when the agent is about to be
 * unloaded (unloading), also the fork-detecting page, which the hooks read
 * (a hook's address copied by the program keeps it otherwise), and our
 * atfork handlers, the last way into the agent: glibc
 * drops a library's in __cxa_finalize, which dlclose would call - too
 * late, as the tracer lets the program run again before its dlclose (which
 * takes the loader's lock and the allocator's, perhaps held by a thread
 * it stopped).  0, -EPERM (preloaded) or -EINVAL (not off).
 */
int agent__release(bool unloading)
{
	unsigned int i;

	if (!pa_agent.injected)
		return -EPERM;
	if (__atomic_load_n(&pa_agent.state, __ATOMIC_ACQUIRE) !=
	    AGENT_DETACHED || !pa_agent.off)
		return -EINVAL;
	/* no thread is inside the agent: the header may go */
	__atomic_store_n(&pa_agent.hdr, NULL, __ATOMIC_RELEASE);
	for (i = 0; i < PLACEHOLDERS && placeholders[i].at; i++) {
		munmap(placeholders[i].at, placeholders[i].size);
		placeholders[i].at = NULL;
	}
	unwind_cfi__free();
	blockmap__free();
	sites__free();
	if (!unloading)
		return 0;
	if (armed) {
		munmap((void *)armed, 4096);
		armed = NULL;
	}
	/* runs our __cxa_atexit handlers (there are none) and unregisters
	 * our atfork handlers; dlclose's own call finds nothing left (and
	 * if there is no dlclose after all, a later attach registers them
	 * again) */
	__cxa_finalize(__dso_handle);
	pa_agent.atfork_done = 0;
	return 0;
}

/*
 * Stop recording.  Hooks become pass-through first (state, then the free
 * filter), so that a thread already inside one, or one that copied a hook's
 * address, does nothing; the caller then puts the GOT slots back, and
 * only then tells the tracer (agent__detached): a tracer that unloads the
 * agent looks for copies of the hooks' addresses next, and none may be
 * taken from a slot after that.
 */
int agent__detach(void)
{
	int expected = AGENT_RUNNING;

	if (!__atomic_compare_exchange_n(&pa_agent.state, &expected,
					 AGENT_DETACHED, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return expected == AGENT_DETACHED ? 0 : -EINVAL;
	__atomic_store_n(&pa_watch_frees, WATCH_NONE, __ATOMIC_RELEASE);
	memset(pa_live_filter, 0, sizeof(pa_live_filter));
	blockmap__reset(false);
	return 0;
}

void agent__detached(void)
{
	__atomic_store_n(&pa_agent.hdr->agent_state, PA_STATE_DETACHED,
			 __ATOMIC_RELEASE);
	clear_detach(pa_agent.hdr);
}
