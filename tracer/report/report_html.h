/* SPDX-License-Identifier: MIT */
/*
 * report_html.h - one self-contained HTML page from a profile and the
 * readings beside it.
 */
#ifndef PA_TRACER_REPORT_HTML_H
#define PA_TRACER_REPORT_HTML_H

#include <stddef.h>

/* Frames under this share of every view are folded into [other]. */
#define REPORT_FOLD_DEFAULT	0.0001
/* ... and the share is raised until at most this many frames are left. */
#define REPORT_MAX_NODES	200000u

struct report_html_stats {
	size_t stacks;		/* samples of the profile */
	size_t nodes;		/* frames drawn */
	size_t folded;		/* frames folded into [other] */
	size_t timeline_lines;	/* readings charted */
	size_t bytes;		/* the page's size */
};

/*
 * Read the profile at profile (gzipped or not) and, beside it,
 * PROFILE.json and PROFILE.timeline.jsonl when they are there; write the
 * page to out atomically.  0, or -errno with why (the profile cannot be
 * read: why says what is wrong with it; the page cannot be written).
 * Readings that are missing or unreadable leave their part of the page
 * saying so; they never fail the report.
 */
int report_html__write(const char *profile, const char *out,
		       struct report_html_stats *st, char *why,
		       size_t why_size);

#endif /* PA_TRACER_REPORT_HTML_H */
