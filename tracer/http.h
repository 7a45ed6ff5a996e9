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
struct http_content {
	void *ctx;
	/* a gzipped pprof profile; allocs: the allocs view (alloc_space by
	 * default); seconds > 0: the change over the next that many seconds */
	int (*profile)(void *ctx, bool allocs, unsigned int seconds,
		       uint8_t **out, size_t *len);
	/* Prometheus text exposition */
	int (*metrics)(void *ctx, char **out, size_t *len);
};

/* Longest ?seconds= a delta profile may ask for. */
#define HTTP_SECONDS_MAX	3600u

struct http_server;

/*
 * Listen on listen ("HOST:PORT", "[V6]:PORT" or ":PORT" for every
 * interface) and serve content.  NULL on failure, with the reason in why.
 */
struct http_server *http__start(const char *listen,
				const struct http_content *content,
				char *why, size_t why_size);
/* Stop listening and wait for every connection to end.  NULL is fine. */
void http__stop(struct http_server *s);
/* The port listened on (for ":0"). */
unsigned int http__port(const struct http_server *s);

/* A "seconds" query value: absent or empty -> 0; digits up to
 * HTTP_SECONDS_MAX -> them; anything else -> -1. */
long http__parse_seconds(const char *v);
/* Parse "HOST:PORT" as http__start() does; 0 or -EINVAL. */
int http__parse_listen(const char *listen, char *host, size_t host_size,
		       unsigned int *port);

#endif /* PA_TRACER_HTTP_H */
