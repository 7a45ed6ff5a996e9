// SPDX-License-Identifier: MIT
/*
 * fuzz-inflate.c - libFuzzer target for elf/inflate.c, which reads debug
 * files from anywhere (a debuginfod server, a target's directories) and
 * makes a decompressed image of them.  Besides not crashing, an error must
 * leave no image, and an image must never be larger than the input, what
 * was inflated into it, a new section header table and alignment.  Idle
 * work looks sections up in the image while it is made (ASan checks that
 * what elf_image__section() returns is inside it).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "elf/inflate.h"

/* Idle work that looks sections up in the image being made. */
static void idle_run(struct elf_image *image, const int *stop, void *arg)
{
	static const char *const names[] = {
		".debug_line", ".debug_str", ".debug_info", ".symtab",
	};
	size_t size;

	(void)stop;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const unsigned char *p = elf_image__section(image, names[i],
							    &size);

		if (p && size && p[size - 1] == 0x5a)
			(*(int *)arg)++;	/* read its last byte */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const needs[] = {
		".debug_line", ".debug_str", ".debug_info", ".symtab", NULL,
	};
	int seen = 0;
	const struct inflate_idle idle = { needs, idle_run, &seen };
	int fd = memfd_create("fuzz-inflate", MFD_CLOEXEC), err;
	struct elf_image *image = NULL;
	uint64_t bytes = 0;

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		err = elf_inflate__image(fd, 2, &idle, &image, &bytes);
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
