/* SPDX-License-Identifier: MIT */
/*
 * builtin.h - the commands, one front-end file each (cmd_*.c, perf's
 * builtin-*.c), dispatched from main.c's table.  Each takes its own argv
 * (argv[0] is its name) and returns the process's exit status.
 */
#ifndef PA_TRACER_BUILTIN_H
#define PA_TRACER_BUILTIN_H

/* pprof-alloc [OPTIONS] -- CMD, --pid PID, --core CORE */
int cmd_record(int argc, char **argv);
/* pprof-alloc serve --pid PID */
int cmd_serve(int argc, char **argv);
/* pprof-alloc stats --pid PID */
int cmd_stats(int argc, char **argv);
/* pprof-alloc report PROFILE [-o REPORT.html] */
int cmd_report(int argc, char **argv);
/* pprof-alloc symbolize PROFILE -o OUTPUT */
int cmd_symbolize(int argc, char **argv);

/* pprof-alloc man [COMMAND]: its man page, in roff */
int cmd_man(int argc, char **argv);

/* Each command's page (options.h): its --help and man page. */
struct cmd_doc;
extern const struct cmd_doc record_doc, serve_doc, stats_doc, report_doc,
	symbolize_doc, man_doc;

#endif /* PA_TRACER_BUILTIN_H */
