// SPDX-License-Identifier: MIT
/*
 * inuse.c - exact mode's bytes in use and their highest point, counted
 * in the agent.
 *
 * The tracer reads the site counters every 50 ms, so a heap that rises
 * and falls between two reads - or a whole program shorter than one -
 * shows it a peak far below the real one.  Only the agent sees every
 * allocation and free in order, so at --rate 1 it counts the requested
 * bytes of the blocks in its live table, and their high-water mark.
 *
 * A shared counter bumped at every call would bounce one cache line
 * between the cores of every allocating thread.  So each thread counts
 * its own net bytes (allocated less freed by it: negative for a thread
 * that frees what others made) and holds a share of the header's
 * inuse_bytes: held is kept within [net, net + 2 * CHUNK] - a thread
 * whose net passes held takes held up to net + CHUNK, one whose net
 * falls more than 2 * CHUNK below gives back down to net + CHUNK, each
 * an atomic add to inuse_bytes by the same amount.  So inuse_bytes, the
 * sum of the held shares, is never below the bytes in use, and at most
 * 2 * CHUNK above them per thread; a churning thread touches the shared
 * line once per CHUNK bytes of drift, not per call.  Its high-water mark
 * (inuse_peak) is the peak's upper bound.
 *
 * A thread also keeps the highest its own net reached.  In a process
 * where one thread alone ever counted (inuse_threads == 1) that is the
 * heap's exact peak, and the thread publishes it (inuse_peak_one) at each
 * new high - a process that ends by _exit or a signal flushes nothing.
 * A thread that ends gives its slack back and leaves inuse_live_threads:
 * the bound is 2 chunks for each of the most threads counting at once
 * (inuse_live_max), not for every thread that ever counted.
 *
 * Signals: a handler may count on top of this thread's own count.  Every
 * change to the thread's words is one instruction without lock (an add,
 * or a compare-and-swap against the value a change was computed from): a
 * signal comes between instructions, and no other thread writes them.
 * Every change to held is mirrored by the same change to inuse_bytes, so
 * an interleaving can leave held out of its window (put right at the next
 * call) but never counts a byte twice or loses one.
 */
#include "agent.h"
#include "pa_clock.h"

#define INUSE_CHUNK	PA_INUSE_CHUNK

/* Restarted (agent__inuse_reset): threads drop what they held before. */
uint32_t pa_inuse_epoch = 1;
#define epoch pa_inuse_epoch
/* inuse_peak when its time was last taken */
static uint64_t stamped_at;

/* *p from *expected to v as one instruction (no lock: see thread_add);
 * false, and *expected what *p was, if it was not. */
static inline bool thread_cas(int64_t *p, int64_t *expected, int64_t v)
{
	return pa_arch_thread_cas(p, expected, v);
}

static void raise_peak(struct pa_header *hdr, uint64_t now)
{
	uint64_t peak = __atomic_load_n(&hdr->inuse_peak, __ATOMIC_RELAXED);

	while (now > peak) {
		if (__atomic_compare_exchange_n(&hdr->inuse_peak, &peak, now, 1,
						__ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			/* the time of a step up of 1/64, not of every byte */
			if (now - __atomic_load_n(&stamped_at,
						  __ATOMIC_RELAXED) >=
			    now / 64) {
				__atomic_store_n(&stamped_at, now,
						 __ATOMIC_RELAXED);
				__atomic_store_n(&hdr->inuse_peak_ns,
						 pa_coarse_ns(),
						 __ATOMIC_RELAXED);
			}
			return;
		}
	}
}

/*
 * The thread's share back in its window around its net.  held changes by
 * a compare-and-swap against the very value d was computed from, so a
 * handler that moved it meanwhile makes this try again rather than give
 * the same slack back twice; then inuse_bytes takes the same d.
 */
static void hold(struct pa_thread *t, struct pa_header *hdr)
{
	int64_t held = t->inuse_held, net, d;
	uint64_t now;

	for (;;) {
		net = __atomic_load_n(&t->inuse_net, __ATOMIC_RELAXED);
		if (net > held || net < held - 2 * INUSE_CHUNK)
			d = net + INUSE_CHUNK - held;
		else
			return;
		if (thread_cas(&t->inuse_held, &held, held + d))
			break;
	}
	now = __atomic_add_fetch(&hdr->inuse_bytes, (uint64_t)d,
				 __ATOMIC_RELAXED);
	if (d > 0)
		raise_peak(hdr, now);
}

/* The thread's own highest net; while it alone counts, published at once
 * (a process that ends by _exit or a signal flushes nothing). */
static void raise_top(struct pa_thread *t, struct pa_header *hdr,
		      int64_t net)
{
	int64_t top = t->inuse_top;
	uint64_t one;

	while (net > top)
		if (thread_cas(&t->inuse_top, &top, net))
			break;
	if (net <= top ||
	    __atomic_load_n(&hdr->inuse_threads, __ATOMIC_RELAXED) != 1)
		return;
	one = __atomic_load_n(&hdr->inuse_peak_one, __ATOMIC_RELAXED);
	while ((uint64_t)net > one &&
	       !__atomic_compare_exchange_n(&hdr->inuse_peak_one, &one,
					    (uint64_t)net, 1, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
}

static void join(struct pa_thread *t, struct pa_header *hdr)
{
	uint32_t live, most;

	t->inuse_net = 0;
	t->inuse_held = 0;
	t->inuse_top = 0;
	t->inuse_epoch = __atomic_load_n(&epoch, __ATOMIC_ACQUIRE);
	__atomic_add_fetch(&hdr->inuse_threads, 1, __ATOMIC_RELAXED);
	live = __atomic_add_fetch(&hdr->inuse_live_threads, 1,
				  __ATOMIC_RELAXED);
	most = __atomic_load_n(&hdr->inuse_live_max, __ATOMIC_RELAXED);
	while (live > most &&
	       !__atomic_compare_exchange_n(&hdr->inuse_live_max, &most, live,
					    1, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
}

void agent__inuse_moved(int64_t net)
{
	struct pa_thread *t = &pa_thread;
	struct pa_header *hdr = pa_agent.hdr;
	int64_t held;

	if (!hdr)
		return;
	/* the shared count first: a reader never sees the thread's own high
	 * above the shared one's (ringfile__peak would take it for a lie) */
	held = t->inuse_held;
	if (net > held || net < held - 2 * INUSE_CHUNK)
		hold(t, hdr);
	if (net > t->inuse_top)
		raise_top(t, hdr, net);
}

void agent__inuse_join(int64_t bytes)
{
	struct pa_thread *t = &pa_thread;
	struct pa_header *hdr = pa_agent.hdr;

	if (!hdr)
		return;
	if (t->inuse_epoch != __atomic_load_n(&epoch, __ATOMIC_RELAXED))
		join(t, hdr);
	agent__inuse_moved(pa_thread_add(&t->inuse_net, bytes));
}

void agent__flush_inuse(bool exiting)
{
	struct pa_thread *t = &pa_thread;
	struct pa_header *hdr = pa_agent.hdr;
	int64_t held, d;

	if (pa_agent.rate != 1 || !hdr || agent__forked() ||
	    t->inuse_epoch != __atomic_load_n(&epoch, __ATOMIC_RELAXED) ||
	    !exiting)
		return;
	/* a thread that ends gives back its slack: its net stays counted,
	 * and it no longer widens the bound */
	held = t->inuse_held;
	do
		d = t->inuse_net - held;
	while (!thread_cas(&t->inuse_held, &held, held + d));
	__atomic_add_fetch(&hdr->inuse_bytes, (uint64_t)d, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&hdr->inuse_live_threads, 1, __ATOMIC_RELAXED);
	t->inuse_epoch = 0;
}

void agent__inuse_reset(struct pa_header *hdr)
{
	__atomic_add_fetch(&epoch, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&hdr->inuse_bytes, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&hdr->inuse_peak, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&stamped_at, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&hdr->inuse_peak_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&hdr->inuse_peak_one, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&hdr->inuse_threads, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&hdr->inuse_live_threads, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&hdr->inuse_live_max, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&hdr->inuse_chunk, INUSE_CHUNK, __ATOMIC_RELAXED);
}
