// SPDX-License-Identifier: MIT
/*
 * fuzz-inflate.c - libFuzzer target for elf/inflate.c, which reads debug
 * files from anywhere (a debuginfod server, a target's directories) and
 * makes a decompressed image of them.  Besides not crashing, an error must
 * leave no image, and an image must never be larger than the input, what
 * was inflated into it, a new section header table and alignment.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "elf/inflate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-inflate", MFD_CLOEXEC), err;
	struct elf_image *image = NULL;
	uint64_t bytes = 0;

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		err = elf_inflate__image(fd, 2, NULL, &image, &bytes);
		if (err && image)
			abort();	/* an error with an image */
		if (image) {
			/* The original, the inflated sections with their
			 * alignment, a section header table: no more. */
			if ((uint64_t)elf_image__size(image) >
			    2 * (uint64_t)size + bytes + (1u << 20))
				abort();
			elf_image__put(image);
		}
	}
	close(fd);
	return 0;
}
