// SPDX-License-Identifier: MIT
/*
 * log.c - "PROG: message" on stderr (see log.h).
 *
 * The prefix and the message go out in one write of one buffer where they
 * fit, so that lines from a follower and its main tracer, which share
 * stderr, never interleave mid-line.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *log_prog = "pprof-alloc";
static bool log_quiet;

void log__set_prog(const char *prog)
{
	log_prog = prog;
}

const char *log__prog(void)
{
	return log_prog;
}

void log__set_quiet(bool quiet)
{
	log_quiet = quiet;
}

bool log__quiet(void)
{
	return log_quiet;
}

static void say(const char *fmt, va_list ap)
{
	char line[2048];
	int n = snprintf(line, sizeof(line), "%s: ", log_prog);
	int m;
	va_list again;

	fflush(stderr);	/* what stdio holds goes first */
	va_copy(again, ap);
	m = n < 0 || (size_t)n >= sizeof(line) ? -1 :
		vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, again);
	va_end(again);
	if (m >= 0 && (size_t)m < sizeof(line) - (size_t)n) {
		(void)!write(STDERR_FILENO, line, (size_t)(n + m));
		return;
	}
	/* too long for one line's buffer: two writes */
	fprintf(stderr, "%s: ", log_prog);
	vfprintf(stderr, fmt, ap);
}

void pr_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
}

void pr_info(const char *fmt, ...)
{
	va_list ap;

	if (log_quiet)
		return;
	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
}
