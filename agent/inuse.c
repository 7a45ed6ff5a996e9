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
 * heap's exact peak, and the thread publishes it (inuse_peak_one) when it
 * flushes its counters: every 256 samples, at its exit and at the
 * process's.
 *
 * Signals: a handler may free a live block on top of this thread's own
 * count.  Every change to the thread's words is one instruction (an add
 * without lock: a signal comes between instructions, and no other thread
 * writes them), and every change to held is mirrored by the same change
 * to inuse_bytes, so an interleaving can leave held out of its window
 * (put right at the next call) but never lose a byte.
 */
#include "agent.h"
#include "pa_clock.h"

#define INUSE_CHUNK	(16 * 1024)

/* Restarted (agent__inuse_reset): threads drop what they held before. */
static uint32_t epoch = 1;
/* inuse_peak when its time was last taken */
static uint64_t stamped_at;

/* *p += v as one instruction: atomic against this thread's signal
 * handlers, not against other threads (none writes *p). */
static inline int64_t thread_add(int64_t *p, int64_t v)
{
#ifdef __x86_64__
	int64_t old = v;

	__asm__ volatile("xaddq %0, %1" : "+r"(old), "+m"(*p) : : "cc");
	return old + v;
#else
	return __atomic_add_fetch(p, v, __ATOMIC_RELAXED);
#endif
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

/* Move d bytes into this thread's share (d < 0: out of it). */
static void hold(struct pa_thread *t, struct pa_header *hdr, int64_t d)
{
	uint64_t now;

	thread_add(&t->inuse_held, d);
	now = __atomic_add_fetch(&hdr->inuse_bytes, (uint64_t)d,
				 __ATOMIC_RELAXED);
	if (d > 0)
		raise_peak(hdr, now);
}

static void join(struct pa_thread *t, struct pa_header *hdr)
{
	t->inuse_net = 0;
	t->inuse_held = 0;
	t->inuse_top = 0;
	t->inuse_epoch = __atomic_load_n(&epoch, __ATOMIC_ACQUIRE);
	__atomic_add_fetch(&hdr->inuse_threads, 1, __ATOMIC_RELAXED);
}

void agent__count_inuse(int64_t bytes)
{
	struct pa_thread *t = &pa_thread;
	struct pa_header *hdr = pa_agent.hdr;
	int64_t net, held;

	if (pa_agent.rate != 1 || !hdr || !bytes)
		return;
	if (t->inuse_epoch != __atomic_load_n(&epoch, __ATOMIC_RELAXED))
		join(t, hdr);
	net = thread_add(&t->inuse_net, bytes);
	if (net > t->inuse_top)
		t->inuse_top = net;	/* a handler's higher top may be lost:
					   only while it is above this one */
	held = t->inuse_held;
	if (net > held)
		hold(t, hdr, net + INUSE_CHUNK - held);
	else if (net < held - 2 * INUSE_CHUNK)
		hold(t, hdr, net + INUSE_CHUNK - held);
}

void agent__flush_inuse(bool exiting)
{
	struct pa_thread *t = &pa_thread;
	struct pa_header *hdr = pa_agent.hdr;
	uint64_t top, one;

	if (pa_agent.rate != 1 || !hdr || agent__forked() ||
	    t->inuse_epoch != __atomic_load_n(&epoch, __ATOMIC_RELAXED))
		return;
	/* a thread that ends gives back its slack: its net stays counted */
	if (exiting && t->inuse_held != t->inuse_net)
		hold(t, hdr, t->inuse_net - t->inuse_held);
	if (__atomic_load_n(&hdr->inuse_threads, __ATOMIC_RELAXED) != 1 ||
	    t->inuse_top <= 0)
		return;
	top = (uint64_t)t->inuse_top;
	one = __atomic_load_n(&hdr->inuse_peak_one, __ATOMIC_RELAXED);
	while (top > one &&
	       !__atomic_compare_exchange_n(&hdr->inuse_peak_one, &one, top, 1,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
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
	__atomic_store_n(&hdr->inuse_chunk, INUSE_CHUNK, __ATOMIC_RELAXED);
}
