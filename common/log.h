/* SPDX-License-Identifier: MIT */
/*
 * log.h - the one way the tracer speaks on stderr, libbpf's pr_warn and
 * pr_info: every line starts with the command's name ("pprof-alloc",
 * "pprof-alloc serve", ...), set once by the command's front-end.
 *
 * pr_warn is for what the user must see (errors, warnings, lost data);
 * pr_info is for progress and notes, which --quiet silences.  Formats end
 * with their own "\n", as fprintf's do.  The agent never logs: it runs
 * inside the target and has no stderr of its own to use.
 */
#ifndef PA_ELF_LOG_H
#define PA_ELF_LOG_H

#include <stdbool.h>

/* The prefix, without the ": ".  A string that outlives every message. */
void log__set_prog(const char *prog);
const char *log__prog(void);
/* --quiet: pr_info says nothing. */
void log__set_quiet(bool quiet);
bool log__quiet(void);

void pr_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* PA_ELF_LOG_H */
