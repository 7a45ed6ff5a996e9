/* SPDX-License-Identifier: MIT */
/*
 * debuginfod.c - ask debuginfod servers for files by build ID.
 *
 * libdebuginfod does the HTTP, the server list and the cache
 * ($DEBUGINFOD_CACHE_PATH or ~/.cache/debuginfod_client).  It is dlopen'ed
 * when the first client is made (as libdw itself does): it pulls in libcurl
 * and thirty more libraries, which would otherwise lengthen the start-up
 * of every run of the tracer, and widen its attack surface, for a feature
 * most runs do not use.
 *
 * The client takes its server list from $DEBUGINFOD_URLS, so the URLs are
 * put there (this is the tracer's own environment; a target it launched
 * was started long before).  The wait is bounded twice: the client's own
 * DEBUGINFOD_TIMEOUT (seconds without progress, unless the user set it)
 * and a progress callback that cancels the transfer once the whole wait
 * for one file passes the timeout - libdebuginfod calls it about once a
 * second even while nothing arrives, so a server that accepts and never
 * answers costs timeout_s, not forever.
 *
 * One client per process is all the tracer needs; nothing here is
 * thread-safe.
 */
#include "elf/debuginfod.h"

#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "pa_clock.h"

struct debuginfod_conn {
	void *handle;
	debuginfod_client *client;
	unsigned int timeout_s;
	uint64_t deadline_ns;	/* of the fetch in progress */
	bool cancelled;

	void (*end)(debuginfod_client *);
	int (*find_debuginfo)(debuginfod_client *, const unsigned char *,
			      int, char **);
	int (*find_executable)(debuginfod_client *, const unsigned char *,
			       int, char **);
};

/*
 * The progress callback is handed only the client; its user data is the
 * conn, and reading it takes a libdebuginfod function, kept here once the
 * library is loaded (the same for every client in the process).
 */
static void *(*get_user_data)(debuginfod_client *);

static int progress(debuginfod_client *client, long done, long total)
{
	struct debuginfod_conn *c = get_user_data(client);

	(void)done;
	(void)total;
	if (pa_now_ns() > c->deadline_ns)
		c->cancelled = true;
	return c->cancelled;
}

struct debuginfod_conn *debuginfod_conn__new(const char *urls,
					     unsigned int timeout_s,
					     const char **why)
{
	debuginfod_client *(*begin)(void);
	void (*set_progressfn)(debuginfod_client *, debuginfod_progressfn_t);
	void (*set_user_data)(debuginfod_client *, void *);
	struct debuginfod_conn *c;
	char timeout[16];

	c = calloc(1, sizeof(*c));
	if (!c) {
		*why = "out of memory";
		return NULL;
	}
	c->timeout_s = timeout_s;
	/*
	 * RTLD_NODELETE: libcurl keeps global state from its first use to
	 * the end of the process; unloading it would strand that memory
	 * (LeakSanitizer rightly calls it a leak).
	 */
	c->handle = dlopen("libdebuginfod.so.1",
			   RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!c->handle) {
		*why = dlerror();
		goto out_free;
	}
	begin = dlsym(c->handle, "debuginfod_begin");
	c->end = dlsym(c->handle, "debuginfod_end");
	c->find_debuginfo = dlsym(c->handle, "debuginfod_find_debuginfo");
	c->find_executable = dlsym(c->handle, "debuginfod_find_executable");
	set_progressfn = dlsym(c->handle, "debuginfod_set_progressfn");
	set_user_data = dlsym(c->handle, "debuginfod_set_user_data");
	get_user_data = dlsym(c->handle, "debuginfod_get_user_data");
	if (!begin || !c->end || !c->find_debuginfo || !c->find_executable ||
	    !set_progressfn || !set_user_data || !get_user_data) {
		*why = "libdebuginfod.so.1 lacks the functions we need";
		goto out_close;
	}
	snprintf(timeout, sizeof(timeout), "%u", timeout_s);
	if (setenv("DEBUGINFOD_URLS", urls, 1) < 0 ||
	    setenv("DEBUGINFOD_TIMEOUT", timeout, 0) < 0) {
		*why = "out of memory";
		goto out_close;
	}
	c->client = begin();
	if (!c->client) {
		*why = "debuginfod_begin failed";
		goto out_close;
	}
	set_user_data(c->client, c);
	set_progressfn(c->client, progress);
	return c;

out_close:
	dlclose(c->handle);
out_free:
	free(c);
	return NULL;
}

void debuginfod_conn__free(struct debuginfod_conn *c)
{
	if (!c)
		return;
	c->end(c->client);
	dlclose(c->handle);
	free(c);
}

int debuginfod_conn__fetch(struct debuginfod_conn *c, const uint8_t *build_id,
			   size_t build_id_len, bool debug, char **path)
{
	int fd;

	*path = NULL;
	c->cancelled = false;
	c->deadline_ns = pa_now_ns() + (uint64_t)c->timeout_s * PA_NSEC_PER_SEC;
	fd = (debug ? c->find_debuginfo : c->find_executable)(
		c->client, build_id, (int)build_id_len, path);
	if (fd >= 0)
		return fd;
	free(*path);
	*path = NULL;
	if (c->cancelled || fd == -ETIME || fd == -ETIMEDOUT)
		return -ETIME;
	return fd;
}
