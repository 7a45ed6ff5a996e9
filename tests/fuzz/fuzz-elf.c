// SPDX-License-Identifier: MIT
/*
 * fuzz-elf.c - libFuzzer target for the ELF readers the tracer points at
 * the target's files: build ID and type (elf/elfinfo.c), load bias, and
 * the symbol lookup used to find dlopen for an attach (elf/symtab.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#include "elf/elfinfo.h"
#include "elf/symtab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elfinfo info;
	uint64_t v;
	int fd = memfd_create("fuzz-elf", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		elfinfo__read(fd, &info);
		elfinfo__load_bias(fd, 0x400000, 0, &v);
		elfsym__find(fd, "dlopen", &v);
	}
	close(fd);
	return 0;
}
