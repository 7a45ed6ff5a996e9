/* SPDX-License-Identifier: MIT */
/*
 * json_read.h - values looked up by path in a JSON document in memory.
 */
#ifndef PA_TRACER_JSON_READ_H
#define PA_TRACER_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>

enum json_type {
	JSON_NONE,		/* not found, or not valid JSON */
	JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_OBJECT,
	JSON_ARRAY,
};

/* One value: where its text is (a string's with its quotes). */
struct json_value {
	enum json_type type;
	const char *at;
	size_t len;
};

/*
 * The value at path ("end.peak_heap.bytes": object members, by key) in
 * the document [doc, doc + len), or one of type JSON_NONE.  The whole
 * document need not be valid: what is read on the way must be.
 */
struct json_value json_read__get(const char *doc, size_t len,
				 const char *path);
/* Its number (a JSON number that fits a double), or false. */
bool json_read__number(struct json_value v, double *out);
/* Its string, unescaped into buf (UTF-8; cut at size - 1 bytes, on a
 * character's boundary), or false.  \u0000 ends it. */
bool json_read__string(struct json_value v, char *buf, size_t size);
/* Its bool, or false when it is not one. */
bool json_read__bool(struct json_value v, bool *out);
/* Is [doc, doc + len) one valid JSON value, and nothing else but space? */
bool json_read__valid(const char *doc, size_t len);

#endif /* PA_TRACER_JSON_READ_H */
