/* SPDX-License-Identifier: MIT */
/*
 * u64map.h - open-addressing hash map from uint64_t to uint64_t.
 */
#ifndef PA_TRACER_U64MAP_H
#define PA_TRACER_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct u64map_slot {
	uint64_t key;
	uint64_t value;
	uint64_t aux;		/* a second value, for maps that need one */
	uint8_t state;		/* 0 empty, 1 used, 2 deleted */
};

struct u64map {
	struct u64map_slot *slots;
	size_t capacity;	/* power of two, or 0 */
	size_t used;		/* live keys */
	size_t filled;		/* live + deleted */
};

void u64map__init(struct u64map *m);
void u64map__fini(struct u64map *m);
/* Pointer to the value of key, or NULL. */
uint64_t *u64map__find(const struct u64map *m, uint64_t key);
/* The slot of key (value and aux), or NULL. */
struct u64map_slot *u64map__slot(const struct u64map *m, uint64_t key);
/* Insert or overwrite.  0 or -ENOMEM. */
int u64map__put(struct u64map *m, uint64_t key, uint64_t value);
int u64map__put2(struct u64map *m, uint64_t key, uint64_t value,
		 uint64_t aux);
/* Remove key; true if it was there (its value to *value if not NULL). */
bool u64map__del(struct u64map *m, uint64_t key, uint64_t *value);

static inline uint64_t u64_hash(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

#endif /* PA_TRACER_U64MAP_H */
