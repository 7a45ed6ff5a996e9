// SPDX-License-Identifier: MIT
/*
 * ring.c - multi-producer reservation on the shared data ring.
 *
 * Every thread of the target is a producer; the tracer is the only consumer.
 * A producer claims [head, head + total) with a CAS on data_head after
 * checking that head + total - tail still fits, where total is the record
 * plus, when the record would cross the end of the ring, a pad record that
 * fills the rest (records never wrap, so the consumer can hand out pointers
 * into the ring).  The consumer zeroes what it consumed before publishing
 * the new tail, so the header of a freshly claimed record reads 0 until its
 * producer writes it: "not ready yet" needs no extra state.
 *
 * The header's len is written twice: once with PA_REC_BUSY right after the
 * claim, and once without it, with release order, when the payload is done.
 * The consumer's acquire load of len then sees the whole payload.
 *
 * Producers keep the last tail they read in private memory and read the
 * shared one again only when that stale view says the ring is full: the
 * tail only moves forward, so the stale view can only under-state the free
 * space, and the common path does not touch the consumer's cache line.
 *
 * The ring size and mask are kept in struct ring_producer (the agent's own
 * memory), so a scribbled header can make the agent drop records but never
 * write outside the ring.  A tail that is ahead of head or too far behind it
 * simply reads as "full".
 *
 * A full ring drops the record, except in exact mode (rate 1, wait set)
 * while a tracer says it is draining (the header's draining token): then
 * the producer waits for room - spinning a little, then yielding, then
 * sleeping 50 us at a time - for as long as the tail keeps moving.  When
 * it has not moved for PA_PRESSURE_MAX_MS the tracer is stopped, stuck or
 * dead: the producer writes the token into gave_up_on and drops, and no
 * producer waits for that token again (a tracer that comes back sets a new
 * one).  However the tail moves, one record waits at most
 * PA_PRESSURE_RECORD_MS (then it is dropped and counted in
 * pressure_drops).  A thread the tracer borrowed for a call, one in a
 * module scan (under the loader's lock), and a signal handler on top of
 * a record its thread has not committed yet (the tracer waits for that
 * one) never wait.  The wait takes no
 * lock and holds none, so a thread that waits blocks nobody but itself.
 */
#include <sched.h>
#include <stddef.h>
#include <time.h>
#include "arch/arch.h"
#include "pa_clock.h"
#include "ring.h"

#define WAIT_SPINS	64
#define WAIT_YIELDS	128
#define WAIT_SLEEP_NS	(50 * PA_NSEC_PER_USEC)

static inline void cpu_relax(void)
{
	pa_arch_relax();
}

void ring_producer__init(struct ring_producer *r, struct pa_header *hdr,
			 uint8_t *data, uint64_t size)
{
	r->hdr = hdr;
	r->data = data;
	r->size = size;
	r->mask = size - 1;
	r->cached_tail = __atomic_load_n(&hdr->data_tail, __ATOMIC_ACQUIRE);
	r->wait = 0;
}

/* Claim len bytes (a multiple of 8 that fits), or NULL: the ring is full. */
static struct pa_rec_hdr *try_reserve(struct ring_producer *r, uint32_t len,
				      uint16_t type)
{
	uint64_t head, tail, off, pad, total, used;
	struct pa_rec_hdr *rec;

	head = __atomic_load_n(&r->hdr->data_head, __ATOMIC_RELAXED);
	do {
		tail = __atomic_load_n(&r->cached_tail, __ATOMIC_RELAXED);
		off = head & r->mask;
		pad = off + len > r->size ? r->size - off : 0;
		total = pad + len;
		used = head - tail;
		if (used > r->size || total > r->size - used) {
			tail = __atomic_load_n(&r->hdr->data_tail,
					       __ATOMIC_ACQUIRE);
			__atomic_store_n(&r->cached_tail, tail,
					 __ATOMIC_RELAXED);
			used = head - tail;
		}
		if (used > r->size || total > r->size - used)
			return NULL;
	} while (!__atomic_compare_exchange_n(&r->hdr->data_head, &head,
					      head + total, 1, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));

	if (pad) {
		struct pa_rec_hdr *p = (struct pa_rec_hdr *)(r->data + off);

		p->type = PA_REC_PAD;
		p->flags = 0;
		__atomic_store_n(&p->len, (uint32_t)pad, __ATOMIC_RELEASE);
		off = 0;
	}
	rec = (struct pa_rec_hdr *)(r->data + off);
	rec->type = type;
	rec->flags = 0;
	__atomic_store_n(&rec->len, len | PA_REC_BUSY, __ATOMIC_RELAXED);
	return rec;
}

/* The ring is full: wait for room while a tracer drains (see above).
 * The record's place, or NULL (give up: drop it). */
static struct pa_rec_hdr *wait_for_room(struct ring_producer *r,
					uint32_t len, uint16_t type)
{
	struct pa_header *hdr = r->hdr;
	struct timespec pause = { 0, WAIT_SLEEP_NS };
	uint32_t token = __atomic_load_n(&hdr->draining, __ATOMIC_ACQUIRE);
	uint64_t start = 0, moved = 0, now, tail, last;
	struct pa_rec_hdr *rec = NULL;
	unsigned int i;

	if (!token || token == __atomic_load_n(&hdr->gave_up_on,
					       __ATOMIC_RELAXED) ||
	    !ring__thread_may_wait(1))	/* 1: this reservation's */
		return NULL;
	last = __atomic_load_n(&hdr->data_tail, __ATOMIC_ACQUIRE);
	for (i = 0;; i++) {
		if (i < WAIT_SPINS)
			cpu_relax();
		else if (i < WAIT_YIELDS)
			sched_yield();
		else
			nanosleep(&pause, NULL);
		rec = try_reserve(r, len, type);
		if (rec)
			break;
		if (i < WAIT_SPINS)
			continue;
		now = pa_now_ns();
		if (!start)
			start = moved = now;
		tail = __atomic_load_n(&hdr->data_tail, __ATOMIC_ACQUIRE);
		if (tail != last) {
			last = tail;
			moved = now;
		}
		if (__atomic_load_n(&hdr->draining, __ATOMIC_ACQUIRE) != token)
			break;	/* the tracer stopped reading, or another came */
		if (now - moved > PA_PRESSURE_MAX_MS * PA_NSEC_PER_MSEC) {
			__atomic_store_n(&hdr->gave_up_on, token,
					 __ATOMIC_RELEASE);
			break;
		}
		/* the tail moves, but never enough for this record (others
		 * keep taking the room): it is dropped, not waited for */
		if (now - start > PA_PRESSURE_RECORD_MS * PA_NSEC_PER_MSEC) {
			__atomic_add_fetch(&hdr->pressure_drops, 1,
					   __ATOMIC_RELAXED);
			break;
		}
	}
	__atomic_add_fetch(&hdr->pressure_waits, 1, __ATOMIC_RELAXED);
	if (start)
		__atomic_add_fetch(&hdr->pressure_wait_ns, pa_now_ns() - start,
				   __ATOMIC_RELAXED);
	return rec;
}

struct pa_rec_hdr *ring__reserve_quiet(struct ring_producer *r, uint32_t len,
				       uint16_t type)
{
	struct pa_rec_hdr *rec;

	len = (uint32_t)pa_round_up8(len);
	if (len < sizeof(*rec) || len > r->size / 4 || len > PA_REC_LEN_MASK)
		return NULL;
	/* open from before the claim: a signal handler that comes between
	 * the claim and the count would otherwise wait for a tracer that
	 * waits for this record */
	ring__opened();
	rec = try_reserve(r, len, type);
	if (!rec && r->wait)
		rec = wait_for_room(r, len, type);
	if (!rec)
		ring__closed();
	return rec;
}

struct pa_rec_hdr *ring__reserve(struct ring_producer *r, uint32_t len,
				 uint16_t type)
{
	struct pa_rec_hdr *rec = ring__reserve_quiet(r, len, type);

	if (!rec)
		__atomic_add_fetch(&r->hdr->lost_records, 1, __ATOMIC_RELAXED);
	return rec;
}

void ring__commit(struct ring_producer *r, struct pa_rec_hdr *rec)
{
	uint32_t len = rec->len & PA_REC_LEN_MASK;

	(void)r;
	__atomic_store_n(&rec->len, len, __ATOMIC_RELEASE);
	ring__closed();
}
