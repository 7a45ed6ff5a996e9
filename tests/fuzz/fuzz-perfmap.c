// SPDX-License-Identifier: MIT
/*
 * fuzz-perfmap.c - libFuzzer target for the perf map parser
 * (tracer/record/perfmap.c: /tmp/perf-PID.map, written by the target), and
 * lookups at the addresses its lines name and around them.
 */
#include <stdint.h>
#include <string.h>
#include "tracer/record/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap *pm = perfmap__parse((const char *)data, size);
	uint64_t a = 0;
	size_t i;

	if (!pm)
		return 0;
	for (i = 0; i + 8 <= size && i < 64 * 8; i += 8) {
		memcpy(&a, data + i, 8);
		perfmap__lookup(pm, a);
		perfmap__lookup(pm, a - 1);
	}
	perfmap__lookup(pm, 0);
	perfmap__lookup(pm, UINT64_MAX);
	perfmap__free(pm);
	return 0;
}
