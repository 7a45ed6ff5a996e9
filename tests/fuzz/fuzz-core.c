// SPDX-License-Identifier: MIT
/*
 * fuzz-core.c - libFuzzer target for the ELF core reader of --core
 * (elf/core.c): program headers, PT_NOTE (NT_FILE, NT_PRSTATUS,
 * NT_PRPSINFO, NT_AUXV), reads of memory and of the modules' identities,
 * and the modules found from NT_FILE and the loader's list
 * (elf/core_modules.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include "elf/core.h"
#include "elf/core_modules.h"

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
			struct core_modules cm;

			core_modules__find(&c, &cm);
			core_modules__free(&cm);
			if (c.has_auxv && c.auxv.execfn)
				core__read_string(&c, c.auxv.execfn, why,
						  sizeof(why));
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
