// SPDX-License-Identifier: MIT
/*
 * fuzz-sites.c - libFuzzer target for exact mode's site table, which the
 * tracer reads from an agent's memfd every 50 ms (site_reader__read): the
 * entries, their counts, sites_used and the stack table they point into
 * are the target's to scribble on, and may change between two reads.
 *
 * Input: max_frames (1 byte), sites_used (4 bytes, little-endian: its top
 * byte, taken off, is site_lanes_used), then the site table (SITES
 * entries, its index and its lanes) and the stack table
 * (pa_stack_table_size(STACKS): STACKS stacks), zero-padded.  The
 * table is read, then every entry's counts and a lane's are changed by
 * the input's bytes taken again (some up, some down, some crossing) and
 * read again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tracer/record/sites.h"

#define SITES	1024u
#define STACKS	64u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t site_bytes = pa_site_table_size(SITES), stack_bytes, take;
	struct site_reader sr;
	struct session s;
	struct pa_site *sites;
	struct pa_site_lane *lane;
	struct site_lanes lanes;
	uint32_t max_frames, used;
	uint8_t *buf;
	size_t i;

	if (size < 5)
		return 0;
	max_frames = 1 + data[0] % PA_MAX_FRAMES;
	memcpy(&used, data + 1, sizeof(used));
	data += 5;
	size -= 5;
	stack_bytes = pa_stack_table_size(STACKS);
	buf = calloc(1, site_bytes + stack_bytes);
	if (!buf)
		return 0;
	take = size < site_bytes + stack_bytes ? size : site_bytes + stack_bytes;
	memcpy(buf, data, take);
	sites = (struct pa_site *)buf;
	lanes.base = (const struct pa_site_lane *)
		     (buf + pa_site_lanes_offset(SITES));
	lanes.used = used >> 24;
	lanes.pages = NULL;
	used &= 0xffffff;
	lane = (struct pa_site_lane *)lanes.base +
	       (used % PA_SITE_LANES) * pa_lane_sites(SITES);
	memset(&sr, 0, sizeof(sr));
	if (session__init(&s, getpid(), 1, max_frames) ||
	    site_reader__init(&sr, SITES))
		goto out_fini;
	heap__set_max_buckets(&s.heap, 16);
	if (site_reader__read(&sr, &s, sites, used, &lanes, buf + site_bytes,
			      STACKS, max_frames))
		goto out_fini;
	for (i = 0; i < SITES; i++) {
		uint8_t k = take ? data[i % take] : 0;

		sites[i].allocs += (uint64_t)k - 64;
		sites[i].frees += (uint64_t)(k & 0x0f) - 4;
		if (k == 0xff)
			sites[i].size ^= 1;
		lane[i].allocs += (uint64_t)(k >> 4);
		lane[i].frees += (uint64_t)(k & 0x3) - 1;
	}
	site_reader__read(&sr, &s, sites, used, &lanes, buf + site_bytes,
			  STACKS, max_frames);
out_fini:
	site_reader__fini(&sr);
	session__fini(&s);
	free(buf);
	return 0;
}
