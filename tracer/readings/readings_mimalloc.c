// SPDX-License-Identifier: MIT
/*
 * readings_mimalloc.c - mimalloc's statistics table, as the target wrote it.
 *
 * mimalloc 2.0 has one numeric statistics call, mi_process_info, and its
 * committed figures are exact; everything else is in the table that
 * mi_stats_print_out prints, which the agent's stats thread has written
 * into the stats area.  It is the target's memory, so it is read strictly:
 * printable ASCII lines, each "%10s:" (a right-aligned label and a colon
 * at column 10) then 11-character columns, the first line the header
 * ("heap stats:"), the last the "process:" line unless the area cut the
 * text short.  Anything else is refused as a whole, with where.
 *
 * Only the rows mimalloc keeps process-wide in a release build are kept:
 * reserved, committed and reset (bytes: peak, total, freed, current),
 * threads (count) and commits (a counter), all updated in its main
 * statistics directly.  The allocation rows (normal, large, huge, total)
 * exist only in builds with MI_STAT, and those and the segments, pages
 * and touched rows are counted per thread and reach the table only when a
 * thread exits: read from the stats thread they say nothing of the
 * program's other threads.  Which is also why mimalloc has no in-use
 * figure here.
 *
 * The table prints amounts to three figures ("96.0 MiB", "1.5 Ki"): a value
 * is read back as the lower end of what it may be, within a tenth of its
 * unit; mi_process_info's committed bytes are the exact ones.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "readings_alloc.h"

#define MI_LABEL	10		/* "%10s:" */
#define MI_COLUMN	11		/* "%11s" */
#define MI_LINE_MAX	256

const char *const allocstats_mi_row_names[MI_ROW_COUNT] = {
	"reserved", "committed", "reset", "threads",
};

static int bad_text(struct alloc_reading *r, const char *what, size_t at)
{
	snprintf(r->why, sizeof(r->why),
		 "mi_stats_print_out's answer is not understood: %s at byte %zu",
		 what, at);
	memset(r->mi_rows, 0, sizeof(r->mi_rows));
	r->has_mi_commits = false;
	r->has_mi_text = false;
	return -EINVAL;
}

/*
 * One column: blank-padded "N", "N UNIT" or "N.D UNIT", UNIT one of B,
 * KiB, MiB, GiB (bytes) or Ki, Mi, Gi (counts), N possibly negative.  The
 * value is the lower end of what it stands for.
 */
static bool amount(const char *p, size_t n, int64_t *out)
{
	const char *end = p + n;
	uint64_t whole = 0, frac = 0, mag = 1;
	bool neg = false, digits = false;

	while (p < end && *p == ' ')
		p++;
	if (p < end && *p == '-') {
		neg = true;
		p++;
	}
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		if (whole > ALLOCSTATS_MAX_VALUE)
			return false;
		whole = whole * 10 + (uint64_t)(*p - '0');
		digits = true;
	}
	if (!digits)
		return false;
	if (p < end && *p == '.') {
		if (p + 1 >= end || p[1] < '0' || p[1] > '9')
			return false;
		frac = (uint64_t)(p[1] - '0');
		p += 2;
	}
	if (p < end && *p == ' ')
		p++;
	if (p < end && *p != ' ') {
		if (*p == 'K')
			mag = 1ull << 10;
		else if (*p == 'M')
			mag = 1ull << 20;
		else if (*p == 'G')
			mag = 1ull << 30;
		if (mag > 1) {
			if (p + 1 >= end || p[1] != 'i')
				return false;
			p += 2;
		} else if (frac) {
			return false;	/* a fraction without a unit */
		}
		if (p < end && *p == 'B')
			p++;
	} else if (frac) {
		return false;
	}
	while (p < end && *p == ' ')
		p++;
	if (p != end || whole > ALLOCSTATS_MAX_VALUE / mag)
		return false;
	whole = whole * mag + frac * mag / 10;
	if (whole > ALLOCSTATS_MAX_VALUE)
		return false;
	*out = neg ? -(int64_t)whole : (int64_t)whole;
	return true;
}

/* The kept row named label, or -1. */
static int row_of(const char *label)
{
	int i;

	for (i = 0; i < MI_ROW_COUNT; i++)
		if (!strcmp(label, allocstats_mi_row_names[i]))
			return i;
	return -1;
}

/* One "%10s:" line of n bytes at line (its newline excluded). */
static int one_line(struct alloc_reading *r, const char *line, size_t n,
		    size_t at, bool *header, bool *process)
{
	char label[MI_LABEL + 1];
	const char *l = line;
	int64_t v[4];
	int row, i;

	if (!n)
		return 0;	/* between the bins and the rest */
	if (n <= MI_LABEL || line[MI_LABEL] != ':')
		return bad_text(r, "a line without its label", at);
	while (l < line + MI_LABEL && *l == ' ')
		l++;
	memcpy(label, l, (size_t)(line + MI_LABEL - l));
	label[line + MI_LABEL - l] = 0;
	if (!*label)
		return bad_text(r, "a line without its label", at);
	if (!*header) {
		if (strcmp(label, "heap stats"))
			return bad_text(r, "no \"heap stats\" header first", at);
		*header = true;
		return 0;
	}
	if (!strcmp(label, "process")) {
		*process = true;
		return 0;
	}
	if (!strcmp(label, "commits")) {
		if (r->has_mi_commits)
			return bad_text(r, "a second commits line", at);
		if (!amount(line + MI_LABEL + 1, n - MI_LABEL - 1, &v[0]) ||
		    v[0] < 0)
			return bad_text(r, "a commits line without its count", at);
		r->mi_commits = v[0];
		r->has_mi_commits = true;
		return 0;
	}
	row = row_of(label);
	if (row < 0)
		return 0;	/* a row counted per thread: not kept */
	if (r->mi_rows[row].present)
		return bad_text(r, "a row twice", at);
	if (n < MI_LABEL + 1 + 4 * MI_COLUMN)
		return bad_text(r, "a row without its four columns", at);
	for (i = 0; i < 4; i++)
		if (!amount(line + MI_LABEL + 1 + (size_t)i * MI_COLUMN,
			    MI_COLUMN, &v[i]))
			return bad_text(r, "a column that is not an amount",
					at + MI_LABEL + 1 + (size_t)i * MI_COLUMN);
	r->mi_rows[row] = (struct mi_row_values){
		.present = true, .peak = v[0], .total = v[1], .freed = v[2],
		.current = v[3],
	};
	return 0;
}

int allocstats__parse_mi_text(struct alloc_reading *r, const char *text,
			      size_t len)
{
	const char *p = text, *end = text + len, *nl, *q;
	bool header = false, process = false;
	int err;

	memset(r->mi_rows, 0, sizeof(r->mi_rows));
	r->has_mi_commits = false;
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) {
			if (r->arenas_truncated)
				break;	/* the area's end cut it */
			return bad_text(r, "a line without its end",
					(size_t)(p - text));
		}
		if (nl - p > MI_LINE_MAX)
			return bad_text(r, "a line too long", (size_t)(p - text));
		for (q = p; q < nl; q++)
			if (*q < 0x20 || *q > 0x7e)
				return bad_text(r, "a byte that is not text",
						(size_t)(q - text));
		err = one_line(r, p, (size_t)(nl - p), (size_t)(p - text),
			       &header, &process);
		if (err)
			return err;
		p = nl + 1;
	}
	if (!header)
		return bad_text(r, "no \"heap stats\" header", 0);
	if (!process && !r->arenas_truncated)
		return bad_text(r, "no \"process\" line at the end", len);
	if (!r->mi_rows[MI_COMMITTED].present && !r->arenas_truncated)
		return bad_text(r, "no \"committed\" row", len);
	r->has_mi_text = true;
	return 0;
}
