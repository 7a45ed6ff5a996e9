/* SPDX-License-Identifier: MIT */
/*
 * test-arena.c - elf/arena.c and elf/names.c, the allocators of the
 * symbolize path:
 *  - arena allocations are aligned, distinct, writable, whatever their
 *    size (small ones share chunks, big ones get their own), and survive
 *    until the arena is freed; zero-sized ones are fine; absurd sizes fail
 *    with ENOMEM;
 *  - names: interning by content (with and without a NUL), hashes that
 *    are equal across two sets for equal strings, demangled forms interned
 *    in the same set.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "elf/arena.h"
#include "elf/names.h"

static void test_arena(void)
{
	struct arena *a = arena__new();
	unsigned char *small[3000], *big;
	size_t footprint;

	CHECK(a != NULL);
	for (size_t i = 0; i < 3000; i++) {
		small[i] = arena__alloc(a, i % 97);
		CHECK(small[i] != NULL);
		CHECK((uintptr_t)small[i] % _Alignof(max_align_t) == 0);
		memset(small[i], (int)(i & 0xff), i % 97);
	}
	footprint = arena__footprint(a);
	CHECK(footprint >= 3000 * 48);
	/* A big one: its own chunk; the current chunk keeps its room. */
	big = arena__alloc(a, 10u << 20);
	CHECK(big != NULL);
	memset(big, 0xab, 10u << 20);
	CHECK(arena__footprint(a) >= footprint + (10u << 20));
	CHECK(arena__alloc(a, 16) != NULL);
	for (size_t i = 0; i < 3000; i++)
		for (size_t j = 0; j < i % 97; j++)
			CHECK_EQ_INT(small[i][j], i & 0xff);
	CHECK(big[0] == 0xab && big[(10u << 20) - 1] == 0xab);
	CHECK(arena__alloc(a, 0) != NULL);
	errno = 0;
	CHECK(arena__alloc(a, SIZE_MAX - 4) == NULL);
	CHECK_EQ_INT(errno, ENOMEM);
	arena__free(a);
	arena__free(NULL);

	/* The first allocation may be a big one. */
	a = arena__new();
	CHECK(a != NULL);
	big = arena__alloc(a, 1u << 20);
	CHECK(big != NULL);
	CHECK(arena__alloc(a, 8) != NULL);
	arena__free(a);
}

static void test_names(void)
{
	struct names *x = names__new(), *y = names__new();
	const char *a, *b, *d;
	char name[64];

	CHECK(x != NULL && y != NULL);
	a = names__intern(x, "std::vector<int>::push_back");
	b = names__intern(y, "std::vector<int>::push_back");
	CHECK(a != b);
	CHECK_EQ_STR(a, b);
	CHECK(names__hash(a) == names__hash(b));
	CHECK(names__hash(a) == names__hash_str("std::vector<int>::push_back"));
	CHECK(names__hash(a) != names__hash(names__intern(x, "std::vector<int>::push_bac")));
	/* By length: a prefix is another string. */
	CHECK(names__intern_len(x, "std::vector<int>::push_backXYZ", 27) == a);
	CHECK(names__intern_len(x, "std::vector", 3) ==
	      names__intern(x, "std"));
	CHECK_EQ_STR(names__intern_len(x, "abc", 0), "");
	/* Demangled forms are interned, so a caller may hash them too. */
	d = names__demangled(x, names__intern(x, "_ZN2ns4PoolIiE4growEm"));
	CHECK_EQ_STR(d, "ns::Pool<int>::grow(unsigned long)");
	CHECK(names__intern(x, "ns::Pool<int>::grow(unsigned long)") == d);
	CHECK(names__hash(d) == names__hash_str(d));
	/* Every length around the 8-byte steps of the hash. */
	for (int len = 0; len < 40; len++) {
		memset(name, 'q', (size_t)len);
		name[len] = '\0';
		CHECK(names__hash(names__intern(x, name)) ==
		      names__hash(names__intern(y, name)));
		CHECK(names__intern(x, name) == names__intern(x, name));
	}
	names__free(x);
	names__free(y);
}

int main(void)
{
	test_arena();
	test_names();
	CHECK_SUMMARY("test-arena");
	return 0;
}
