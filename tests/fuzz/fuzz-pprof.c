// SPDX-License-Identifier: MIT
/*
 * fuzz-pprof.c - libFuzzer target for the pprof reader used by
 * `pprof-alloc symbolize` (tracer/output/pprof_file.c: gunzip as a stream with
 * its limits, the walk over the top level, what unpacking would take,
 * protobuf, then every reference checked).  The input is a file's bytes,
 * gzipped or not.  It is read from a file and, when it fits in a pipe's
 * buffer, from a pipe too: the two must agree (the same error, or
 * profiles of the same size), since a pipe only hands the same bytes over
 * in other pieces.  An input that is not gzipped is also unpacked by
 * protobuf-c directly, counting what it asks for: pprof_file__unpack_size()
 * must say exactly that when it unpacks, and no less when it fails.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "elf/arena.h"
#include "tests/unpack_count.h"
#include "tracer/output/pprof_file.h"

/* Read data[0..size) from a pipe: 0 or the error; 1: cannot here. */
static int read_pipe(const uint8_t *data, size_t size, size_t *packed)
{
	struct pprof_file *f = NULL;
	char why[256];
	int p[2], err = 1;

	if (pipe2(p, O_CLOEXEC) < 0)
		return 1;
	if (fcntl(p[1], F_SETPIPE_SZ, size + 1) >= (int)size + 1 &&
	    write(p[1], data, size) == (ssize_t)size) {
		close(p[1]);
		p[1] = -1;
		err = pprof_file__read_fd(p[0], &f, why, sizeof(why));
		if (!err)
			*packed = perftools__profiles__profile__get_packed_size(
				f->profile);
		pprof_file__free(f);
	}
	if (p[1] >= 0)
		close(p[1]);
	close(p[0]);
	return err;
}

/* protobuf-c's allocations: tests/unpack_count.h */

/* What protobuf-c asks for against what the reader expects it to. */
static void check_unpack_size(const uint8_t *data, size_t size)
{
	uint64_t expected = pprof_file__unpack_size(data, size);
	struct arena *arena;
	void *p;

	if (expected > (256u << 20) || !(arena = arena__new()))
		return;
	counted = 0;
	p = perftools__profiles__profile__unpack(
		&(ProtobufCAllocator){ count_alloc, count_free, arena }, size,
		data);
	if (p ? counted != expected : counted > expected)
		abort();
	arena__free(arena);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pprof_file *f = NULL;
	char path[64], why[256];
	int fd = memfd_create("fuzz-pprof", MFD_CLOEXEC), err = 1, piped;
	size_t packed = 0, piped_packed = 0;

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		err = pprof_file__read(path, &f, why, sizeof(why));
		if (!err)
			packed = perftools__profiles__profile__get_packed_size(
				f->profile);
		pprof_file__free(f);
	}
	close(fd);
	piped = read_pipe(data, size, &piped_packed);
	if (piped != 1 && err != 1 &&
	    (piped != err || piped_packed != packed))
		abort();	/* a pipe read the same bytes differently */
	if (size && !(size >= 2 && data[0] == 0x1f && data[1] == 0x8b))
		check_unpack_size(data, size);
	return 0;
}
