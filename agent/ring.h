/* SPDX-License-Identifier: MIT */
/*
 * ring.h - the producer side of the memfd data ring (layout and protocol in
 * include/pprof_alloc_abi.h).  Lock-free, wait-free for practical purposes
 * (one CAS loop that only retries when another producer won), async-signal
 * safe, no allocation, no system call.
 */
#ifndef PA_AGENT_RING_H
#define PA_AGENT_RING_H

#include <stdint.h>
#include "pprof_alloc_abi.h"

struct ring_producer {
	struct pa_header *hdr;
	uint8_t *data;
	uint64_t size;		/* private copies: never re-read from hdr */
	uint64_t mask;
	uint64_t cached_tail;	/* last data_tail seen; only ever behind */
	int wait;		/* exact mode: wait for room (see ring.c) */
};

/* hdr must be a validated header; data its ring (hdr + data_offset). */
void ring_producer__init(struct ring_producer *r, struct pa_header *hdr,
			 uint8_t *data, uint64_t size);

/*
 * Reserve a record of len bytes (rounded up to 8) of the given type.  Returns
 * the record with its header marked busy, or NULL when the ring is full (the
 * loss is counted in lost_records) or len cannot fit at all.
 */
struct pa_rec_hdr *ring__reserve(struct ring_producer *r, uint32_t len,
				 uint16_t type);

/* Publish a reserved record (release order). */
/* The same, without counting a record it could not place as lost (the
 * caller has another place for it). */
struct pa_rec_hdr *ring__reserve_quiet(struct ring_producer *r, uint32_t len,
				       uint16_t type);

void ring__commit(struct ring_producer *r, struct pa_rec_hdr *rec);

/* Whether the calling thread may wait for room (agent.c): not in a module
 * scan (the loader's lock is held), nor in a call a tracer is waiting
 * for, nor on top of a record of its own still open (a signal handler
 * that allocates: the tracer waits for that record) - own of them its
 * own (a reservation being tried counts from before its claim).
 * ring__opened and ring__closed keep the count. */
int ring__thread_may_wait(unsigned int own);
void ring__opened(void);
void ring__closed(void);

#endif /* PA_AGENT_RING_H */
