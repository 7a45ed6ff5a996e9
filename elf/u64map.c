// SPDX-License-Identifier: MIT
/*
 * u64map.c - linear probing with tombstones; the table is rebuilt at twice
 * the live size whenever live + deleted slots pass 70%, so lookups stay
 * short however many keys come and go (the tracer's live set churns).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "u64map.h"

void u64map__init(struct u64map *m)
{
	m->slots = NULL;
	m->capacity = m->used = m->filled = 0;
}

void u64map__fini(struct u64map *m)
{
	free(m->slots);
	u64map__init(m);
}

struct u64map_slot *u64map__slot(const struct u64map *m, uint64_t key)
{
	size_t mask = m->capacity - 1, i;

	if (!m->capacity)
		return NULL;
	for (i = u64_hash(key) & mask;; i = (i + 1) & mask) {
		struct u64map_slot *s = &m->slots[i];

		if (s->state == 0)
			return NULL;
		if (s->state == 1 && s->key == key)
			return s;
	}
}

uint64_t *u64map__find(const struct u64map *m, uint64_t key)
{
	struct u64map_slot *s = u64map__slot(m, key);

	return s ? &s->value : NULL;
}

static int rehash(struct u64map *m, size_t capacity)
{
	struct u64map_slot *old = m->slots, *slots;
	size_t old_cap = m->capacity, i, mask = capacity - 1;

	if (capacity > SIZE_MAX / sizeof(*slots))
		return -ENOMEM;
	slots = calloc(capacity, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (i = 0; i < old_cap; i++) {
		size_t j;

		if (old[i].state != 1)
			continue;
		for (j = u64_hash(old[i].key) & mask; slots[j].state;
		     j = (j + 1) & mask)
			;
		slots[j] = old[i];
	}
	free(old);
	m->slots = slots;
	m->capacity = capacity;
	m->filled = m->used;
	return 0;
}

int u64map__put(struct u64map *m, uint64_t key, uint64_t value)
{
	return u64map__put2(m, key, value, 0);
}

int u64map__put2(struct u64map *m, uint64_t key, uint64_t value,
		 uint64_t aux)
{
	struct u64map_slot *s = u64map__slot(m, key);
	size_t mask, i;
	int err;

	if (s) {
		s->value = value;
		s->aux = aux;
		return 0;
	}
	if ((m->filled + 1) * 10 >= m->capacity * 7) {
		size_t cap = 16;

		while (cap < (m->used + 1) * 2) {
			if (cap > SIZE_MAX / 2)
				return -ENOMEM;
			cap *= 2;
		}
		err = rehash(m, cap);
		if (err)
			return err;
	}
	mask = m->capacity - 1;
	for (i = u64_hash(key) & mask; m->slots[i].state == 1;
	     i = (i + 1) & mask)
		;
	/* i is empty or deleted; reusing a deleted slot keeps filled as is */
	if (m->slots[i].state == 0)
		m->filled++;
	m->slots[i].state = 1;
	m->slots[i].key = key;
	m->slots[i].value = value;
	m->slots[i].aux = aux;
	m->used++;
	return 0;
}

bool u64map__del(struct u64map *m, uint64_t key, uint64_t *value)
{
	struct u64map_slot *s = u64map__slot(m, key);

	if (!s)
		return false;
	if (value)
		*value = s->value;
	s->state = 2;
	m->used--;
	return true;
}
