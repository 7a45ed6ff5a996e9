// SPDX-License-Identifier: MIT
/*
 * test-live.c - the live table and its free filter: insert/remove,
 * tombstone reuse, the probe limit, untrackable keys, the filter going back
 * to zero, and threads inserting and removing their own addresses at once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "agent/live.h"
#include "agent/stacks.h"
#include "check.h"

#define CAP 1024u
/* keys spread over pages: 8 per page, so no filter counter saturates */
#define KEY(i) ((uint64_t)(i) / 8 * 4096 + (uint64_t)(i) % 8 * 48 + 0x10000)

static struct pa_live_entry entries[CAP * 64];
static uint8_t filter[LIVE_FILTER_SIZE];

static uint64_t live_keys(const struct live_table *t)
{
	uint64_t i, n = 0;

	for (i = 0; i < t->capacity; i++)
		if (t->entries[i].key && t->entries[i].key != PA_LIVE_TOMBSTONE)
			n++;
	return n;
}

static bool filter_clear(void)
{
	size_t i;

	for (i = 0; i < LIVE_FILTER_SIZE; i++)
		if (filter[i])
			return false;
	return true;
}

static void test_basic(void)
{
	struct live_table t;
	struct pa_live_entry e;
	uint64_t i;

	memset(entries, 0, sizeof(entries));
	memset(filter, 0, sizeof(filter));
	live__init(&t, entries, CAP, filter);

	CHECK_EQ_INT(live__insert(&t, 0x1000, 10, 1, 100, 7, 0, NULL), 0);
	CHECK(live__maybe(&t, 0x1000));
	CHECK(!live__remove(&t, 0x2000, &e));
	CHECK(live__remove(&t, 0x1000, &e));
	CHECK_EQ_INT(e.key, 0x1000);
	CHECK_EQ_INT(e.size, 10);
	CHECK_EQ_INT(e.alloc_id, 1);
	CHECK_EQ_INT(e.time_ns, 100);
	CHECK_EQ_INT(e.stack_id, 7);
	CHECK(!live__remove(&t, 0x1000, &e));	/* double free */
	CHECK(filter_clear());

	/* untrackable keys */
	CHECK_EQ_INT(live__insert(&t, 0, 1, 1, 1, 0, 0, NULL), -EINVAL);
	CHECK_EQ_INT(live__insert(&t, 0x1001, 1, 1, 1, 0, 0, NULL), -EINVAL);
	CHECK_EQ_INT(live__insert(&t, PA_LIVE_TOMBSTONE, 1, 1, 1, 0, 0, NULL), -EINVAL);

	/* fill until the probe limit says no; everything inserted is still
	 * found, and the filter returns to zero once all are gone */
	for (i = 1; i <= CAP; i++)
		if (live__insert(&t, KEY(i), i, i, i, 0, 0, NULL))
			break;
	CHECK(i > CAP / 2);	/* far more than a probe run fits */
	{
		uint64_t inserted = i - 1, j;

		CHECK_EQ_INT(live_keys(&t), inserted);
		for (j = 1; j <= inserted; j++) {
			CHECK(live__remove(&t, KEY(j), &e));
			CHECK_EQ_INT(e.size, j);
		}
		CHECK_EQ_INT(live_keys(&t), 0);
		CHECK(filter_clear());
		/* tombstones everywhere and no empty slot left near them:
		 * inserts must reuse them (half the load: deterministic) */
		for (j = 1; j <= inserted / 2; j++)
			CHECK_EQ_INT(live__insert(&t, KEY(j) + 0x1000000, j, j,
						  j, 0, 0, NULL), 0);
		CHECK_EQ_INT(live_keys(&t), inserted / 2);
	}
}

/* More than 253 live samples sharing one filter counter (addresses a filter
 * span apart alias): the counter sticks at 253 (never wrongly reaches 0),
 * and removal still works. */
/* A block whose free the hooks never saw is met again by its address's
 * next allocation: the stale entry is replaced and handed back, site and
 * all, and the table holds one entry for the address. */
static void test_stale(void)
{
	struct live_table t;
	struct pa_live_entry e, stale;

	memset(entries, 0, sizeof(entries));
	memset(filter, 0, sizeof(filter));
	live__init(&t, entries, CAP, filter);

	CHECK_EQ_INT(live__insert(&t, 0x5000, 10, 1, 100, 7, 3, &stale), 0);
	memset(&stale, 0, sizeof(stale));
	CHECK_EQ_INT(live__insert(&t, 0x5000, 20, 2, 200, 8, 4, &stale), 1);
	CHECK_EQ_INT(stale.key, 0x5000);
	CHECK_EQ_INT(stale.size, 10);
	CHECK_EQ_INT(stale.alloc_id, 1);
	CHECK_EQ_INT(stale.stack_id, 7);
	CHECK_EQ_INT(stale.site, 3);
	CHECK_EQ_INT(live_keys(&t), 1);
	CHECK(live__remove(&t, 0x5000, &e));
	CHECK_EQ_INT(e.size, 20);
	CHECK_EQ_INT(e.site, 4);
	CHECK(!live__remove(&t, 0x5000, &e));
	CHECK(filter_clear());
	/* the stale entry behind a tombstone is found all the same */
	{
		uint64_t a = 0x7000, x = 0x7010;

		while (pa_live_hash(x, CAP) != pa_live_hash(a, CAP))
			x += 0x10;
		CHECK_EQ_INT(live__insert(&t, x, 1, 11, 1, 0, 0, &stale), 0);
		CHECK_EQ_INT(live__insert(&t, a, 2, 12, 1, 0, 5, &stale), 0);
		CHECK(live__remove(&t, x, &e));	/* a tombstone before a */
		CHECK_EQ_INT(live__insert(&t, a, 3, 13, 1, 0, 6, &stale), 1);
		CHECK_EQ_INT(stale.alloc_id, 12);
		CHECK_EQ_INT(stale.site, 5);
		CHECK_EQ_INT(live_keys(&t), 1);
		CHECK(live__remove(&t, a, &e));
		CHECK_EQ_INT(e.alloc_id, 13);
		CHECK(filter_clear());
	}
	/* without a place for it, a second entry is made, as before */
	CHECK_EQ_INT(live__insert(&t, 0x6000, 1, 1, 1, 0, 0, NULL), 0);
	CHECK_EQ_INT(live__insert(&t, 0x6000, 1, 2, 1, 0, 0, NULL), 0);
	CHECK_EQ_INT(live_keys(&t), 2);
}

static void test_saturation(void)
{
	struct live_table t;
	struct pa_live_entry e;
	uint64_t i, page = 0x7f0000000000ull;
	const uint64_t span = (uint64_t)LIVE_FILTER_SIZE * 64;

	memset(entries, 0, sizeof(entries));
	memset(filter, 0, sizeof(filter));
	live__init(&t, entries, CAP * 64, filter);
	for (i = 0; i < 256; i++)
		CHECK_EQ_INT(live__insert(&t, page + i * span, i, i, i, 0, 0, NULL), 0);
	CHECK_EQ_INT(filter[live_filter_slot(page)], LIVE_FILTER_STUCK);
	for (i = 0; i < 256; i++) {
		CHECK(live__maybe(&t, page + i * span));
		CHECK(live__remove(&t, page + i * span, &e));
		CHECK_EQ_INT(e.alloc_id, i);
	}
	CHECK_EQ_INT(filter[live_filter_slot(page)], LIVE_FILTER_STUCK);
	CHECK_EQ_INT(live_keys(&t), 0);
}

#define THREADS 4
#define ROUNDS 200000

static struct live_table shared;
static int errors;

static void *churn(void *arg)
{
	uint64_t base = ((uint64_t)(uintptr_t)arg + 1) << 40, i;
	struct pa_live_entry e;

	for (i = 0; i < ROUNDS; i++) {
		uint64_t addr = base + (i % 64) * 16;

		if (live__insert(&shared, addr, i, i, i, 0, 0, NULL) == 0) {
			if (!live__remove(&shared, addr, &e) || e.alloc_id != i)
				__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static void test_threads(void)
{
	pthread_t t[THREADS];
	uintptr_t i;

	memset(entries, 0, sizeof(entries));
	memset(filter, 0, sizeof(filter));
	live__init(&shared, entries, CAP * 64, filter);
	for (i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, churn, (void *)i);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ_INT(errors, 0);
	CHECK_EQ_INT(live_keys(&shared), 0);
	CHECK(filter_clear());
}

/* The stack table: one entry per distinct stack, found again by content,
 * its frames read back by id; NONE once the arena is used up or every
 * slot of a probe run is taken. */
static void test_stacks(void)
{
	static uint64_t mem[(1024 * 2 * 4 + 1024 * PA_STACK_MEAN_WORDS * 8) / 8];
	struct stack_table st;
	uint64_t a[3] = { 1, 2, 3 }, b[3] = { 1, 2, 4 }, f[9] = { 0 }, got[8];
	uint64_t used = 0, deep[8] = { 9, 8, 7, 6, 5, 4, 3, 2 };
	uint32_t ia, ib, id, i, none = 0;

	CHECK_EQ_INT(sizeof(mem), pa_stack_table_size(1024));
	memset(mem, 0, sizeof(mem));
	stacks__init(&st, (uint8_t *)mem, 1024, 8, &used);
	ia = stacks__intern(&st, a, 3);
	ib = stacks__intern(&st, b, 3);
	CHECK(ia != PA_STACK_NONE && ib != PA_STACK_NONE && ia != ib);
	CHECK(ia != 0 && ib != 0);		/* 0 is an empty slot */
	CHECK_EQ_INT(stacks__intern(&st, a, 3), ia);
	CHECK_EQ_INT(stacks__intern(&st, a, 2) == ia, 0);	/* a prefix */
	CHECK_EQ_INT(stacks__intern(&st, f, 9), PA_STACK_NONE); /* too deep */
	CHECK_EQ_INT(used, 11);			/* n + 1 words each */
	/* read back, by the agent and as the tracer reads it */
	CHECK_EQ_INT(stacks__get(&st, ib, got), 3);
	CHECK(!memcmp(got, b, sizeof(b)));
	CHECK_EQ_INT(pa_stack_get((uint8_t *)mem, 1024, ib, 8, got), 3);
	CHECK(!memcmp(got, b, sizeof(b)));
	CHECK_EQ_INT(pa_stack_get((uint8_t *)mem, 1024, ib, 2, got), -1);
	CHECK_EQ_INT(pa_stack_get((uint8_t *)mem, 1024, ib + 1, 8, got), -1);
	CHECK_EQ_INT(pa_stack_get((uint8_t *)mem, 1024, 0, 8, got), -1);
	CHECK_EQ_INT(pa_stack_get((uint8_t *)mem, 1024,
				  (uint32_t)pa_stack_words(1024), 8, got), -1);
	id = stacks__intern(&st, deep, 8);
	CHECK_EQ_INT(pa_stack_get((uint8_t *)mem, 1024, id, 8, got), 8);
	CHECK(!memcmp(got, deep, sizeof(deep)));
	/* 9-word stacks: the arena (1024 * 24 words) holds at most 2730,
	 * the index (2048 slots) fewer */
	for (i = 0; i < 5000; i++) {
		deep[0] = i + 100;
		if (stacks__intern(&st, deep, 8) == PA_STACK_NONE)
			none++;
	}
	CHECK(none >= 5000 - 2730 && 5000 - none <= 2048);
	CHECK(used <= pa_stack_words(1024) + 5000 * 9);
	CHECK_EQ_INT(stacks__intern(&st, a, 3), ia);	/* still there */
	CHECK_EQ_INT(stacks__intern(&st, f + 1, 7) == PA_STACK_NONE, 1);
}

int main(void)
{
	test_stacks();
	test_basic();
	test_stale();
	test_saturation();
	test_threads();
	CHECK_SUMMARY("test-live");
	return 0;
}
