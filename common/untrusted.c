// SPDX-License-Identifier: MIT
/*
 * untrusted.c - a string that came from the target, made safe to show
 * (see untrusted.h for what is kept and what is escaped).
 *
 * One pass: each unit - a printable ASCII byte, a whole UTF-8 sequence,
 * or one escaped byte - is written whole or not at all.  The position
 * after the last unit that still leaves room for "..." is remembered, so
 * that a string cut short goes back there and ends with "...".
 */
#include "untrusted.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The length of the well-formed UTF-8 sequence at s (at most avail bytes)
 * of a character that may be shown; 0 when it must be escaped. */
static size_t utf8_unit(const unsigned char *s, size_t avail)
{
	unsigned char c = s[0];
	uint32_t cp;
	size_t n, i;

	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (avail < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;	/* overlong, surrogate, past Unicode */
	if (cp <= 0x9f ||			/* C1 controls */
	    cp == 0x2028 || cp == 0x2029 ||	/* line, paragraph separator */
	    (cp >= 0x202a && cp <= 0x202e) ||	/* bidi embeddings, overrides */
	    (cp >= 0x2066 && cp <= 0x2069))	/* bidi isolates */
		return 0;
	return n;
}

/* The length of the unit at s that may be copied as it is, 0 when its
 * first byte must be escaped. */
static size_t unit(const unsigned char *s, size_t avail)
{
	if (s[0] < 0x80)
		return s[0] >= 0x20 && s[0] < 0x7f;
	return utf8_unit(s, avail);
}

size_t untrusted__clean(char *dst, size_t size, const char *src, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)src;
	size_t at = 0, keep = 0, i = 0, n;
	char esc[4];
	const char *put;

	if (size < 4) {
		if (size)
			dst[0] = '\0';
		return 0;
	}
	len = strnlen(src, len);
	while (i < len) {
		n = unit(s + i, len - i);
		if (n) {
			put = (const char *)s + i;
		} else {
			esc[0] = '\\';
			esc[1] = 'x';
			esc[2] = hex[s[i] >> 4];
			esc[3] = hex[s[i] & 15];
			put = esc;
		}
		if (at + (n ? n : 4) > size - 1) {
			memcpy(dst + keep, "...", 3);
			dst[keep + 3] = '\0';
			return keep + 3;
		}
		memcpy(dst + at, put, n ? n : 4);
		at += n ? n : 4;
		i += n ? n : 1;
		if (at + 3 <= size - 1)
			keep = at;
	}
	dst[at] = '\0';
	return at;
}

bool untrusted__is_clean(const char *src, size_t max)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t len = strnlen(src, max + 1), i = 0, n;

	if (len > max)
		return false;
	for (; i < len; i += n) {
		n = unit(s + i, len - i);
		if (!n)
			return false;
	}
	return true;
}

char *untrusted__strdup(const char *src)
{
	size_t len = strnlen(src, UNTRUSTED_MAX + 1);
	size_t size = len * 4 + 1;
	char *copy;

	if (size > UNTRUSTED_MAX + 1)
		size = UNTRUSTED_MAX + 1;
	copy = malloc(size);
	if (!copy)
		return NULL;
	untrusted__clean(copy, size, src, len);
	return copy;
}

void untrusted__write(const char *src,
		      void (*put)(void *ctx, const char *s, size_t n),
		      void *ctx)
{
	char buf[UNTRUSTED_MAX + 1];
	size_t n;

	if (untrusted__is_clean(src, UNTRUSTED_MAX)) {
		put(ctx, src, strlen(src));
		return;
	}
	n = untrusted__clean(buf, sizeof(buf), src, UNTRUSTED_MAX + 1);
	put(ctx, buf, n);
}

static void put_file(void *ctx, const char *s, size_t n)
{
	fwrite(s, 1, n, ctx);
}

void untrusted__fputs(const char *src, FILE *out)
{
	untrusted__write(src, put_file, out);
}

static int hex_digit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' :
	       c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int untrusted__decode(char *dst, size_t size, const char *src)
{
	size_t at = 0;
	int hi, lo;

	for (; *src; src++) {
		if (at + 1 >= size)
			return -ENAMETOOLONG;
		if (src[0] == '\\' && src[1] == 'x' &&
		    (hi = hex_digit(src[2])) >= 0 &&
		    (lo = hex_digit(src[3])) >= 0 && (hi || lo)) {
			dst[at++] = (char)(hi << 4 | lo);
			src += 3;
		} else {
			dst[at++] = *src;
		}
	}
	dst[at] = '\0';
	return 0;
}
