/* SPDX-License-Identifier: MIT */
/*
 * http.h - the HTTP endpoints of `pprof-alloc serve`, on libmicrohttpd.
 */
#ifndef PA_TRACER_HTTP_H
#define PA_TRACER_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * What the endpoints serve; called from the server's connection threads,
 * any number at once.  Each returns 0 with a malloc'd body (*out, *len)
 * that the server frees, or -errno (the request gets a 500, or a 503 for
 * -ECANCELED: shutting down).
 */
/* Which sample type a profile shows first (its default_sample_type). */
enum http_view {
	HTTP_VIEW_HEAP,		/* /debug/pprof/heap: inuse_space */
	HTTP_VIEW_ALLOCS,	/* /debug/pprof/allocs: alloc_space */
	HTTP_VIEW_PEAK,		/* ?peak=1 on either: peak_inuse_space */
	HTTP_VIEWS
};

struct http_content {
	void *ctx;
	/* a gzipped pprof profile in one of the views (below); seconds > 0:
	 * the change over the next that many seconds (not HTTP_VIEW_PEAK) */
	int (*profile)(void *ctx, enum http_view view, unsigned int seconds,
		       uint8_t **out, size_t *len);
	/* ?jemalloc=1: the process's own jemalloc's heap profile (view:
	 * HEAP or ALLOCS); -errno with one line in why when it has none
	 * (answered 409 with it), or 0 and a body */
	int (*jemalloc)(void *ctx, enum http_view view, uint8_t **out,
			size_t *len, char *why, size_t why_size);
	/* Prometheus text exposition */
	int (*metrics)(void *ctx, char **out, size_t *len);
};

/* Longest ?seconds= a delta profile may ask for. */
#define HTTP_SECONDS_MAX	3600u
/* How long a connection has to send a whole request header, from when it
 * opens or its last response was sent (see http.c), by default. */
#define HTTP_HEADER_TIMEOUT_MS	10000u

struct http_server;

/* What the server did about its connections, since it started. */
struct http_stats {
	uint64_t open;			/* connections open now */
	uint64_t header_timeouts;	/* closed: no whole request header
					   within the header timeout */
	uint64_t evicted;		/* closed: one of too many waiting
					   for a request, the least claim
					   to one first (see http.c) */
};

/*
 * Listen on listen ("HOST:PORT", "[V6]:PORT" or ":PORT" for every
 * interface) and serve content; header_timeout_ms (0: the default) bounds
 * the time a connection may take to send a request header.  NULL on
 * failure, with the reason in why.
 */
struct http_server *http__start(const char *listen,
				unsigned int header_timeout_ms,
				const struct http_content *content,
				char *why, size_t why_size);
/* Stop listening and wait for every connection to end.  NULL is fine. */
void http__stop(struct http_server *s);
/* The port listened on (for ":0"). */
unsigned int http__port(const struct http_server *s);
/* The counts so far; any thread. */
void http__stats(struct http_server *s, struct http_stats *st);

/* A "seconds" query value: absent or empty -> 0; digits up to
 * HTTP_SECONDS_MAX -> them; anything else -> -1. */
long http__parse_seconds(const char *v);
/* Parse "HOST:PORT" as http__start() does; 0 or -EINVAL. */
int http__parse_listen(const char *listen, char *host, size_t host_size,
		       unsigned int *port);
/*
 * Decode the %XX escapes of a request's path or query part in place, as
 * the server does.  *len is the decoded length (s stays a C string).  0,
 * or -EINVAL for an escape that is not two hex digits or that decodes to
 * a NUL byte - such a request is refused.
 */
int http__unescape(char *s, size_t *len);
/*
 * buf (len bytes, not a C string), the start of what a client sent,
 * holds a whole request header: a line, then an empty one (CRLF or LF).
 * Empty lines before the request line are skipped, as libmicrohttpd
 * does: they are no request.
 */
bool http__header_whole(const char *buf, size_t len);

#endif /* PA_TRACER_HTTP_H */
