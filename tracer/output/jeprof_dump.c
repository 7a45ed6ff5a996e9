// SPDX-License-Identifier: MIT
/*
 * jeprof_dump.c - jemalloc's heap profile dump ("heap_v2"), read strictly.
 *
 * What jemalloc 4 and 5 write on "prof.dump" (src/prof_data.c), and what
 * jeprof reads:
 *
 *   heap_v2/524288                         the mean sampling period
 *     t*: 2003: 131160385 [0: 0]           in use objects: bytes [allocated]
 *     t0: 2003: 131160385 [0: 0] name      the same per thread
 *   @ 0x7f..630 0x7f..d21 0x55..162 ...    a stack, leaf first
 *     t*: 2000: 131071985 [0: 0]           its counts
 *     t0: 2000: 131071985 [0: 0]           ... per thread
 *   (blank)
 *   MAPPED_LIBRARIES:
 *   (/proc/self/maps)
 *
 * The dump is the target's: nothing in it is trusted.  Each line is
 * matched whole against the grammar above, numbers are digits that fit
 * 64 bits, lines, frames, stacks and the whole are bounded
 * (jeprof_dump.h), and the first thing that does not fit is refused with
 * the line it is on.  The mapped libraries are not read: the tracer has
 * the process's own /proc/PID/maps and files.  Per-thread lines are
 * checked and skipped; a thread's name (jemalloc's thread.prof.name) may be
 * any printable text after its counts.
 */
#include "jeprof_dump.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "elf/array.h"

/* Highest user-space address: above, a frame is not a return address
 * (and could pass for the aggregate's [other] or [truncated] frames). */
#define USER_ADDR_END	(1ull << 56)

struct cursor {
	const char *p, *end;
};

struct parser {
	const char *buf, *end, *at;	/* at: the next line */
	size_t line;			/* of the line last taken, from 1 */
	char *why;
	size_t why_size;
};

static int refuse(struct parser *ps, const char *what)
{
	snprintf(ps->why, ps->why_size,
		 "jemalloc's dump is not understood: %s (line %zu)", what,
		 ps->line);
	return -EINVAL;
}

/* The next line into c (without its newline); false at the end. */
static int next_line(struct parser *ps, struct cursor *c, bool *more)
{
	const char *nl;

	*more = ps->at < ps->end;
	if (!*more)
		return 0;
	ps->line++;
	nl = memchr(ps->at, '\n', (size_t)(ps->end - ps->at));
	c->p = ps->at;
	c->end = nl ? nl : ps->end;
	ps->at = nl ? nl + 1 : ps->end;
	if ((size_t)(c->end - c->p) > JEPROF_MAX_LINE)
		return refuse(ps, "a line too long");
	if (memchr(c->p, 0, (size_t)(c->end - c->p)))
		return refuse(ps, "a NUL byte");
	return 0;
}

static bool take(struct cursor *c, const char *s)
{
	size_t n = strlen(s);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, s, n))
		return false;
	c->p += n;
	return true;
}

static bool decimal(struct cursor *c, uint64_t *out)
{
	uint64_t v = 0;
	unsigned int d;

	if (c->p >= c->end || *c->p < '0' || *c->p > '9')
		return false;
	for (; c->p < c->end && *c->p >= '0' && *c->p <= '9'; c->p++) {
		d = (unsigned int)(*c->p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static bool hexadecimal(struct cursor *c, uint64_t *out)
{
	uint64_t v = 0;
	unsigned int n = 0, d;
	char ch;

	if (!take(c, "0"))
		return false;
	if (!take(c, "x")) {
		*out = 0;		/* "%#x" of 0 is "0" */
		return true;
	}
	for (; c->p < c->end; c->p++, n++) {
		ch = *c->p;
		if (ch >= '0' && ch <= '9')
			d = (unsigned int)(ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			d = (unsigned int)(ch - 'a' + 10);
		else
			break;
		if (n == 16)
			return false;
		v = v << 4 | d;
	}
	*out = v;
	return n > 0;
}

/* "OBJS: BYTES [OBJS: BYTES]"; names: the rest may be " thread name". */
static int counts(struct parser *ps, struct cursor *c, uint64_t v[4],
		  bool names)
{
	if (!decimal(c, &v[0]) || !take(c, ": ") || !decimal(c, &v[1]) ||
	    !take(c, " [") || !decimal(c, &v[2]) || !take(c, ": ") ||
	    !decimal(c, &v[3]) || !take(c, "]"))
		return refuse(ps, "counts not as \"N: N [N: N]\"");
	if ((!v[0] != !v[1]) || v[0] > v[1] || (!v[2] != !v[3]) ||
	    v[2] > v[3])
		return refuse(ps, "bytes that do not go with their objects");
	if (c->p == c->end)
		return 0;
	if (!names || *c->p != ' ')
		return refuse(ps, "something after the counts");
	for (; c->p < c->end; c->p++)
		if ((unsigned char)*c->p < 0x20 || *c->p == 0x7f)
			return refuse(ps, "a control character in a thread's name");
	return 0;
}

/* "  tN: counts" lines, skipped; c: the first line that is not one. */
static int thread_lines(struct parser *ps, struct cursor *c, bool *more)
{
	const char *start;
	uint64_t uid, v[4];
	int err;

	for (;;) {
		err = next_line(ps, c, more);
		if (err || !*more)
			return err;
		start = c->p;
		if (!take(c, "  t") || (c->p < c->end && *c->p == '*')) {
			c->p = start;
			return 0;
		}
		if (!decimal(c, &uid) || !take(c, ": "))
			return refuse(ps, "a thread line not as \"  tN: \"");
		err = counts(ps, c, v, true);
		if (err)
			return err;
	}
}

static bool is_line(const struct cursor *c, const char *s)
{
	size_t n = strlen(s);

	return (size_t)(c->end - c->p) == n && !memcmp(c->p, s, n);
}

static int stack(struct parser *ps, struct jeprof_dump *d, struct cursor *c)
{
	struct jeprof_stack *st;
	struct cursor t;
	uint64_t pc, v[4];
	uint32_t n = 0;
	bool more;
	int err;

	if (d->nstacks >= JEPROF_MAX_STACKS)
		return refuse(ps, "too many stacks");
	if (array__grow((void **)&d->stacks, &d->stack_cap, d->nstacks + 1,
			sizeof(*d->stacks)))
		return -ENOMEM;
	st = &d->stacks[d->nstacks];
	st->frames_at = d->nframes;
	while (c->p < c->end) {
		if (!take(c, " ") || !hexadecimal(c, &pc))
			return refuse(ps, "a frame not as \" 0x...\"");
		if (pc >= USER_ADDR_END)
			return refuse(ps, "a frame outside user space");
		if (++n > JEPROF_MAX_FRAMES)
			return refuse(ps, "a stack too deep");
		if (array__grow((void **)&d->frames, &d->frame_cap,
				d->nframes + 1, sizeof(*d->frames)))
			return -ENOMEM;
		d->frames[d->nframes++] = pc;
	}
	st->nframes = n;
	err = next_line(ps, &t, &more);
	if (err)
		return err;
	if (!more || !take(&t, "  t*: "))
		return refuse(ps, "a stack without its \"  t*: \" counts");
	err = counts(ps, &t, v, false);
	if (err)
		return err;
	st->objs = v[0];
	st->bytes = v[1];
	st->accum_objs = v[2];
	st->accum_bytes = v[3];
	d->nstacks++;
	return 0;
}

int jeprof_dump__parse(struct jeprof_dump *d, const char *buf, size_t len,
		       char *why, size_t why_size)
{
	struct parser ps = { .buf = buf, .end = buf + len, .at = buf,
			     .why = why, .why_size = why_size };
	struct cursor c;
	uint64_t v[4];
	bool more;
	int err;

	memset(d, 0, sizeof(*d));
	if (len > JEPROF_MAX_BYTES)
		return refuse(&ps, "larger than 256 MiB");
	err = next_line(&ps, &c, &more);
	if (err)
		return err;
	if (!more || !take(&c, "heap_v2/"))
		return refuse(&ps, "no \"heap_v2/\" first (not a jemalloc 4 or 5 heap profile)");
	if (!decimal(&c, &d->period) || c.p != c.end || !d->period ||
	    (d->period & (d->period - 1)))
		return refuse(&ps, "a sampling period that is not a power of two");
	err = next_line(&ps, &c, &more);
	if (err)
		return err;
	if (!more || !take(&c, "  t*: "))
		return refuse(&ps, "no \"  t*: \" totals after the first line");
	err = counts(&ps, &c, v, false);
	if (err)
		return err;
	d->objs = v[0];
	d->bytes = v[1];
	d->accum_objs = v[2];
	d->accum_bytes = v[3];
	err = thread_lines(&ps, &c, &more);
	while (!err && more) {
		if (is_line(&c, "MAPPED_LIBRARIES:"))
			return 0;
		if (c.p == c.end) {
			err = next_line(&ps, &c, &more);
			continue;
		}
		if (!take(&c, "@"))
			return refuse(&ps, "a line that is no stack (\"@ ...\")");
		err = stack(&ps, d, &c);
		if (!err)
			err = thread_lines(&ps, &c, &more);
	}
	return err;
}

void jeprof_dump__fini(struct jeprof_dump *d)
{
	free(d->stacks);
	free(d->frames);
	memset(d, 0, sizeof(*d));
}

void jeprof__scale(uint64_t objs, uint64_t bytes, uint64_t period,
		   double *objs_out, double *bytes_out)
{
	double f;

	if (!objs || !period) {
		*objs_out = *bytes_out = 0;
		return;
	}
	f = 1.0 / -expm1(-((double)bytes / (double)objs) / (double)period);
	*objs_out = (double)objs * f;
	*bytes_out = (double)bytes * f;
}
