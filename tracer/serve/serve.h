/* SPDX-License-Identifier: MIT */
/*
 * serve.h - `pprof-alloc serve`'s engine (serve.c), run by its front-end
 * (cmd_serve.c) once the options are checked.
 */
#ifndef PA_TRACER_SERVE_H
#define PA_TRACER_SERVE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "tracer/options/debugopts.h"
#include "tracer/options/recopts.h"

#define SERVE_DEFAULT_KEEP	100u

struct serve_options {
	pid_t pid;
	const char *pid_file;
	const char *listen;
	uint64_t every_ns;
	const char *out_dir;
	unsigned int keep;
	bool keep_given;		/* --keep was given */
	unsigned int header_timeout_ms;
	struct rec_options rec;		/* rate, sizes, unwinding */
	bool symbolize, quiet;
	struct debug_options debug;
};

/* Attach to o->pid with agent and serve it until SIGINT or SIGTERM; the
 * process's exit status (0, or 1 if listening or attaching failed). */
int serve__run(const struct serve_options *o, const char *agent);

#endif /* PA_TRACER_SERVE_H */
