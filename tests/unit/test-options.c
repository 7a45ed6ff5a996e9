// SPDX-License-Identifier: MIT
/*
 * test-options.c - the option tables (tracer/options/options.c): getopt_long's
 * table, the parse, the check that fails the build on an option without
 * help, --help's layout and the man page's roff.  The commands' own tables
 * pass the check here too.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "tracer/builtin.h"
#include "tracer/options/options.h"

enum { K_LONG = 256, K_FLAG, K_INC };

static const struct opt inc[] = {
	{ K_INC, "included", "N", "from another table", NULL },
	OPT_END,
};

static const struct opt good[] = {
	{ 'o', "output", "FILE", "where it goes", NULL },
	OPT_INCLUDE(inc),
	{ K_LONG, "a-rather-long-option-name", "SECONDS",
	  "a help text long enough to be wrapped onto a second line, and a "
	  "third one too, since it goes on and on about what it does", NULL },
	{ K_FLAG, "flag", NULL, "a flag", NULL },
	{ 'h', "help", NULL, "this help", NULL },
	OPT_END,
};

static const char *const synopsis[] = { "[OPTIONS] FILE", NULL };

static const struct doc_section sections[] = {
	{ "EXIT STATUS", "0 fine.\n\n.a line that starts with a dot" },
	{ NULL, NULL },
};

static const struct cmd_doc doc = {
	.name = "tool sub", .page = "tool-sub", .summary = "does things",
	.synopsis = synopsis,
	.description = "First paragraph.\n\nSecond, with a list:\n"
		       "  -x   kept as it is",
	.opts = good, .sections = sections,
};

static char *render(void (*fn)(FILE *, const struct cmd_doc *),
		    const struct cmd_doc *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(f);
	fn(f, d);
	CHECK(!fclose(f));
	return buf;
}

static void man(FILE *f, const struct cmd_doc *d)
{
	opts__man(f, d, "1.2.3", NULL);
}

static void test_getopt(void)
{
	struct option *lo;
	char *s;

	CHECK(!opts__getopt(good, true, &lo, &s));
	CHECK(!strcmp(s, "+o:h"));
	CHECK(!strcmp(lo[0].name, "output") && lo[0].has_arg == required_argument);
	CHECK(!strcmp(lo[1].name, "included") && lo[1].val == K_INC);
	CHECK(!strcmp(lo[3].name, "flag") && lo[3].has_arg == no_argument);
	CHECK(!lo[5].name && !lo[5].val);
	free(lo);
	free(s);
}

struct got {
	int keys[8];
	const char *args[8];
	int n;
};

static int take(void *ctx, int key, const char *arg)
{
	struct got *g = ctx;

	if (g->n == 8)
		return -1;
	g->keys[g->n] = key;
	g->args[g->n++] = arg;
	return 0;
}

static void test_parse(void)
{
	char a0[] = "tool", a1[] = "--included=3", a2[] = "-o", a3[] = "x",
	     a4[] = "--flag", a5[] = "rest", a6[] = "--flag";
	char *argv[] = { a0, a1, a2, a3, a4, a5, a6, NULL };
	struct got g = { 0 };

	CHECK_EQ_INT(opts__parse(&doc, 7, argv, true, take, &g), 0);
	CHECK_EQ_INT(g.n, 3);
	CHECK_EQ_INT(g.keys[0], K_INC);
	CHECK(!strcmp(g.args[0], "3"));
	CHECK_EQ_INT(g.keys[1], 'o');
	CHECK(!strcmp(g.args[1], "x"));
	CHECK_EQ_INT(g.keys[2], K_FLAG);
	CHECK_EQ_INT(optind, 5);	/* stopped at "rest" */
}

static void test_check(void)
{
	static const struct opt no_help[] = {
		{ 'o', "output", "FILE", "", NULL }, OPT_END,
	};
	static const struct opt twice[] = {
		{ 'o', "output", "FILE", "one", NULL },
		{ K_LONG, "output", NULL, "two", NULL }, OPT_END,
	};
	static const struct opt same_key[] = {
		{ 'o', "output", "FILE", "one", NULL },
		{ 'o', "other", NULL, "two", NULL }, OPT_END,
	};
	static const struct opt in_include[] = {
		OPT_INCLUDE(inc), { K_INC, "again", NULL, "its key", NULL },
		OPT_END,
	};
	struct cmd_doc d = doc;
	const struct cmd_doc *const all[] = {
		&record_doc, &serve_doc, &stats_doc, &report_doc,
		&symbolize_doc, &man_doc,
	};
	size_t i;

	CHECK_EQ_INT(opts__check(&doc), 0);
	d.opts = no_help;
	CHECK_EQ_INT(opts__check(&d), -EINVAL);
	d.opts = twice;
	CHECK_EQ_INT(opts__check(&d), -EINVAL);
	d.opts = same_key;
	CHECK_EQ_INT(opts__check(&d), -EINVAL);
	d.opts = in_include;
	CHECK_EQ_INT(opts__check(&d), -EINVAL);
	d = doc;
	d.summary = NULL;
	CHECK_EQ_INT(opts__check(&d), -EINVAL);
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		CHECK_EQ_INT(opts__check(all[i]), 0);
}

static void test_help(void)
{
	char *h = render(opts__help, &doc), *line, *save = NULL;
	int lines = 0;

	CHECK(strstr(h, "Usage: tool sub [OPTIONS] FILE\n"));
	CHECK(strstr(h, "\nFirst paragraph.\n\nSecond, with a list:\n"
			"  -x   kept as it is\n"));
	CHECK(strstr(h, "\n  -o, --output FILE      where it goes\n"));
	CHECK(strstr(h, "\n      --flag             a flag\n"));
	/* too long for its column: the help starts on the next line */
	CHECK(strstr(h, "--a-rather-long-option-name SECONDS\n"
			"                         a help text"));
	CHECK(strstr(h, "\nExit status:\n  0 fine.\n"));
	for (line = strtok_r(h, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save), lines++)
		CHECK(strlen(line) <= 79);
	CHECK(lines > 12);
	free(h);
}

static void test_man(void)
{
	char *m = render(man, &doc);

	CHECK(!strncmp(m, ".TH \"TOOL-SUB\" 1 \"\" \"pprof-alloc 1.2.3\"", 38));
	CHECK(strstr(m, "\n.SH NAME\ntool\\-sub \\- does things\n"));
	CHECK(strstr(m, "\\fB\\-o\\fR, \\fB\\-\\-output\\fR \\fIFILE\\fR\n"));
	CHECK(strstr(m, "\\fB\\-\\-included\\fR \\fIN\\fR\n"));
	/* verbatim lines in .nf, a leading dot made harmless */
	CHECK(strstr(m, ".nf\n.RS 2\n\\-x   kept as it is\n.RE\n.fi\n"));
	CHECK(strstr(m, "\n\\&.a line that starts with a dot\n"));
	CHECK(!strstr(m, "SEE ALSO"));
	free(m);
}

int main(void)
{
	test_getopt();
	test_parse();
	test_check();
	test_help();
	test_man();
	CHECK_SUMMARY("test-options");
	return 0;
}
