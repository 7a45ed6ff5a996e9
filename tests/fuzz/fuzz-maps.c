// SPDX-License-Identifier: MIT
/*
 * fuzz-maps.c - libFuzzer target for the /proc/PID/maps parser
 * (elf/maps.c): any bytes parse or are refused, entries are sane.
 */
#include <stdint.h>
#include <stdlib.h>
#include "elf/maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proc_maps *m = NULL;

	if (!proc_maps__parse((const char *)data, size, &m)) {
		for (size_t i = 0; i < m->count; i++)
			if (m->entries[i].start > m->entries[i].end ||
			    !m->entries[i].path)
				abort();
		proc_maps__free(m);
	}
	return 0;
}
