// SPDX-License-Identifier: MIT
/*
 * test-untrusted.c - the target's strings made safe to show
 * (common/untrusted.c), and the sinks that use it: the JSON writer, the
 * pprof string table and the log.
 *
 * Every control byte, invalid UTF-8 sequence, C1 control, bidirectional
 * override and line separator becomes \xNN per byte; printable ASCII and
 * well-formed UTF-8 stay; cleaning twice changes nothing; a string cut
 * short ends in "..." with no escape cut in two.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "common/log.h"
#include "common/untrusted.h"
#include "tracer/output/json.h"
#include "tracer/output/pprof.h"

static const char *clean(const char *s)
{
	static char buf[1024];

	untrusted__clean(buf, sizeof(buf), s, strlen(s));
	return buf;
}

#define CLEANS(in, out)							\
	do {								\
		CHECK(!strcmp(clean(in), out));				\
		CHECK(untrusted__is_clean(out, 1024));			\
		CHECK(!strcmp(clean(out), out));	/* idempotent */ \
	} while (0)

static void test_bytes(void)
{
	CLEANS("/usr/lib/libc.so.6", "/usr/lib/libc.so.6");
	CLEANS("", "");
	CLEANS("a\x1b]0;title\x07z", "a\\x1b]0;title\\x07z");
	CLEANS("line\r\nforged", "line\\x0d\\x0aforged");
	CLEANS("tab\there\x7f", "tab\\x09here\\x7f");
	CLEANS("quote\" back\\slash", "quote\" back\\slash");
	/* UTF-8: kept when well formed and printable */
	CLEANS("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80");
	/* invalid: a lone byte, an overlong form, a surrogate, a truncated
	 * sequence, past U+10FFFF */
	CLEANS("\xff\xfe", "\\xff\\xfe");
	CLEANS("\xc0\x80", "\\xc0\\x80");
	CLEANS("\xed\xa0\x80", "\\xed\\xa0\\x80");
	CLEANS("\xe2\x82", "\\xe2\\x82");
	CLEANS("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");
	/* C1's CSI, the bidi override and isolate, the line separator */
	CLEANS("\xc2\x9b" "31m", "\\xc2\\x9b" "31m");
	CLEANS("a\xe2\x80\xae" "b", "a\\xe2\\x80\\xae" "b");
	CLEANS("\xe2\x81\xa6x", "\\xe2\\x81\\xa6x");
	CLEANS("\xe2\x80\xa8", "\\xe2\\x80\\xa8");
	CHECK(!untrusted__is_clean("a\x1b", 10));
	CHECK(!untrusted__is_clean("abcdef", 5));	/* too long */
	CHECK(untrusted__is_clean("abcde", 5));
}

static void test_bounds(void)
{
	char buf[12], big[40];
	size_t n;

	/* fits exactly: no "..." */
	n = untrusted__clean(buf, sizeof(buf), "0123456789a", 99);
	CHECK(n == 11 && !strcmp(buf, "0123456789a"));
	n = untrusted__clean(buf, sizeof(buf), "0123456789ab", 99);
	CHECK(n <= 11 && !strcmp(buf, "01234567..."));
	/* never half an escape */
	n = untrusted__clean(buf, sizeof(buf), "ab\x1b\x1b\x1b\x1b", 99);
	CHECK(!strcmp(buf, "ab\\x1b..."));
	CHECK(n == strlen(buf));
	/* never half a UTF-8 sequence */
	untrusted__clean(buf, sizeof(buf), "abcdef\xf0\x9f\x98\x80xyz", 99);
	CHECK(!strcmp(buf, "abcdef..."));
	/* len bounds the input; a NUL ends it earlier */
	untrusted__clean(big, sizeof(big), "abc\x1b", 3);
	CHECK(!strcmp(big, "abc"));
	untrusted__clean(big, sizeof(big), "ab\0\x1b", 4);
	CHECK(!strcmp(big, "ab"));
	/* the sinks' bound */
	{
		static char huge[UNTRUSTED_MAX * 2];
		char *copy;

		memset(huge, 'x', sizeof(huge) - 1);
		copy = untrusted__strdup(huge);
		CHECK(copy && strlen(copy) == UNTRUSTED_MAX);
		CHECK(!strcmp(copy + UNTRUSTED_MAX - 3, "..."));
		free(copy);
		memset(huge, '\x1b', sizeof(huge) - 1);
		copy = untrusted__strdup(huge);
		CHECK(copy && strlen(copy) <= UNTRUSTED_MAX);
		CHECK(untrusted__is_clean(copy, UNTRUSTED_MAX));
		free(copy);
	}
}

/* The JSON writer: cleaned, then JSON's own escapes. */
static void test_json(void)
{
	char *doc = NULL;
	size_t len = 0;
	struct json j;
	FILE *f = open_memstream(&doc, &len);

	CHECK(f);
	json__init(&j, f, false);
	json__begin_object(&j, NULL);
	json__string(&j, "k\x1b", "a\x1b[2J\"\\\n\xff</script>");
	json__end(&j);
	fclose(f);
	CHECK(!strcmp(doc, "{\"k\\\\x1b\":\"a\\\\x1b[2J\\\"\\\\\\\\x0a\\\\xff</script>\"}"));
	free(doc);
}

/* The profile's string table holds the cleaned string, once. */
static void test_pprof(void)
{
	static const struct pprof_sample_type types[] = {
		{ "space", "bytes" },
	};
	struct pprof_builder *b = pprof__new(types, 1, &types[0], 1);
	int64_t a, c;

	CHECK(b);
	a = pprof__string(b, "fn\x1b]0;x\x07");
	c = pprof__string(b, "fn\\x1b]0;x\\x07");
	CHECK(a > 0 && a == c);
	CHECK(pprof__string(b, "plain") != a);
	pprof__free(b);
}

/* The log: the message's own newline ends the line, any other goes. */
static void test_log(void)
{
	char path[] = "/tmp/test-untrusted.XXXXXX", out[512];
	int fd = mkstemp(path), saved = dup(2);
	ssize_t n;

	CHECK(fd >= 0 && saved >= 0);
	unlink(path);
	CHECK(dup2(fd, 2) == 2);
	log__set_prog("t");
	pr_warn("wrote %s\n", "x\n\rt: wrote /etc/passwd\x1b[2J");
	dup2(saved, 2);
	close(saved);
	n = pread(fd, out, sizeof(out) - 1, 0);
	CHECK(n > 0);
	out[n] = 0;
	CHECK(!strcmp(out, "t: wrote x\\x0a\\x0dt: wrote /etc/passwd\\x1b[2J\n"));
	close(fd);
}

int main(void)
{
	test_bytes();
	test_bounds();
	test_json();
	test_pprof();
	test_log();
	CHECK_SUMMARY("test-untrusted");
	return 0;
}
