// SPDX-License-Identifier: MIT
/*
 * consumer.c - the single consumer of the data ring.
 *
 * The producers are other people's threads and the ring is memory they can
 * scribble on, so every value read from it is checked before use: head
 * against our own tail and the ring size, each record's length against the
 * ring end and the head, each record's contents against its type.  A record
 * is copied into private memory before it is checked and handed out, so it
 * cannot change between the check and the use.  Anything inconsistent ends
 * the drain with -EPROTO and a description; nothing is ever written outside
 * [data, data + size).
 *
 * An unfinished record (len 0: reserved but not written; or PA_REC_BUSY)
 * stops the drain: the producer is in the middle of writing it.  However
 * long that takes (a stopped process, a debugger, a thread descheduled for
 * seconds), the record is waited for: giving its space away would let the
 * late producer write over records reserved after it.  Meanwhile the ring
 * fills and the producers drop and count.  Only when the producers are
 * gone (final: the process exited) is a busy record skipped by its length,
 * and an unwritten one makes us give up on everything up to the head (a
 * "resync"); both are counted.
 *
 * After a record is consumed its bytes are zeroed, then data_tail is
 * published with release order; see the ABI header for why.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "consumer.h"
#include "pa_clock.h"


int ring_consumer__init(struct ring_consumer *c, struct pa_header *hdr,
			uint8_t *data, uint64_t size, uint32_t max_frames)
{
	memset(c, 0, sizeof(*c));
	if (!pa_is_pow2(size) || !max_frames || max_frames > PA_MAX_FRAMES)
		return -EINVAL;
	c->hdr = hdr;
	c->data = data;
	c->size = size;
	c->mask = size - 1;
	c->max_frames = max_frames;
	c->scratch_size = (uint32_t)(sizeof(struct pa_rec_module) +
				     PA_PATH_MAX + PA_RECORD_ALIGN);
	if (c->scratch_size < pa_alloc_rec_size(max_frames, 1,
						PA_STACK_BYTES_MAX))
		c->scratch_size = (uint32_t)pa_alloc_rec_size(max_frames, 1,
							      PA_STACK_BYTES_MAX);
	c->scratch = malloc(c->scratch_size);
	if (!c->scratch)
		return -ENOMEM;
	c->tail = __atomic_load_n(&hdr->data_tail, __ATOMIC_ACQUIRE);
	return 0;
}

void ring_consumer__fini(struct ring_consumer *c)
{
	free(c->scratch);
	c->scratch = NULL;
}

uint64_t ring_consumer__pending(const struct ring_consumer *c)
{
	uint64_t head = __atomic_load_n(&c->hdr->data_head, __ATOMIC_ACQUIRE);
	uint64_t used = head - c->tail;

	return used > c->size ? c->size : used;
}

static void publish(struct ring_consumer *c)
{
	__atomic_store_n(&c->hdr->data_tail, c->tail, __ATOMIC_RELEASE);
}

/*
 * Zero [tail, tail + len) (never crossing the end) and publish the new
 * tail at once.  (Producers read the shared tail only when their cached
 * copy says the ring is full, so this store costs them nothing; and a
 * tracer killed here leaves at most one zeroed record behind the tail it
 * published, which its successor steps over - see drain.)
 */
static void release(struct ring_consumer *c, uint64_t len)
{
	memset(c->data + (c->tail & c->mask), 0, len);
	c->tail += len;
	publish(c);
}

/*
 * A consumer that connects to a ring another tracer drained (and was
 * killed) may find, at the tail it published, a record that tracer had
 * already consumed and zeroed.  If nothing has moved there for a second
 * since we connected, step over the zero words to the next header.
 */
#define INHERITED_NS PA_NSEC_PER_SEC

static bool skip_inherited_zeros(struct ring_consumer *c, uint64_t head,
				 uint64_t now_ns)
{
	uint64_t off = c->tail & c->mask, n = 0;

	if (c->records || !c->connected_ns ||
	    now_ns - c->connected_ns < INHERITED_NS)
		return false;
	while (c->tail + n + 8 <= head && off + n < c->size &&
	       !*(const uint64_t *)(c->data + off + n))
		n += 8;
	if (!n)
		return false;
	c->resyncs++;
	release(c, n);
	return true;
}

static int corrupt(struct ring_consumer *c, const char *why)
{
	publish(c);
	c->error = why;
	return -EPROTO;
}

static int check_record(struct ring_consumer *c, const struct pa_rec_hdr *h,
			uint32_t len)
{
	switch (h->type) {
	case PA_REC_ALLOC: {
		const struct pa_rec_alloc *a = (const void *)h;

		if (len < sizeof(*a))
			return corrupt(c, "allocation record shorter than its fields");
		if (a->nframes > c->max_frames)
			return corrupt(c, "allocation record with more frames than max_frames");
		if (!pa_block_plausible(a->addr, a->size))
			return corrupt(c, "allocation record with an impossible address or size");
		if (a->hdr.flags & PA_ALLOC_STACK) {
			const struct pa_stack_copy *sc =
				(const void *)&a->frames[a->nframes];

			if (len < pa_alloc_rec_size(a->nframes, 1, 0))
				return corrupt(c, "allocation record too short for its stack copy");
			if (sc->size > PA_STACK_BYTES_MAX ||
			    len != pa_alloc_rec_size(a->nframes, 1, sc->size))
				return corrupt(c, "allocation record length does not match its stack copy");
			return 0;
		}
		if (len != pa_alloc_rec_size(a->nframes, 0, 0))
			return corrupt(c, "allocation record length does not match its frame count");
		return 0;
	}
	case PA_REC_FREE:
		if (len != sizeof(struct pa_rec_free))
			return corrupt(c, "free record of the wrong length");
		return 0;
	case PA_REC_MODULE: {
		const struct pa_rec_module *m = (const void *)h;

		if (len < sizeof(*m) || m->path_len > PA_PATH_MAX ||
		    len != pa_round_up8(sizeof(*m) + m->path_len))
			return corrupt(c, "module record length does not match its path");
		if (m->build_id_len > PA_BUILD_ID_MAX || m->start >= m->end)
			return corrupt(c, "module record with a bad build ID or range");
		return 0;
	}
	default:
		return 1;	/* unknown: skip */
	}
}

int ring_consumer__drain(struct ring_consumer *c, ring_record_fn fn,
			 void *ctx, uint64_t now_ns, bool final)
{
	uint64_t head = __atomic_load_n(&c->hdr->data_head, __ATOMIC_ACQUIRE);
	int count = 0, err;

	if (!c->connected_ns)
		c->connected_ns = now_ns ? now_ns : 1;
	if (head - c->tail > c->size)
		return corrupt(c, "ring head is behind the tail or more than a ring ahead");
	/* records and their padding are 8-byte aligned: a head that is not
	 * could never be reached record by record */
	if ((head | c->tail) & (PA_RECORD_ALIGN - 1))
		return corrupt(c, "ring head or tail is not 8-byte aligned");

	while (c->tail != head) {
		uint64_t off = c->tail & c->mask;
		struct pa_rec_hdr *rec = (struct pa_rec_hdr *)(c->data + off);
		uint32_t raw = __atomic_load_n(&rec->len, __ATOMIC_ACQUIRE);
		uint32_t len = raw & PA_REC_LEN_MASK;
		uint16_t type;

		if (!raw || (raw & PA_REC_BUSY)) {
			if (!raw && skip_inherited_zeros(c, head, now_ns))
				continue;
			if (!final) {
				if (!c->stall_since || c->stall_tail != c->tail) {
					c->stall_tail = c->tail;
					c->stall_since = now_ns ? now_ns : 1;
					c->stall_reported = false;
				}
				break;
			}
			if (raw && len >= sizeof(*rec) && !(len & 7) &&
			    len <= c->size - off && len <= head - c->tail) {
				c->skipped_busy++;
				release(c, len);
				continue;
			}
			/* Unknown extent: drop everything up to head. */
			c->resyncs++;
			while (c->tail != head) {
				uint64_t o = c->tail & c->mask;
				uint64_t n = head - c->tail;

				if (n > c->size - o)
					n = c->size - o;
				release(c, n);
			}
			break;
		}
		if (len < sizeof(*rec) || (len & 7) || len > c->size - off ||
		    len > head - c->tail)
			return corrupt(c, "record length points outside the ring or past the head");
		type = rec->type;
		if (type == PA_REC_PAD) {
			if (off + len != c->size)
				return corrupt(c, "padding record that does not end at the ring's end");
			release(c, len);
			continue;
		}
		if (len > c->scratch_size) {
			if (type == PA_REC_ALLOC || type == PA_REC_FREE ||
			    type == PA_REC_MODULE)
				return corrupt(c, "record longer than any valid record");
			c->unknown++;
			release(c, len);
			continue;
		}
		memcpy(c->scratch, rec, len);
		((struct pa_rec_hdr *)c->scratch)->len = len;
		err = check_record(c, (struct pa_rec_hdr *)c->scratch, len);
		if (err < 0)
			return err;
		if (err > 0) {
			c->unknown++;
			release(c, len);
			continue;
		}
		err = fn(ctx, (struct pa_rec_hdr *)c->scratch);
		if (err < 0) {
			publish(c);
			return err;
		}
		release(c, len);
		c->records++;
		count++;
	}
	if (c->tail == head)
		c->stall_since = 0;
	publish(c);
	return count;
}

bool ring_consumer__stalled(struct ring_consumer *c, uint64_t now_ns,
			    uint64_t wait_ns)
{
	if (!c->stall_since || c->stall_reported ||
	    now_ns - c->stall_since <= wait_ns)
		return false;
	c->stall_reported = true;
	return true;
}

uint64_t ring_consumer__stall_warn_ns(void)
{
	static uint64_t ns;
	const char *s;
	char *end;
	unsigned long v;

	if (ns)
		return ns;
	ns = RING_STALL_WARN_NS;
	s = getenv("PPROF_ALLOC_STALL_WARN_SECONDS");
	if (s && *s) {
		errno = 0;
		v = strtoul(s, &end, 10);
		if (!errno && !*end && v >= 1 && v <= 3600)
			ns = (uint64_t)v * PA_NSEC_PER_SEC;
	}
	return ns;
}
