/* SPDX-License-Identifier: MIT */
/*
 * serve.h - `pprof-alloc serve`: /debug/pprof and /metrics for a running
 * process.
 */
#ifndef PA_TRACER_SERVE_H
#define PA_TRACER_SERVE_H

/* argv[0] is "serve".  Returns the exit status. */
int serve__main(int argc, char **argv);

#endif /* PA_TRACER_SERVE_H */
