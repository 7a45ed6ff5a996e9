/* SPDX-License-Identifier: MIT */
/*
 * unpack_count.h - count what protobuf-c asks its allocator for, rounded as
 * the arena rounds it (it is given one, as pprof_file.c does), for the
 * tests of pprof_file__unpack_size(): tests/unit/test-pprof-file.c and
 * tests/fuzz/fuzz-pprof.c.  One program each, so the counter is static.
 */
#ifndef PA_TESTS_UNPACK_COUNT_H
#define PA_TESTS_UNPACK_COUNT_H

#include <stddef.h>
#include <stdint.h>
#include "elf/arena.h"

static uint64_t counted;

static void *count_alloc(void *arena, size_t size)
{
	size_t align = _Alignof(max_align_t);

	counted += size ? (size + align - 1) & ~(align - 1) : align;
	return arena__alloc(arena, size);
}

static void count_free(void *arena, void *pointer)
{
	(void)arena;
	(void)pointer;
}

#endif /* PA_TESTS_UNPACK_COUNT_H */
