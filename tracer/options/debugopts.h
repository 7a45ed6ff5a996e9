/* SPDX-License-Identifier: MIT */
/*
 * debugopts.h - the options that say where to look for debug information,
 * shared by the profiling command and `pprof-alloc symbolize`.
 */
#ifndef PA_TRACER_DEBUGOPTS_H
#define PA_TRACER_DEBUGOPTS_H

#include <stdbool.h>
#include <stddef.h>
#include "elf/debuginfo.h"
#include "options.h"

enum {
	DEBUG_OPT_DIR = 1000,
	DEBUG_OPT_DEBUGINFOD,
	DEBUG_OPT_NO_DEBUGINFOD,
	DEBUG_OPT_TIMEOUT,
	DEBUG_OPT_SYSROOT,
};

/* The options, for a command's table (OPT_INCLUDE). */
extern const struct opt debug_opts[];

struct debug_options {
	const char **dirs;
	size_t ndirs;
	char *urls;		/* space-separated, NULL: $DEBUGINFOD_URLS */
	bool no_debuginfod;
	unsigned int timeout_s;
	const char *sysroot;
};

/*
 * Handle getopt's result opt (with optarg arg) if it is one of ours.
 * Returns 1 if handled, 0 if not ours, -EINVAL (reported on stderr,
 * prefixed with prog) for a bad value, -ENOMEM.
 */
int debug_options__parse(struct debug_options *d, int opt,
			 const char *arg);

/* The locator's options, pointing into d. */
void debug_options__get(const struct debug_options *d,
			struct debuginfo_opts *out);
void debug_options__fini(struct debug_options *d);

#endif /* PA_TRACER_DEBUGOPTS_H */
