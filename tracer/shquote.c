// SPDX-License-Identifier: MIT
/*
 * shquote.c - a command line quoted for a shell.
 *
 * The profile's comments, PROFILE.json and the report show the command
 * that was profiled; joined with spaces, an empty argument vanished
 * (redis-server --save '' --appendonly no read "--save  --appendonly")
 * and an argument with a space read as two.  Each word is quoted only
 * as much as it needs, so the usual command reads as typed.  Bytes below
 * 0x20 and 0x7f are written as \xNN inside $'...', so nothing from a
 * command line reaches a terminal raw.
 */
#include "shquote.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool safe_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || strchr("_@%+=:,./-", c) || c >= 0x80;
}

/* Append word, quoted, at *at; false if it does not fit. */
static bool put_word(const char *word, char *buf, size_t len, size_t *at)
{
	const unsigned char *s = (const unsigned char *)word;
	bool plain = *s != 0, control = false;
	char tmp[4096];
	size_t n = 0, i;

	for (i = 0; s[i]; i++) {
		plain &= safe_char(s[i]);
		control |= s[i] < 0x20 || s[i] == 0x7f;
	}
#define PUT(str, k) do {						\
		if (n + (k) >= sizeof(tmp))				\
			return false;					\
		memcpy(tmp + n, (str), (k));				\
		n += (k);						\
	} while (0)
	if (plain) {
		PUT(word, i);
	} else if (control) {
		PUT("$'", 2);
		for (i = 0; s[i]; i++) {
			char esc[8];

			if (s[i] < 0x20 || s[i] == 0x7f) {
				snprintf(esc, sizeof(esc), "\\x%02x", s[i]);
				PUT(esc, 4);
			} else if (s[i] == '\'' || s[i] == '\\') {
				esc[0] = '\\';
				esc[1] = (char)s[i];
				PUT(esc, 2);
			} else {
				PUT(&s[i], 1);
			}
		}
		PUT("'", 1);
	} else {
		PUT("'", 1);
		for (i = 0; s[i]; i++) {
			if (s[i] == '\'')
				PUT("'\\''", 4);
			else
				PUT(&s[i], 1);
		}
		PUT("'", 1);
	}
#undef PUT
	if (*at + n + 1 > len)
		return false;
	memcpy(buf + *at, tmp, n);
	*at += n;
	buf[*at] = 0;
	return true;
}

char *shquote__argv(char *const *argv, char *buf, size_t len)
{
	size_t at = 0, i;

	if (!len)
		return buf;
	buf[0] = 0;
	for (i = 0; argv && argv[i]; i++) {
		size_t before = at;

		if (i) {
			if (at + 2 > len)
				goto cut;
			buf[at++] = ' ';
			buf[at] = 0;
		}
		if (!put_word(argv[i], buf, len, &at)) {
			at = before;
			buf[at] = 0;
			goto cut;
		}
	}
	return buf;
cut:
	if (len > 4) {
		if (at + 5 > len)
			at = len - 5;
		memcpy(buf + at, " ...", 5);
	}
	return buf;
}
