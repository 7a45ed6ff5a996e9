/* SPDX-License-Identifier: MIT */
/*
 * symbolize.h - functions and lines for an address-only profile
 * (symbolize.c), the engine of `pprof-alloc symbolize`.
 */
#ifndef PA_TRACER_SYMBOLIZE_H
#define PA_TRACER_SYMBOLIZE_H

#include <stdbool.h>
#include "elf/debuginfo.h"

struct symbolize_opts {
	const char *input;	/* a file, a pipe or a FIFO; "-": stdin */
	const char *output;	/* written atomically; may be input */
	const struct debuginfo_opts *debug;	/* where to look */
	bool force;		/* also mappings that have functions */
	unsigned int jobs;	/* threads; 0: the online CPUs, at most 8 */
	bool exiting;		/* the caller ends the process next: leave
				   the teardown to the kernel */
};

/* Symbolize o->input into o->output, one line on stderr per module and
 * one at the end.  0, or -errno (said on stderr). */
int symbolize__profile(const struct symbolize_opts *o);

#endif /* PA_TRACER_SYMBOLIZE_H */
