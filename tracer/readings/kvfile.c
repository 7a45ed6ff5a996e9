// SPDX-License-Identifier: MIT
/*
 * kvfile.c - read the small "key value" files of procfs and cgroupfs.
 *
 * smaps_rollup, status, memory.stat and memory.events are all lines of a
 * key and one number, with a colon and a "kB" unit in procfs.  They are
 * written by whatever kernel the machine runs (keys come and go between
 * versions) or, with --proc-root/--sys-root, by whoever made the tree, so
 * nothing about them is assumed: a file is read whole with a size bound,
 * every line is parsed on its own, unknown keys are kept, a number that
 * does not fit is kept as invalid rather than wrapped or clamped, and a
 * line that is not "key value" is counted and the first one described, so
 * the caller can say what was wrong.  The kernel ends every line with a
 * newline, so a last line without one is taken as cut short and dropped.
 * Keys keep their file order.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elf/array.h"
#include "kvfile.h"

int kvfile__read(const char *path, char **text, size_t *len)
{
	size_t cap = 4096, used = 0;
	char *buf = malloc(cap), *grown;
	ssize_t n;
	int fd, err;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		err = -errno;
		goto out_free;
	}
	for (;;) {
		if (cap - used < 2) {
			if (cap >= KVFILE_MAX) {
				err = -EFBIG;
				goto out_close;
			}
			grown = realloc(buf, cap * 2);
			if (!grown) {
				err = -ENOMEM;
				goto out_close;
			}
			buf = grown;
			cap *= 2;
		}
		n = read(fd, buf + used, cap - used - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto out_close;
		}
		if (!n)
			break;
		used += (size_t)n;
	}
	close(fd);
	buf[used] = 0;
	*text = buf;
	*len = used;
	return 0;
out_close:
	close(fd);
out_free:
	free(buf);
	return err;
}

/* A decimal number at *p (leading blanks skipped); *p moves past it.
 * 1 parsed, 0 not a number, -ERANGE too big. */
static int parse_number(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	bool big = false;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s == end || !isdigit((unsigned char)*s))
		return 0;
	for (; s < end && isdigit((unsigned char)*s); s++) {
		unsigned int d = (unsigned int)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			big = true;
		else
			v = v * 10 + d;
	}
	*p = s;
	*out = v;
	return big ? -ERANGE : 1;
}

static bool blank(const char *s, const char *end)
{
	for (; s < end; s++)
		if (!isspace((unsigned char)*s))
			return false;
	return true;
}

static void bad_line(struct kvset *s, unsigned int lineno, const char *what)
{
	if (!s->bad_lines++)
		snprintf(s->first_error, sizeof(s->first_error), "line %u: %s",
			 lineno, what);
}

static int add(struct kvset *s, const char *key, size_t key_len,
	       uint64_t value, bool valid, bool kb)
{
	struct kv *kv;

	if (array__grow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v)))
		return -ENOMEM;
	kv = &s->v[s->n];
	kv->key = strndup(key, key_len);
	if (!kv->key)
		return -ENOMEM;
	kv->value = value;
	kv->valid = valid;
	kv->kb = kb;
	s->n++;
	return 0;
}

static bool key_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '(' ||
	       c == ')' || c == '.' || c == '-';
}

/* One line; 0, or -ENOMEM. */
static int parse_line(struct kvset *s, const char *line, const char *end,
		      unsigned int lineno, enum kv_format fmt,
		      bool skip_other)
{
	const char *k = line, *p;
	uint64_t v = 0;
	bool valid = true, kb = false;
	int r;

	while (k < end && (*k == ' ' || *k == '\t'))
		k++;
	for (p = k; p < end && key_char(*p); p++)
		;
	if (p == k || p - k > 64 || (fmt == KV_COLON && (p == end || *p != ':')) ||
	    (fmt == KV_SPACE && p < end && *p != ' ' && *p != '\t')) {
		if (!skip_other)
			bad_line(s, lineno, "not a key and a number");
		return 0;
	}
	{
		const char *key = k;
		size_t key_len = (size_t)(p - k);

		if (fmt == KV_COLON)
			p++;
		r = parse_number(&p, end, &v);
		if (r == 0) {
			if (!skip_other)
				bad_line(s, lineno, "no number after the key");
			return 0;
		}
		if (r < 0) {
			valid = false;
			bad_line(s, lineno, "number too big for 64 bits");
		}
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (fmt == KV_COLON && end - p >= 2 && !strncmp(p, "kB", 2)) {
			p += 2;
			kb = true;
			if (valid && v > UINT64_MAX / 1024) {
				valid = false;
				bad_line(s, lineno, "number too big for 64 bits");
			}
			v *= 1024;
		}
		if (!blank(p, end)) {
			if (skip_other)
				return 0;	/* "Uid: 0 0 0 0" and such */
			valid = false;
			bad_line(s, lineno, "something after the number");
		}
		return add(s, key, key_len, valid ? v : 0, valid, kb);
	}
}

int kvset__parse(struct kvset *s, const char *text, size_t len,
		 enum kv_format fmt, bool skip_other, unsigned int lines_before)
{
	const char *p = text, *end = text + len, *nl;
	unsigned int lineno = lines_before;
	int err;

	kvset__fini(s);
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		lineno++;
		if (!blank(p, nl)) {
			if (nl == end)	/* the kernel ends every line */
				bad_line(s, lineno, "truncated: no newline at the end");
			else if (memchr(p, 0, (size_t)(nl - p)))
				bad_line(s, lineno, "a NUL byte");
			else if ((err = parse_line(s, p, nl, lineno, fmt,
						   skip_other)))
				return err;
		}
		p = nl + 1;
	}
	return 0;
}

const struct kv *kvset__get(const struct kvset *s, const char *key)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].key, key))
			return &s->v[i];
	return NULL;
}

bool kvset__value(const struct kvset *s, const char *key, uint64_t *out)
{
	const struct kv *kv = kvset__get(s, key);

	if (!kv || !kv->valid)
		return false;
	*out = kv->value;
	return true;
}

void kvset__fini(struct kvset *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->v[i].key);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

int kvfile__read_u64(const char *path, uint64_t *out, bool *unlimited)
{
	const char *p, *end;
	char *text;
	size_t len;
	int err, r;

	err = kvfile__read(path, &text, &len);
	if (err)
		return err;
	p = text;
	end = text + len;
	*unlimited = false;
	if (!len || text[len - 1] != '\n') {
		err = len ? -EPIPE : -ENODATA;	/* truncated, or empty */
		goto out_free;
	}
	while (p < end && isspace((unsigned char)*p))
		p++;
	if (end - p >= 3 && !strncmp(p, "max", 3) && blank(p + 3, end)) {
		*unlimited = true;
		*out = 0;
		err = 0;
		goto out_free;
	}
	r = parse_number(&p, end, out);
	err = r == 1 && blank(p, end) ? 0 : r < 0 ? -ERANGE : -EINVAL;
out_free:
	free(text);
	return err;
}
