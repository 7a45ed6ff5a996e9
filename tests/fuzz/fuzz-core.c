// SPDX-License-Identifier: MIT
/*
 * fuzz-core.c - libFuzzer target for the ELF core reader of --core
 * (elf/core.c): program headers, PT_NOTE (NT_FILE, NT_PRSTATUS,
 * NT_PRPSINFO), reads of memory and of the modules' identities.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include "elf/core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct core c;
	char path[64], why[256];
	uint8_t buf[64], id[32];
	uint64_t bias;
	size_t id_len;
	int fd = memfd_create("fuzz-core", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (!core__open(&c, path, why, sizeof(why))) {
			for (size_t i = 0; i < c.nsegs && i < 16; i++) {
				core__read(&c, c.segs[i].vaddr, buf, sizeof(buf));
				core__module_identity(&c, c.segs[i].vaddr, &bias,
						      id, sizeof(id), &id_len);
			}
			core__close(&c);
		}
	}
	close(fd);
	return 0;
}
