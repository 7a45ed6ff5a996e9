// SPDX-License-Identifier: MIT
/*
 * json.c - a small streaming JSON writer.
 *
 * Enough for the telemetry files: nesting up to JSON_MAX_DEPTH, keys and
 * strings cleaned first (untrusted.c: strings here come from the target -
 * paths, allocator names - so control bytes and invalid UTF-8 become the
 * text \xNN, and a reader of the document never gets them back raw) and
 * then escaped as RFC 8259 asks,
 * doubles that are not finite written as null; for a document inside an
 * HTML <script>, "<", ">" and "&" as \u003c... too, so that no "</script>"
 * can end it.  Writes go to a stdio
 * stream; the caller checks ferror() once at the end.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include "json.h"
#include "common/untrusted.h"

void json__init(struct json *j, FILE *out, bool pretty)
{
	memset(j, 0, sizeof(*j));
	j->out = out;
	j->pretty = pretty;
	j->first[0] = true;
}

struct json_put {
	FILE *out;
	bool script;
};

/* A run of cleaned text (untrusted.c: no control byte, valid UTF-8) with
 * JSON's own escapes. */
static void json_put(void *ctx, const char *s, size_t n)
{
	struct json_put *p = ctx;
	size_t i;

	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c == '"' || c == '\\')
			fprintf(p->out, "\\%c", c);
		else if (p->script && (c == '<' || c == '>' || c == '&'))
			fprintf(p->out, "\\u%04x", c);
		else
			fputc(c, p->out);
	}
}

static void escaped(FILE *out, const char *s, bool script)
{
	struct json_put p = { .out = out, .script = script };

	fputc('"', out);
	untrusted__write(s, json_put, &p);
	fputc('"', out);
}

/* The separator and the key before a value at the current depth. */
static void member(struct json *j, const char *key)
{
	int i;

	if (!j->first[j->depth])
		fputc(',', j->out);
	j->first[j->depth] = false;
	if (j->pretty && j->depth) {
		fputc('\n', j->out);
		for (i = 0; i < j->depth; i++)
			fputs("  ", j->out);
	}
	if (key) {
		escaped(j->out, key, j->script);
		fputs(j->pretty ? ": " : ":", j->out);
	}
}

static void begin(struct json *j, const char *key, char open)
{
	member(j, key);
	fputc(open, j->out);
	if (j->depth + 1 >= JSON_MAX_DEPTH)
		return;		/* deeper than any document here: flattened */
	j->depth++;
	j->first[j->depth] = true;
	j->close[j->depth] = open == '{' ? '}' : ']';
}

void json__begin_object(struct json *j, const char *key)
{
	begin(j, key, '{');
}

void json__begin_array(struct json *j, const char *key)
{
	begin(j, key, '[');
}

void json__end(struct json *j)
{
	char close = j->close[j->depth];
	bool empty = j->first[j->depth];
	int i;

	if (!j->depth)
		return;
	j->depth--;
	if (j->pretty && !empty) {
		fputc('\n', j->out);
		for (i = 0; i < j->depth; i++)
			fputs("  ", j->out);
	}
	fputc(close, j->out);
}

void json__u64(struct json *j, const char *key, uint64_t v)
{
	member(j, key);
	fprintf(j->out, "%" PRIu64, v);
}

void json__i64(struct json *j, const char *key, int64_t v)
{
	member(j, key);
	fprintf(j->out, "%" PRId64, v);
}

void json__double(struct json *j, const char *key, double v)
{
	member(j, key);
	if (isfinite(v))
		fprintf(j->out, "%.17g", v);
	else
		fputs("null", j->out);
}

void json__bool(struct json *j, const char *key, bool v)
{
	member(j, key);
	fputs(v ? "true" : "false", j->out);
}

void json__null(struct json *j, const char *key)
{
	member(j, key);
	fputs("null", j->out);
}

void json__string(struct json *j, const char *key, const char *s)
{
	member(j, key);
	escaped(j->out, s, j->script);
}

void json__finish(struct json *j)
{
	fputc('\n', j->out);
}
