/* SPDX-License-Identifier: MIT */
/*
 * symbolize_cmd.h - `pprof-alloc symbolize`: add functions, files and
 * lines to a profile written with --no-symbolize, on any machine.
 */
#ifndef PA_TRACER_SYMBOLIZE_CMD_H
#define PA_TRACER_SYMBOLIZE_CMD_H

/* argv[0] is "symbolize".  Returns the exit status. */
int symbolize_cmd__main(int argc, char **argv);

#endif /* PA_TRACER_SYMBOLIZE_CMD_H */
