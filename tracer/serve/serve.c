// SPDX-License-Identifier: MIT
/*
 * serve.c - `pprof-alloc serve`: a running process's heap and memory
 * readings over HTTP, for as long as it runs, the way a Go service serves
 * /debug/pprof and /metrics.
 *
 * It attaches (or connects to an agent already there) once, then its main
 * thread keeps draining the ring into the session (heap, mappings,
 * unwinder), takes a reading of the process's memory every second (the
 * allocator's statistics every tenth: glibc walks its arenas under their
 * locks), writes a profile file every --every seconds, and watches the
 * target's pidfd.  The HTTP side (tracer/serve/http.c, libmicrohttpd's threads)
 * asks for profiles and metrics; everything they read is behind one mutex,
 * which the main thread holds only to apply a drain, swap in a reading or
 * snapshot the heap - never across a system call on the target or a wait.
 * Building a profile (symbolizing new addresses, encoding) is done under
 * it, so a profile is one consistent moment; a built profile is reused for
 * PROFILE_CACHE_NS, so fifty clients polling cost one build a second.
 *
 * Memory stays bounded over days: the heap grows with distinct (stack,
 * size) pairs up to --max-stacks, past which samples fold into an [other]
 * bucket (counted in /metrics and in the profile's comments); the live set
 * grows with the live sampled blocks only; readings are replaced, not
 * kept.  When the target exits, the last drain and the agent's live table
 * settle the heap, which is served from then on as the final profile, and
 * /metrics says the target is gone.  SIGTERM or SIGINT detaches (hooks
 * out, the target runs on untouched), writes a last file with --out-dir,
 * and stops the server after its connections end; a delta profile waiting
 * its seconds is woken and answered 503.
 */
#include "serve.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "common/log.h"
#include "elf/symbols.h"
#include "http.h"
#include "tracer/attach/inject.h"
#include "tracer/output/jeprof.h"
#include "pa_clock.h"
#include "tracer/output/pprof_file.h"
#include "tracer/output/pprof_report.h"
#include "tracer/readings/readings.h"
#include "tracer/run/recorder.h"

#define PROFILE_CACHE_NS	PA_NSEC_PER_SEC
#define READING_NS		PA_NSEC_PER_SEC
#define ALLOCATOR_EVERY		10	/* readings */
#define POLL_MS			20
#define DELTAS_MAX		4	/* ?seconds= requests waiting at once */

struct cached {
	uint8_t *buf;
	size_t len;
	uint64_t at_ns;
};

struct serve {
	const struct serve_options *o;
	pthread_mutex_t lock;		/* everything below */
	pthread_cond_t wake;		/* stopping, for delta waits */
	struct http_server *http;	/* once listening: its counts */
	bool stopping;
	bool ready;			/* attached: there is something to serve */
	int deltas;			/* ?seconds= requests waiting */
	struct recorder rec;		/* its lock is ours */
	bool alive;
	pid_t pid;
	uint64_t start_ns, ended_ns;
	struct debuginfo_opts dopts;
	struct symbols *syms;
	size_t syms_maps;		/* rec.s.maps.nmaps when syms was updated */
	struct readings last;
	bool have_last;
	struct cached cache[HTTP_VIEWS];	/* enum http_view */
	uint64_t requests[HTTP_VIEWS + 1];	/* the views, metrics */
	uint64_t files_written, file_errors, deltas_refused;
};

/* ---- profiles ------------------------------------------------------- */

/* Under the lock: the symbols of every module seen so far, or NULL
 * (--no-symbolize, or out of memory). */
static struct symbols *symbols_now(struct serve *sv)
{
	if (!sv->o->symbolize)
		return NULL;
	if (!sv->syms)
		sv->syms = symbols__new(&sv->dopts);
	if (sv->syms && sv->syms_maps != sv->rec.s.maps.nmaps &&
	    !report__symbols_add(sv->syms, &sv->rec.s.maps,
				 sv->syms_maps || log__quiet()))
		sv->syms_maps = sv->rec.s.maps.nmaps;
	return sv->syms;
}

/* Under the lock.  The profile as of now (minus base if not NULL). */
static int build(struct serve *sv, enum http_view view,
		 const struct heap_snapshot *base, uint64_t base_ns,
		 uint8_t **out, size_t *len)
{
	static const char *const first[HTTP_VIEWS] = {
		[HTTP_VIEW_HEAP] = "inuse_space",
		[HTTP_VIEW_ALLOCS] = "alloc_space",
		[HTTP_VIEW_PEAK] = "peak_inuse_space",
	};
	struct ringfile_losses losses;
	char cmd[64], ended[64], unwind[768], exact[768];
	struct report_info info = {
		.command = cmd,
		.jit_names = true,
		.skipped_busy = sv->rec.rc.skipped_busy,
		.resyncs = sv->rec.rc.resyncs,
		.time_nanos = (int64_t)time(NULL) * (int64_t)PA_NSEC_PER_SEC,
		.default_type = first[view],
		.base = base,
	};
	uint64_t now = pa_now_ns();

	recorder__losses(&sv->rec, &losses);
	info.lost_records = losses.records;
	info.losses_bad = sv->rec.rf.losses_bad;
	info.lost_bytes = losses.bytes;
	info.live_overflow = losses.live_overflow;
	info.agent_samples = sv->rec.s.heap.allocs + losses.samples;
	snprintf(cmd, sizeof(cmd), "process %d (pprof-alloc serve)",
		 (int)sv->pid);
	if (!sv->alive) {
		snprintf(ended, sizeof(ended), "exited %.0f s ago",
			 (double)(now - sv->ended_ns) / PA_NSEC_PER_SEC);
		info.ended = ended;
	}
	info.duration_nanos = (int64_t)(now - (base ? base_ns : sv->start_ns));
	recorder__unwind_summary(&sv->rec, sv->o->rec.unwind, unwind,
				 sizeof(unwind));
	info.unwind_summary = unwind[0] ? unwind : NULL;
	recorder__exact_summary(&sv->rec, exact, sizeof(exact));
	info.exact_summary = exact[0] ? exact : NULL;
	return report__encode(&sv->rec.s.heap, &sv->rec.s.maps,
			      symbols_now(sv), &info, out, len);
}

static int copy_out(const uint8_t *buf, size_t len, uint8_t **out,
		    size_t *out_len)
{
	*out = malloc(len ? len : 1);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, buf, len);
	*out_len = len;
	return 0;
}

/* Wait until deadline or shutdown, lock held.  -ECANCELED on shutdown. */
static int wait_until(struct serve *sv, uint64_t deadline_ns)
{
	struct timespec ts;
	uint64_t now = pa_now_ns();

	/* sv->wake runs on CLOCK_MONOTONIC, as pa_now_ns() does */
	while (!sv->stopping && now < deadline_ns) {
		ts.tv_sec = (time_t)(deadline_ns / PA_NSEC_PER_SEC);
		ts.tv_nsec = (long)(deadline_ns % PA_NSEC_PER_SEC);
		pthread_cond_timedwait(&sv->wake, &sv->lock, &ts);
		now = pa_now_ns();
	}
	return sv->stopping ? -ECANCELED : 0;
}

static int serve_profile(void *ctx, enum http_view view, unsigned int seconds,
			 uint8_t **out, size_t *len)
{
	struct serve *sv = ctx;
	struct cached *c = &sv->cache[view];
	struct heap_snapshot base = { 0 };
	uint64_t t0;
	int err;

	pthread_mutex_lock(&sv->lock);
	sv->requests[view]++;
	if (sv->stopping || !sv->ready) {
		err = sv->stopping ? -ECANCELED : -EAGAIN;
		goto out_unlock;
	}
	if (seconds) {
		/* each waits in a connection thread with a snapshot: a few */
		if (sv->deltas >= DELTAS_MAX) {
			sv->deltas_refused++;
			err = -EBUSY;
			goto out_unlock;
		}
		err = heap__snapshot(&sv->rec.s.heap, &base);
		if (err)
			goto out_unlock;
		sv->deltas++;
		t0 = pa_now_ns();
		err = wait_until(sv, t0 + seconds * PA_NSEC_PER_SEC);
		if (!err)
			err = build(sv, view, &base, t0, out, len);
		sv->deltas--;
		heap_snapshot__fini(&base);
		goto out_unlock;
	}
	if (!c->buf || pa_now_ns() - c->at_ns >= PROFILE_CACHE_NS) {
		uint8_t *buf;
		size_t n;

		err = build(sv, view, NULL, 0, &buf, &n);
		if (err)
			goto out_unlock;
		free(c->buf);
		c->buf = buf;
		c->len = n;
		c->at_ns = pa_now_ns();
	}
	err = copy_out(c->buf, c->len, out, len);
out_unlock:
	pthread_mutex_unlock(&sv->lock);
	return err;
}

/*
 * ?jemalloc=1: the target's jemalloc's own profile (jeprof.c).  The agent
 * is asked without the lock (it may take seconds: jemalloc writes every
 * stack it sampled), one request at a time; the profile is built under it,
 * with serve's mappings and symbols.  Not cached: each is a new dump.
 */
static int serve_jemalloc(void *ctx, enum http_view view, uint8_t **out,
			  size_t *len, char *why, size_t why_size)
{
	static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;
	struct serve *sv = ctx;
	struct jeprof_reply reply = { 0 };
	struct jeprof_dump d = { 0 };
	struct pa_header *hdr;
	uint64_t file_size, mallctl;
	char cmd[64], source[512];
	struct heap h;
	int err;

	pthread_mutex_lock(&sv->lock);
	sv->requests[view]++;
	if (sv->stopping || !sv->ready) {
		pthread_mutex_unlock(&sv->lock);
		return sv->stopping ? -ECANCELED : -EAGAIN;
	}
	if (!sv->alive) {
		pthread_mutex_unlock(&sv->lock);
		snprintf(why, why_size, "process %d has exited: jemalloc's profile is asked of a live process",
			 (int)sv->pid);
		return -ESRCH;
	}
	hdr = sv->rec.rf.hdr;
	file_size = sv->rec.rf.file_size;
	mallctl = jeprof__exe_mallctl(&sv->rec.s.maps);
	pthread_mutex_unlock(&sv->lock);

	pthread_mutex_lock(&one_at_a_time);
	err = jeprof__fetch(sv->pid, hdr, file_size, mallctl, &d, &reply, why,
			    why_size);
	pthread_mutex_unlock(&one_at_a_time);
	if (err)
		goto out_dump;

	pthread_mutex_lock(&sv->lock);
	mapping_set__refresh(&sv->rec.s.maps);
	heap__init(&h, d.period);
	err = jeprof__fill(&h, &d, &sv->rec.s.maps, symbols_now(sv),
			   reply.mallctl);
	if (!err) {
		struct report_info info;

		snprintf(cmd, sizeof(cmd), "process %d (pprof-alloc serve)",
			 (int)sv->pid);
		info = jeprof__report_info(&d, sv->pid, cmd, source,
					   sizeof(source));
		info.default_type = view == HTTP_VIEW_ALLOCS ? "alloc_space" :
							      "inuse_space";
		err = report__encode(&h, &sv->rec.s.maps, symbols_now(sv),
				     &info, out, len);
	}
	heap__fini(&h);
	pthread_mutex_unlock(&sv->lock);
out_dump:
	jeprof_dump__fini(&d);
	return err;
}

/* ---- metrics -------------------------------------------------------- */

static int serve_metrics(void *ctx, char **out, size_t *len)
{
	struct serve *sv = ctx;
	struct http_server *http;
	struct heap_totals t;
	FILE *f;
	int err = 0;

	f = open_memstream(out, len);
	if (!f)
		return -ENOMEM;
	pthread_mutex_lock(&sv->lock);
	sv->requests[HTTP_VIEWS]++;
	if (sv->have_last && sv->alive && sv->ready)
		readings__prometheus(&sv->last, f);
	heap__totals(&sv->rec.s.heap, &t);
	readings__prom_one(f, "pprof_alloc_target_up", "gauge",
	       "1 while the profiled process runs, 0 once it has exited.",
	       sv->alive && sv->ready ? 1 : 0);
	readings__prom_one(f, "pprof_alloc_target_pid", "gauge",
	       "The profiled process.", (double)sv->pid);
	readings__prom_family(f, "pprof_alloc_build_info", "gauge",
			      "Always 1; the version of pprof-alloc serving.");
	readings__prom_sample(f, "pprof_alloc_build_info", "version",
			      PA_VERSION, 1);
	readings__prom_one(f, "pprof_alloc_serve_uptime_seconds", "gauge",
	       "Seconds since serve attached.",
	       (double)(pa_now_ns() - sv->start_ns) / PA_NSEC_PER_SEC);
	readings__prom_one(f, "pprof_alloc_serve_inuse_bytes", "gauge",
	       "Sampled heap in use, estimated bytes.", t.inuse_bytes);
	readings__prom_one(f, "pprof_alloc_serve_inuse_objects", "gauge",
	       "Sampled heap in use, estimated blocks.", t.inuse_objects);
	readings__prom_one(f, "pprof_alloc_serve_allocated_bytes_total", "counter",
	       "Estimated bytes allocated since serve attached.",
	       t.alloc_bytes);
	readings__prom_one(f, "pprof_alloc_serve_samples_total", "counter",
	       "Sampled allocations received.", (double)sv->rec.s.heap.allocs);
	readings__prom_one(f, "pprof_alloc_serve_stacks", "gauge",
	       "Distinct (stack, size) pairs kept, [other] included.",
	       (double)sv->rec.s.heap.nbuckets);
	readings__prom_one(f, "pprof_alloc_serve_max_stacks", "gauge",
	       "The cap on distinct (stack, size) pairs (--max-stacks).",
	       (double)sv->rec.s.heap.max_buckets);
	readings__prom_one(f, "pprof_alloc_serve_folded_samples_total", "counter",
	       "Samples of new stacks past the cap, counted in [other].",
	       (double)sv->rec.s.heap.folded);
	readings__prom_one(f, "pprof_alloc_serve_folded_size_samples_total", "counter",
	       "Samples of known stacks with a new size past the cap, counted in a size-less bucket of their stack.",
	       (double)sv->rec.s.heap.folded_sizes);
	readings__prom_one(f, "pprof_alloc_serve_deltas_refused_total", "counter",
	       "?seconds= requests refused: too many were waiting.",
	       (double)sv->deltas_refused);
	readings__prom_one(f, "pprof_alloc_serve_file_errors_total", "counter",
	       "Profiles that could not be written to --out-dir.",
	       (double)sv->file_errors);
	readings__prom_family(f, "pprof_alloc_serve_requests_total", "counter",
			      "HTTP requests served, by endpoint.");
	readings__prom_sample(f, "pprof_alloc_serve_requests_total", "endpoint",
			      "heap", (double)sv->requests[HTTP_VIEW_HEAP]);
	readings__prom_sample(f, "pprof_alloc_serve_requests_total", "endpoint",
			      "allocs", (double)sv->requests[HTTP_VIEW_ALLOCS]);
	readings__prom_sample(f, "pprof_alloc_serve_requests_total", "endpoint",
			      "heap_peak", (double)sv->requests[HTTP_VIEW_PEAK]);
	readings__prom_sample(f, "pprof_alloc_serve_requests_total", "endpoint",
			      "metrics", (double)sv->requests[HTTP_VIEWS]);
	readings__prom_one(f, "pprof_alloc_serve_files_written_total", "counter",
	       "Profiles written to --out-dir.", (double)sv->files_written);
	http = sv->http;
	pthread_mutex_unlock(&sv->lock);
	if (http) {
		struct http_stats hs;

		http__stats(http, &hs);
		readings__prom_one(f, "pprof_alloc_serve_connections", "gauge",
		       "HTTP connections open.", (double)hs.open);
		readings__prom_family(f, "pprof_alloc_serve_connections_closed_total",
		       "counter",
		       "HTTP connections closed by serve: no whole request header within --header-timeout, or the oldest of too many waiting for a request.");
		readings__prom_sample(f, "pprof_alloc_serve_connections_closed_total",
				      "reason", "header_timeout",
				      (double)hs.header_timeouts);
		readings__prom_sample(f, "pprof_alloc_serve_connections_closed_total",
				      "reason", "evicted", (double)hs.evicted);
	}
	if (fclose(f))
		err = -ENOMEM;
	return err;
}

/* ---- the main thread's work ---------------------------------------- */

static void take_reading(struct serve *sv, unsigned long n)
{
	struct readings_source src = {
		.proc_root = "/proc", .pid = sv->pid, .hdr = sv->rec.rf.hdr,
		.rf = &sv->rec.rf,
		.file_size = sv->rec.rf.file_size,
		.live_capacity = sv->rec.rf.live_capacity,
		.stats_timeout_ms = 200,
		.skip_allocator = n % ALLOCATOR_EVERY != 0,
	};
	struct readings r, old;
	bool had;

	/* the slow part (files, the agent's stats thread) without the lock */
	if (readings__take(&r, &src)) {
		readings__fini(&r);
		return;
	}
	pthread_mutex_lock(&sv->lock);
	heap__totals(&sv->rec.s.heap, &r.heap);
	r.has_heap = true;
	r.heap_samples = sv->rec.s.heap.allocs;
	had = sv->have_last;
	old = sv->last;
	/* a reading without the allocator keeps the last one's */
	if (had && !r.alloc.ok && old.alloc.ok && src.skip_allocator) {
		struct alloc_reading keep = old.alloc;

		old.alloc = r.alloc;
		r.alloc = keep;
	}
	sv->last = r;
	sv->have_last = true;
	pthread_mutex_unlock(&sv->lock);
	if (had)
		readings__fini(&old);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Keep the newest keep files of ours in dir ("pprof-alloc.PID.*.pb.gz"). */
static void prune(const char *dir, pid_t pid, unsigned int keep)
{
	char prefix[64], **names = NULL, path[PATH_MAX];
	size_t n = 0, cap = 0, i;
	struct dirent *e;
	DIR *d;

	snprintf(prefix, sizeof(prefix), "pprof-alloc.%d.", (int)pid);
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);

		if (strncmp(e->d_name, prefix, strlen(prefix)) || l < 7 ||
		    strcmp(e->d_name + l - 6, ".pb.gz") ||
		    strstr(e->d_name, ".tmp"))
			continue;
		if (n == cap) {
			char **grown = realloc(names, (cap ? cap * 2 : 64) *
						      sizeof(*names));

			if (!grown)
				break;
			names = grown;
			cap = cap ? cap * 2 : 64;
		}
		names[n] = strdup(e->d_name);
		if (names[n])
			n++;
	}
	closedir(d);
	/* the timestamp sorts as the name does */
	if (n)
		qsort(names, n, sizeof(*names), by_name);
	for (i = 0; i + keep < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* A profile of now into --out-dir, named by the UTC time; then prune. */
static void write_file(struct serve *sv)
{
	char path[PATH_MAX], stamp[32];
	struct timespec ts;
	struct tm tm;
	uint8_t *buf;
	size_t len;
	int err;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	snprintf(path, sizeof(path), "%s/pprof-alloc.%d.%s.%03ldZ.pb.gz",
		 sv->o->out_dir, (int)sv->pid, stamp, ts.tv_nsec / (long)PA_NSEC_PER_MSEC);
	pthread_mutex_lock(&sv->lock);
	err = build(sv, HTTP_VIEW_HEAP, NULL, 0, &buf, &len);
	pthread_mutex_unlock(&sv->lock);
	if (!err) {
		/* atomic: a temporary file, fsynced (older ones are
		 * pruned once it is there), renamed */
		err = pprof_file__write_durable(path, buf, len);
		free(buf);
	}
	pthread_mutex_lock(&sv->lock);
	if (err)
		sv->file_errors++;
	else
		sv->files_written++;
	pthread_mutex_unlock(&sv->lock);
	if (err) {
		if (sv->file_errors == 1 || !log__quiet())
			pr_warn("cannot write %s: %s\n", path,
				strerror(-err));
		return;
	}
	prune(sv->o->out_dir, sv->pid, sv->o->keep);
}

/* The target has exited: the last records, and the live table settles
 * what was freed without a record (see heap__reconcile). */
static void target_gone(struct serve *sv)
{
	int i;

	recorder__end(&sv->rec);
	pthread_mutex_lock(&sv->lock);
	sv->alive = false;
	sv->ended_ns = pa_now_ns();
	for (i = 0; i < HTTP_VIEWS; i++)
		sv->cache[i].at_ns = 0;		/* stale now */
	pthread_mutex_unlock(&sv->lock);
	pr_info("process %d has exited; serving its final profile until stopped\n",
		(int)sv->pid);
	/* the last file; the periodic ones stop here, so that --keep does
	 * not prune the history for copies of the end */
	if (sv->o->out_dir)
		write_file(sv);
}

/* Until SIGINT or SIGTERM. */
static void loop(struct serve *sv, int sfd, int pidfd)
{
	uint64_t next_reading = 0, next_file = 0;
	unsigned long nreadings = 0;

	if (sv->o->every_ns)
		next_file = pa_now_ns() + sv->o->every_ns;
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = sfd, .events = POLLIN },
			{ .fd = sv->alive ? pidfd : -1, .events = POLLIN },
		};
		struct signalfd_siginfo si;
		uint64_t now;

		poll(pfd, 2, POLL_MS);
		if (read(sfd, &si, sizeof(si)) == sizeof(si) &&
		    (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM))
			return;
		if (sv->alive && ((pfd[1].revents & POLLIN) ||
				  (pidfd < 0 && kill(sv->pid, 0) && errno == ESRCH)))
			target_gone(sv);
		now = pa_now_ns();
		if (sv->alive) {
			/* alive, for an agent that cannot see our pid */
			__atomic_add_fetch(&sv->rec.rf.hdr->tracer_beat, 1,
					   __ATOMIC_RELEASE);
			recorder__drain(&sv->rec, now, false);
			recorder__refresh(&sv->rec, now);
			/* a dlopen: have the agent hook the new module */
			recorder__rescan(&sv->rec, now);
			if (now >= next_reading) {
				next_reading = now + READING_NS;
				take_reading(sv, nreadings++);
			}
		} else {
			remote__settle();	/* threads let go before they stopped */
		}
		if (next_file && sv->alive && now >= next_file) {
			next_file += sv->o->every_ns;
			if (next_file <= now)
				next_file = now + sv->o->every_ns;
			write_file(sv);
		}
	}
}

int serve__run(const struct serve_options *o, const char *agent)
{
	static struct serve sv;
	struct http_content content = {
		.ctx = &sv, .profile = serve_profile, .metrics = serve_metrics,
		.jemalloc = serve_jemalloc,
	};
	struct http_server *http = NULL;
	struct attach_config cfg;
	char why[256];
	sigset_t sigs;
	int sfd = -1, pidfd = -1, code = 1, i;

	memset(&sv, 0, sizeof(sv));
	recorder__init(&sv.rec);
	sv.rec.lock = &sv.lock;
	sv.rec.always_reconcile = true;
	sv.o = o;
	sv.pid = o->pid;
	pthread_mutex_init(&sv.lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&sv.wake, &ca);
		pthread_condattr_destroy(&ca);
	}
	debug_options__get(&o->debug, &sv.dopts);

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGPIPE);
	/* before any thread starts, so that every thread has them blocked */
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		pr_warn("signalfd: %s\n", strerror(errno));
		return 1;
	}
	/* listen first: a port in use must not cost the target an attach
	 * and a detach (503 until attached) */
	http = http__start(o->listen, o->header_timeout_ms, &content, why,
			   sizeof(why));
	if (!http) {
		pr_warn("%s\n", why);
		goto out_signals;
	}
	pthread_mutex_lock(&sv.lock);
	sv.http = http;
	pthread_mutex_unlock(&sv.lock);
	recorder__attach_config(&cfg, &o->rec, agent, true);
	cfg.owner_addr = o->listen;	/* named to a second tracer */
	if (recorder__attach(&sv.rec, sv.pid, &cfg, &o->rec)) {
		http__stop(http);
		goto out_session;
	}
	sv.start_ns = pa_now_ns();
	/* exact mode: the ring is read on a thread of its own, so that its
	 * producers never wait for a profile being built */
	if (recorder__start_reader(&sv.rec))
		pr_warn("cannot start the ring's reader thread; reading it from the main loop\n");
	pidfd = (int)syscall(SYS_pidfd_open, sv.pid, 0);
	pthread_mutex_lock(&sv.lock);
	sv.alive = sv.ready = true;
	pthread_mutex_unlock(&sv.lock);
	pr_info("%s process %d; serving http://%s/debug/pprof/heap (port %u)\n",
		sv.rec.ast.existing ? "connected to the agent in" :
		"attached to", (int)sv.pid, o->listen, http__port(http));
	loop(&sv, sfd, pidfd);

	/* stopped: no new requests, waiting ones woken */
	pthread_mutex_lock(&sv.lock);
	sv.stopping = true;
	pthread_cond_broadcast(&sv.wake);
	pthread_mutex_unlock(&sv.lock);
	http__stop(http);
	if (sv.alive) {
		if (!recorder__detach(&sv.rec))
			pr_info("detached from process %d\n", (int)sv.pid);
		if (o->out_dir)
			write_file(&sv);	/* the last (target_gone wrote
						   one for a target gone) */
		recorder__leave(&sv.rec);
	}
	code = 0;
out_session:
	if (pidfd >= 0)
		close(pidfd);
	symbols__free(sv.syms);
	for (i = 0; i < HTTP_VIEWS; i++)
		free(sv.cache[i].buf);
	if (sv.have_last)
		readings__fini(&sv.last);
	recorder__fini(&sv.rec);
out_signals:
	close(sfd);
	return code;
}
