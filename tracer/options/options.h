/* SPDX-License-Identifier: MIT */
/*
 * options.h - a command's options as one table, the only place they are
 * written: the getopt_long table the parser uses, `--help` and the man
 * page are all made from it (as perf's parse-options, but simpler: each
 * value is still checked by the command's own switch, which gets the
 * option's key from getopt_long).
 *
 * A table is an array of struct opt ending with OPT_END; OPT_INCLUDE puts
 * a shared table's options in its place (the recording options of the
 * default command and serve, the debug-info options of the default command
 * and symbolize).  A command's page (struct cmd_doc) adds its synopsis,
 * its description and what follows the options.
 */
#ifndef PA_TRACER_OPTIONS_H
#define PA_TRACER_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

struct opt {
	int key;		/* a short option's letter, or an id >= 256;
				   0 with more: an include; 0 alone: the end */
	const char *name;	/* the long name, without "--" */
	const char *arg;	/* the argument's name ("FILE"), NULL: a flag */
	const char *help;	/* one paragraph, wrapped when printed */
	const struct opt *more;	/* OPT_INCLUDE's table */
};

#define OPT_END			{ 0, NULL, NULL, NULL, NULL }
#define OPT_INCLUDE(table)	{ 0, NULL, NULL, NULL, (table) }

/* A section of text: a title and paragraphs.  In a paragraph, a line that
 * starts with two spaces is printed as it is (a list, an example). */
struct doc_section {
	const char *title;	/* "EXIT STATUS" */
	const char *text;	/* paragraphs separated by "\n\n" */
};

struct cmd_doc {
	const char *name;	/* "pprof-alloc serve" */
	const char *page;	/* the man page: "pprof-alloc-serve" */
	const char *summary;	/* NAME's one line */
	const char *const *synopsis;	/* after the name; NULL-ended */
	const char *description;
	const struct opt *opts;
	const struct doc_section *sections;	/* after OPTIONS; NULL-ended
						   by a NULL title */
};

/*
 * getopt_long's table and short-option string for a table: "+" first when
 * stop_at_operand (options end at the first operand: a command's own
 * arguments follow).  Both are allocated; free them.  0 or -ENOMEM.
 */
int opts__getopt(const struct opt *t, bool stop_at_operand,
		 struct option **longopts, char **optstring);

/*
 * Parse argv (from optind 1) with d's options: fn gets each option's key
 * and argument, and returns 0, -errno (having said why), or -ENOTSUP for a
 * key it does not handle (said here: a bug, which run-options finds); -h/--help (key
 * 'h') prints opts__help on stdout.  0 (optind at the first operand), 1
 * (the help was printed), -EINVAL (said, with "Try --help"), -errno.
 */
int opts__parse(const struct cmd_doc *d, int argc, char **argv,
		bool stop_at_operand,
		int (*fn)(void *ctx, int key, const char *arg), void *ctx);

/* Every option has a name, a help text and a key of its own, and no name
 * is there twice.  0, or -EINVAL with what is wrong said on stderr. */
int opts__check(const struct cmd_doc *d);

/* --help: usage lines, description, options, sections (79 columns). */
void opts__help(FILE *f, const struct cmd_doc *d);
/* The man page, in roff (man(7)); version for its footer. */
void opts__man(FILE *f, const struct cmd_doc *d, const char *version,
	       const struct cmd_doc *const *see_also);

#endif /* PA_TRACER_OPTIONS_H */
