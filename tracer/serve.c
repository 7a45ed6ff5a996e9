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
 * target's pidfd.  The HTTP side (tracer/http.c, libmicrohttpd's threads)
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
#include "inject.h"

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
#include "args.h"
#include "attach.h"
#include "consumer.h"
#include "debugopts.h"
#include "http.h"
#include "launch.h"
#include "readings.h"
#include "recopts.h"
#include "report.h"
#include "ringfile.h"
#include "session.h"
#include "pprof_file.h"
#include "symbols.h"
#include "pa_clock.h"

#define PROFILE_CACHE_NS	1000000000ull
#define READING_NS		1000000000ull
#define ALLOCATOR_EVERY		10	/* readings */
#define POLL_MS			20
#define DEFAULT_KEEP		100u
#define DELTAS_MAX		4	/* ?seconds= requests waiting at once */

static const char *prog = "pprof-alloc serve";

struct serve_options {
	pid_t pid;
	const char *pid_file;
	const char *listen;
	uint64_t every_ns;
	const char *out_dir;
	unsigned int keep;
	unsigned int header_timeout_ms;
	struct rec_options rec;		/* rate, sizes, unwinding */
	struct attach_config acfg;	/* from rec */
	bool symbolize, quiet;
	struct debug_options debug;
};

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
	struct ringfile rf;
	struct ring_consumer rc;
	struct session s;
	bool ring_ok, alive;
	pid_t pid;
	uint64_t start_ns, ended_ns;
	struct debuginfo_opts dopts;
	struct symbols *syms;
	size_t syms_maps;		/* s.maps.nmaps when syms was updated */
	struct readings last;
	bool have_last;
	struct cached cache[2];		/* heap, allocs */
	uint64_t requests[3];		/* heap, allocs, metrics */
	uint64_t files_written, file_errors, deltas_refused;
};

/* ---- profiles ------------------------------------------------------- */

/* Under the lock.  The profile as of now (minus base if not NULL). */
static int build(struct serve *sv, bool allocs, const struct heap_snapshot *base,
		 uint64_t base_ns, uint8_t **out, size_t *len)
{
	struct pa_header *hdr = sv->rf.hdr;
	char cmd[64], ended[64];
	struct report_info info = {
		.command = cmd,
		.lost_records = hdr->lost_records,
		.lost_bytes = hdr->lost_bytes,
		.live_overflow = hdr->live_overflow,
		.agent_samples = sv->s.heap.allocs + hdr->lost_samples,
		.skipped_busy = sv->rc.skipped_busy,
		.resyncs = sv->rc.resyncs,
		.time_nanos = (int64_t)time(NULL) * 1000000000ll,
		.default_type = allocs ? "alloc_space" : "inuse_space",
		.base = base,
	};
	uint64_t now = pa_now_ns();

	snprintf(cmd, sizeof(cmd), "process %d (pprof-alloc serve)",
		 (int)sv->pid);
	if (!sv->alive) {
		snprintf(ended, sizeof(ended), "exited %.0f s ago",
			 (double)(now - sv->ended_ns) / 1e9);
		info.ended = ended;
	}
	info.duration_nanos = (int64_t)(now - (base ? base_ns : sv->start_ns));
	if (sv->o->symbolize) {
		if (!sv->syms)
			sv->syms = symbols__new(&sv->dopts);
		if (sv->syms && sv->syms_maps != sv->s.maps.nmaps &&
		    !report__symbols_add(sv->syms, &sv->s.maps,
					 sv->syms_maps || sv->o->quiet))
			sv->syms_maps = sv->s.maps.nmaps;
	}
	return report__encode(&sv->s.heap, &sv->s.maps,
			      sv->o->symbolize ? sv->syms : NULL, &info, out,
			      len);
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
		ts.tv_sec = (time_t)(deadline_ns / 1000000000ull);
		ts.tv_nsec = (long)(deadline_ns % 1000000000ull);
		pthread_cond_timedwait(&sv->wake, &sv->lock, &ts);
		now = pa_now_ns();
	}
	return sv->stopping ? -ECANCELED : 0;
}

static int serve_profile(void *ctx, bool allocs, unsigned int seconds,
			 uint8_t **out, size_t *len)
{
	struct serve *sv = ctx;
	struct cached *c = &sv->cache[allocs];
	struct heap_snapshot base = { 0 };
	uint64_t t0;
	int err;

	pthread_mutex_lock(&sv->lock);
	sv->requests[allocs]++;
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
		err = heap__snapshot(&sv->s.heap, &base);
		if (err)
			goto out_unlock;
		sv->deltas++;
		t0 = pa_now_ns();
		err = wait_until(sv, t0 + seconds * 1000000000ull);
		if (!err)
			err = build(sv, allocs, &base, t0, out, len);
		sv->deltas--;
		heap_snapshot__fini(&base);
		goto out_unlock;
	}
	if (!c->buf || pa_now_ns() - c->at_ns >= PROFILE_CACHE_NS) {
		uint8_t *buf;
		size_t n;

		err = build(sv, allocs, NULL, 0, &buf, &n);
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
	sv->requests[2]++;
	if (sv->have_last && sv->alive && sv->ready)
		readings__prometheus(&sv->last, f);
	heap__totals(&sv->s.heap, &t);
	readings__prom_one(f, "pprof_alloc_target_up", "gauge",
	       "1 while the profiled process runs, 0 once it has exited.",
	       sv->alive && sv->ready ? 1 : 0);
	readings__prom_one(f, "pprof_alloc_target_pid", "gauge",
	       "The profiled process.", (double)sv->pid);
	readings__prom_one(f, "pprof_alloc_serve_uptime_seconds", "gauge",
	       "Seconds since serve attached.",
	       (double)(pa_now_ns() - sv->start_ns) / 1e9);
	readings__prom_one(f, "pprof_alloc_serve_inuse_bytes", "gauge",
	       "Sampled heap in use, estimated bytes.", t.inuse_bytes);
	readings__prom_one(f, "pprof_alloc_serve_inuse_objects", "gauge",
	       "Sampled heap in use, estimated blocks.", t.inuse_objects);
	readings__prom_one(f, "pprof_alloc_serve_allocated_bytes_total", "counter",
	       "Estimated bytes allocated since serve attached.",
	       t.alloc_bytes);
	readings__prom_one(f, "pprof_alloc_serve_samples_total", "counter",
	       "Sampled allocations received.", (double)sv->s.heap.allocs);
	readings__prom_one(f, "pprof_alloc_serve_stacks", "gauge",
	       "Distinct (stack, size) pairs kept, [other] included.",
	       (double)sv->s.heap.nbuckets);
	readings__prom_one(f, "pprof_alloc_serve_max_stacks", "gauge",
	       "The cap on distinct (stack, size) pairs (--max-stacks).",
	       (double)sv->s.heap.max_buckets);
	readings__prom_one(f, "pprof_alloc_serve_folded_samples_total", "counter",
	       "Samples of new stacks past the cap, counted in [other].",
	       (double)sv->s.heap.folded);
	readings__prom_one(f, "pprof_alloc_serve_folded_size_samples_total", "counter",
	       "Samples of known stacks with a new size past the cap, counted in a size-less bucket of their stack.",
	       (double)sv->s.heap.folded_sizes);
	readings__prom_one(f, "pprof_alloc_serve_deltas_refused_total", "counter",
	       "?seconds= requests refused: too many were waiting.",
	       (double)sv->deltas_refused);
	readings__prom_one(f, "pprof_alloc_serve_file_errors_total", "counter",
	       "Profiles that could not be written to --out-dir.",
	       (double)sv->file_errors);
	readings__prom_family(f, "pprof_alloc_serve_requests_total", "counter",
			      "HTTP requests served, by endpoint.");
	readings__prom_sample(f, "pprof_alloc_serve_requests_total", "endpoint",
			      "heap", (double)sv->requests[0]);
	readings__prom_sample(f, "pprof_alloc_serve_requests_total", "endpoint",
			      "allocs", (double)sv->requests[1]);
	readings__prom_sample(f, "pprof_alloc_serve_requests_total", "endpoint",
			      "metrics", (double)sv->requests[2]);
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

static void drain_locked(struct serve *sv, bool final)
{
	uint64_t now = pa_now_ns();
	int err;

	if (!sv->ring_ok)
		return;
	err = ring_consumer__drain(&sv->rc, session__on_record, &sv->s, now,
				   final);
	if (err >= 0) {
		if (ring_consumer__stalled(&sv->rc, now, ring_consumer__stall_warn_ns()))
			fprintf(stderr, RING_STALL_WARNING, prog, (double)ring_consumer__stall_warn_ns() / 1e9, (int)sv->pid);
		return;
	}
	sv->ring_ok = false;
	fprintf(stderr, "%s: %s; no longer reading the ring\n", prog,
		err == -EPROTO ? sv->rc.error : strerror(-err));
}

static void take_reading(struct serve *sv, unsigned long n)
{
	struct readings_source src = {
		.proc_root = "/proc", .pid = sv->pid, .hdr = sv->rf.hdr,
		.file_size = sv->rf.file_size,
		.live_capacity = sv->rf.live_capacity,
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
	heap__totals(&sv->s.heap, &r.heap);
	r.has_heap = true;
	r.heap_samples = sv->s.heap.allocs;
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
		 sv->o->out_dir, (int)sv->pid, stamp, ts.tv_nsec / 1000000);
	pthread_mutex_lock(&sv->lock);
	err = build(sv, false, NULL, 0, &buf, &len);
	pthread_mutex_unlock(&sv->lock);
	if (!err) {
		/* atomic: a temporary file, fsynced, renamed */
		err = pprof_file__write(path, buf, len);
		free(buf);
	}
	pthread_mutex_lock(&sv->lock);
	if (err)
		sv->file_errors++;
	else
		sv->files_written++;
	pthread_mutex_unlock(&sv->lock);
	if (err) {
		if (sv->file_errors == 1 || !sv->o->quiet)
			fprintf(stderr, "%s: cannot write %s: %s\n", prog, path,
				strerror(-err));
		return;
	}
	prune(sv->o->out_dir, sv->pid, sv->o->keep);
}

/* The target has exited: the last records, and the live table settles
 * what was freed without a record (see heap__reconcile). */
static void target_gone(struct serve *sv)
{
	uint8_t *base = (uint8_t *)sv->rf.hdr;

	pthread_mutex_lock(&sv->lock);
	sv->s.alive = false;
	drain_locked(sv, true);
	heap__reconcile(&sv->s.heap,
			(const struct pa_live_entry *)(base + PA_HEADER_SIZE +
						       sv->rf.data_size),
			sv->rf.live_capacity);
	sv->alive = false;
	sv->ended_ns = pa_now_ns();
	sv->cache[0].at_ns = sv->cache[1].at_ns = 0;	/* stale now */
	pthread_mutex_unlock(&sv->lock);
	if (!sv->o->quiet)
		fprintf(stderr, "%s: process %d has exited; serving its final profile until stopped\n",
			prog, (int)sv->pid);
	/* the last file; the periodic ones stop here, so that --keep does
	 * not prune the history for copies of the end */
	if (sv->o->out_dir)
		write_file(sv);
}

/* Until SIGINT or SIGTERM. */
static void loop(struct serve *sv, int sfd, int pidfd,
		 const struct attach_stats *ast)
{
	struct attach_stats st = *ast;
	uint64_t next_reading = 0, next_file = 0, rescan_at = 0;
	uint32_t seen_dlopens = __atomic_load_n(&sv->rf.hdr->dlopen_calls,
						__ATOMIC_ACQUIRE);
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
		remote__settle();	/* threads let go before they stopped */
		if (sv->alive) {
			uint32_t calls;

			pthread_mutex_lock(&sv->lock);
			drain_locked(sv, false);
			session__refresh(&sv->s, now);
			pthread_mutex_unlock(&sv->lock);
			/* a dlopen: have the agent hook the new module (ptrace,
			 * so not under the lock) */
			calls = __atomic_load_n(&sv->rf.hdr->dlopen_calls,
						__ATOMIC_ACQUIRE);
			if (calls != seen_dlopens && now >= rescan_at) {
				int rc = attach__rescan(sv->pid, &sv->o->acfg,
							&st);

				if (!rc)
					seen_dlopens = calls;
				rescan_at = now + (rc < 0 ? 100000000ull :
							    10000000ull);
			}
			if (now >= next_reading) {
				next_reading = now + READING_NS;
				take_reading(sv, nreadings++);
			}
		}
		if (next_file && sv->alive && now >= next_file) {
			next_file += sv->o->every_ns;
			if (next_file <= now)
				next_file = now + sv->o->every_ns;
			write_file(sv);
		}
	}
}

static int attach_target(struct serve *sv, struct attach_stats *st)
{
	const char *why = NULL;
	int err;

	err = attach__check(sv->pid, &why);
	if (!err)
		err = attach__connect(sv->pid, &sv->o->acfg, &sv->rf, st, &why);
	if (err) {
		fprintf(stderr, "%s: %s\n", prog, why);
		return err;
	}
	err = ring_consumer__init(&sv->rc, sv->rf.hdr,
				  (uint8_t *)sv->rf.hdr + PA_HEADER_SIZE,
				  sv->rf.data_size, sv->rf.max_frames);
	if (!err)
		err = session__init(&sv->s, sv->pid, sv->rf.sample_rate,
				    sv->rf.max_frames);
	if (err) {
		fprintf(stderr, "%s: %s; detaching\n", prog, strerror(-err));
		/* the hooks are in: take them out before giving up */
		if (attach__detach(sv->pid, &sv->o->acfg, &sv->rf, st, &why))
			fprintf(stderr, "%s: %s\n", prog, why);
		return err;
	}
	session__set_limits(&sv->s, sv->o->rec.max_stacks,
			    sv->rf.live_capacity, sv->o->rec.live_size);
	mapping_set__refresh(&sv->s.maps);
	sv->ring_ok = sv->alive = true;
	if (st->existing) {
		uint8_t *base = (uint8_t *)sv->rf.hdr;

		/* recording before us: what is live, from its tables */
		if (heap__seed(&sv->s.heap,
			   (const struct pa_live_entry *)(base + PA_HEADER_SIZE +
							  sv->rf.data_size),
			   sv->rf.live_capacity,
			   base + pa_stack_offset(sv->rf.data_size,
						  sv->rf.live_capacity),
			   sv->rf.stack_capacity, sv->rf.max_frames))
			fprintf(stderr, "%s: out of memory reading the agent's live table\n",
				prog);
	}
	return 0;
}

static void detach_target(struct serve *sv, struct attach_stats *st)
{
	const char *why = NULL;
	uint8_t *base = (uint8_t *)sv->rf.hdr;
	int err;

	pthread_mutex_lock(&sv->lock);
	drain_locked(sv, false);
	pthread_mutex_unlock(&sv->lock);
	err = attach__detach(sv->pid, &sv->o->acfg, &sv->rf, st, &why);
	if (err)
		fprintf(stderr, "%s: %s\n", prog, why);
	pthread_mutex_lock(&sv->lock);
	drain_locked(sv, err == 0 || kill(sv->pid, 0) != 0);
	if (!err)
		heap__reconcile(&sv->s.heap,
				(const struct pa_live_entry *)(base +
					PA_HEADER_SIZE + sv->rf.data_size),
				sv->rf.live_capacity);
	pthread_mutex_unlock(&sv->lock);
	if (!err && !sv->o->quiet)
		fprintf(stderr, "%s: detached from process %d\n", prog,
			(int)sv->pid);
}

/* ---- options and the command -------------------------------------- */

static void usage(FILE *out)
{
	fprintf(out,
"Usage: pprof-alloc serve (--pid PID | --pid-file FILE) [OPTIONS]\n"
"Attach to a running process and serve its heap profile and memory\n"
"readings over HTTP until stopped (SIGTERM or Ctrl-C detach cleanly):\n"
"  /debug/pprof/heap     in-use and allocated (pprof; go tool pprof URL)\n"
"  /debug/pprof/allocs   the same, allocations first; ?seconds=N on either:\n"
"                        the change over the next N seconds\n"
"  /metrics              Prometheus text: the readings of `pprof-alloc stats`\n"
"  /healthz, /           health, an index page\n"
"\n"
"  -p, --pid PID          the process\n"
"      --pid-file FILE    ... read from FILE (a service's PID file)\n"
"  -l, --listen ADDR:PORT where to listen (default 127.0.0.1:6060; another\n"
"                         address, or :PORT for all, only when given)\n"
"      --every SECONDS    also write a profile this often into --out-dir, as\n"
"                         pprof-alloc.PID.TIME.pb.gz (atomically)\n"
"      --out-dir DIR      where --every writes (and a last one at exit)\n"
"      --keep N           keep the newest N of those (default %u)\n"
"      --header-timeout SECONDS\n"
"                         how long a client has to send a whole request\n"
"                         header, from connecting or from its last response,\n"
"                         before it is disconnected (default %u)\n"
REC_OPTIONS_HELP
"      --no-symbolize     serve addresses only\n"
DEBUG_OPTIONS_HELP
"  -q, --quiet            say nothing on stderr but errors\n"
"  -h, --help             this help\n"
"\n"
"Exit status: 0 when stopped, 1 if attaching or listening failed, 2 for a\n"
"usage error.\n", DEFAULT_KEEP, HTTP_HEADER_TIMEOUT_MS / 1000);
}

static int bad(const char *opt, const char *arg, const char *what)
{
	fprintf(stderr, "%s: invalid %s '%s': %s\n", prog, opt, arg, what);
	return -EINVAL;
}

/*
 * The PID in a PID file: one decimal number, a newline at most.  The file
 * is the service's to write, so it may name only a process of whoever
 * controls it - else a compromised service could point a root serve at
 * another user's process, or at init.  Who controls it is its owner, or,
 * for a root-owned file in a directory someone else owns (who can swap
 * root's file in there), that directory's owner (systemd's PIDFile= rule).
 * The last component must not be a symbolic link (it would name the
 * target's owner, not the link's) and the file must be a regular one with
 * one name: opened with O_PATH first, so not even a device's open runs.
 * 0, -EINVAL (not a PID file), -EPERM (another user's process), -ESRCH
 * (*pid names no process), -errno.
 */
static int read_pid_file(const char *path, pid_t *pid, const char **why)
{
	char buf[32], status[64], dir[PATH_MAX], *slash;
	struct stat st = { 0 }, dst, proc;
	uid_t owner;
	int32_t v;
	ssize_t n;
	int fd = open(path, O_PATH | O_CLOEXEC | O_NOFOLLOW), rfd;

	*why = NULL;
	if (fd < 0)
		return -errno;
	/* O_PATH | O_NOFOLLOW opens a symbolic link itself */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
		close(fd);
		*why = S_ISLNK(st.st_mode) ?
			"a symbolic link (give the file itself)" :
			"not a regular file with one name";
		return -EINVAL;
	}
	snprintf(status, sizeof(status), "/proc/self/fd/%d", fd);
	rfd = open(status, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	close(fd);
	if (rfd < 0)
		return -errno;
	fd = rfd;
	owner = st.st_uid;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		slash[slash == dir] = 0;	/* "/x" -> "/" */
	if (!owner && stat(dir, &dst)) {
		close(fd);
		return -errno;
	}
	if (!owner && dst.st_uid)
		owner = dst.st_uid;
	else if (!owner && (dst.st_mode & 022) && !(dst.st_mode & S_ISVTX)) {
		close(fd);
		*why = "in a directory that others may write";
		return -EPERM;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0 || parse_pid_text(buf, (size_t)n, &v)) {
		*why = "not a PID file (one process id)";
		return -EINVAL;
	}
	*pid = (pid_t)v;
	snprintf(status, sizeof(status), "/proc/%d", (int)v);
	if (stat(status, &proc))
		return errno == ENOENT ? -ESRCH : -errno;
	/* /proc/PID belongs to the process's effective user */
	if (owner && owner != proc.st_uid) {
		*why = "names a process of another user than the file's owner";
		return -EPERM;
	}
	return 0;
}

static int parse_options(int argc, char **argv, struct serve_options *o)
{
	enum { OPT_PID_FILE = 256, OPT_EVERY, OPT_OUT_DIR, OPT_KEEP,
	       OPT_HEADER_TIMEOUT, OPT_NOSYM };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "pid-file", required_argument, NULL, OPT_PID_FILE },
		{ "listen", required_argument, NULL, 'l' },
		{ "every", required_argument, NULL, OPT_EVERY },
		{ "out-dir", required_argument, NULL, OPT_OUT_DIR },
		{ "keep", required_argument, NULL, OPT_KEEP },
		{ "header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT },
		REC_LONGOPTS,
		{ "no-symbolize", no_argument, NULL, OPT_NOSYM },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		DEBUG_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	bool keep_given = false;
	uint64_t v;
	double d;
	int c, mine, err;

	*o = (struct serve_options){
		.listen = "127.0.0.1:6060", .keep = DEFAULT_KEEP,
		.symbolize = true,
	};
	rec_options__init(&o->rec, REC_MAX_STACKS_SERVE);
	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:l:r:qh", longopts, NULL)) != -1) {
		mine = debug_options__parse(&o->debug, prog, c, optarg);
		if (!mine)
			mine = rec_options__parse(&o->rec, prog, c, optarg);
		if (mine < 0)
			return mine;
		if (mine)
			continue;
		switch (c) {
		case 'p':
			if (parse_size(optarg, &v) || !v || v > INT32_MAX)
				return bad("--pid", optarg, "want a process id");
			o->pid = (pid_t)v;
			break;
		case OPT_PID_FILE:
			o->pid_file = optarg;
			break;
		case 'l':
			o->listen = optarg;
			break;
		case OPT_EVERY:
			if (parse_seconds(optarg, 1, 1e7, &d))
				return bad("--every", optarg, "want seconds, at least 1");
			o->every_ns = (uint64_t)(d * 1e9);
			break;
		case OPT_OUT_DIR:
			o->out_dir = optarg;
			break;
		case OPT_KEEP:
			if (parse_size(optarg, &v) || !v || v > 1000000)
				return bad("--keep", optarg, "want a count from 1");
			o->keep = (unsigned int)v;
			keep_given = true;
			break;
		case OPT_HEADER_TIMEOUT:
			if (parse_seconds(optarg, 0.5, 3600, &d))
				return bad("--header-timeout", optarg,
					   "want seconds, 0.5 to 3600");
			o->header_timeout_ms = (unsigned int)(d * 1000);
			break;
		case OPT_NOSYM:
			o->symbolize = false;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr, "Try 'pprof-alloc serve --help'.\n");
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[optind]);
		return -EINVAL;
	}
	if (!o->pid == !o->pid_file) {
		fprintf(stderr, "%s: give --pid or --pid-file (one of them)\n", prog);
		return -EINVAL;
	}
	{
		char host[256];
		unsigned int port;

		if (http__parse_listen(o->listen, host, sizeof(host), &port)) {
			fprintf(stderr, "%s: invalid --listen '%s': want HOST:PORT, [IPV6]:PORT or :PORT\n",
				prog, o->listen);
			return -EINVAL;
		}
	}
	if (o->pid_file) {
		const char *why;
		pid_t named = 0;

		err = read_pid_file(o->pid_file, &named, &why);
		if (err == -ESRCH) {
			fprintf(stderr, "%s: PID file %s names process %d, which does not exist\n",
				prog, o->pid_file, (int)named);
			return -EINVAL;
		}
		if (err) {
			fprintf(stderr, "%s: --pid-file %s: %s\n", prog, o->pid_file,
				why ? why : strerror(-err));
			return -EINVAL;
		}
		o->pid = named;
	}
	if (!o->every_ns != !o->out_dir || (keep_given && !o->every_ns)) {
		fprintf(stderr, "%s: --every and --out-dir go together (and --keep with them)\n",
			prog);
		return -EINVAL;
	}
	if (o->out_dir) {
		struct stat st;

		if (stat(o->out_dir, &st) || !S_ISDIR(st.st_mode) ||
		    access(o->out_dir, W_OK)) {
			fprintf(stderr, "%s: --out-dir %s: not a directory we can write to\n",
				prog, o->out_dir);
			return -EINVAL;
		}
	}
	if (rec_options__finish(&o->rec, prog))
		return -EINVAL;
	o->acfg = (struct attach_config){
		.rate = o->rec.rate, .max_frames = o->rec.max_frames,
		.ring_size = o->rec.ring_size, .live_size = o->rec.live_size,
		.timeout_ms = 5000, .stats = true,
		.unwind = o->rec.unwind, .stack_bytes = o->rec.stack_bytes,
	};
	return 0;
}

int serve__main(int argc, char **argv)
{
	static struct serve sv;
	struct serve_options o;
	struct http_content content = {
		.ctx = &sv, .profile = serve_profile, .metrics = serve_metrics,
	};
	struct http_server *http = NULL;
	struct attach_stats st = { 0 };
	char why[256];
	sigset_t sigs;
	int sfd = -1, pidfd = -1, code = 1;
	char *agent;

	argv[0] = (char *)prog;
	if (parse_options(argc, argv, &o)) {
		debug_options__fini(&o.debug);
		return 2;
	}
	agent = launch__find_agent();
	if (!agent) {
		fprintf(stderr, "%s: cannot find the agent libpprof-alloc.so next to the tracer or in ../lib/pprof-alloc/; set PPROF_ALLOC_AGENT\n",
			prog);
		goto out_opts;
	}
	o.acfg.agent = agent;
	o.acfg.owner_addr = o.listen;	/* named to a second tracer */
	memset(&sv, 0, sizeof(sv));
	sv.o = &o;
	sv.pid = o.pid;
	sv.rf.fd = -1;
	pthread_mutex_init(&sv.lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&sv.wake, &ca);
		pthread_condattr_destroy(&ca);
	}
	debug_options__get(&o.debug, &sv.dopts);

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGPIPE);
	/* before any thread starts, so that every thread has them blocked */
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		fprintf(stderr, "%s: signalfd: %s\n", prog, strerror(errno));
		goto out_agent;
	}
	/* listen first: a port in use must not cost the target an attach
	 * and a detach (503 until attached) */
	http = http__start(o.listen, o.header_timeout_ms, &content, why,
			   sizeof(why));
	if (!http) {
		fprintf(stderr, "%s: %s\n", prog, why);
		goto out_signals;
	}
	pthread_mutex_lock(&sv.lock);
	sv.http = http;
	pthread_mutex_unlock(&sv.lock);
	if (attach_target(&sv, &st)) {
		http__stop(http);
		goto out_session;
	}
	sv.start_ns = pa_now_ns();
	pidfd = (int)syscall(SYS_pidfd_open, sv.pid, 0);
	pthread_mutex_lock(&sv.lock);
	sv.ready = true;
	pthread_mutex_unlock(&sv.lock);
	if (!o.quiet)
		fprintf(stderr, "%s: %s process %d; serving http://%s/debug/pprof/heap (port %u)\n",
			prog, st.existing ? "connected to the agent in" :
			"attached to", (int)sv.pid, o.listen, http__port(http));
	loop(&sv, sfd, pidfd, &st);

	/* stopped: no new requests, waiting ones woken */
	pthread_mutex_lock(&sv.lock);
	sv.stopping = true;
	pthread_cond_broadcast(&sv.wake);
	pthread_mutex_unlock(&sv.lock);
	http__stop(http);
	if (sv.alive) {
		detach_target(&sv, &st);
		if (o.out_dir)
			write_file(&sv);	/* the last (target_gone wrote
						   one for a target gone) */
	}
	code = 0;
out_session:
	if (pidfd >= 0)
		close(pidfd);
	symbols__free(sv.syms);
	free(sv.cache[0].buf);
	free(sv.cache[1].buf);
	if (sv.have_last)
		readings__fini(&sv.last);
	session__fini(&sv.s);
	ring_consumer__fini(&sv.rc);
	ringfile__close(&sv.rf);
out_signals:
	close(sfd);
out_agent:
	free(agent);
out_opts:
	debug_options__fini(&o.debug);
	return code;
}
