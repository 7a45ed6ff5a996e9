// SPDX-License-Identifier: MIT
/*
 * test-ring.c - the data ring: the agent's producer against the tracer's
 * consumer, on a real sealed memfd made by ringfile__create.
 *
 * Covers reserve/commit, a busy record stopping the consumer, padding at
 * the end of the ring, loss counting when full, giving up on records that
 * stay unfinished, a consumer fed garbage (it must fail with -EPROTO or
 * skip, never crash, never write outside the ring), and many producer
 * threads racing one consumer thread with every record accounted for.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "agent/ring.h"
#include "check.h"
#include "tracer/record/consumer.h"
#include "tracer/record/ringfile.h"

#define RING (64u * 1024)

struct fixture {
	struct ringfile rf;
	struct ring_producer prod;
	struct ring_consumer cons;
	uint8_t *data;
};

static void setup(struct fixture *f, uint64_t ring)
{
	memset(f, 0, sizeof(*f));
	CHECK_EQ_INT(ringfile__create(&f->rf, ring, PA_LIVE_MIN, 1, 64), 0);
	f->data = (uint8_t *)f->rf.hdr + PA_HEADER_SIZE;
	ring_producer__init(&f->prod, f->rf.hdr, f->data, ring);
	CHECK_EQ_INT(ring_consumer__init(&f->cons, f->rf.hdr, f->data, ring,
					 64), 0);
}

static void teardown(struct fixture *f)
{
	ring_consumer__fini(&f->cons);
	ringfile__close(&f->rf);
}

/* Produce an alloc record with n frames whose values derive from seq. */
static struct pa_rec_alloc *reserve_alloc(struct fixture *f, uint64_t seq,
					  uint32_t n)
{
	struct pa_rec_hdr *h = ring__reserve(&f->prod,
					     sizeof(struct pa_rec_alloc) +
						     n * 8, PA_REC_ALLOC);
	struct pa_rec_alloc *a = (struct pa_rec_alloc *)h;
	uint32_t i;

	if (!h)
		return NULL;
	a->seq = seq;
	a->time_ns = seq * 10;
	a->addr = 0x1000 + seq * 16;
	a->size = seq + 1;
	a->tid = 42;
	a->nframes = n;
	for (i = 0; i < n; i++)
		a->frames[i] = seq * 100 + i;
	return a;
}

struct seen {
	uint64_t count;
	uint64_t last_seq;
	int bad;
};

static int collect(void *ctx, const struct pa_rec_hdr *rec)
{
	struct seen *s = ctx;
	const struct pa_rec_alloc *a = (const void *)rec;
	uint32_t i;

	if (rec->type != PA_REC_ALLOC || a->size != a->seq + 1 ||
	    a->addr != 0x1000 + a->seq * 16 || a->tid != 42)
		s->bad++;
	for (i = 0; i < a->nframes; i++)
		if (a->frames[i] != a->seq * 100 + i)
			s->bad++;
	s->last_seq = a->seq;
	s->count++;
	return 0;
}

static void test_reserve_commit(void)
{
	struct fixture f;
	struct seen s = { 0 };
	struct pa_rec_alloc *a;

	setup(&f, RING);
	a = reserve_alloc(&f, 7, 3);
	CHECK(a != NULL);
	/* busy: the consumer must not take it */
	CHECK_EQ_INT(ring_consumer__drain(&f.cons, collect, &s, 1, false), 0);
	CHECK_EQ_INT(s.count, 0);
	ring__commit(&f.prod, &a->hdr);
	CHECK_EQ_INT(ring_consumer__drain(&f.cons, collect, &s, 2, false), 1);
	CHECK_EQ_INT(s.count, 1);
	CHECK_EQ_INT(s.last_seq, 7);
	CHECK_EQ_INT(s.bad, 0);
	CHECK_EQ_INT(f.rf.hdr->data_tail, 48 + 3 * 8);
	CHECK_EQ_INT(f.rf.hdr->data_head, 48 + 3 * 8);
	/* consumed bytes are zeroed */
	CHECK_EQ_INT(*(uint64_t *)f.data, 0);
	teardown(&f);
}

static void test_wrap_padding(void)
{
	struct fixture f;
	struct seen s = { 0 };
	uint64_t seq = 0, head_before;
	struct pa_rec_alloc *a;

	setup(&f, RING);
	/* 72-byte records until the next would cross the end */
	while ((f.rf.hdr->data_head & (RING - 1)) + 72 <= RING) {
		a = reserve_alloc(&f, seq++, 3);
		CHECK(a != NULL);
		ring__commit(&f.prod, &a->hdr);
		CHECK(ring_consumer__drain(&f.cons, collect, &s, 1, false) >= 0);
	}
	head_before = f.rf.hdr->data_head;
	a = reserve_alloc(&f, seq++, 3);
	CHECK(a != NULL);
	CHECK((uint8_t *)a == f.data);	/* placed at the start, not wrapped */
	CHECK_EQ_INT(f.rf.hdr->data_head - head_before,
		     (RING - (head_before & (RING - 1))) + 72);
	ring__commit(&f.prod, &a->hdr);
	CHECK(ring_consumer__drain(&f.cons, collect, &s, 1, false) >= 1);
	CHECK_EQ_INT(s.count, seq);
	CHECK_EQ_INT(s.last_seq, seq - 1);
	CHECK_EQ_INT(s.bad, 0);
	CHECK_EQ_INT(f.cons.tail, f.rf.hdr->data_head);
	teardown(&f);
}

static void test_lost(void)
{
	struct fixture f;
	struct seen s = { 0 };
	uint64_t made = 0, failed = 0, i;

	setup(&f, RING);
	for (i = 0; i < 4000; i++) {
		struct pa_rec_alloc *a = reserve_alloc(&f, i, 8);

		if (!a) {
			failed++;
			continue;
		}
		ring__commit(&f.prod, &a->hdr);
		made++;
	}
	CHECK(failed > 0);
	CHECK_EQ_INT(f.rf.hdr->lost_records, failed);
	CHECK(ring_consumer__drain(&f.cons, collect, &s, 1, false) > 0);
	CHECK_EQ_INT(s.count, made);
	CHECK_EQ_INT(s.bad, 0);
	/* space is back */
	CHECK(reserve_alloc(&f, 9999, 8) != NULL);
	/* a record larger than a quarter of the ring is refused outright */
	CHECK(ring__reserve(&f.prod, RING, PA_REC_ALLOC) == NULL);
	teardown(&f);
}

static void test_stuck(void)
{
	struct fixture f;
	struct seen s = { 0 };
	struct pa_rec_alloc *stuck, *b;
	uint64_t t0 = 1000;

	setup(&f, RING);
	stuck = reserve_alloc(&f, 1, 2);	/* not committed (yet) */
	b = reserve_alloc(&f, 2, 2);
	ring__commit(&f.prod, &b->hdr);
	CHECK(stuck != NULL && b != NULL);
	CHECK_EQ_INT(ring_consumer__drain(&f.cons, collect, &s, t0, false), 0);
	CHECK(!ring_consumer__stalled(&f.cons, t0 + RING_STALL_WARN_NS,
				      RING_STALL_WARN_NS));
	/* a live producer is waited for, however long it takes: its space
	 * must not be given to anyone else; the wait is reported once */
	CHECK_EQ_INT(ring_consumer__drain(&f.cons, collect, &s,
					  t0 + 60000000000ull, false), 0);
	CHECK_EQ_INT(f.cons.skipped_busy, 0);
	CHECK(ring_consumer__stalled(&f.cons, t0 + 60000000000ull,
				     RING_STALL_WARN_NS));
	CHECK_EQ_INT(f.cons.stall_since, t0);
	CHECK(!ring_consumer__stalled(&f.cons, t0 + 70000000000ull,
				      RING_STALL_WARN_NS));
	/* once the producers are gone, the busy record is skipped */
	CHECK_EQ_INT(ring_consumer__drain(&f.cons, collect, &s,
					  t0 + 60000000001ull, true), 1);
	CHECK_EQ_INT(f.cons.skipped_busy, 1);
	CHECK_EQ_INT(s.last_seq, 2);
	CHECK_EQ_INT(f.cons.stall_since, 0);	/* caught up: not waiting */

	/* a claimed but never written header: only given up on when final */
	__atomic_add_fetch(&f.rf.hdr->data_head, 64, __ATOMIC_RELAXED);
	CHECK_EQ_INT(ring_consumer__drain(&f.cons, collect, &s, t0 + 3000000,
					  false), 0);
	CHECK_EQ_INT(ring_consumer__drain(&f.cons, collect, &s, t0 + 3000001,
					  true), 0);
	CHECK_EQ_INT(f.cons.resyncs, 1);
	CHECK_EQ_INT(f.cons.tail, f.rf.hdr->data_head);
	teardown(&f);
}

static int count_only(void *ctx, const struct pa_rec_hdr *rec)
{
	(void)rec;
	++*(uint64_t *)ctx;
	return 0;
}

static void test_garbage(void)
{
	struct fixture f;
	struct pa_rec_hdr *h;
	uint8_t *live;
	uint64_t n = 0, i, seed = 12345;
	int round, err;

	setup(&f, RING);
	live = f.data + RING;

	/* length past the end of the ring */
	h = (struct pa_rec_hdr *)(f.data + RING - 16);
	f.cons.tail = RING - 16;
	f.rf.hdr->data_tail = RING - 16;
	f.rf.hdr->data_head = RING - 16 + 64;
	h->len = 64;
	h->type = PA_REC_ALLOC;
	CHECK_EQ_INT(ring_consumer__drain(&f.cons, count_only, &n, 1, false),
		     -EPROTO);
	CHECK(f.cons.error != NULL);
	teardown(&f);

	/* blocks no allocation can be: address 0, past user space, a size
	 * that does not fit above the address */
	{
		static const uint64_t bad[][2] = {
			{ 0, 16 }, { PA_USER_ADDR_LIMIT, 16 },
			{ 0x1000, UINT64_MAX }, { 0x1000, PA_USER_ADDR_LIMIT },
		};

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			struct pa_rec_alloc *a;

			setup(&f, RING);
			a = reserve_alloc(&f, 1, 2);
			a->addr = bad[i][0];
			a->size = bad[i][1];
			ring__commit(&f.prod, &a->hdr);
			CHECK_EQ_INT(ring_consumer__drain(&f.cons, count_only,
							  &n, 1, false),
				     -EPROTO);
			CHECK_EQ_STR(f.cons.error, "allocation record with an impossible address or size");
			teardown(&f);
		}
	}

	/* head behind the tail */
	setup(&f, RING);
	f.cons.tail = 4096;
	f.rf.hdr->data_head = 8;
	CHECK_EQ_INT(ring_consumer__drain(&f.cons, count_only, &n, 1, false),
		     -EPROTO);
	teardown(&f);

	/* more frames than max_frames, and a length that disagrees */
	setup(&f, RING);
	{
		struct pa_rec_alloc *a = (struct pa_rec_alloc *)f.data;

		a->hdr.len = 48 + 8;
		a->hdr.type = PA_REC_ALLOC;
		a->nframes = 1000;
		f.rf.hdr->data_head = 56;
		CHECK_EQ_INT(ring_consumer__drain(&f.cons, count_only, &n, 1,
						  false), -EPROTO);
		f.cons.tail = 0;
		a->nframes = 5;
		CHECK_EQ_INT(ring_consumer__drain(&f.cons, count_only, &n, 1,
						  false), -EPROTO);
	}
	teardown(&f);

	/* stack copies: a valid one is handed out whole; one too short for
	 * its copy header, one whose size disagrees with the length, one over
	 * PA_STACK_BYTES_MAX are refused */
	{
		static const struct { uint32_t len, size; int want; } cases[] = {
			{ 0, 100, 1 },		/* len from the size: valid */
			{ 48 + 8 + 8, 0, -EPROTO },	/* no room for it */
			{ 0, 100, -EPROTO },	/* len for 100, size 108 */
			{ 0, PA_STACK_BYTES_MAX + 8, -EPROTO },
		};

		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			struct pa_rec_alloc *a;
			struct pa_stack_copy *sc;
			uint32_t len = cases[i].len ? cases[i].len :
				(uint32_t)pa_alloc_rec_size(1, 1, cases[i].size);

			setup(&f, RING);
			a = (struct pa_rec_alloc *)f.data;
			a->hdr.len = len;
			a->hdr.type = PA_REC_ALLOC;
			a->hdr.flags = PA_ALLOC_STACK;
			a->nframes = 1;
			a->addr = 0x1000;
			sc = (struct pa_stack_copy *)&a->frames[1];
			if (len >= pa_alloc_rec_size(1, 1, 0))
				sc->size = cases[i].size + (i == 2 ? 8 : 0);
			f.rf.hdr->data_head = len;
			n = 0;
			err = ring_consumer__drain(&f.cons, count_only, &n, 1,
						   false);
			CHECK_EQ_INT(err, cases[i].want);
			CHECK_EQ_INT(n, cases[i].want == 1 ? 1 : 0);
			teardown(&f);
		}
	}

	/* an unknown record type is skipped, not handed out */
	setup(&f, RING);
	h = (struct pa_rec_hdr *)f.data;
	h->len = 24;
	h->type = 77;
	f.rf.hdr->data_head = 24;
	n = 0;
	CHECK_EQ_INT(ring_consumer__drain(&f.cons, count_only, &n, 1, false), 0);
	CHECK_EQ_INT(f.cons.unknown, 1);
	CHECK_EQ_INT(n, 0);
	teardown(&f);

	/* random bytes and random heads: never a crash, never a write to
	 * the live table that follows the ring */
	for (round = 0; round < 2000; round++) {
		setup(&f, RING);
		live = f.data + RING;
		for (i = 0; i < RING / 8; i++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			((uint64_t *)f.data)[i] = round % 2 ?
				seed : (seed >> 40) % 128 |
				(uint64_t)(seed >> 20 & 3) << 32;
		}
		f.rf.hdr->data_head = seed % (2 * RING);
		err = ring_consumer__drain(&f.cons, count_only, &n, 1,
					   round % 3 == 0);
		CHECK(err >= 0 || err == -EPROTO);
		for (i = 0; i < 4096; i++)
			CHECK(live[i] == 0);
		teardown(&f);
	}
}

/* ---- many producers, one consumer ------------------------------------ */

#define THREADS 4
#define PER_THREAD 200000

struct mt {
	struct fixture f;
	int stop;
	uint64_t produced[THREADS], lost[THREADS];
	uint64_t received[THREADS], last[THREADS];
	int order_errors;
};

struct producer_arg {
	struct mt *mt;
	uint32_t id;
};

static void *producer(void *p)
{
	struct producer_arg *pa = p;
	struct mt *mt = pa->mt;
	uint64_t i;

	for (i = 1; i <= PER_THREAD; i++) {
		uint32_t n = (uint32_t)(i % 9);
		struct pa_rec_hdr *h = ring__reserve(&mt->f.prod, 48 + n * 8,
						     PA_REC_ALLOC);
		struct pa_rec_alloc *a = (struct pa_rec_alloc *)h;
		uint32_t k;

		if (!h) {
			mt->lost[pa->id]++;
			continue;
		}
		a->seq = i;
		a->tid = pa->id;
		a->addr = 0x10000 + i * 16;
		a->size = i * 3;
		a->nframes = n;
		for (k = 0; k < n; k++)
			a->frames[k] = i + k;
		ring__commit(&mt->f.prod, h);
		mt->produced[pa->id]++;
	}
	return NULL;
}

static int check_mt(void *ctx, const struct pa_rec_hdr *rec)
{
	struct mt *mt = ctx;
	const struct pa_rec_alloc *a = (const void *)rec;
	uint32_t k;

	if (a->tid >= THREADS || a->size != a->seq * 3) {
		mt->order_errors++;
		return 0;
	}
	for (k = 0; k < a->nframes; k++)
		if (a->frames[k] != a->seq + k)
			mt->order_errors++;
	if (a->seq <= mt->last[a->tid])
		mt->order_errors++;
	mt->last[a->tid] = a->seq;
	mt->received[a->tid]++;
	return 0;
}

static void *consumer(void *p)
{
	struct mt *mt = p;
	uint64_t now = 1;

	while (!__atomic_load_n(&mt->stop, __ATOMIC_ACQUIRE)) {
		if (ring_consumer__drain(&mt->f.cons, check_mt, mt, now++,
					 false) < 0)
			mt->order_errors += 1000000;
	}
	ring_consumer__drain(&mt->f.cons, check_mt, mt, now, true);
	return NULL;
}

static void test_threads(void)
{
	static struct mt mt;
	struct producer_arg args[THREADS];
	pthread_t prod[THREADS], cons;
	uint64_t lost = 0, total_lost_hdr;
	int i;

	setup(&mt.f, RING);
	pthread_create(&cons, NULL, consumer, &mt);
	for (i = 0; i < THREADS; i++) {
		args[i] = (struct producer_arg){ &mt, (uint32_t)i };
		pthread_create(&prod[i], NULL, producer, &args[i]);
	}
	for (i = 0; i < THREADS; i++)
		pthread_join(prod[i], NULL);
	__atomic_store_n(&mt.stop, 1, __ATOMIC_RELEASE);
	pthread_join(cons, NULL);

	CHECK_EQ_INT(mt.order_errors, 0);
	for (i = 0; i < THREADS; i++) {
		CHECK_EQ_INT(mt.received[i], mt.produced[i]);
		CHECK_EQ_INT(mt.produced[i] + mt.lost[i], PER_THREAD);
		lost += mt.lost[i];
	}
	CHECK(lost < (uint64_t)THREADS * PER_THREAD);	/* records flowed */
	total_lost_hdr = mt.f.rf.hdr->lost_records;
	CHECK_EQ_INT(total_lost_hdr, lost);
	CHECK_EQ_INT(mt.f.cons.skipped_busy, 0);
	CHECK_EQ_INT(mt.f.cons.resyncs, 0);
	printf("threads: %d x %d records, %llu lost (ring full)\n", THREADS,
	       PER_THREAD, (unsigned long long)lost);
	teardown(&mt.f);
}

int main(void)
{
	test_reserve_commit();
	test_wrap_padding();
	test_lost();
	test_stuck();
	test_garbage();
	test_threads();
	CHECK_SUMMARY("test-ring");
	return 0;
}
