/* SPDX-License-Identifier: MIT */
/*
 * consumer.h - drain the agent's data ring, trusting nothing in it.
 */
#ifndef PA_TRACER_CONSUMER_H
#define PA_TRACER_CONSUMER_H

#include <stdbool.h>
#include <stdint.h>
#include "pprof_alloc_abi.h"
#include "pa_clock.h"

/*
 * Called for each valid record, with a private copy of it (the caller may
 * keep nothing that points into it).  Return < 0 to stop the drain.
 */
typedef int (*ring_record_fn)(void *ctx, const struct pa_rec_hdr *rec);

struct ring_consumer {
	struct pa_header *hdr;
	uint8_t *data;
	uint64_t size, mask;	/* private copies */
	uint32_t max_frames;
	uint64_t tail;		/* our position; written to data_tail */
	uint64_t connected_ns;	/* first drain's time */
	uint8_t *scratch;	/* copy of the record being handed out */
	uint32_t scratch_size;

	/* counters */
	uint64_t records;
	uint64_t skipped_busy;	/* unfinished records given up on */
	uint64_t resyncs;	/* unwritten headers given up on */
	uint64_t unknown;	/* records of types we do not know */

	/* the drain waiting at one unfinished record since stall_since */
	uint64_t stall_tail, stall_since;	/* since 0: not waiting */
	bool stall_reported;

	const char *error;	/* set when drain returns -EPROTO */
};

/* data/size as validated by ringfile__open.  0 or -errno. */
int ring_consumer__init(struct ring_consumer *c, struct pa_header *hdr,
			uint8_t *data, uint64_t size, uint32_t max_frames);
void ring_consumer__fini(struct ring_consumer *c);

/*
 * Consume every finished record up to the current head.  now_ns is the
 * caller's CLOCK_MONOTONIC; final says the producers are
 * gone (the process exited), so an unfinished record will never finish.  Returns the number
 * of records handed to fn, the callback's negative return, or -EPROTO with
 * c->error set when the ring is corrupt.
 */
int ring_consumer__drain(struct ring_consumer *c, ring_record_fn fn,
			 void *ctx, uint64_t now_ns, bool final);

#define RING_STALL_WARN_NS	(5 * PA_NSEC_PER_SEC)	/* worth a warning */
/* That, or PPROF_ALLOC_STALL_WARN_SECONDS (1 to 3600; for tests that
 * show the warning without waiting 5 s). */
uint64_t ring_consumer__stall_warn_ns(void);
/* ... which says (program, the stall in seconds, target pid): */
#define RING_STALL_WARNING "warning: the ring has waited more than %.0f s for a record that a thread of process %d began and has not finished (a thread stopped mid-write, or a broken agent); the records behind it wait, and are lost once the ring fills\n"

/*
 * True, once per record, when the drain has waited more than wait_ns at
 * one unfinished record (a producer stopped or killed mid-write, or a
 * broken agent): the records behind it wait, and are lost once the ring
 * fills.
 */
bool ring_consumer__stalled(struct ring_consumer *c, uint64_t now_ns,
			    uint64_t wait_ns);

/* Bytes waiting to be consumed (clamped to the ring size). */
uint64_t ring_consumer__pending(const struct ring_consumer *c);

#endif /* PA_TRACER_CONSUMER_H */
