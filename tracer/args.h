/* SPDX-License-Identifier: MIT */
/*
 * args.h - parsing the values of command-line options, for every command.
 */
#ifndef PA_TRACER_ARGS_H
#define PA_TRACER_ARGS_H

#include <stdint.h>

/* A size with an optional K/M/G suffix (powers of 1024, "KiB"/"KB" too).
 * 0 or -EINVAL. */
int parse_size(const char *s, uint64_t *out);
/* Seconds, a decimal number from lo to hi.  0 or -EINVAL. */
int parse_seconds(const char *s, double lo, double hi, double *out);
/* "fp", "dwarf" or "auto" to enum pa_unwind.  0 or -EINVAL. */
int parse_unwind(const char *s, uint32_t *out);

#endif /* PA_TRACER_ARGS_H */
