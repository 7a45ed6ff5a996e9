// SPDX-License-Identifier: MIT
/*
 * fuzz-serve.c - libFuzzer target for what `serve` parses from outside:
 * the --listen address (tracer/serve/http.c), the "seconds" query value of a
 * request, the %XX decoding of a request target, whether the bytes a
 * connection sent hold a whole request header, and a PID file's text
 * (tracer/options/args.c).  The first byte picks the parser; the rest is the
 * input, made a C string where the parser takes one (the header check
 * gets exactly the bytes, so that reading past them is caught).  Each
 * result is checked against what the parser promises; the decoding and
 * the header check also against a plain restatement of the rule (two hex
 * digits, not 00; a line that is not empty, then an empty one).
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tracer/options/args.h"
#include "tracer/serve/http.h"

/* The escapes http__unescape() must refuse in s: 0 if none. */
static int bad_escapes(const char *s)
{
	for (; *s; s++) {
		if (*s != '%')
			continue;
		if (!isxdigit((unsigned char)s[1]) ||
		    !isxdigit((unsigned char)s[2]) ||
		    (s[1] == '0' && s[2] == '0'))
			return 1;
		s += 2;
	}
	return 0;
}

/* Restated: past any empty lines, a line ends and the next is empty. */
static bool whole_header(const uint8_t *b, size_t len)
{
	size_t i = 0;
	bool text = false;	/* a character of the request line seen */

	for (; i < len; i++) {
		if (b[i] != '\r' && b[i] != '\n')
			text = true;
		if (!text || b[i] != '\n')
			continue;
		if (i + 1 < len && b[i + 1] == '\n')
			return true;
		if (i + 2 < len && b[i + 1] == '\r' && b[i + 2] == '\n')
			return true;
	}
	return false;
}

static void check_header(const uint8_t *data, size_t size)
{
	char *b = malloc(size ? size : 1);

	if (!b)
		return;
	memcpy(b, data, size);
	if (http__header_whole(b, size) != whole_header(data, size))
		abort();
	free(b);
}

static void check_unescape(char *s)
{
	size_t in = strlen(s), len = 0;
	int bad = bad_escapes(s), err;

	err = http__unescape(s, &len);
	/* a C string of the length said, no longer than it came: a NUL is
	 * never made where the routes would see the target end */
	if (len > in || strlen(s) != len || (err != 0) != bad ||
	    (err && err != -EINVAL))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char host[64], *s;
	unsigned int port = 0;
	int32_t pid = 0;
	long sec;

	if (!size)
		return 0;
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = 0;
	switch (data[0] % 5) {
	case 0:
		if (!http__parse_listen(s, host, sizeof(host), &port) &&
		    (port > 65535 || strlen(host) >= sizeof(host)))
			abort();
		break;
	case 1:
		sec = http__parse_seconds(s);
		if (sec < -1 || sec > (long)HTTP_SECONDS_MAX)
			abort();
		break;
	case 3:
		check_unescape(s);
		break;
	case 4:
		check_header(data + 1, size - 1);
		break;
	default:
		if (!parse_pid_text((const char *)data + 1, size - 1, &pid) &&
		    pid <= 0)
			abort();
		break;
	}
	free(s);
	return 0;
}
