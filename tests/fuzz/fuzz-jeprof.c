// SPDX-License-Identifier: MIT
/*
 * fuzz-jeprof.c - libFuzzer target for the parser of jemalloc's heap
 * profile dump (tracer/output/jeprof_dump.c), which the target process writes,
 * and for the unbiasing of what it accepts.
 */
#include <stdint.h>
#include "tracer/output/jeprof_dump.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jeprof_dump d;
	char why[256];
	double objs, bytes;
	size_t i;

	if (!jeprof_dump__parse(&d, (const char *)data, size, why,
				sizeof(why)))
		for (i = 0; i < d.nstacks; i++) {
			if (d.stacks[i].frames_at + d.stacks[i].nframes >
			    d.nframes)
				__builtin_trap();
			jeprof__scale(d.stacks[i].objs, d.stacks[i].bytes,
				      d.period, &objs, &bytes);
			if (objs < 0 || bytes < objs)
				__builtin_trap();
		}
	jeprof_dump__fini(&d);
	return 0;
}
