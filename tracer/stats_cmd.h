/* SPDX-License-Identifier: MIT */
/*
 * stats_cmd.h - `pprof-alloc stats`: one reading of a process, printed.
 */
#ifndef PA_TRACER_STATS_CMD_H
#define PA_TRACER_STATS_CMD_H

/* argv[0] is "stats".  Returns the exit status. */
int stats_cmd__main(int argc, char **argv);

#endif /* PA_TRACER_STATS_CMD_H */
