// SPDX-License-Identifier: MIT
/*
 * test-json-read.c - values looked up by path in JSON the report reads:
 * nesting, every kind of value, escapes (surrogate pairs, lone halves,
 * invalid UTF-8), strings cut to the buffer on a character's boundary,
 * and documents that are cut short or are not JSON.
 */
#include <string.h>
#include "check.h"
#include "tracer/output/json_read.h"

static struct json_value get(const char *doc, const char *path)
{
	return json_read__get(doc, strlen(doc), path);
}

int main(void)
{
	static const char doc[] =
		"{ \"a\": {\"x\": [1, {\"y\": 2}], \"b\": {\"c\": -1.5e3}},\n"
		"  \"s\": \"caf\\u00e9 \\ud83d\\ude00 \\ud800! \\\"q\\\" \\/\",\n"
		"  \"t\": true, \"n\": null, \"big\": 1e400, \"tiny\": 1e-400,\n"
		"  \"raw\": \"\xc3\xa9\xe2\x82\xac\xff.\" }";
	char buf[64];
	double d;
	bool b;

	CHECK(json_read__valid(doc, strlen(doc)));
	CHECK(json_read__number(get(doc, "a.b.c"), &d) && d == -1500);
	CHECK(get(doc, "a.x").type == JSON_ARRAY);
	CHECK(get(doc, "a.x.y").type == JSON_NONE);	/* arrays have no keys */
	CHECK(get(doc, "a.z").type == JSON_NONE);
	CHECK(get(doc, "n").type == JSON_NULL);
	CHECK(json_read__bool(get(doc, "t"), &b) && b);
	CHECK(!json_read__number(get(doc, "big"), &d));
	CHECK(json_read__number(get(doc, "tiny"), &d) && d == 0);
	CHECK(!json_read__number(get(doc, "s"), &d));
	CHECK(json_read__string(get(doc, "s"), buf, sizeof(buf)));
	CHECK_EQ_STR(buf, "caf\xc3\xa9 \xf0\x9f\x98\x80 \xef\xbf\xbd! \"q\" /");
	/* cut on a character's boundary: "caf" then no room for é */
	CHECK(json_read__string(get(doc, "s"), buf, 5));
	CHECK_EQ_STR(buf, "caf");
	CHECK(json_read__string(get(doc, "raw"), buf, sizeof(buf)));
	CHECK_EQ_STR(buf, "\xc3\xa9\xe2\x82\xac\xef\xbf\xbd.");
	CHECK(json_read__string(get(doc, "raw"), buf, 1) && !buf[0]);

	/* cut short, or not JSON: what is before the cut is still found */
	CHECK(!json_read__valid(doc, strlen(doc) - 3));
	CHECK(json_read__number(json_read__get(doc, 60, "a.b.c"), &d));
	CHECK(json_read__get(doc, 30, "a.b.c").type == JSON_NONE);
	CHECK(get("{\"a\": 01}", "a").type == JSON_NONE);
	/* a member the end cuts may have been cut short: "12" of "1234" */
	CHECK(get("{\"b\": 1, \"a\": 12", "a").type == JSON_NONE);
	CHECK(json_read__number(get("{\"b\": 1, \"a\": 12", "b"), &d) &&
	      d == 1);
	CHECK(get("{\"a\": [1]]", "a").type == JSON_NONE);
	CHECK(json_read__number(get("12", ""), &d) && d == 12);
	/* overlong, surrogate and too big UTF-8 are U+FFFD */
	CHECK(json_read__string(get("{\"a\": \"\xe0\x80\xaf\xed\xa0\x80\xf4\x90\x80\x80\"}",
				    "a"), buf, sizeof(buf)));
	CHECK(!strstr(buf, "\xe0\x80") && !strstr(buf, "\xed\xa0") &&
	      !strstr(buf, "\xf4\x90"));
	CHECK(get("{\"a\": \"\\u12\"}", "a").type == JSON_NONE);
	CHECK(get("{\"a\": \"x\ny\"}", "a").type == JSON_NONE);
	CHECK(get("{\"a\" 1}", "a").type == JSON_NONE);
	CHECK(!json_read__valid("{} {}", 5));
	CHECK(json_read__valid(" [ ] ", 5));
	{
		/* nesting past the bound is refused, not recursed into */
		char deep[300];

		memset(deep, '[', 200);
		memset(deep + 200, ']', 99);
		deep[299] = 0;
		CHECK(!json_read__valid(deep, strlen(deep)));
	}
	CHECK_SUMMARY("test-json-read");
	return 0;
}
