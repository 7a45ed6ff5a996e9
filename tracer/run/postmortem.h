/* SPDX-License-Identifier: MIT */
/*
 * postmortem.h - a heap profile from the core dump of a process that ran
 * with the agent.
 */
#ifndef PA_TRACER_POSTMORTEM_H
#define PA_TRACER_POSTMORTEM_H

#include <stdbool.h>
#include "elf/debuginfo.h"

struct postmortem_opts {
	const char *core;		/* the core file */
	const char *output;		/* NULL: pprof-alloc.<pid>.pb.gz */
	bool symbolize;
	int top;
	const struct debuginfo_opts *debug;
};

/* Write the profile.  Returns the exit status (0, or 1 with a message). */
int postmortem__run(const struct postmortem_opts *o);

#endif /* PA_TRACER_POSTMORTEM_H */
