// SPDX-License-Identifier: MIT
/*
 * fuzz-pprof.c - libFuzzer target for the pprof reader used by
 * `pprof-alloc symbolize` (tracer/pprof_file.c: gunzip with a bound,
 * protobuf, then every reference checked).  The input is a file's bytes,
 * gzipped or not.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include "tracer/pprof_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pprof_file *f = NULL;
	char path[64], why[256];
	int fd = memfd_create("fuzz-pprof", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (!pprof_file__read(path, &f, why, sizeof(why)))
			pprof_file__free(f);
	}
	close(fd);
	return 0;
}
