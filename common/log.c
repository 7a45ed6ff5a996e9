// SPDX-License-Identifier: MIT
/*
 * log.c - "PROG: message" on stderr (see log.h).
 *
 * The prefix and the message go out in one write of one buffer, so that
 * lines from a follower and its main tracer, which share stderr, never
 * interleave mid-line.  Messages carry the target's strings (paths,
 * names): the message is cleaned (untrusted.c) before it is written, all
 * but its own final newline, so that no escape sequence, carriage return
 * or forged line reaches the terminal; a message past the line's 8 KiB
 * ends in "...".
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "untrusted.h"

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
	char msg[2048], line[8192], *text = msg;
	size_t n, m;
	va_list again;
	bool nl;
	int len;

	fflush(stderr);	/* what stdio holds goes first */
	va_copy(again, ap);
	len = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (len < 0)
		goto out_again;
	m = (size_t)len;
	if (m >= sizeof(msg)) {
		text = malloc(m + 1);
		if (text) {
			vsnprintf(text, m + 1, fmt, again);
		} else {
			text = msg;
			m = sizeof(msg) - 1;
		}
	}
	/* the message's own newline ends the line; any other control byte,
	 * one from the target's strings among them, is escaped */
	nl = m && text[m - 1] == '\n';
	n = (size_t)snprintf(line, sizeof(line), "%s: ", log_prog);
	if (n >= sizeof(line) / 2)
		n = 0;
	n += untrusted__clean(line + n, sizeof(line) - n - 1, text,
			      m - nl);
	if (nl)
		line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, n);
	if (text != msg)
		free(text);
out_again:
	va_end(again);
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
