// SPDX-License-Identifier: MIT
/*
 * fuzz-inflate.c - libFuzzer target for elf/inflate.c, which reads debug
 * files from anywhere (a debuginfod server, a target's directories) and
 * writes a decompressed copy of them.  Besides not crashing, an error must
 * leave no copy, and a copy must never be larger than the input, what was
 * inflated into it, a new section header table and alignment.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "elf/inflate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-inflate", MFD_CLOEXEC), copy = -1, err;
	uint64_t bytes = 0;
	struct stat st;

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		err = elf_inflate__copy(fd, 2, &copy, &bytes);
		if (err && copy != -1)
			abort();	/* an error with a copy */
		if (copy >= 0) {
			/* The original, the inflated sections with their
			 * alignment, a section header table: no more. */
			if (fstat(copy, &st) || (uint64_t)st.st_size >
			    2 * (uint64_t)size + bytes + (1u << 20))
				abort();
			close(copy);
		}
	}
	close(fd);
	return 0;
}
