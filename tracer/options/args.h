/* SPDX-License-Identifier: MIT */
/*
 * args.h - parsing the values of command-line options, for every command.
 */
#ifndef PA_TRACER_ARGS_H
#define PA_TRACER_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A size with an optional K/M/G suffix (powers of 1024, "KiB"/"KB" too).
 * 0 or -EINVAL. */
int parse_size(const char *s, uint64_t *out);
/* Seconds, a decimal number from lo to hi.  0 or -EINVAL. */
int parse_seconds(const char *s, double lo, double hi, double *out);
/* "fp", "dwarf" or "auto" to enum pa_unwind.  0 or -EINVAL. */
int parse_unwind(const char *s, uint32_t *out);
/* A PID file's text, len bytes (no NUL needed): one decimal process id
 * from 1 to INT32_MAX, then at most a newline.  0 or -EINVAL. */
int parse_pid_text(const char *text, size_t len, int32_t *pid);
/* Says "invalid OPT 'ARG': WHAT" (pr_warn) and returns -EINVAL. */
int bad_option(const char *opt, const char *arg, const char *what);
/* --pid's value: one decimal process id.  0 or -EINVAL (said). */
int pid_option(const char *arg, pid_t *pid);
/* Says "Try 'PROG --help'." after getopt's own message; returns -EINVAL. */
int try_help(void);

#endif /* PA_TRACER_ARGS_H */
