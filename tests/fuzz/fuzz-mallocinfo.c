// SPDX-License-Identifier: MIT
/*
 * fuzz-mallocinfo.c - libFuzzer target for the parser of malloc_info's
 * XML (tracer/readings_alloc.c), which the target process writes.
 */
#include <stdint.h>
#include <string.h>
#include "tracer/readings_alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct alloc_reading r;

	memset(&r, 0, sizeof(r));
	allocstats__parse_info(&r, (const char *)data, size);
	allocstats__fini(&r);
	return 0;
}
