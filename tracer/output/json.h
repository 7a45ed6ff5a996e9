/* SPDX-License-Identifier: MIT */
/*
 * json.h - a small streaming JSON writer (objects, arrays, numbers,
 * strings), compact or indented.
 */
#ifndef PA_TRACER_JSON_H
#define PA_TRACER_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

struct json {
	FILE *out;
	bool pretty;
	bool script;			/* inside an HTML <script>: '<', '>'
					   and '&' escaped too */
	int depth;
	bool first[JSON_MAX_DEPTH];
	char close[JSON_MAX_DEPTH];
};

void json__init(struct json *j, FILE *out, bool pretty);
/* key is NULL inside arrays and for the outermost value. */
void json__begin_object(struct json *j, const char *key);
void json__begin_array(struct json *j, const char *key);
void json__end(struct json *j);		/* the innermost object or array */
void json__u64(struct json *j, const char *key, uint64_t v);
void json__i64(struct json *j, const char *key, int64_t v);
void json__double(struct json *j, const char *key, double v);
void json__bool(struct json *j, const char *key, bool v);
void json__null(struct json *j, const char *key);
void json__string(struct json *j, const char *key, const char *s);
/* Ends the document (a newline). */
void json__finish(struct json *j);

#endif /* PA_TRACER_JSON_H */
