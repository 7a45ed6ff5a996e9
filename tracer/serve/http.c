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
 *                        ?seconds=N on either: the change over N seconds;
 *                        ?peak=1 on either: peak_inuse_space by default
 *                        (the heap at its highest point);
 *                        ?jemalloc=1 on either: the profile the process's
 *                        own jemalloc keeps (prof:true), instead of ours
 *   /metrics             Prometheus text exposition
 *   /healthz             "ok": the server is up (the target may be gone;
 *                        /metrics says so)
 *
 * No route reads or writes a file, and nothing from the request is used
 * but the path and the query values, which are parsed strictly (seconds:
 * digits, 1..HTTP_SECONDS_MAX, 0 or absent: no delta; peak, jemalloc: 0
 * or 1).  A request target is
 * refused (400) when it holds an escape that is not %XX with two hex
 * digits, a %00, or a NUL byte as received: libmicrohttpd hands the target
 * over as a C string, so "/healthz\0/x" would read as "/healthz".  The
 * profiles take no query parameter but one seconds=, one peak= and one
 * jemalloc= (another, or a second one, is a 400); the other routes ignore
 * the query.
 *
 * Connections.  libmicrohttpd runs a thread per connection: a delta
 * profile waits its seconds in its own thread and a profile being built
 * holds up only whoever asked for it, so /healthz never queues behind
 * either.  What a connection may cost is bounded here, since
 * libmicrohttpd's own limits do not suffice: its timeout is one of
 * inactivity (a client sending a byte every few seconds holds a connection
 * for ever), and its per-address limit turns away the newcomer, so
 * whoever holds the slots first - a thousand idle connections from the
 * host a Prometheus scraper runs on, say - locks everyone else from that
 * address out.  The server therefore keeps a table of its connections
 * (libmicrohttpd's connection notifications): each is waiting (opened, its
 * request not all there yet), handling its request (in handle()), sending
 * the response, or answered (the response sent: closing, as libmicrohttpd
 * does after a response queued at once, or kept alive for another).  And:
 *
 *   - a waiting connection must deliver its whole request header within
 *     the header timeout of opening, however it trickles its bytes; an
 *     answered one must deliver the next within the header timeout of its
 *     answer (the idle timeout of a kept-alive connection).  A watchdog
 *     thread shuts the socket down past that - not a waiting one whose
 *     whole header is seen to have arrived (below): that one waits on the
 *     server, not the other way round.
 *   - one address may have WAITING_PER_CLIENT connections waiting, and all
 *     addresses together MAX_WAITING; one more, and one of the others
 *     waiting is shut down.  Which one is decided by what each has sent,
 *     not by whether its thread has read it yet: on a busy server a
 *     request can lie unread for a while, or be read and not yet handled.
 *     The socket tells (conn_claim()): the bytes unread in it, looked at
 *     without taking them - as the connection opens, before its thread
 *     exists, and whenever it is a candidate - and the kernel's count of
 *     what arrived and in how many pieces (TCP_INFO).  So:
 *       - a whole request header (up to its empty line) seen: a request,
 *         never shut down;
 *       - nothing seen, but all it sent came in one piece within
 *         REQUEST_GRACE_MS and its thread has read it: most likely a
 *         request being handled (clients send theirs at once); shut down
 *         only when every other one is as fresh, the earliest piece first;
 *       - nothing sent, a header without its end, more than one piece, or
 *         one piece longer ago: no claim, and the one waiting longest
 *         goes first.
 *     So the cost falls on whoever hoards connections, not on the
 *     newcomer nor on a request the server is slow to get to: a scraper
 *     that sends its request as it connects is served while its own host
 *     opens a thousand idle connections and trickles headers on a hundred
 *     more.  Only a client that opens WAITING_PER_CLIENT connections in
 *     the time the scraper takes to send its request, or sends one piece
 *     on each of that many while the server reads the scraper's, can
 *     crowd it out.
 *   - libmicrohttpd's hard limits stay behind these for the connections
 *     that are not waiting: MAX_PER_ADDRESS from one address and
 *     MAX_CONNECTIONS in all (the limit on open files is raised to allow
 *     them).  Sending a response ends after CONNECTION_TIMEOUT seconds
 *     without progress, and a request's header and memory are bounded
 *     (CONNECTION_MEMORY; past it a 431 or the connection closed).
 *
 * Its own log lines (a client that hung up, say) are not printed: they are
 * the clients' business.
 *
 * libmicrohttpd is loaded (dlopen) when a server starts, not linked: with
 * GnuTLS and the libraries behind it, linking it would lengthen the
 * start-up of every pprof-alloc command, and only serve uses it.  The
 * entry points are typed from its own header, so a call through them is
 * checked as a direct one.
 */
#include "http.h"
#include "common/untrusted.h"

#include <dlfcn.h>
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/tcp.h>		/* struct tcp_info with tcpi_data_segs_in */
#include <time.h>
#include "pa_clock.h"

#define MAX_CONNECTIONS		1024
#define MAX_PER_ADDRESS		256	/* all of one address's connections;
					   above WAITING_PER_CLIENT, so that
					   eviction acts first */
#define WAITING_PER_CLIENT	64	/* waiting for a request, one address */
#define MAX_WAITING		512	/* ... all addresses */
#define FD_RESERVE		256	/* files kept for the rest of serve */
#define CONNECTION_TIMEOUT	60	/* seconds without progress */
#define CONNECTION_MEMORY	(32 * 1024)
#define WATCHDOG_TICK_NS	(250 * PA_NSEC_PER_MSEC)	/* the longest the watchdog
						   sleeps */
#define REQUEST_GRACE_MS	1000	/* a request in one piece, read: the
					   time its thread may take */
#define PEEK_MAX		4096	/* unread bytes looked at for the end
					   of a request header */

/* The soname Debian's libmicrohttpd12 installs. */
#define MHD_LIBRARY	"libmicrohttpd.so.12"

/* libmicrohttpd's entry points, once loaded (load_mhd()). */
static struct {
	typeof(&MHD_start_daemon) start_daemon;
	typeof(&MHD_stop_daemon) stop_daemon;
	typeof(&MHD_get_daemon_info) get_daemon_info;
	typeof(&MHD_get_connection_info) get_connection_info;
	typeof(&MHD_get_connection_values) get_connection_values;
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
		{ "MHD_get_connection_info",
		  (void **)&mhd.get_connection_info },
		{ "MHD_get_connection_values",
		  (void **)&mhd.get_connection_values },
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

/* ---- the connection table ------------------------------------------ */

enum conn_state {
	CONN_WAITING,		/* opened, its request not all there yet */
	CONN_HANDLING,		/* in handle() */
	CONN_SENDING,		/* the response */
	CONN_ANSWERED,		/* closing, or kept alive for another */
	CONN_CLOSING,		/* shut down by us or by the client */
};

/* Who a connection is from: the address without the port. */
struct client {
	int family;
	uint8_t addr[16];
};

/*
 * One connection, from libmicrohttpd's start notification to its close
 * notification (its socket context).  state, since, whole and partial
 * under the server's lock; uri, uri_len and bad only ever touched by the
 * connection's own thread.
 */
struct conn {
	struct conn *prev, *next;	/* oldest since first */
	int fd;
	struct client client;
	enum conn_state state;
	uint64_t since_ns;		/* opened, or answered */
	bool whole;			/* a whole request header seen */
	uint64_t partial;		/* bytes received, all seen, no end */
	const char *uri;		/* the request target as received ... */
	size_t uri_len;			/* ... and its length as a C string */
	bool bad;			/* an escape refused (http__unescape) */
};

struct http_server {
	struct MHD_Daemon *daemon;
	struct http_content content;
	unsigned int port;
	uint64_t header_timeout_ns;
	pthread_mutex_t lock;		/* what follows */
	pthread_cond_t tick;		/* stop, for the watchdog */
	bool stop;
	struct conn *head, *tail;	/* every connection, by since */
	struct http_stats stats;
	char peek[PEEK_MAX];		/* conn_claim()'s */
	pthread_t watchdog;
};

/* Under the lock: k to the tail (the newest since). */
static void conn_to_tail(struct http_server *s, struct conn *k)
{
	if (s->tail == k)
		return;
	/* unlink, if linked */
	if (k->prev)
		k->prev->next = k->next;
	else if (s->head == k)
		s->head = k->next;
	if (k->next)
		k->next->prev = k->prev;
	k->next = NULL;
	k->prev = s->tail;
	if (s->tail)
		s->tail->next = k;
	else
		s->head = k;
	s->tail = k;
}

static void conn_unlink(struct http_server *s, struct conn *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else
		s->head = k->next;
	if (k->next)
		k->next->prev = k->prev;
	else
		s->tail = k->prev;
	k->prev = k->next = NULL;
}

static void client_of(const struct sockaddr *sa, struct client *c)
{
	memset(c, 0, sizeof(*c));
	if (!sa)
		return;
	c->family = sa->sa_family;
	if (sa->sa_family == AF_INET)
		memcpy(c->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	else if (sa->sa_family == AF_INET6)
		memcpy(c->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr,
		       16);
}

static bool same_client(const struct client *a, const struct client *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, 16);
}

/* Under the lock: shut k's socket down; its thread then sees the end of
 * the stream and libmicrohttpd closes the connection (and notifies). */
static void conn_shut(struct conn *k)
{
	shutdown(k->fd, SHUT_RDWR);
	k->state = CONN_CLOSING;
}

/* What a waiting connection has shown of its request (see the top). */
enum claim {
	CLAIM_NONE,		/* nothing, part of a header, a trickle */
	CLAIM_FRESH,		/* one piece, just arrived, read already */
	CLAIM_WHOLE,		/* a whole request header, seen */
};

bool http__header_whole(const char *buf, size_t len)
{
	while (len && (*buf == '\r' || *buf == '\n')) {
		buf++;
		len--;
	}
	return memmem(buf, len, "\n\r\n", 3) || memmem(buf, len, "\n\n", 2);
}

/*
 * Under the lock: k's claim, from its socket: the bytes unread in it and
 * the kernel's count of what arrived (TCP_INFO), so the same whether its
 * thread has read them or not; what was seen is remembered, for once its
 * thread has read them.  For CLAIM_FRESH, *age_ms is how long ago its
 * piece came.  A socket that says nothing has no claim.
 */
static enum claim conn_claim(struct http_server *s, struct conn *k,
			     uint32_t *age_ms)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	int unread = 0;
	bool info;
	ssize_t n;

	if (k->whole)
		return CLAIM_WHOLE;
	if (ioctl(k->fd, FIONREAD, &unread))
		return CLAIM_NONE;
	memset(&ti, 0, sizeof(ti));
	info = !getsockopt(k->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) &&
	       len >= offsetof(struct tcp_info, tcpi_data_segs_in) +
		      sizeof(ti.tcpi_data_segs_in);
	n = unread > 0 ? recv(k->fd, s->peek, sizeof(s->peek),
			      MSG_PEEK | MSG_DONTWAIT) : 0;
	if (n > 0 && http__header_whole(s->peek, (size_t)n)) {
		k->whole = true;
		return CLAIM_WHOLE;
	}
	if (n > 0 && (size_t)n < sizeof(s->peek)) {
		/* a header without its end */
		if (info && ti.tcpi_bytes_received == (uint64_t)n)
			k->partial = (uint64_t)n;
		return CLAIM_NONE;
	}
	/* read already (or more than is looked at): the piece decides */
	if (!info || !ti.tcpi_bytes_received ||
	    ti.tcpi_bytes_received == k->partial ||
	    ti.tcpi_data_segs_in != 1 ||
	    ti.tcpi_last_data_recv >= REQUEST_GRACE_MS)
		return CLAIM_NONE;
	*age_ms = ti.tcpi_last_data_recv;
	return CLAIM_FRESH;
}

/*
 * Under the lock: if more than max connections (of client, or of anyone
 * if NULL) are waiting for a request, shut one down: the oldest with no
 * claim, else the one with the earliest fresh piece; never one with a
 * whole request, nor young, the newest.
 */
static void evict_over(struct http_server *s, const struct client *client,
		       unsigned int max, struct conn *young)
{
	struct conn *k, *fresh = NULL, *victim = NULL;
	uint32_t age = 0, fresh_age = 0;
	unsigned int n = 0;

	for (k = s->head; k; k = k->next)
		if (k->state == CONN_WAITING &&
		    (!client || same_client(&k->client, client)))
			n++;
	if (n <= max)
		return;
	for (k = s->head; k && !victim; k = k->next) {
		if (k == young || k->state != CONN_WAITING ||
		    (client && !same_client(&k->client, client)))
			continue;
		switch (conn_claim(s, k, &age)) {
		case CLAIM_NONE:
			victim = k;
			break;
		case CLAIM_FRESH:
			if (!fresh || age > fresh_age) {
				fresh = k;
				fresh_age = age;
			}
			break;
		case CLAIM_WHOLE:
			break;
		}
	}
	if (!victim)
		victim = fresh;
	if (victim) {
		conn_shut(victim);
		s->stats.evicted++;
	}
}

static void on_connection(void *cls, struct MHD_Connection *c,
			  void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct http_server *s = cls;
	const union MHD_ConnectionInfo *fd, *addr;
	uint32_t age;
	struct conn *k;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		k = *socket_context;
		if (!k)
			return;
		pthread_mutex_lock(&s->lock);
		conn_unlink(s, k);
		s->stats.open--;
		pthread_mutex_unlock(&s->lock);
		free(k);
		*socket_context = NULL;
		return;
	}
	if (code != MHD_CONNECTION_NOTIFY_STARTED)
		return;
	fd = mhd.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	addr = mhd.get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	k = calloc(1, sizeof(*k));
	if (!k || !fd) {
		/* not tracked, so not bounded: not served either */
		free(k);
		if (fd)
			shutdown(fd->connect_fd, SHUT_RDWR);
		*socket_context = NULL;
		return;
	}
	k->fd = fd->connect_fd;
	client_of(addr ? addr->client_addr : NULL, &k->client);
	k->state = CONN_WAITING;
	pthread_mutex_lock(&s->lock);
	k->since_ns = pa_now_ns();
	conn_to_tail(s, k);
	s->stats.open++;
	/* what came before its thread starts is seen unread */
	conn_claim(s, k, &age);
	evict_over(s, &k->client, WAITING_PER_CLIENT, k);
	evict_over(s, NULL, MAX_WAITING, k);
	pthread_mutex_unlock(&s->lock);
	*socket_context = k;
}

static struct conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *i;

	i = mhd.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return i ? i->socket_context : NULL;
}

/* A request line has been received: its target, before any decoding. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct conn *k = conn_of(c);

	(void)cls;
	if (k) {
		k->uri = uri;
		k->uri_len = uri ? strlen(uri) : 0;
		k->bad = false;
	}
	return NULL;
}

static size_t on_unescape(void *cls, struct MHD_Connection *c, char *s)
{
	struct conn *k;
	size_t len;

	(void)cls;
	if (http__unescape(s, &len)) {
		k = conn_of(c);
		if (k)
			k->bad = true;
	}
	return len;
}

/* A request is over (its response sent, or the connection closing). */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_server *s = cls;
	struct conn *k = conn_of(c);

	(void)con_cls;
	if (!k)
		return;
	k->uri = NULL;
	pthread_mutex_lock(&s->lock);
	if (k->state != CONN_CLOSING) {
		if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) {
			/* the next request, if any, within the header timeout */
			k->state = CONN_ANSWERED;
			k->since_ns = pa_now_ns();
			conn_to_tail(s, k);
		} else {
			k->state = CONN_CLOSING;
		}
	}
	pthread_mutex_unlock(&s->lock);
}

static void set_state(struct http_server *s, struct conn *k,
		      enum conn_state state)
{
	pthread_mutex_lock(&s->lock);
	if (k->state != CONN_CLOSING)
		k->state = state;
	pthread_mutex_unlock(&s->lock);
}

/* Shut down the connections that have waited too long for a request (or
 * for the next one). */
static void *watchdog(void *arg)
{
	struct http_server *s = arg;
	struct timespec ts;
	struct conn *k;
	uint64_t now, next;
	uint32_t age;

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		now = pa_now_ns();
		next = now + WATCHDOG_TICK_NS;
		/* those are in since order: stop at the first not due */
		for (k = s->head; k; k = k->next) {
			if (k->state != CONN_WAITING &&
			    k->state != CONN_ANSWERED)
				continue;
			if (k->since_ns + s->header_timeout_ns > now) {
				if (k->since_ns + s->header_timeout_ns < next)
					next = k->since_ns +
					       s->header_timeout_ns;
				break;
			}
			if (k->state == CONN_WAITING &&
			    conn_claim(s, k, &age) == CLAIM_WHOLE)
				continue;	/* the server is behind */
			conn_shut(k);
			s->stats.header_timeouts++;
		}
		ts.tv_sec = (time_t)(next / PA_NSEC_PER_SEC);
		ts.tv_nsec = (long)(next % PA_NSEC_PER_SEC);
		pthread_cond_timedwait(&s->tick, &s->lock, &ts);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

void http__stats(struct http_server *s, struct http_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->stats;
	pthread_mutex_unlock(&s->lock);
}

/* ---- requests ------------------------------------------------------- */

static const char index_page[] =
	"<!DOCTYPE html>\n<html><head><title>pprof-alloc</title></head><body>\n"
	"<h1>pprof-alloc</h1>\n<ul>\n"
	"<li><a href=\"/debug/pprof/heap\">/debug/pprof/heap</a>: in-use and allocated heap (pprof)</li>\n"
	"<li><a href=\"/debug/pprof/allocs\">/debug/pprof/allocs</a>: the same, allocations first; ?seconds=N for the change over N seconds</li>\n"
	"<li><a href=\"/debug/pprof/heap?peak=1\">/debug/pprof/heap?peak=1</a>: the same, the heap at its highest point first (peak_inuse_space)</li>\n"
	"<li><a href=\"/debug/pprof/heap?jemalloc=1\">/debug/pprof/heap?jemalloc=1</a>: the heap profile the process's own jemalloc keeps (it runs with MALLOC_CONF=prof:true)</li>\n"
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

static int hex_digit(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

int http__unescape(char *s, size_t *len)
{
	char *r = s, *w = s;
	int err = 0, hi, lo;

	while (*r) {
		if (*r != '%') {
			*w++ = *r++;
			continue;
		}
		hi = hex_digit(r[1]);
		lo = hi < 0 ? -1 : hex_digit(r[2]);
		if (lo < 0 || (!hi && !lo)) {
			/* kept as it came; the request is refused */
			err = -EINVAL;
			*w++ = *r++;
			continue;
		}
		*w++ = (char)(hi << 4 | lo);
		r += 3;
	}
	*w = 0;
	*len = (size_t)(w - s);
	return err;
}

/*
 * The request target as received had a NUL byte in it.  libmicrohttpd
 * hands the target and the version over as pointers into the request line
 * it received ("GET TARGET VERSION"), the target's end (the space before
 * the version) made a NUL: a target that ends, as a C string, anywhere
 * else held one.  If the pointers are not into one line, nothing is known.
 */
static bool nul_in_target(const struct conn *k, const char *url,
			  const char *version)
{
	return k->uri && k->uri == url && version &&
	       (uintptr_t)(k->uri + k->uri_len + 1) != (uintptr_t)version;
}

struct query_check {
	const char *seconds, *peak, *jemalloc;
	unsigned int nseconds, npeak, njemalloc, others;
};

static enum MHD_Result query_arg(void *cls, enum MHD_ValueKind kind,
				 const char *key, const char *value)
{
	struct query_check *q = cls;

	(void)kind;
	if (key && !strcmp(key, "seconds") && value) {
		q->seconds = value;
		q->nseconds++;
	} else if (key && !strcmp(key, "peak") && value) {
		q->peak = value;
		q->npeak++;
	} else if (key && !strcmp(key, "jemalloc") && value) {
		q->jemalloc = value;
		q->njemalloc++;
	} else {
		q->others++;
	}
	return MHD_YES;
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

/* ?jemalloc=1: the body, or the one line saying why there is none. */
static enum MHD_Result jemalloc_profile(struct http_server *s,
					struct MHD_Connection *c, bool allocs)
{
	char why[1024] = "";
	uint8_t *body;
	size_t len;
	int err;

	if (!s->content.jemalloc)
		return text(c, MHD_HTTP_NOT_FOUND, "not served here\n");
	err = s->content.jemalloc(s->content.ctx,
				  allocs ? HTTP_VIEW_ALLOCS : HTTP_VIEW_HEAP,
				  &body, &len, why, sizeof(why) - 1);
	if (err && why[0]) {
		/* the reason may quote the target's jemalloc: cleaned */
		body = malloc(sizeof(why) + 1);
		if (!body)
			return MHD_NO;
		len = untrusted__clean((char *)body, sizeof(why), why,
				       sizeof(why));
		body[len++] = '\n';
		return respond(c, MHD_HTTP_CONFLICT,
			       "text/plain; charset=utf-8", body, len,
			       MHD_RESPMEM_MUST_FREE, NULL);
	}
	if (err)
		return failed(c, err);
	return respond(c, MHD_HTTP_OK, "application/octet-stream", body, len,
		       MHD_RESPMEM_MUST_FREE,
		       allocs ? "attachment; filename=\"allocs\"" :
				"attachment; filename=\"heap\"");
}

static enum MHD_Result route(struct http_server *s, struct MHD_Connection *c,
			     const char *url, const char *method)
{
	struct query_check q = { 0 };
	bool heap, allocs, peak, jemalloc;
	int err;

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
		long seconds;
		uint8_t *body;
		size_t len;

		mhd.get_connection_values(c, MHD_GET_ARGUMENT_KIND, query_arg,
					  &q);
		if (q.others || q.nseconds > 1 || q.npeak > 1 ||
		    q.njemalloc > 1)
			return text(c, MHD_HTTP_BAD_REQUEST,
				    "bad query: the parameters are seconds=N, peak=1 and jemalloc=1, each once\n");
		seconds = http__parse_seconds(q.seconds);
		if (seconds < 0)
			return text(c, MHD_HTTP_BAD_REQUEST,
				    "bad seconds: want a whole number of seconds, 0 to 3600\n");
		if (q.peak && strcmp(q.peak, "0") && strcmp(q.peak, "1"))
			return text(c, MHD_HTTP_BAD_REQUEST,
				    "bad peak: want 1 (or 0)\n");
		peak = q.peak && !strcmp(q.peak, "1");
		if (peak && seconds)
			return text(c, MHD_HTTP_BAD_REQUEST,
				    "bad query: the peak is the whole run's, not a change over seconds=N\n");
		if (q.jemalloc && strcmp(q.jemalloc, "0") &&
		    strcmp(q.jemalloc, "1"))
			return text(c, MHD_HTTP_BAD_REQUEST,
				    "bad jemalloc: want 1 (or 0)\n");
		jemalloc = q.jemalloc && !strcmp(q.jemalloc, "1");
		if (jemalloc && (seconds || peak))
			return text(c, MHD_HTTP_BAD_REQUEST,
				    "bad query: jemalloc's profile is one moment's, without seconds=N or peak=1\n");
		if (jemalloc)
			return jemalloc_profile(s, c, allocs);
		err = s->content.profile(s->content.ctx,
					 peak ? HTTP_VIEW_PEAK :
					 allocs ? HTTP_VIEW_ALLOCS :
						  HTTP_VIEW_HEAP,
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

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	struct http_server *s = cls;
	struct conn *k = conn_of(c);
	enum MHD_Result ret;

	(void)upload_data;
	(void)con_cls;
	*upload_data_size = 0;		/* a body is never read */
	if (!k)
		return MHD_NO;		/* not tracked: being closed */
	set_state(s, k, CONN_HANDLING);
	if (k->bad || nul_in_target(k, url, version))
		ret = text(c, MHD_HTTP_BAD_REQUEST,
			   "bad request target: a malformed escape or a NUL byte\n");
	else
		ret = route(s, c, url, method);
	set_state(s, k, CONN_SENDING);
	return ret;
}

/* ---- the server ----------------------------------------------------- */

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

/*
 * How many connections the limit on open files leaves room for, having
 * raised the soft limit towards MAX_CONNECTIONS + FD_RESERVE (as far as
 * the hard one goes: serve uses poll, never select, so more than
 * FD_SETSIZE files is fine).
 */
static unsigned int connection_limit(void)
{
	struct rlimit rl;
	rlim_t want = MAX_CONNECTIONS + FD_RESERVE;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 64;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
		struct rlimit raised = rl;

		raised.rlim_cur = rl.rlim_max == RLIM_INFINITY ||
				  rl.rlim_max > want ? want : rl.rlim_max;
		if (!setrlimit(RLIMIT_NOFILE, &raised))
			rl = raised;
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
		return MAX_CONNECTIONS;
	return rl.rlim_cur > FD_RESERVE + 64 ?
	       (unsigned int)(rl.rlim_cur - FD_RESERVE) : 64;
}

struct http_server *http__start(const char *listen,
				unsigned int header_timeout_ms,
				const struct http_content *content,
				char *why, size_t why_size)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	struct addrinfo *ai = NULL;
	struct http_server *s;
	const union MHD_DaemonInfo *info;
	pthread_condattr_t ca;
	char host[256], service[16];
	unsigned int port, flags, limit;
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
		snprintf(why, why_size, "out of memory");
		goto out_addr;
	}
	s->content = *content;
	s->header_timeout_ns = (uint64_t)(header_timeout_ms ? header_timeout_ms :
					  HTTP_HEADER_TIMEOUT_MS) * PA_NSEC_PER_MSEC;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->tick, &ca);
	pthread_condattr_destroy(&ca);
	limit = connection_limit();
	flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
		MHD_USE_POLL | MHD_USE_ERROR_LOG;
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s->daemon = mhd.start_daemon(flags, (uint16_t)port, NULL, NULL, handle,
				     s,
				     MHD_OPTION_SOCK_ADDR, ai->ai_addr,
				     MHD_OPTION_CONNECTION_LIMIT, limit,
				     MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				     (unsigned int)(MAX_PER_ADDRESS < limit ?
						    MAX_PER_ADDRESS : limit),
				     MHD_OPTION_CONNECTION_TIMEOUT,
				     (unsigned int)CONNECTION_TIMEOUT,
				     MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				     (size_t)CONNECTION_MEMORY,
				     MHD_OPTION_NOTIFY_CONNECTION, on_connection,
				     s,
				     MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				     MHD_OPTION_URI_LOG_CALLBACK, on_uri, s,
				     MHD_OPTION_UNESCAPE_CALLBACK, on_unescape,
				     s,
				     MHD_OPTION_EXTERNAL_LOGGER, quiet_log, NULL,
				     MHD_OPTION_END);
	if (!s->daemon) {
		snprintf(why, why_size, "cannot listen on %s (in use, or not an address of this machine?)",
			 listen);
		goto out_server;
	}
	rc = pthread_create(&s->watchdog, NULL, watchdog, s);
	if (rc) {
		snprintf(why, why_size, "cannot start a thread: %s",
			 strerror(rc));
		goto out_daemon;
	}
	info = mhd.get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : port;
	freeaddrinfo(ai);
	return s;

out_daemon:
	mhd.stop_daemon(s->daemon);
out_server:
	pthread_cond_destroy(&s->tick);
	pthread_mutex_destroy(&s->lock);
	free(s);
out_addr:
	freeaddrinfo(ai);
	return NULL;
}

unsigned int http__port(const struct http_server *s)
{
	return s->port;
}

void http__stop(struct http_server *s)
{
	struct conn *k;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_signal(&s->tick);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->watchdog, NULL);
	/* every connection is closed (and notified) by the time it returns */
	mhd.stop_daemon(s->daemon);
	while ((k = s->head)) {
		conn_unlink(s, k);
		free(k);
	}
	pthread_cond_destroy(&s->tick);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
