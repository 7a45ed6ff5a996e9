// SPDX-License-Identifier: MIT
/*
 * fuzz-mallocinfo.c - libFuzzer target for the parsers of the stats area's
 * text, which the target process writes: malloc_info's XML
 * (tracer/readings/readings_alloc.c) and mimalloc's mi_stats_print_out table
 * (tracer/readings/readings_mimalloc.c), each given every input, whole and as if
 * the area had cut it short.
 */
#include <stdint.h>
#include <string.h>
#include "tracer/readings/readings_alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct alloc_reading r;

	memset(&r, 0, sizeof(r));
	allocstats__parse_info(&r, (const char *)data, size);
	allocstats__fini(&r);
	memset(&r, 0, sizeof(r));
	allocstats__parse_mi_text(&r, (const char *)data, size);
	r.arenas_truncated = true;
	allocstats__parse_mi_text(&r, (const char *)data, size);
	allocstats__fini(&r);
	return 0;
}
