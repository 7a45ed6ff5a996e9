// SPDX-License-Identifier: MIT
/*
 * fuzz-live.c - libFuzzer target for the live table and stack table the
 * tracer reads from an agent's memfd when it comes late or reads a core
 * (heap__seed, then heap__reconcile with the same table): every entry is
 * the target's to scribble on.
 *
 * Input: max_frames (1 byte), then the live table (LIVE entries) and the
 * stack table (pa_stack_table_size(STACKS): STACKS stacks),
 * zero-padded.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tracer/record/heap.h"

#define LIVE	PA_LIVE_MIN
#define STACKS	64u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t max_frames;
	size_t live_bytes = LIVE * sizeof(struct pa_live_entry), stack_bytes;
	uint8_t *buf;
	struct heap h;

	if (!size)
		return 0;
	max_frames = 1 + data[0] % PA_MAX_FRAMES;
	stack_bytes = pa_stack_table_size(STACKS);
	buf = calloc(1, live_bytes + stack_bytes);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1 < live_bytes + stack_bytes ?
			      size - 1 : live_bytes + stack_bytes);
	heap__init(&h, 524288);
	heap__set_max_buckets(&h, 16);
	if (!heap__seed(&h, (const struct pa_live_entry *)buf, LIVE, NULL,
			buf + live_bytes, STACKS, max_frames, 4096))
		heap__reconcile(&h, (const struct pa_live_entry *)buf, LIVE, NULL);
	heap__fini(&h);
	free(buf);
	return 0;
}
