// SPDX-License-Identifier: MIT
/*
 * fuzz-cfi.c - libFuzzer target for the agent's unwind-table builder
 * (agent/cfi.c), which reads .eh_frame_hdr and .eh_frame from a module's
 * memory: a module the target loaded may hold anything there.
 *
 * Input: the memory from .eh_frame_hdr to the end of its segment (the
 * seeds are real modules' bytes).  The builder may read only those bytes;
 * ASan checks that.  The rows it writes must be sorted, each must be
 * found again by cfi__find, and there must be no more of them than
 * cfi__max_rows said (the agent maps that many).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "agent/cfi.c"

#define MAX_ROWS	4096u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cfi_row rows[MAX_ROWS];
	struct cfi_stats st;
	struct cfi_source src;
	uint8_t *buf;
	size_t n, i, max;

	if (!size)
		return 0;
	buf = malloc(size);	/* exactly size: ASan sees any read past */
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	src = (struct cfi_source){
		.hdr = buf, .lo = (uintptr_t)buf, .hi = (uintptr_t)buf + size,
		/* code lies below .eh_frame_hdr in a module: within 1 GiB */
		.bias = (uintptr_t)buf - (1u << 30),
		.text_lo = (uintptr_t)buf - (1u << 30),
		.text_hi = (uintptr_t)buf + size,
	};
	max = cfi__max_rows(&src);
	if (max) {
		n = cfi__build(&src, rows, MAX_ROWS, &st);
		/* the agent maps max rows for a build: never more made */
		if (n > MAX_ROWS || n > max)
			abort();
		for (i = 0; i < n; i++) {
			if (i && rows[i - 1].pc >= rows[i].pc)
				abort();
			if (cfi__find(rows, n, rows[i].pc) != &rows[i])
				abort();
		}
	}
	free(buf);
	return 0;
}
