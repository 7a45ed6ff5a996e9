// SPDX-License-Identifier: MIT
/*
 * fuzz-ring.c - libFuzzer target for what the tracer reads from a
 * target's ring: the consumer's checks (tracer/record/consumer.c) and, for every
 * record it lets through, the same path as a live run - stack copies
 * unwound (tracer/record/stackwalk.c), allocations and frees aggregated
 * (tracer/record/heap.c, with a bucket cap so [other] is reached).
 *
 * Input: data_head and data_tail (8 bytes each, taken modulo a few rings
 * so that both near and far values occur), then the ring's bytes (RING,
 * zero-padded).  The ring is a private copy; the drain may write to it
 * (it zeroes what it consumed), never outside it - ASan watches.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tracer/record/consumer.h"
#include "tracer/record/heap.h"
#include "tracer/record/mappings.h"
#include "tracer/record/stackwalk.h"

#define RING		(64u * 1024)
#define MAX_FRAMES	64u

struct ctx {
	struct heap heap;
	struct mapping_set maps;
	struct stackwalk *sw;
};

static int on_record(void *arg, const struct pa_rec_hdr *rec)
{
	struct ctx *c = arg;

	if (rec->type == PA_REC_FREE) {
		heap__free(&c->heap, (const struct pa_rec_free *)rec);
		return 0;
	}
	if (rec->type != PA_REC_ALLOC)
		return 0;
	return heap__alloc(&c->heap,
			   stackwalk__record(c->sw, &c->maps,
					     (const struct pa_rec_alloc *)rec)) < 0 ?
		       -ENOMEM : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct pa_header hdr;
	struct ring_consumer rc;
	struct ctx c;
	uint8_t *ring;
	uint64_t head, tail;

	if (size < 16)
		return 0;
	memcpy(&head, data, 8);
	memcpy(&tail, data + 8, 8);
	ring = calloc(1, RING);
	if (!ring)
		return 0;
	memcpy(ring, data + 16, size - 16 < RING ? size - 16 : RING);
	memset(&hdr, 0, sizeof(hdr));
	hdr.data_tail = tail % (4ull * RING);
	hdr.data_head = head % (8ull * RING);
	heap__init(&c.heap, 1 + data[0] % 3 * 4096);
	heap__set_max_buckets(&c.heap, 8);
	mapping_set__init(&c.maps, 0);
	c.sw = stackwalk__new(MAX_FRAMES);
	if (c.sw && !ring_consumer__init(&rc, &hdr, ring, RING, MAX_FRAMES)) {
		ring_consumer__drain(&rc, on_record, &c, 1, false);
		ring_consumer__drain(&rc, on_record, &c, 2000000000ull, true);
		ring_consumer__fini(&rc);
	}
	stackwalk__free(c.sw);
	mapping_set__fini(&c.maps);
	heap__fini(&c.heap);
	free(ring);
	return 0;
}
