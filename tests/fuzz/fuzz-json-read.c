// SPDX-License-Identifier: MIT
/*
 * fuzz-json-read.c - libFuzzer target for json_read.c, the scanner the
 * report reads PROFILE.json and each timeline line with (files anyone may
 * have cut short, edited or written).
 *
 * Input: any bytes, taken as a document.  Every path the report looks up
 * is looked up, and every value found is read as a number, a bool and a
 * string into buffers of several sizes (1 byte up), each an exact-size
 * heap allocation, so that a read or write past either end is caught.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tracer/output/json_read.h"

static const char *const paths[] = {
	"", "pid", "time", "unix_ns", "end.target", "end.reading.taken",
	"end.peak_heap.bytes", "end.peak_heap.exact", "end.peak_rss.from",
	"process.status.VmRSS", "allocator.mallinfo2.uordblks",
	"cgroup.common.limit", "a.b.c.d.e",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t sizes[] = { 1, 2, 3, 4, 5, 7, 16, 256 };
	char *doc = malloc(size ? size : 1);
	size_t i, k;

	if (!doc)
		return 0;
	memcpy(doc, data, size);
	(void)json_read__valid(doc, size);
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct json_value v = json_read__get(doc, size, paths[i]);
		double d;
		bool b;

		if (v.type == JSON_NONE)
			continue;
		if (v.at < doc || v.at + v.len > doc + size)
			abort();	/* a value outside the document */
		(void)json_read__number(v, &d);
		(void)json_read__bool(v, &b);
		for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			char *buf = malloc(sizes[k]);

			if (buf && json_read__string(v, buf, sizes[k]) &&
			    strlen(buf) >= sizes[k])
				abort();	/* not terminated inside it */
			free(buf);
		}
	}
	free(doc);
	return 0;
}
