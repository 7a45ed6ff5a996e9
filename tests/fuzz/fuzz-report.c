// SPDX-License-Identifier: MIT
/*
 * fuzz-report.c - libFuzzer target for `pprof-alloc report`
 * (report_html.c): a profile, PROFILE.json and PROFILE.timeline.jsonl,
 * all of them anyone's to write, made into a page.
 *
 * Input: three parts, each a 4-byte little-endian length then its bytes
 * (a part cut short takes what is left): the profile, the readings, the
 * timeline.  They are written as files of a directory of this process's
 * own, and the page is written beside them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "tracer/report/report_html.h"

static char dir[64];

static void put(const char *name, const uint8_t **data, size_t *size)
{
	char path[128];
	uint32_t n = 0;
	FILE *f;

	if (*size >= 4) {
		memcpy(&n, *data, 4);
		*data += 4;
		*size -= 4;
	}
	if (n > *size)
		n = (uint32_t)*size;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		abort();
	if (n && fwrite(*data, 1, n, f) != n)
		abort();
	fclose(f);
	*data += n;
	*size -= n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct report_html_stats st;
	char prof[128], out[128], why[512];

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/fuzz-report.%d", (int)getpid());
		mkdir(dir, 0700);
	}
	put("p.pb.gz", &data, &size);
	put("p.json", &data, &size);
	put("p.timeline.jsonl", &data, &size);
	snprintf(prof, sizeof(prof), "%s/p.pb.gz", dir);
	snprintf(out, sizeof(out), "%s/p.html", dir);
	report_html__write(prof, out, &st, why, sizeof(why));
	return 0;
}
