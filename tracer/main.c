// SPDX-License-Identifier: MIT
/*
 * main.c - pprof-alloc's entry: pick the command, as perf.c does.
 *
 * A first argument naming a command runs it with the rest; anything else
 * (options, "--", a program) is the default command, which records.  The
 * command's name is every message's prefix (common/log.c).  `--version`
 * first prints the version, which the Makefile passes in as PA_VERSION
 * from the file VERSION (serve's /metrics shows it too).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "builtin.h"
#include "common/log.h"
#include "tracer/record/sigbus.h"

#ifndef PA_VERSION
#error "PA_VERSION comes from the Makefile (the file VERSION)"
#endif

struct cmd_struct {
	const char *cmd;
	int (*fn)(int argc, char **argv);
	const char *prog;	/* the prefix of its messages */
};

static const struct cmd_struct commands[] = {
	{ "man",	cmd_man,	"pprof-alloc man" },
	{ "report",	cmd_report,	"pprof-alloc report" },
	{ "serve",	cmd_serve,	"pprof-alloc serve" },
	{ "stats",	cmd_stats,	"pprof-alloc stats" },
	{ "symbolize",	cmd_symbolize,	"pprof-alloc symbolize" },
};

int main(int argc, char **argv)
{
	size_t i;

	log__set_prog("pprof-alloc");
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("pprof-alloc %s\n", PA_VERSION);
		return fflush(stdout) || ferror(stdout) ? 1 : 0;
	}
	/* before anything maps a file the target can shrink (sigbus.c) */
	if (sigbus__guard())
		pr_warn("cannot install the SIGBUS handler: %s\n",
			strerror(errno));
	for (i = 0; argc > 1 && i < sizeof(commands) / sizeof(commands[0]);
	     i++) {
		if (strcmp(argv[1], commands[i].cmd))
			continue;
		log__set_prog(commands[i].prog);
		argv[1] = (char *)commands[i].prog;	/* getopt's messages */
		return commands[i].fn(argc - 1, argv + 1);
	}
	return cmd_record(argc, argv);
}
