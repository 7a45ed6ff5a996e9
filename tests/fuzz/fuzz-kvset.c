// SPDX-License-Identifier: MIT
/*
 * fuzz-kvset.c - libFuzzer target for the key/number parser of /proc and
 * cgroup files (tracer/readings/kvfile.c: smaps_rollup, status, memory.stat,
 * memory.events), in each of its formats; the first byte picks the format
 * and whether other lines are skipped.
 */
#include <stdint.h>
#include <stdlib.h>
#include "tracer/readings/kvfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kvset s = { 0 };
	uint64_t v;

	if (!size)
		return 0;
	if (!kvset__parse(&s, (const char *)data + 1, size - 1,
			  (enum kv_format)(data[0] % 2), data[0] & 0x80, 0)) {
		kvset__value(&s, "Rss", &v);
		kvset__value(&s, "anon", &v);
		kvset__get(&s, "VmRSS");
	}
	kvset__fini(&s);
	return 0;
}
