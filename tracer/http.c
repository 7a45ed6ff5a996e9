// SPDX-License-Identifier: MIT
/*
 * http.c - the HTTP endpoints of `pprof-alloc serve`, on libmicrohttpd.
 *
 * Routes (GET and HEAD; any other method is a 405 with Allow, any other
 * path a 404):
 *
 *   /, /debug/pprof/     a small index page
 *   /debug/pprof/heap    gzipped pprof, in-use by default (as Go's)
 *   /debug/pprof/allocs  the same samples, alloc_space by default;
 *                        ?seconds=N on either: the change over N seconds
 *   /metrics             Prometheus text exposition
 *   /healthz             "ok": the server is up (the target may be gone;
 *                        /metrics says so)
 *
 * No route reads or writes a file, and nothing from the request is used
 * but the path and the one query value, which is parsed strictly (digits,
 * 1..HTTP_SECONDS_MAX; 0 or absent: no delta) - anything else is a 400.
 *
 * libmicrohttpd runs a thread per connection (a delta profile waits its
 * seconds in its own thread, the others go on), at most MAX_CONNECTIONS
 * at once and MAX_PER_ADDRESS from one address (serve itself lets only a
 * few delta profiles wait at once: 503 past that); it bounds each
 * connection's memory (headers past
 * CONNECTION_MEMORY get a 431 or the connection closed) and drops a client
 * idle for CONNECTION_TIMEOUT seconds, so a slow or hostile client costs
 * one thread for a while and nothing else.  Its own log lines (a client
 * that hung up, say) are not printed: they are the clients' business.
 *
 * libmicrohttpd is loaded (dlopen) when a server starts, not linked: with
 * GnuTLS and the eight libraries behind it, it cost every pprof-alloc
 * command about 1.8 ms of start-up (an empty program linked with our other
 * libraries: 1.3 ms; with libmicrohttpd too: 3.1 ms), a few percent of a
 * `symbolize`, and only serve uses it.  The entry points are typed from
 * its own header, so a call through them is checked as a direct one.
 */
#include "http.h"

#include <dlfcn.h>
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define MAX_CONNECTIONS		256
#define MAX_PER_ADDRESS		128		/* connections from one IP: a
						   client that reconnects at once
						   briefly holds two */
#define CONNECTION_TIMEOUT	60		/* seconds idle */
#define CONNECTION_MEMORY	(32 * 1024)

/* The soname Debian's libmicrohttpd12 installs. */
#define MHD_LIBRARY	"libmicrohttpd.so.12"

/* libmicrohttpd's entry points, once loaded (load_mhd()). */
static struct {
	typeof(&MHD_start_daemon) start_daemon;
	typeof(&MHD_stop_daemon) stop_daemon;
	typeof(&MHD_get_daemon_info) get_daemon_info;
	typeof(&MHD_lookup_connection_value) lookup_connection_value;
	typeof(&MHD_create_response_from_buffer) create_response_from_buffer;
	typeof(&MHD_add_response_header) add_response_header;
	typeof(&MHD_queue_response) queue_response;
	typeof(&MHD_destroy_response) destroy_response;
} mhd;
static pthread_once_t mhd_once = PTHREAD_ONCE_INIT;
static char mhd_error[256];	/* empty: loaded */

static void load_mhd_once(void)
{
	static const struct {
		const char *name;
		void **slot;
	} entries[] = {
		{ "MHD_start_daemon", (void **)&mhd.start_daemon },
		{ "MHD_stop_daemon", (void **)&mhd.stop_daemon },
		{ "MHD_get_daemon_info", (void **)&mhd.get_daemon_info },
		{ "MHD_lookup_connection_value",
		  (void **)&mhd.lookup_connection_value },
		{ "MHD_create_response_from_buffer",
		  (void **)&mhd.create_response_from_buffer },
		{ "MHD_add_response_header",
		  (void **)&mhd.add_response_header },
		{ "MHD_queue_response", (void **)&mhd.queue_response },
		{ "MHD_destroy_response", (void **)&mhd.destroy_response },
	};
	void *lib = dlopen(MHD_LIBRARY, RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		snprintf(mhd_error, sizeof(mhd_error),
			 "cannot load %s (Debian: apt-get install libmicrohttpd12): %s",
			 MHD_LIBRARY, dlerror());
		return;
	}
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		*entries[i].slot = dlsym(lib, entries[i].name);
		if (!*entries[i].slot) {
			snprintf(mhd_error, sizeof(mhd_error),
				 "%s has no %s", MHD_LIBRARY,
				 entries[i].name);
			return;		/* the library stays loaded: harmless */
		}
	}
}

/* Load libmicrohttpd the first time; 0, or -ENOENT with why filled. */
static int load_mhd(char *why, size_t why_size)
{
	pthread_once(&mhd_once, load_mhd_once);
	if (!mhd_error[0])
		return 0;
	snprintf(why, why_size, "%s", mhd_error);
	return -ENOENT;
}

struct http_server {
	struct MHD_Daemon *daemon;
	struct http_content content;
	unsigned int port;
};

static const char index_page[] =
	"<!DOCTYPE html>\n<html><head><title>pprof-alloc</title></head><body>\n"
	"<h1>pprof-alloc</h1>\n<ul>\n"
	"<li><a href=\"/debug/pprof/heap\">/debug/pprof/heap</a>: in-use and allocated heap (pprof)</li>\n"
	"<li><a href=\"/debug/pprof/allocs\">/debug/pprof/allocs</a>: the same, allocations first; ?seconds=N for the change over N seconds</li>\n"
	"<li><a href=\"/metrics\">/metrics</a>: memory readings (Prometheus)</li>\n"
	"<li><a href=\"/healthz\">/healthz</a></li>\n"
	"</ul>\n<p>go tool pprof http://HOST:PORT/debug/pprof/heap</p>\n"
	"</body></html>\n";

static void quiet_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	(void)fmt;
	(void)ap;
}

static enum MHD_Result respond(struct MHD_Connection *c, unsigned int status,
			    const char *type, void *body, size_t len,
			    enum MHD_ResponseMemoryMode mode,
			    const char *disposition)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = mhd.create_response_from_buffer(len, body, mode);
	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	mhd.add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (disposition)
		mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION,
					disposition);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		mhd.add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = mhd.queue_response(c, status, r);
	mhd.destroy_response(r);
	return ret;
}

static enum MHD_Result text(struct MHD_Connection *c, unsigned int status,
			    const char *msg)
{
	return respond(c, status, "text/plain; charset=utf-8", (void *)msg,
		    strlen(msg), MHD_RESPMEM_PERSISTENT, NULL);
}

long http__parse_seconds(const char *v)
{
	unsigned long n = 0;

	if (!v || !*v)
		return 0;
	if (strlen(v) > 7)
		return -1;
	for (; *v; v++) {
		if (*v < '0' || *v > '9')
			return -1;
		n = n * 10 + (unsigned long)(*v - '0');
	}
	return n > HTTP_SECONDS_MAX ? -1 : (long)n;
}

static enum MHD_Result failed(struct MHD_Connection *c, int err)
{
	switch (err) {
	case -ECANCELED:
		return text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "shutting down\n");
	case -EAGAIN:
		return text(c, MHD_HTTP_SERVICE_UNAVAILABLE,
			    "not attached yet; try again\n");
	case -EBUSY:
		return text(c, MHD_HTTP_SERVICE_UNAVAILABLE,
			    "too many ?seconds= profiles in progress; try again later\n");
	default:
		return text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
			    "cannot make the response\n");
	}
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	struct http_server *s = cls;
	bool heap, allocs;
	int err;

	(void)version;
	(void)upload_data;
	(void)con_cls;
	*upload_data_size = 0;		/* a body is never read */
	heap = !strcmp(url, "/debug/pprof/heap");
	allocs = !strcmp(url, "/debug/pprof/allocs");
	if (!heap && !allocs && strcmp(url, "/") &&
	    strcmp(url, "/debug/pprof/") && strcmp(url, "/metrics") &&
	    strcmp(url, "/healthz"))
		return text(c, MHD_HTTP_NOT_FOUND, "not found\n");
	if (strcmp(method, MHD_HTTP_METHOD_GET) &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD))
		return text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
			    "method not allowed: GET or HEAD\n");

	if (heap || allocs) {
		long seconds = http__parse_seconds(mhd.lookup_connection_value(
			c, MHD_GET_ARGUMENT_KIND, "seconds"));
		uint8_t *body;
		size_t len;

		if (seconds < 0)
			return text(c, MHD_HTTP_BAD_REQUEST,
				    "bad seconds: want a whole number of seconds, 0 to 3600\n");
		err = s->content.profile(s->content.ctx, allocs,
					 (unsigned int)seconds, &body, &len);
		if (err)
			return failed(c, err);
		return respond(c, MHD_HTTP_OK, "application/octet-stream", body,
			    len, MHD_RESPMEM_MUST_FREE,
			    heap ? "attachment; filename=\"heap\"" :
				   "attachment; filename=\"allocs\"");
	}
	if (!strcmp(url, "/metrics")) {
		char *body;
		size_t len;

		err = s->content.metrics(s->content.ctx, &body, &len);
		if (err)
			return failed(c, err);
		return respond(c, MHD_HTTP_OK,
			    "text/plain; version=0.0.4; charset=utf-8", body,
			    len, MHD_RESPMEM_MUST_FREE, NULL);
	}
	if (!strcmp(url, "/healthz"))
		return text(c, MHD_HTTP_OK, "ok\n");
	return respond(c, MHD_HTTP_OK, "text/html; charset=utf-8",
		    (void *)index_page, sizeof(index_page) - 1,
		    MHD_RESPMEM_PERSISTENT, NULL);
}

int http__parse_listen(const char *listen, char *host, size_t host_size,
		       unsigned int *port)
{
	const char *colon, *h = listen;
	size_t hlen;
	char *end;
	unsigned long p;

	if (!listen)
		return -EINVAL;
	if (*h == '[') {
		const char *close = strchr(h, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		h++;
		hlen = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(h, ':');
		if (!colon || memchr(h, ':', (size_t)(colon - h)))
			return -EINVAL;	/* IPv6 wants brackets */
		hlen = (size_t)(colon - h);
	}
	if (hlen >= host_size || !colon[1])
		return -EINVAL;
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (errno || *end || p > 65535 || colon[1] < '0' || colon[1] > '9')
		return -EINVAL;
	memcpy(host, h, hlen);
	host[hlen] = 0;
	*port = (unsigned int)p;
	return 0;
}

struct http_server *http__start(const char *listen,
				const struct http_content *content,
				char *why, size_t why_size)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	struct addrinfo *ai = NULL;
	struct http_server *s;
	const union MHD_DaemonInfo *info;
	char host[256], service[16];
	unsigned int port, flags;
	int rc;

	if (load_mhd(why, why_size))
		return NULL;
	if (http__parse_listen(listen, host, sizeof(host), &port)) {
		snprintf(why, why_size, "bad --listen '%s': want HOST:PORT, [IPV6]:PORT or :PORT",
			 listen ? listen : "");
		return NULL;
	}
	snprintf(service, sizeof(service), "%u", port);
	rc = getaddrinfo(host[0] ? host : NULL, service, &hints, &ai);
	if (rc || !ai) {
		snprintf(why, why_size, "cannot resolve '%s': %s", host,
			 gai_strerror(rc));
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		freeaddrinfo(ai);
		snprintf(why, why_size, "out of memory");
		return NULL;
	}
	s->content = *content;
	flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
		MHD_USE_POLL | MHD_USE_ERROR_LOG;
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s->daemon = mhd.start_daemon(flags, (uint16_t)port, NULL, NULL, handle,
				     s,
				     MHD_OPTION_SOCK_ADDR, ai->ai_addr,
				     MHD_OPTION_CONNECTION_LIMIT,
				     (unsigned int)MAX_CONNECTIONS,
				     MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				     (unsigned int)MAX_PER_ADDRESS,
				     MHD_OPTION_CONNECTION_TIMEOUT,
				     (unsigned int)CONNECTION_TIMEOUT,
				     MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				     (size_t)CONNECTION_MEMORY,
				     MHD_OPTION_EXTERNAL_LOGGER, quiet_log, NULL,
				     MHD_OPTION_END);
	freeaddrinfo(ai);
	if (!s->daemon) {
		snprintf(why, why_size, "cannot listen on %s (in use, or not an address of this machine?)",
			 listen);
		free(s);
		return NULL;
	}
	info = mhd.get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : port;
	return s;
}

unsigned int http__port(const struct http_server *s)
{
	return s->port;
}

void http__stop(struct http_server *s)
{
	if (!s)
		return;
	mhd.stop_daemon(s->daemon);
	free(s);
}
