// SPDX-License-Identifier: MIT
/*
 * test-shquote.c - command lines quoted for a shell (tracer/run/shquote.c):
 * plain words as they are, empty ones as '', spaces and quotes single-
 * quoted, control bytes as $'\xNN', a line too long cut at a word.
 */
#include <string.h>
#include "check.h"
#include "tracer/run/shquote.h"

int main(void)
{
	char buf[256];
	char *redis[] = { "redis-server", "--save", "", "--appendonly", "no", NULL };
	char *sp[] = { "sh", "-c", "echo it's here", NULL };
	char *esc[] = { "x", "\x1b]0;t\x07", "a'b\\c\n", NULL };
	char *plain[] = { "/usr/bin/python3", "-m", "http.server", "--bind=127.0.0.1:8000", NULL };
	char *many[] = { "aaaaaaaaaa", "bbbbbbbbbb", "cccccccccc", NULL };

	CHECK(!strcmp(shquote__argv(redis, buf, sizeof(buf)),
		      "redis-server --save '' --appendonly no"));
	CHECK(!strcmp(shquote__argv(sp, buf, sizeof(buf)),
		      "sh -c 'echo it'\\''s here'"));
	CHECK(!strcmp(shquote__argv(esc, buf, sizeof(buf)),
		      "x $'\\x1b]0;t\\x07' $'a\\'b\\\\c\\x0a'"));
	CHECK(!strcmp(shquote__argv(plain, buf, sizeof(buf)),
		      "/usr/bin/python3 -m http.server --bind=127.0.0.1:8000"));
	shquote__argv(many, buf, 26);
	CHECK(!strcmp(buf, "aaaaaaaaaa bbbbbbbbbb ..."));
	CHECK(strlen(buf) < 26);
	shquote__argv(many, buf, 8);
	CHECK(strlen(buf) < 8);
	CHECK(!strcmp(shquote__argv((char *[]){ NULL }, buf, sizeof(buf)), ""));
	/* past ASCII, C1's CSI among it, escaped; "=" in the command */
	CHECK(!strcmp(shquote__argv((char *[]){ "a=b", "\xc2\x9b" "2J", "\xc3\xa9", "c=d", NULL },
				    buf, sizeof(buf)),
		      "'a=b' $'\\xc2\\x9b2J' $'\\xc3\\xa9' c=d"));
	/* a cut never lands inside a word, whatever the length */
	for (size_t len = 1; len < 40; len++) {
		char *w[] = { "aaaaaaaaaa", "'b b'x", "cc", NULL };
		size_t n;

		shquote__argv(w, buf, len);
		n = strlen(buf);
		CHECK(n < len);
		CHECK(!n || !strcmp(buf, "...") ||
		      !strncmp(buf + (n >= 4 ? n - 4 : 0), " ...", 4) ||
		      !strcmp(buf, "aaaaaaaaaa ''\\''b b'\\''x' cc"));
		CHECK(!strstr(buf, "a ...") || !strncmp(buf, "aaaaaaaaaa ...", 14));
	}
	CHECK_SUMMARY("test-shquote");
	return 0;
}
