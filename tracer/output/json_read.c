// SPDX-License-Identifier: MIT
/*
 * json_read.c - values looked up by path in a JSON document in memory.
 *
 * The report reads a few numbers from the readings the tracer wrote
 * (PROFILE.json, PROFILE.timeline.jsonl): files that may have been cut
 * short by a crash, edited, or made by someone else.  So no tree is built
 * and nothing is trusted: a lookup walks the text with a strict scanner
 * (RFC 8259 grammar, nesting at most MAX_DEPTH deep), skipping whole
 * values it does not want, and whatever does not scan is "not found".
 * Each lookup costs one pass over the text before what it finds.  A
 * key with escapes never matches (ours have none).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "json_read.h"

#define MAX_DEPTH	64

struct scan {
	const char *p, *end;
};

static void space(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' ||
				 *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static bool lit(struct scan *s, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n))
		return false;
	s->p += n;
	return true;
}

/* The four hex digits at p (end: the first byte past the string). */
static bool hex_at(const char *p, const char *end, uint32_t *out)
{
	uint32_t v = 0;
	int i;

	if (end - p < 4)
		return false;
	for (i = 0; i < 4; i++) {
		char c = p[i];

		if (c >= '0' && c <= '9')
			v = v << 4 | (uint32_t)(c - '0');
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			v = v << 4 | (uint32_t)((c | 0x20) - 'a' + 10);
		else
			return false;
	}
	*out = v;
	return true;
}

/* A string, from its opening quote. */
static bool string(struct scan *s)
{
	if (s->p >= s->end || *s->p != '"')
		return false;
	for (s->p++; s->p < s->end; s->p++) {
		unsigned char c = (unsigned char)*s->p;

		if (c == '"') {
			s->p++;
			return true;
		}
		if (c < 0x20)
			return false;
		if (c != '\\')
			continue;
		if (++s->p >= s->end)
			return false;
		if (*s->p == 'u') {
			uint32_t u;

			if (!hex_at(s->p + 1, s->end, &u))
				return false;
			s->p += 4;
		} else if (!strchr("\"\\/bfnrt", *s->p) || !*s->p) {
			return false;
		}
	}
	return false;
}

static bool digits(struct scan *s)
{
	const char *start = s->p;

	while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
		s->p++;
	return s->p > start;
}

static bool number(struct scan *s)
{
	if (s->p < s->end && *s->p == '-')
		s->p++;
	if (s->p < s->end && *s->p == '0')
		s->p++;
	else if (!digits(s))
		return false;
	if (s->p < s->end && *s->p == '.') {
		s->p++;
		if (!digits(s))
			return false;
	}
	if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
		s->p++;
		if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
			s->p++;
		if (!digits(s))
			return false;
	}
	return true;
}

static bool value(struct scan *s, int depth, enum json_type *type);

/* The members or elements after '{' or '['. */
static bool container(struct scan *s, int depth, bool object)
{
	enum json_type t;
	char close = object ? '}' : ']';

	s->p++;
	space(s);
	if (s->p < s->end && *s->p == close) {
		s->p++;
		return true;
	}
	for (;;) {
		if (object) {
			space(s);
			if (!string(s))
				return false;
			space(s);
			if (s->p >= s->end || *s->p != ':')
				return false;
			s->p++;
		}
		if (!value(s, depth + 1, &t))
			return false;
		space(s);
		if (s->p >= s->end)
			return false;
		if (*s->p == close) {
			s->p++;
			return true;
		}
		if (*s->p != ',')
			return false;
		s->p++;
	}
}

/* One whole value, with the space before it. */
static bool value(struct scan *s, int depth, enum json_type *type)
{
	space(s);
	if (s->p >= s->end || depth > MAX_DEPTH)
		return false;
	switch (*s->p) {
	case '{':
		*type = JSON_OBJECT;
		return container(s, depth, true);
	case '[':
		*type = JSON_ARRAY;
		return container(s, depth, false);
	case '"':
		*type = JSON_STRING;
		return string(s);
	case 't':
		*type = JSON_BOOL;
		return lit(s, "true");
	case 'f':
		*type = JSON_BOOL;
		return lit(s, "false");
	case 'n':
		*type = JSON_NULL;
		return lit(s, "null");
	default:
		*type = JSON_NUMBER;
		return number(s);
	}
}

/* In the object at s->p, the value of member key (len bytes): s->p at
 * it (after the space before it). */
static bool member(struct scan *s, const char *key, size_t len)
{
	enum json_type t;

	space(s);
	if (s->p >= s->end || *s->p != '{')
		return false;
	s->p++;
	space(s);
	if (s->p < s->end && *s->p == '}')
		return false;
	for (;;) {
		const char *k;
		bool match;

		space(s);
		k = s->p + 1;
		if (!string(s))
			return false;
		match = (size_t)(s->p - 1 - k) == len && !memcmp(k, key, len);
		space(s);
		if (s->p >= s->end || *s->p != ':')
			return false;
		s->p++;
		space(s);
		if (match)
			return true;
		if (!value(s, 1, &t))
			return false;
		space(s);
		if (s->p >= s->end || *s->p != ',')
			return false;	/* '}': not there */
		s->p++;
	}
}

struct json_value json_read__get(const char *doc, size_t len,
				 const char *path)
{
	struct json_value v = { JSON_NONE, NULL, 0 };
	struct scan s = { doc, doc + len };
	const char *at, *start = path;

	while (*path) {
		const char *dot = strchr(path, '.');
		size_t n = dot ? (size_t)(dot - path) : strlen(path);

		if (!member(&s, path, n))
			return v;
		path += n + (dot ? 1 : 0);
	}
	space(&s);
	at = s.p;
	if (!value(&s, 1, &v.type)) {
		v.type = JSON_NONE;
		return v;
	}
	v.at = at;
	v.len = (size_t)(s.p - at);
	/* a member ends with its object's ',' or '}' ("01" is no number, and
	 * one the document's end cuts may have been cut short); the whole
	 * document ends with its end */
	space(&s);
	if (*start ? s.p >= s.end || (*s.p != ',' && *s.p != '}') :
		     s.p < s.end) {
		v.type = JSON_NONE;
		v.at = NULL;
		v.len = 0;
	}
	return v;
}

bool json_read__number(struct json_value v, double *out)
{
	char buf[64], *stop;
	double d;

	if (v.type != JSON_NUMBER || v.len >= sizeof(buf))
		return false;
	memcpy(buf, v.at, v.len);
	buf[v.len] = 0;
	errno = 0;
	d = strtod(buf, &stop);
	/* too small for a double is near enough 0; too big is not a number
	 * we can use */
	if (*stop || (errno && !(errno == ERANGE && fabs(d) < 1)))
		return false;
	*out = d;
	return true;
}

bool json_read__bool(struct json_value v, bool *out)
{
	if (v.type != JSON_BOOL)
		return false;
	*out = v.at[0] == 't';
	return true;
}

/* Append code point c as UTF-8 if it fits whole. */
static bool put_utf8(char *buf, size_t size, size_t *n, uint32_t c)
{
	char tmp[4];
	size_t k;

	if (c < 0x80) {
		tmp[0] = (char)c;
		k = 1;
	} else if (c < 0x800) {
		tmp[0] = (char)(0xc0 | c >> 6);
		tmp[1] = (char)(0x80 | (c & 0x3f));
		k = 2;
	} else if (c < 0x10000) {
		tmp[0] = (char)(0xe0 | c >> 12);
		tmp[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		tmp[2] = (char)(0x80 | (c & 0x3f));
		k = 3;
	} else {
		tmp[0] = (char)(0xf0 | c >> 18);
		tmp[1] = (char)(0x80 | ((c >> 12) & 0x3f));
		tmp[2] = (char)(0x80 | ((c >> 6) & 0x3f));
		tmp[3] = (char)(0x80 | (c & 0x3f));
		k = 4;
	}
	if (*n + k >= size)
		return false;
	memcpy(buf + *n, tmp, k);
	*n += k;
	return true;
}

/* The bytes of one UTF-8 character at p (at most end - p), or 0 when it
 * is not a valid one. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	size_t k = p[0] < 0x80 ? 1 : p[0] >= 0xc2 && p[0] < 0xe0 ? 2 :
		   p[0] >= 0xe0 && p[0] < 0xf0 ? 3 :
		   p[0] >= 0xf0 && p[0] < 0xf5 ? 4 : 0, i;

	if (!k || (size_t)(end - p) < k)
		return 0;
	for (i = 1; i < k; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	/* no overlong forms, no surrogates, nothing past U+10FFFF */
	if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) ||
	    (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] > 0x8f))
		return 0;
	return k;
}

bool json_read__string(struct json_value v, char *buf, size_t size)
{
	const char *p, *end;
	size_t n = 0;

	if (v.type != JSON_STRING || !size || v.len < 2)
		return false;
	p = v.at + 1;
	end = v.at + v.len - 1;		/* the closing quote */
	while (p < end) {
		uint32_t c = (unsigned char)*p, lo;
		size_t k;

		if (c == '\\' && end - p >= 2) {
			char e = p[1];

			p += 2;
			switch (e) {
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 'u':
				if (!hex_at(p, end, &c))
					goto out;
				p += 4;
				/* a surrogate pair, or U+FFFD for half of one */
				if (c >= 0xd800 && c <= 0xdbff && end - p >= 6 &&
				    p[0] == '\\' && p[1] == 'u' &&
				    hex_at(p + 2, end, &lo) && lo >= 0xdc00 &&
				    lo <= 0xdfff) {
					c = 0x10000 + ((c - 0xd800) << 10) +
					    (lo - 0xdc00);
					p += 6;
				} else if (c >= 0xd800 && c <= 0xdfff) {
					c = 0xfffd;
				}
				break;
			default: c = (unsigned char)e; break;
			}
			if (!c || !put_utf8(buf, size, &n, c))
				goto out;
			continue;
		}
		/* a character's bytes all fit, or none does; a byte that
		 * starts no valid character is U+FFFD */
		k = utf8_len((const unsigned char *)p,
			     (const unsigned char *)end);
		if (!k) {
			if (!put_utf8(buf, size, &n, 0xfffd))
				goto out;
			p++;
			continue;
		}
		if (n + k >= size)
			goto out;
		memcpy(buf + n, p, k);
		n += k;
		p += k;
	}
out:
	buf[n] = 0;
	return true;
}

bool json_read__valid(const char *doc, size_t len)
{
	struct scan s = { doc, doc + len };
	enum json_type t;

	if (!value(&s, 1, &t))
		return false;
	space(&s);
	return s.p == s.end;
}
