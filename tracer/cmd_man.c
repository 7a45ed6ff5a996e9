// SPDX-License-Identifier: MIT
/*
 * cmd_man.c - `pprof-alloc man [COMMAND]`: a command's man page, in roff,
 * made from the same table as its parser and its --help (options.h).  The
 * build writes every page into build/man/ with it (`--list` names them),
 * and `--check` fails the build when an option lacks its help.
 */
#include "builtin.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "tracer/options/args.h"
#include "common/log.h"
#include "tracer/options/options.h"

#ifndef PA_VERSION
#error "PA_VERSION comes from the Makefile (the file VERSION)"
#endif

static const struct cmd_doc *const pages[] = {
	&record_doc, &serve_doc, &stats_doc, &report_doc, &symbolize_doc,
	&man_doc, NULL,
};

enum { OPT_CHECK = 256, OPT_LIST };

static const struct opt man_opts[] = {
	{ OPT_LIST, "list", NULL,
	  "name the man pages, one a line (pprof-alloc, pprof-alloc-serve...)", NULL },
	{ OPT_CHECK, "check", NULL,
	  "check every command's options: each has a name, help and a key "
	  "of its own; exit 1 if not", NULL },
	{ 'h', "help", NULL, "this help", NULL },
	OPT_END,
};

static const char *const man_synopsis[] = {
	"[COMMAND | PAGE]", "--list | --check", NULL,
};

static const struct doc_section man_sections[] = {
	{ "EXAMPLES",
	  "  pprof-alloc man serve | man -l -" },
	{ "EXIT STATUS", "0 written; 1 a check failed; 2 usage error." },
	{ NULL, NULL },
};

const struct cmd_doc man_doc = {
	.name = "pprof-alloc man",
	.page = "pprof-alloc-man",
	.summary = "the man pages of pprof-alloc's commands",
	.synopsis = man_synopsis,
	.description =
	  "Write the man page of COMMAND (serve, stats, report, symbolize, "
	  "man; none: the profiling command itself), or of PAGE "
	  "(pprof-alloc-serve...), in roff on standard output.",
	.opts = man_opts,
	.sections = man_sections,
};

struct man_args {
	bool check, list;
};

static int man_option(void *ctx, int c, const char *arg)
{
	struct man_args *a = ctx;

	(void)arg;
	switch (c) {
	case OPT_CHECK:
		a->check = true;
		return 0;
	case OPT_LIST:
		a->list = true;
		return 0;
	default:
		return -ENOTSUP;	/* in the table, not here */
	}
}

static const struct cmd_doc *find_page(const char *name)
{
	size_t i, n = strlen("pprof-alloc ");

	for (i = 0; pages[i]; i++)
		if (!strcmp(pages[i]->page, name) ||
		    !strcmp(pages[i]->name, name) ||
		    (!strncmp(pages[i]->name, "pprof-alloc ", n) &&
		     !strcmp(pages[i]->name + n, name)))
			return pages[i];
	return NULL;
}

int cmd_man(int argc, char **argv)
{
	struct man_args a = { 0 };
	const struct cmd_doc *d = &record_doc;
	size_t i;
	int err;

	err = opts__parse(&man_doc, argc, argv, false, man_option, &a);
	if (err)
		return err == 1 ? 0 : 2;	/* 1: the help */
	if (argc - optind > 1 || ((a.check || a.list) && optind < argc)) {
		pr_warn("unexpected argument '%s'\n", argv[argc - 1]);
		return 2;
	}
	if (a.check) {
		for (i = 0; pages[i]; i++)
			if (opts__check(pages[i]))
				err = -EINVAL;
		return err ? 1 : 0;
	}
	if (a.list) {
		for (i = 0; pages[i]; i++)
			printf("%s\n", pages[i]->page);
		return fflush(stdout) ? 1 : 0;
	}
	if (optind < argc) {
		d = find_page(argv[optind]);
		if (!d) {
			pr_warn("no command '%s' (serve, stats, report, symbolize, man)\n",
				argv[optind]);
			return 2;
		}
	}
	opts__man(stdout, d, PA_VERSION, pages);
	return fflush(stdout) || ferror(stdout) ? 1 : 0;
}
