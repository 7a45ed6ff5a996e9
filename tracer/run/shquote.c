// SPDX-License-Identifier: MIT
/*
 * shquote.c - a command line quoted for a shell.
 *
 * The profile's comments, PROFILE.json and the report show the command
 * that was profiled.  Joined with spaces, an empty argument would vanish
 * (redis-server --save '' --appendonly no would read "--save
 * --appendonly") and an argument with a space would read as two.  Each
 * word is quoted only as much as it needs, so the usual command reads as
 * typed.  Bytes below
 * 0x20 and 0x7f are written as \xNN inside $'...', so nothing from a
 * command line reaches a terminal raw; bytes past ASCII are escaped too,
 * since UTF-8's C1 controls (CSI, U+009B) act on some terminals.
 */
#include "shquote.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool safe_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || (c && strchr("_@%+=:,./-", c));
}

/* A byte written as \xNN: a control byte, or one past ASCII (UTF-8's C1
 * controls, CSI among them, act on some terminals). */
static bool escaped(unsigned char c)
{
	return c < 0x20 || c >= 0x7f;
}

/* Append word, quoted, at *at, leaving room for keep more bytes; false if
 * it does not fit.  first: the command's own word, where "=" would make
 * it an assignment. */
static bool put_word(const char *word, bool first, char *buf, size_t len,
		     size_t keep, size_t *at)
{
	const unsigned char *s = (const unsigned char *)word;
	bool plain = *s != 0, control = false;
	char tmp[4096];
	size_t n = 0, i;

	for (i = 0; s[i]; i++) {
		plain &= safe_char(s[i]) && !(first && s[i] == '=');
		control |= escaped(s[i]);
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

			if (escaped(s[i])) {
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
	if (*at + n + 1 + keep > len)
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
		/* room for " ..." after it, unless it is the last */
		size_t keep = argv[i + 1] ? 4 : 0;

		if (i) {
			if (at + 2 + keep > len)
				goto cut;
			buf[at++] = ' ';
			buf[at] = 0;
		}
		if (!put_word(argv[i], i == 0, buf, len, keep, &at)) {
			at = before;
			buf[at] = 0;
			goto cut;
		}
	}
	return buf;
cut:
	/* after the last whole word (room was kept for it) */
	if (at + 5 <= len)
		memcpy(buf + at, at ? " ..." : "...", at ? 5 : 4);
	return buf;
}
