/* SPDX-License-Identifier: MIT */
/*
 * names.c - interned symbol names and file paths, demangled lazily.
 *
 * Symbolizing a profile meets the same few thousand function and file
 * names over and over; interning gives one copy of each and lets every
 * later table compare and hash them by pointer.  Each string lives in a
 * `struct name` that also remembers its length, its hash and its demangled
 * form, so a mangled name is demangled once however many addresses resolve
 * to it, and a caller that must match strings of two sets (one per thread)
 * by content gets the hash without reading the string again.  Demangled
 * forms are interned too, so everything handed out is a `struct name`.
 *
 * Records live in an arena (elf/arena.c): interning is a hash, a probe and
 * at most a pointer bump, and names__free() releases them all at once.
 * The set is open addressing with linear probing over (hash, record)
 * pairs, kept at most half full; a probe compares full hashes before any
 * bytes.  The hash reads eight bytes at a time: C++ names are long, and
 * hashing them a byte at a time (FNV) would show in symbolizing.  Strings
 * are never removed.
 *
 * Demangling is libiberty's cplus_demangle, the demangler of c++filt, gdb
 * and binutils: C++ (the Itanium ABI), Rust's legacy mangling (a "_ZN"
 * name ending in a hash, which it drops) and Rust's v0 ("_R"), and D, in
 * one call.  Only names that start with "_Z" or "_R" are tried, so C names
 * never pay for it.  A set is not thread-safe: one per thread
 * (cplus_demangle itself is).
 */
#include "elf/names.h"

#include <errno.h>
#include <libiberty/demangle.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "elf/arena.h"

struct name {
	uint64_t hash;
	size_t len;
	const char *demangled;	/* NULL until asked for */
	char str[];
};

struct slot {
	uint64_t hash;
	struct name *rec;	/* NULL: empty */
};

struct names {
	struct slot *slots;	/* capacity is a power of two */
	size_t cap, used;
	struct arena *arena;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

static uint64_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ len, w;

	for (; len >= 8; s += 8, len -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 29;
	}
	if (len) {
		w = 0;
		memcpy(&w, s, len);
		h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
	}
	return mix(h);
}

static struct name *record_of(const char *interned)
{
	return (struct name *)(interned - offsetof(struct name, str));
}

struct names *names__new(void)
{
	struct names *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->arena = arena__new();
	if (!n->arena) {
		free(n);
		errno = ENOMEM;
		return NULL;
	}
	return n;
}

void names__free(struct names *n)
{
	if (!n)
		return;
	arena__free(n->arena);
	free(n->slots);
	free(n);
}

static int resize(struct names *n, size_t new_cap)
{
	struct slot *slots;

	if (new_cap > SIZE_MAX / sizeof(*slots))
		return -ENOMEM;
	slots = calloc(new_cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < n->cap; i++) {
		size_t j;

		if (!n->slots[i].rec)
			continue;
		j = n->slots[i].hash & (new_cap - 1);
		while (slots[j].rec)
			j = (j + 1) & (new_cap - 1);
		slots[j] = n->slots[i];
	}
	free(n->slots);
	n->slots = slots;
	n->cap = new_cap;
	return 0;
}

const char *names__intern_len(struct names *n, const char *str, size_t len)
{
	struct name *rec;
	uint64_t hash;
	size_t i;

	if (!str)
		return NULL;
	if (n->used + 1 > n->cap / 2) {
		if (n->cap > SIZE_MAX / 4 ||
		    resize(n, n->cap ? n->cap * 2 : 1024))
			goto out_nomem;
	}
	hash = hash_bytes(str, len);
	i = hash & (n->cap - 1);
	for (; n->slots[i].rec; i = (i + 1) & (n->cap - 1)) {
		const struct name *known = n->slots[i].rec;

		if (n->slots[i].hash == hash && known->len == len &&
		    !memcmp(known->str, str, len))
			return known->str;
	}
	if (len > SIZE_MAX - sizeof(*rec) - 1)
		goto out_nomem;
	rec = arena__alloc(n->arena, sizeof(*rec) + len + 1);
	if (!rec)
		goto out_nomem;
	rec->hash = hash;
	rec->len = len;
	rec->demangled = NULL;
	memcpy(rec->str, str, len);
	rec->str[len] = '\0';
	n->slots[i] = (struct slot){ .hash = hash, .rec = rec };
	n->used++;
	return rec->str;

out_nomem:
	errno = ENOMEM;
	return NULL;
}

const char *names__intern(struct names *n, const char *str)
{
	return str ? names__intern_len(n, str, strlen(str)) : NULL;
}

uint64_t names__hash(const char *interned)
{
	return record_of(interned)->hash;
}

uint64_t names__hash_str(const char *str)
{
	return hash_bytes(str, strlen(str));
}

const char *names__demangled(struct names *n, const char *interned)
{
	struct name *rec;
	const char *shown;
	char *out;

	if (!interned)
		return NULL;
	rec = record_of(interned);
	if (rec->demangled)
		return rec->demangled;
	rec->demangled = rec->str;
	if (interned[0] != '_' || (interned[1] != 'Z' && interned[1] != 'R'))
		return rec->demangled;
	out = cplus_demangle(interned, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
	if (out) {
		/* Out of memory: the raw name stays. */
		shown = names__intern(n, out);
		if (shown)
			rec->demangled = shown;
		free(out);
	}
	return rec->demangled;
}
