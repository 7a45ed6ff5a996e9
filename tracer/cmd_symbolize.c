// SPDX-License-Identifier: MIT
/*
 * cmd_symbolize.c - `pprof-alloc symbolize PROFILE -o OUTPUT`: options,
 * then the engine (tracer/output/symbolize.c).
 *
 * Done, the process ends at once in an unsanitized build: libdw's trees of
 * a big module's DWARF, torn down one small free at a time, cost more than
 * the kernel takes to reclaim them all (clang's -disable-free does the
 * same); sanitized builds free, to check that freeing works.
 */
#include "builtin.h"
#include "tracer/options/args.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tracer/options/debugopts.h"
#include "tracer/options/options.h"
#include "tracer/output/symbolize.h"
#include "elf/symbolize_jobs.h"
#include "common/log.h"

struct cmd_options {
	const char *input, *output;
	struct debug_options debug;
	bool force, quiet;
	unsigned int jobs;	/* 0: the default */
};

static const struct opt symbolize_opts[] = {
	{ 'o', "output", "FILE",
	  "where to write the symbolized profile (may be PROFILE itself; "
	  "written atomically)", NULL },
	OPT_INCLUDE(debug_opts),
	{ 'f', "force", NULL,
	  "also re-symbolize mappings that already have functions", NULL },
	{ 'j', "jobs", "N",
	  "resolve addresses in N threads (default: the online CPUs, at most "
	  "8; the output is the same for any N)", NULL },
	{ 'q', "quiet", NULL, "no per-mapping report on stderr", NULL },
	{ 'h', "help", NULL, "this help", NULL },
	OPT_END,
};

static const char *const symbolize_synopsis[] = {
	"[OPTIONS] PROFILE -o OUTPUT", NULL,
};

static const struct doc_section symbolize_sections[] = {
	{ "EXIT STATUS",
	  "0 when OUTPUT was written (even if some mappings have no symbols: "
	  "the report says why); 1 if PROFILE cannot be read or is not a "
	  "valid profile, or OUTPUT cannot be written; 2 for a usage error." },
	{ NULL, NULL },
};

const struct cmd_doc symbolize_doc = {
	.name = "pprof-alloc symbolize",
	.page = "pprof-alloc-symbolize",
	.summary = "add functions and source lines to an address-only profile",
	.synopsis = symbolize_synopsis,
	.description =
	  "Add functions, source files and lines (with inlined calls) to a "
	  "pprof profile that has addresses only, such as one written with "
	  "--no-symbolize.  Each mapping's ELF file and debug info are found "
	  "by build ID, in order: the recorded path if its build ID matches; "
	  "DIR/.build-id/xx/rest.debug in each --debug-dir and "
	  "/usr/lib/debug; the ELF's .gnu_debuglink; debuginfod.  A file "
	  "whose build ID does not match is never used.\n\n"
	  "PROFILE may be a pipe or a FIFO; - reads it from standard input.",
	.opts = symbolize_opts,
	.sections = symbolize_sections,
};

static int symbolize_option(void *ctx, int c, const char *arg)
{
	struct cmd_options *o = ctx;
	unsigned long n;
	char *end;
	int mine;

	mine = debug_options__parse(&o->debug, c, arg);
	if (mine)
		return mine < 0 ? mine : 0;
	switch (c) {
	case 'o':
		if (!*arg) {
			pr_warn("invalid --output '': empty\n");
			return -EINVAL;
		}
		o->output = arg;
		return 0;
	case 'f':
		o->force = true;
		return 0;
	case 'q':
		o->quiet = true;
		return 0;
	case 'j':
		errno = 0;
		n = strtoul(arg, &end, 10);
		if (errno || end == arg || *end || n < 1 ||
		    n > SYM_JOBS_MAX || arg[0] == '-') {
			pr_warn("invalid --jobs '%s': want 1 to %d\n", arg,
				SYM_JOBS_MAX);
			return -EINVAL;
		}
		o->jobs = (unsigned int)n;
		return 0;
	default:
		return -ENOTSUP;	/* in the table, not here */
	}
}

/* 0, 1 (the help was printed), or -errno (said). */
static int parse_options(int argc, char **argv, struct cmd_options *o)
{
	int err;

	err = opts__parse(&symbolize_doc, argc, argv, false, symbolize_option,
			  o);
	if (err)
		return err;
	if (optind + 1 != argc) {
		pr_warn("%s\n", optind >= argc ?
			"no input profile given" : "give exactly one input profile");
		fprintf(stderr, "Usage: pprof-alloc symbolize [OPTIONS] PROFILE -o OUTPUT\n");
		return -EINVAL;
	}
	o->input = argv[optind];
	if (!o->output) {
		pr_warn("no output file: give -o OUTPUT\n");
		return -EINVAL;
	}
	return 0;
}

int cmd_symbolize(int argc, char **argv)
{
	struct cmd_options o = { 0 };
	struct debuginfo_opts dopts;
	struct symbolize_opts so;
	int code;

	code = parse_options(argc, argv, &o);
	if (code) {
		debug_options__fini(&o.debug);
		return code == 1 ? 0 : 2;	/* 1: the help */
	}
	log__set_quiet(o.quiet);
	debug_options__get(&o.debug, &dopts);
	so = (struct symbolize_opts){
		.input = o.input, .output = o.output, .debug = &dopts,
		.force = o.force, .jobs = o.jobs,
#ifndef PPROF_ALLOC_SANITIZED
		.exiting = true,
#endif
	};
	code = symbolize__profile(&so) ? 1 : 0;
	if (so.exiting) {
		fflush(NULL);
		exit(code);
	}
	debug_options__fini(&o.debug);
	return code;
}
