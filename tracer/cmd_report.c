// SPDX-License-Identifier: MIT
/*
 * cmd_report.c - `pprof-alloc report PROFILE [-o REPORT.html]`.
 *
 * One self-contained HTML page (report_html.c) from a profile and the
 * readings written beside it (PROFILE.json, PROFILE.timeline.jsonl): a
 * summary, a chart of memory over time and a flame graph of the heap in
 * use, allocated and at its peak.  Any pprof profile will do (another
 * tool's shows its own sample types, without readings).  The page is
 * written atomically, beside the profile by default.
 *
 * Exit status: 0 written; 1 the profile cannot be read or the page
 * cannot be written (said); 2 usage.
 */
#include "builtin.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "readings_timeline.h"
#include "report_html.h"
#include "elf/log.h"

static void usage(FILE *out)
{
	fprintf(out,
"Usage: pprof-alloc report PROFILE [-o REPORT.html]\n"
"Write one HTML page about a recorded run: a summary (how it ended, the\n"
"heap's and RSS's peaks, where the memory went, what was lost), a chart\n"
"of memory over time (from PROFILE.timeline.jsonl: record with\n"
"--interval SECONDS) and a flame graph of the heap in use at the end,\n"
"allocated, and in use at its peak, with zoom, search and the top\n"
"functions.  The page needs no network and no other file.\n"
"\n"
"  -o, --output FILE    the page (default: PROFILE without .pb.gz, plus\n"
"                       .html)\n"
"  -q, --quiet          say nothing but errors\n"
"  -h, --help           this help\n"
"\n"
"PROFILE.json and PROFILE.timeline.jsonl are read from beside PROFILE when\n"
"they are there.  Exit status: 0 written; 1 the profile cannot be read or\n"
"the page cannot be written; 2 usage error.\n");
}

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct report_html_stats st;
	const char *output = NULL;
	char why[512] = "";
	char *path = NULL;
	int c, err;

	while ((c = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			output = optarg;
			break;
		case 'q':
			log__set_quiet(true);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		pr_warn("%s\n", optind == argc ? "which profile? (pprof-alloc report PROFILE)" :
			"one profile at a time");
		usage(stderr);
		return 2;
	}
	if (!output) {
		path = timeline__sibling(argv[optind], ".html");
		if (!path) {
			pr_warn("out of memory\n");
			return 1;
		}
		output = path;
	}
	err = report_html__write(argv[optind], output, &st, why, sizeof(why));
	if (err) {
		pr_warn("%s: %s\n", argv[optind], why[0] ? why : strerror(-err));
		free(path);
		return 1;
	}
	pr_info("wrote %s (%.1f MiB: %zu frames drawn from %zu stacks%s, %zu readings charted)\n",
		output, (double)st.bytes / (1 << 20), st.nodes, st.stacks,
		st.folded ? ", the smallest folded" : "", st.timeline_lines);
	free(path);
	return 0;
}
