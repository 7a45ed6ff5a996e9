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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tracer/readings/readings_timeline.h"
#include "tracer/report/report_html.h"
#include "tracer/options/args.h"
#include "common/log.h"
#include "tracer/options/options.h"

static const struct opt report_opts[] = {
	{ 'o', "output", "FILE",
	  "the page (default: PROFILE without .pb.gz, plus .html)", NULL },
	{ 'q', "quiet", NULL, "say nothing but errors", NULL },
	{ 'h', "help", NULL, "this help", NULL },
	OPT_END,
};

static const char *const report_synopsis[] = {
	"PROFILE [-o REPORT.html]", NULL,
};

static const struct doc_section report_sections[] = {
	{ "FILES",
	  "PROFILE.json and PROFILE.timeline.jsonl are read from beside "
	  "PROFILE when they are there." },
	{ "EXIT STATUS",
	  "0 written; 1 the profile cannot be read or the page cannot be "
	  "written; 2 usage error." },
	{ NULL, NULL },
};

const struct cmd_doc report_doc = {
	.name = "pprof-alloc report",
	.page = "pprof-alloc-report",
	.summary = "an HTML report of a recorded run",
	.synopsis = report_synopsis,
	.description =
	  "Write one HTML page about a recorded run: a summary (how it ended, "
	  "the heap's and RSS's peaks, where the memory went, what was lost), "
	  "a chart of memory over time (from PROFILE.timeline.jsonl: record "
	  "with --interval SECONDS) and a flame graph of the heap in use at "
	  "the end, allocated, and in use at its peak, with zoom, search and "
	  "the top functions.  The page needs no network and no other file.",
	.opts = report_opts,
	.sections = report_sections,
};

static int report_option(void *ctx, int c, const char *arg)
{
	const char **output = ctx;

	switch (c) {
	case 'o':
		*output = arg;
		return 0;
	case 'q':
		log__set_quiet(true);
		return 0;
	default:
		return -ENOTSUP;	/* in the table, not here */
	}
}

int cmd_report(int argc, char **argv)
{
	struct report_html_stats st;
	const char *output = NULL;
	char why[512] = "";
	char *path = NULL;
	int err;

	err = opts__parse(&report_doc, argc, argv, false, report_option,
			  &output);
	if (err)
		return err == 1 ? 0 : 2;	/* 1: the help */
	if (optind != argc - 1) {
		pr_warn("%s\n", optind == argc ? "which profile? (pprof-alloc report PROFILE)" :
			"one profile at a time");
		try_help();
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
