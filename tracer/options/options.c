// SPDX-License-Identifier: MIT
/*
 * options.c - getopt_long's tables, --help and the man page, from a
 * command's option table (options.h).
 *
 * Text is written once, as paragraphs: --help wraps them at 79 columns,
 * with the options' help from column 25; the man page leaves the wrapping
 * to man(1).  A paragraph's lines that start with two spaces are kept as
 * they are in both (the endpoints serve answers, an example).
 */
#include "options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "args.h"
#include "common/log.h"

#define WIDTH		79
#define HELP_COLUMN	25

/* Call fn on every option of t, includes flattened; stops at a non-zero
 * return and returns it. */
static int each(const struct opt *t, int (*fn)(const struct opt *, void *),
		void *arg)
{
	int ret;

	for (; t->key || t->more; t++) {
		ret = t->more ? each(t->more, fn, arg) : fn(t, arg);
		if (ret)
			return ret;
	}
	return 0;
}

static int count_one(const struct opt *o, void *arg)
{
	(void)o;
	(*(size_t *)arg)++;
	return 0;
}

struct build {
	struct option *lo;
	char *s;
	size_t n, len;
};

static int add_one(const struct opt *o, void *arg)
{
	struct build *b = arg;

	b->lo[b->n++] = (struct option){
		o->name, o->arg ? required_argument : no_argument, NULL, o->key,
	};
	if (o->key > 0 && o->key < 128) {
		b->s[b->len++] = (char)o->key;
		if (o->arg)
			b->s[b->len++] = ':';
	}
	return 0;
}

int opts__getopt(const struct opt *t, bool stop_at_operand,
		 struct option **longopts, char **optstring)
{
	struct build b = { 0 };
	size_t n = 0;

	each(t, count_one, &n);
	b.lo = calloc(n + 1, sizeof(*b.lo));
	b.s = calloc(2 * n + 2, 1);
	if (!b.lo || !b.s) {
		free(b.lo);
		free(b.s);
		return -ENOMEM;
	}
	if (stop_at_operand)
		b.s[b.len++] = '+';
	each(t, add_one, &b);
	*longopts = b.lo;
	*optstring = b.s;
	return 0;
}

int opts__parse(const struct cmd_doc *d, int argc, char **argv,
		bool stop_at_operand,
		int (*fn)(void *ctx, int key, const char *arg), void *ctx)
{
	struct option *lo;
	char *optstring;
	int c, err;

	err = opts__getopt(d->opts, stop_at_operand, &lo, &optstring);
	if (err)
		return err;
	optind = 0;	/* 0, not 1: glibc forgets a previous parse wholly */
	while ((c = getopt_long(argc, argv, optstring, lo, NULL)) != -1) {
		if (c == 'h') {
			opts__help(stdout, d);
			err = 1;
			break;
		}
		if (c == '?' || c == ':') {
			err = try_help();
			break;
		}
		err = fn(ctx, c, optarg);
		if (err == -ENOTSUP) {
			pr_warn("option %s is in the table but not handled\n",
				argv[optind - 1]);
			err = -EINVAL;
		}
		if (err)
			break;
	}
	free(lo);
	free(optstring);
	return err;
}

struct checking {
	const struct cmd_doc *d;
	const struct opt *seen[256];
	size_t n;
};

static int check_one(const struct opt *o, void *arg)
{
	struct checking *c = arg;
	size_t i;

	if (!o->name || !o->name[0] || !o->help || !o->help[0]) {
		pr_warn("%s: option %s has no %s\n", c->d->name,
			o->name ? o->name : "(unnamed)",
			o->name && o->name[0] ? "help text" : "name");
		return -EINVAL;
	}
	for (i = 0; i < c->n; i++) {
		if (!strcmp(c->seen[i]->name, o->name) ||
		    c->seen[i]->key == o->key) {
			pr_warn("%s: options --%s and --%s share a %s\n",
				c->d->name, c->seen[i]->name, o->name,
				c->seen[i]->key == o->key ? "key" : "name");
			return -EINVAL;
		}
	}
	if (c->n == sizeof(c->seen) / sizeof(c->seen[0])) {
		pr_warn("%s: too many options\n", c->d->name);
		return -EINVAL;
	}
	c->seen[c->n++] = o;
	return 0;
}

int opts__check(const struct cmd_doc *d)
{
	struct checking c = { .d = d };

	if (!d->name || !d->page || !d->summary || !d->synopsis ||
	    !d->synopsis[0] || !d->description || !d->opts) {
		pr_warn("%s: its page lacks a part\n",
			d->name ? d->name : "a command");
		return -EINVAL;
	}
	return each(d->opts, check_one, &c);
}

/* ---- --help ------------------------------------------------------------ */

/* Write the words of text[0, len) from column col, indented by indent,
 * wrapped at WIDTH.  Returns the column after. */
static size_t wrap(FILE *f, const char *text, size_t len, size_t col,
		   size_t indent)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *w = p;
		size_t n;

		while (w < end && *w != ' ' && *w != '\n')
			w++;
		n = (size_t)(w - p);
		if (n) {
			if (col > indent && col + 1 + n > WIDTH) {
				fprintf(f, "\n%*s", (int)indent, "");
				col = indent;
			} else if (col > indent) {
				fputc(' ', f);
				col++;
			}
			fwrite(p, 1, n, f);
			col += n;
		}
		p = w;
		while (p < end && (*p == ' ' || *p == '\n'))
			p++;
	}
	return col;
}

/* A paragraph's next line, [*p, eol); false at its end. */
static bool next_line(const char **p, const char *end, const char **eol)
{
	if (*p >= end)
		return false;
	*eol = memchr(*p, '\n', (size_t)(end - *p));
	if (!*eol)
		*eol = end;
	return true;
}

static bool verbatim(const char *line, const char *eol)
{
	return eol - line >= 2 && line[0] == ' ' && line[1] == ' ';
}

/* Paragraphs ("\n\n" apart), wrapped from indent, verbatim lines kept. */
static void help_text(FILE *f, const char *text, size_t indent)
{
	const char *p = text, *end = text + strlen(text);

	while (p < end) {
		const char *stop = strstr(p, "\n\n"), *line = p, *eol;
		size_t col = 0;		/* 0: nothing on this line yet */

		if (!stop)
			stop = end;
		while (next_line(&line, stop, &eol)) {
			if (verbatim(line, eol)) {
				if (col)
					fputc('\n', f);
				fprintf(f, "%*s%.*s\n", (int)indent, "",
					(int)(eol - line), line);
				col = 0;
			} else {
				if (!col) {
					fprintf(f, "%*s", (int)indent, "");
					col = indent;
				}
				col = wrap(f, line, (size_t)(eol - line), col,
					   indent);
			}
			line = eol + (eol < stop);
		}
		if (col)
			fputc('\n', f);
		p = stop < end ? stop + 2 : end;
		if (p < end)
			fputc('\n', f);
	}
}

static int help_one(const struct opt *o, void *arg)
{
	FILE *f = arg;
	int n;

	if (o->key > 0 && o->key < 128)
		n = fprintf(f, "  -%c, --%s", o->key, o->name);
	else
		n = fprintf(f, "      --%s", o->name);
	if (o->arg)
		n += fprintf(f, " %s", o->arg);
	if (n > HELP_COLUMN - 1)
		fprintf(f, "\n%*s", HELP_COLUMN, "");
	else
		fprintf(f, "%*s", HELP_COLUMN - n, "");
	wrap(f, o->help, strlen(o->help), HELP_COLUMN, HELP_COLUMN);
	fputc('\n', f);
	return 0;
}

void opts__help(FILE *f, const struct cmd_doc *d)
{
	const struct doc_section *s;
	size_t i;

	for (i = 0; d->synopsis[i]; i++)
		fprintf(f, "%s %s %s\n", i ? "      " : "Usage:", d->name,
			d->synopsis[i]);
	fputc('\n', f);
	help_text(f, d->description, 0);
	fputs("\nOptions:\n", f);
	each(d->opts, help_one, f);
	for (s = d->sections; s && s->title; s++) {
		fprintf(f, "\n%c", s->title[0]);
		for (i = 1; s->title[i]; i++)
			fputc(s->title[i] >= 'A' && s->title[i] <= 'Z' ?
				      s->title[i] - 'A' + 'a' : s->title[i], f);
		fputs(":\n", f);
		help_text(f, s->text, 2);
	}
}

/* ---- the man page ------------------------------------------------------ */

/* Text for roff: backslashes escaped, '-' as \- (a minus, so that options
 * can be searched for and copied), a line's leading '.' or '\'' made
 * harmless. */
static void roff(FILE *f, const char *s, size_t len, bool line_start)
{
	size_t i;

	for (i = 0; i < len; i++) {
		char c = s[i];

		if (line_start && (c == '.' || c == '\''))
			fputs("\\&", f);
		line_start = c == '\n';
		if (c == '\\')
			fputs("\\e", f);
		else if (c == '-')
			fputs("\\-", f);
		else
			fputc(c, f);
	}
}

static void roff_str(FILE *f, const char *s, bool line_start)
{
	roff(f, s, strlen(s), line_start);
}

/* Paragraphs as .PP, flowing lines joined, verbatim ones in .nf. */
static void man_text(FILE *f, const char *text, bool first_pp)
{
	const char *p = text, *end = text + strlen(text);
	bool first = true;

	while (p < end) {
		const char *stop = strstr(p, "\n\n"), *line = p, *eol;
		bool in_nf = false;

		if (!stop)
			stop = end;
		if (!first || first_pp)
			fputs(".PP\n", f);
		first = false;
		while (next_line(&line, stop, &eol)) {
			bool v = verbatim(line, eol);

			if (v != in_nf)
				fputs(v ? ".nf\n.RS 2\n" : ".RE\n.fi\n", f);
			in_nf = v;
			roff(f, v ? line + 2 : line,
			     (size_t)(eol - line) - (v ? 2 : 0), true);
			fputc('\n', f);
			line = eol + (eol < stop);
		}
		if (in_nf)
			fputs(".RE\n.fi\n", f);
		p = stop < end ? stop + 2 : end;
	}
}

static int man_one(const struct opt *o, void *arg)
{
	FILE *f = arg;

	fputs(".TP\n", f);
	if (o->key > 0 && o->key < 128)
		fprintf(f, "\\fB\\-%c\\fR, ", o->key);
	fputs("\\fB\\-\\-", f);
	roff_str(f, o->name, false);
	fputs("\\fR", f);
	if (o->arg) {
		fputs(" \\fI", f);
		roff_str(f, o->arg, false);
		fputs("\\fR", f);
	}
	fputc('\n', f);
	roff_str(f, o->help, true);
	fputc('\n', f);
	return 0;
}

void opts__man(FILE *f, const struct cmd_doc *d, const char *version,
	       const struct cmd_doc *const *see_also)
{
	const struct doc_section *s;
	size_t i, n = 0;

	fputs(".TH \"", f);
	for (i = 0; d->page[i]; i++)
		fputc(d->page[i] >= 'a' && d->page[i] <= 'z' ?
			      d->page[i] - 'a' + 'A' : d->page[i], f);
	fprintf(f, "\" 1 \"\" \"pprof-alloc %s\" \"pprof-alloc manual\"\n",
		version);
	/* options and paths are not to be hyphenated or stretched */
	fputs(".nh\n.ad l\n", f);
	fputs(".SH NAME\n", f);
	roff_str(f, d->page, true);
	fputs(" \\- ", f);
	roff_str(f, d->summary, false);
	fputs("\n.SH SYNOPSIS\n", f);
	for (i = 0; d->synopsis[i]; i++) {
		if (i)
			fputs(".br\n", f);
		fputs("\\fB", f);
		roff_str(f, d->name, false);
		fputs("\\fR ", f);
		roff_str(f, d->synopsis[i], false);
		fputc('\n', f);
	}
	fputs(".SH DESCRIPTION\n", f);
	man_text(f, d->description, false);
	fputs(".SH OPTIONS\n", f);
	each(d->opts, man_one, f);
	for (s = d->sections; s && s->title; s++) {
		fputs(".SH ", f);
		roff_str(f, s->title, false);
		fputc('\n', f);
		man_text(f, s->text, false);
	}
	for (i = 0; see_also && see_also[i]; i++)
		if (see_also[i] != d)
			n++;
	if (!n)
		return;
	fputs(".SH \"SEE ALSO\"\n", f);
	for (i = 0; see_also[i]; i++) {
		if (see_also[i] == d)
			continue;
		fputs(".BR ", f);
		roff_str(f, see_also[i]->page, false);
		fprintf(f, " (1)%s\n", --n ? "," : "");
	}
}
