// SPDX-License-Identifier: MIT
/*
 * args.c - parsing the values of command-line options, for every command.
 *
 * Strict: the whole string must parse, with no sign where none makes
 * sense, and out-of-range values are errors, not clamps.  Callers say
 * which option was wrong.
 */
#include "args.h"
#include "common/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pprof_alloc_abi.h"

int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned int shift = 0;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (*end == 'i' && shift)
		end++;
	if ((*end == 'b' || *end == 'B') && shift)
		end++;
	if (*end || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

int parse_seconds(const char *s, double lo, double hi, double *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(s, &end);
	if (errno || end == s || *end || !(d >= lo) || d > hi)
		return -EINVAL;
	*out = d;
	return 0;
}

int parse_unwind(const char *s, uint32_t *out)
{
	if (!strcmp(s, "fp"))
		*out = PA_UNWIND_FP;
	else if (!strcmp(s, "dwarf"))
		*out = PA_UNWIND_DWARF;
	else if (!strcmp(s, "auto"))
		*out = PA_UNWIND_AUTO;
	else
		return -EINVAL;
	return 0;
}

int parse_pid_text(const char *text, size_t len, int32_t *pid)
{
	uint64_t v = 0;
	size_t i;

	if (len && text[len - 1] == '\n')
		len--;
	if (!len || len > 10)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		if (text[i] < '0' || text[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(text[i] - '0');
	}
	if (!v || v > INT32_MAX)
		return -EINVAL;
	*pid = (int32_t)v;
	return 0;
}

int bad_option(const char *opt, const char *arg, const char *what)
{
	pr_warn("invalid %s '%s': %s\n", opt, arg, what);
	return -EINVAL;
}

int try_help(void)
{
	fprintf(stderr, "Try '%s --help'.\n", log__prog());
	return -EINVAL;
}

int pid_option(const char *arg, pid_t *pid)
{
	int32_t v;

	if (parse_pid_text(arg, strlen(arg), &v) || strchr(arg, '\n'))
		return bad_option("--pid", arg, "want a process id");
	*pid = (pid_t)v;
	return 0;
}
