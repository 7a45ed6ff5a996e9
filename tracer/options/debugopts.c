/* SPDX-License-Identifier: MIT */
/*
 * debugopts.c - parse --debug-dir, --debuginfod, --no-debuginfod,
 * --debuginfod-timeout and --sysroot, the same way for every command that
 * symbolizes.
 *
 * Directories (--debug-dir, --sysroot) must exist when given (a typo would otherwise just mean "no
 * symbols" much later); URLs must be http:// or https:// (libdebuginfod
 * also takes file://, but a local tree is what --debug-dir is for).
 * Repeated --debuginfod options make one space-separated list, the form
 * $DEBUGINFOD_URLS has.
 */
#include "args.h"
#include "common/log.h"
#include "debugopts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const struct opt debug_opts[] = {
	{ DEBUG_OPT_DIR, "debug-dir", "DIR",
	  "look for DIR/.build-id/xx/rest.debug (repeatable; /usr/lib/debug "
	  "is searched after these)", NULL },
	{ DEBUG_OPT_DEBUGINFOD, "debuginfod", "URL",
	  "a debuginfod server (repeatable; default: $DEBUGINFOD_URLS)", NULL },
	{ DEBUG_OPT_NO_DEBUGINFOD, "no-debuginfod", NULL,
	  "never ask a debuginfod server", NULL },
	{ DEBUG_OPT_TIMEOUT, "debuginfod-timeout", "SECONDS",
	  "longest wait for one file (default 10)", NULL },
	{ DEBUG_OPT_SYSROOT, "sysroot", "DIR",
	  "the files the profile or core names are under DIR (a container's "
	  "root: its core names /app/x for DIR/app/x); DIR/usr/lib/debug is "
	  "searched too", NULL },
	OPT_END,
};

int debug_options__parse(struct debug_options *d, int opt,
			 const char *arg)
{
	struct stat st;

	switch (opt) {
	case DEBUG_OPT_DIR: {
		const char **grown;

		if (!*arg || stat(arg, &st) < 0 || !S_ISDIR(st.st_mode))
			return bad_option("--debug-dir", arg,
				   "not a directory");
		grown = realloc(d->dirs, (d->ndirs + 1) * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		d->dirs = grown;
		d->dirs[d->ndirs++] = arg;
		return 1;
	}
	case DEBUG_OPT_DEBUGINFOD: {
		size_t old = d->urls ? strlen(d->urls) : 0;
		char *grown;

		if ((strncmp(arg, "http://", 7) && strncmp(arg, "https://", 8)) ||
		    strpbrk(arg, " \t\n"))
			return bad_option("--debuginfod", arg,
				   "want an http:// or https:// URL");
		grown = realloc(d->urls, old + strlen(arg) + 2);
		if (!grown)
			return -ENOMEM;
		if (old)
			grown[old++] = ' ';
		strcpy(grown + old, arg);
		d->urls = grown;
		return 1;
	}
	case DEBUG_OPT_SYSROOT:
		if (!*arg || stat(arg, &st) < 0 || !S_ISDIR(st.st_mode))
			return bad_option("--sysroot", arg, "not a directory");
		if (!strcmp(arg, "/"))
			arg = NULL;	/* ours */
		d->sysroot = arg;
		return 1;
	case DEBUG_OPT_NO_DEBUGINFOD:
		d->no_debuginfod = true;
		return 1;
	case DEBUG_OPT_TIMEOUT: {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(arg, &end, 10);
		if (errno || end == arg || *end || *arg == '-' || v == 0 ||
		    v > 3600)
			return bad_option("--debuginfod-timeout", arg,
				   "want seconds from 1 to 3600");
		d->timeout_s = (unsigned int)v;
		return 1;
	}
	default:
		return 0;
	}
}

void debug_options__get(const struct debug_options *d,
			struct debuginfo_opts *out)
{
	*out = (struct debuginfo_opts){
		.debug_dirs = d->dirs,
		.ndebug_dirs = d->ndirs,
		.debuginfod_urls = d->no_debuginfod ? "" : d->urls,
		.debuginfod_timeout_s = d->timeout_s,
		.sysroot = d->sysroot,
	};
}

void debug_options__fini(struct debug_options *d)
{
	free(d->dirs);
	free(d->urls);
	memset(d, 0, sizeof(*d));
}
