// SPDX-License-Identifier: MIT
/*
 * main.c - the pprof-alloc command: options, the event loop, the exit.
 *
 *   pprof-alloc [options] -- CMD [ARGS...]
 *
 * One thread.  The tracer blocks the signals it cares about and reads them
 * from a signalfd, so the loop is: wait, handle signals, drain the ring
 * into the aggregate, and, when
 * a stack shows a code address outside every known mapping, re-read the
 * target's mappings.  When the command exits, the last records are drained
 * (final: nobody will finish a half-written record now), the profile is
 * written, and the tracer exits with the command's status (128 + signal if
 * it was killed, as shells report it).
 *
 * The wait adapts to the traffic: from the bytes each drain found and the
 * time since the last one, the loop estimates the fill rate and waits for
 * about an eighth of the ring to fill (between POLL_MIN_MS and POLL_MAX_MS;
 * the estimate remembers peaks, so a burst after a quiet start is met by a
 * short wait rather than a long one); over 1/8 full it does not wait.
 * The tracer runs as SCHED_BATCH, so its wake-ups do not preempt the
 * target's threads - on a machine whose cores the target keeps busy, a
 * 10 ms poll alone cost it about 5% (bench-alloc, 2 cores).
 *
 * Signals: SIGINT and SIGQUIT typed at the terminal reach the whole
 * foreground process group, the command included, so they are forwarded
 * only when they were sent to the tracer alone (si_code != SI_KERNEL).
 * SIGTERM and SIGHUP are always forwarded.  The tracer keeps running until
 * the command exits, so nothing it recorded is lost.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "consumer.h"
#include "heap.h"
#include "launch.h"
#include "mappings.h"
#include "report.h"
#include "ringfile.h"

#define DEFAULT_RATE		524288ull
#define DEFAULT_MAX_FRAMES	64u
#define DEFAULT_RING		(8ull << 20)
#define DEFAULT_RING_ALL	(32ull << 20)	/* --rate 1 */
#define DEFAULT_LIVE		(1ull << 16)
#define DEFAULT_LIVE_ALL	(1ull << 20)	/* --rate 1 */
#define POLL_MIN_MS		1
#define POLL_START_MS		10
#define POLL_MAX_MS		50
#define REFRESH_MIN_NS		(20ull * 1000000)

static const char *prog = "pprof-alloc";

struct options {
	const char *output;
	uint64_t rate;
	uint32_t max_frames;
	uint64_t ring_size;
	uint64_t live_size;
	int top;
	bool symbolize;
	bool quiet;
	char **argv;
};

static void usage(FILE *out)
{
	fprintf(out,
"Usage: %s [OPTIONS] -- COMMAND [ARGS...]\n"
"Run COMMAND with the pprof-alloc agent and write a heap profile (gzipped\n"
"pprof) of its sampled allocations when it exits.\n"
"\n"
"  -o, --output FILE      where to write the profile\n"
"                         (default: pprof-alloc.<pid>.pb.gz)\n"
"  -r, --rate BYTES       mean bytes between samples (default 524288);\n"
"                         1 records every allocation\n"
"      --max-frames N     deepest stack recorded (default 64, at most %u)\n"
"      --ring-size BYTES  ring buffer size, a power of two, K/M/G allowed\n"
"                         (default 8M, 32M with --rate 1)\n"
"      --live-size N      live-table entries, a power of two\n"
"                         (default 65536, 1048576 with --rate 1)\n"
"      --top N            also print the N largest allocation sites\n"
"      --no-symbolize     keep addresses only (symbolize later)\n"
"  -q, --quiet            no summary on stderr\n"
"  -h, --help             this help\n"
"\n"
"Read the profile with: go tool pprof -top FILE\n"
"Exit status: COMMAND's (128+N if it was killed by signal N); 1 if the\n"
"profile could not be written; 2 for a usage error.\n",
		prog, PA_MAX_FRAMES);
}

/* A size with an optional K/M/G suffix (powers of 1024). */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned int shift = 0;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (*end == 'i' && shift)
		end++;
	if ((*end == 'b' || *end == 'B') && shift)
		end++;
	if (*end || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static int bad_option(const char *opt, const char *arg, const char *what)
{
	fprintf(stderr, "%s: invalid %s '%s': %s\n", prog, opt, arg, what);
	return -EINVAL;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_MAX_FRAMES = 256, OPT_RING, OPT_LIVE, OPT_TOP, OPT_NOSYM };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "rate", required_argument, NULL, 'r' },
		{ "max-frames", required_argument, NULL, OPT_MAX_FRAMES },
		{ "ring-size", required_argument, NULL, OPT_RING },
		{ "live-size", required_argument, NULL, OPT_LIVE },
		{ "top", required_argument, NULL, OPT_TOP },
		{ "no-symbolize", no_argument, NULL, OPT_NOSYM },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c;

	*o = (struct options){ .rate = DEFAULT_RATE,
			       .max_frames = DEFAULT_MAX_FRAMES,
			       .symbolize = true };
	while ((c = getopt_long(argc, argv, "+o:r:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!*optarg)
				return bad_option("--output", optarg, "empty");
			o->output = optarg;
			break;
		case 'r':
			if (parse_size(optarg, &v) || !v || v > (1ull << 40))
				return bad_option("--rate", optarg,
						  "want bytes from 1 to 1T");
			o->rate = v;
			break;
		case OPT_MAX_FRAMES:
			if (parse_size(optarg, &v) || !v || v > PA_MAX_FRAMES)
				return bad_option("--max-frames", optarg,
						  "want 1 to 256");
			o->max_frames = (uint32_t)v;
			break;
		case OPT_RING:
			if (parse_size(optarg, &v) || !pa_is_pow2(v) ||
			    v < PA_RING_MIN || v > PA_RING_MAX)
				return bad_option("--ring-size", optarg,
						  "want a power of two from 64K to 1G");
			o->ring_size = v;
			break;
		case OPT_LIVE:
			if (parse_size(optarg, &v) || !pa_is_pow2(v) ||
			    v < PA_LIVE_MIN || v > PA_LIVE_MAX)
				return bad_option("--live-size", optarg,
						  "want a power of two from 1024 to 67108864");
			o->live_size = v;
			break;
		case OPT_TOP:
			if (parse_size(optarg, &v) || v > 100000)
				return bad_option("--top", optarg,
						  "want a count");
			o->top = (int)v;
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
			fprintf(stderr, "Try '%s --help'.\n", prog);
			return -EINVAL;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "%s: no command to run\n", prog);
		fprintf(stderr, "Usage: %s [OPTIONS] -- COMMAND [ARGS...]\n",
			prog);
		return -EINVAL;
	}
	if (!o->ring_size)
		o->ring_size = o->rate == 1 ? DEFAULT_RING_ALL : DEFAULT_RING;
	if (!o->live_size)
		o->live_size = o->rate == 1 ? DEFAULT_LIVE_ALL : DEFAULT_LIVE;
	o->argv = argv + optind;
	return 0;
}

/* Fill-rate estimate for the adaptive wait: bytes per ms, decaying. */
struct fill_rate {
	uint64_t last_ns;
	double bytes_per_ms;
};

static int next_wait_ms(struct fill_rate *f, uint64_t pending, uint64_t now,
			uint64_t ring)
{
	double ms = f->last_ns ? (double)(now - f->last_ns) / 1e6 : 0;
	double rate = ms > 0.05 ? (double)pending / ms : 0, wait;

	f->last_ns = now;
	/* peaks count at once, quiet periods fade slowly */
	f->bytes_per_ms = rate > f->bytes_per_ms ? rate :
			  f->bytes_per_ms * 0.9 + rate * 0.1;
	if (f->bytes_per_ms < 1)
		return POLL_MAX_MS;
	wait = (double)ring / 8 / f->bytes_per_ms;
	return wait < POLL_MIN_MS ? POLL_MIN_MS :
	       wait > POLL_MAX_MS ? POLL_MAX_MS : (int)wait;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct session {
	struct heap heap;
	struct mapping_set maps;
	bool need_refresh;
	bool pending_modules;
	uint64_t last_refresh;
};

static int on_record(void *ctx, const struct pa_rec_hdr *rec)
{
	struct session *s = ctx;
	int made;

	if (rec->type == PA_REC_FREE) {
		heap__free(&s->heap, (const struct pa_rec_free *)rec);
		return 0;
	}
	if (rec->type == PA_REC_MODULE) {
		const struct pa_rec_module *m = (const void *)rec;

		/* While the target lives, /proc (map_files) is the better
		 * source; the record is kept for after its death. */
		if (!mapping_set__find(&s->maps, m->start))
			s->need_refresh = true;
		s->pending_modules = true;
		return mapping_set__note(&s->maps, m->start, m->end, m->offset,
					 m->bias, m->path, m->path_len,
					 m->build_id, m->build_id_len) == -ENOMEM ?
			       -ENOMEM : 0;
	}
	made = heap__alloc(&s->heap, (const struct pa_rec_alloc *)rec);
	if (made < 0)
		return made;
	if (made && !s->need_refresh) {
		const struct pa_rec_alloc *a = (const void *)rec;
		uint32_t i;

		for (i = 0; i < a->nframes; i++)
			if (!mapping_set__find(&s->maps, a->frames[i])) {
				s->need_refresh = true;
				break;
			}
	}
	return 0;
}

static void describe_end(int status, char *buf, size_t len, int *code)
{
	if (WIFEXITED(status)) {
		*code = WEXITSTATUS(status);
		snprintf(buf, len, "exited with status %d", *code);
	} else if (WIFSIGNALED(status)) {
		*code = 128 + WTERMSIG(status);
		snprintf(buf, len, "was killed by signal %d (%s)%s",
			 WTERMSIG(status), strsignal(WTERMSIG(status)),
			 WCOREDUMP(status) ? ", core dumped" : "");
	} else {
		*code = 1;
		snprintf(buf, len, "ended with wait status %#x", status);
	}
}

static void command_line(char **argv, char *buf, size_t len)
{
	size_t at = 0;
	int i;

	buf[0] = 0;
	for (i = 0; argv[i] && at + 1 < len; i++) {
		int n = snprintf(buf + at, len - at, "%s%s", i ? " " : "",
				 argv[i]);

		if (n < 0)
			break;
		at += (size_t)n;
	}
}

int main(int argc, char **argv)
{
	struct options o;
	struct ringfile rf = { .fd = -1 };
	struct ring_consumer rc;
	struct session s;
	sigset_t sigs;
	char *agent = NULL, ended[128] = "", cmd[1024], outbuf[64];
	const char *why = NULL, *output;
	uint64_t start_ns;
	bool exited = false, maps_ready = false, ring_ok = true;
	int sfd = -1, err, status = 0, code = 1, poll_ms = POLL_START_MS;
	struct fill_rate fill = { 0, 0 };
	pid_t child = -1;

	if (parse_options(argc, argv, &o))
		return 2;

	agent = launch__find_agent();
	if (!agent) {
		fprintf(stderr, "%s: cannot find the agent libpprof-alloc.so next to the tracer or in ../lib/pprof-alloc/; set PPROF_ALLOC_AGENT\n",
			prog);
		return 1;
	}
	err = ringfile__create(&rf, o.ring_size, o.live_size, o.rate,
			       o.max_frames);
	if (err) {
		fprintf(stderr, "%s: cannot create the ring memfd: %s\n", prog,
			strerror(-err));
		goto out_free_agent;
	}
	err = ring_consumer__init(&rc, rf.hdr, (uint8_t *)rf.hdr + PA_HEADER_SIZE,
				  rf.data_size, rf.max_frames);
	if (err) {
		fprintf(stderr, "%s: %s\n", prog, strerror(-err));
		goto out_close_ring;
	}

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGQUIT);
	sigaddset(&sigs, SIGCHLD);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		fprintf(stderr, "%s: signalfd: %s\n", prog, strerror(errno));
		goto out_fini_consumer;
	}

	start_ns = now_ns();
	err = launch__spawn(o.argv, agent, rf.fd, &sigs, &child, &why);
	if (err) {
		fprintf(stderr, "%s: %s '%s': %s\n", prog, why, o.argv[0],
			strerror(-err));
		code = err == -ENOENT ? 127 : 126;
		goto out_close_sfd;
	}
	heap__init(&s.heap, o.rate);
	mapping_set__init(&s.maps, child);
	s.need_refresh = false;
	s.pending_modules = false;
	s.last_refresh = 0;

	{
		struct sched_param sp = { 0 };

		sched_setscheduler(0, SCHED_BATCH, &sp);	/* best effort */
	}
	while (!exited) {
		struct pollfd pfd = { .fd = sfd, .events = POLLIN };
		struct signalfd_siginfo si;
		uint64_t pending = ring_ok ? ring_consumer__pending(&rc) : 0;
		uint64_t now;

		if (pending <= rf.data_size / 8)
			poll(&pfd, 1, maps_ready ? poll_ms : 1);
		while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGCHLD) {
				pid_t w = waitpid(child, &status, WNOHANG);

				if (w == child)
					exited = true;
				continue;
			}
			if ((si.ssi_signo == SIGINT ||
			     si.ssi_signo == SIGQUIT) &&
			    si.ssi_code == SI_KERNEL)
				continue;	/* the terminal told the child */
			kill(child, (int)si.ssi_signo);
		}
		now = now_ns();
		if (!maps_ready && !exited &&
		    __atomic_load_n(&rf.hdr->agent_state, __ATOMIC_ACQUIRE) ==
			    PA_STATE_RUNNING) {
			mapping_set__refresh(&s.maps);
			s.last_refresh = now;
			maps_ready = true;
			__atomic_store_n(&rf.hdr->tracer_state,
					 PA_TRACER_READY, __ATOMIC_RELEASE);
		}
		if (ring_ok) {
			pending = ring_consumer__pending(&rc);
			poll_ms = next_wait_ms(&fill, pending, now,
					       rf.data_size);
			err = ring_consumer__drain(&rc, on_record, &s, now,
						   exited);
			if (err < 0) {
				ring_ok = false;
				if (err == -EPROTO)
					fprintf(stderr, "%s: the target's ring is corrupt (%s); no longer reading it\n",
						prog, rc.error);
				else
					fprintf(stderr, "%s: out of memory reading the ring: %s\n",
						prog, strerror(-err));
			}
		}
		if (s.need_refresh && !exited &&
		    now - s.last_refresh >= REFRESH_MIN_NS) {
			mapping_set__refresh(&s.maps);
			s.last_refresh = now;
			s.need_refresh = false;
		}
	}
	describe_end(status, ended, sizeof(ended), &code);

	if (__atomic_load_n(&rf.hdr->agent_state, __ATOMIC_ACQUIRE) !=
	    PA_STATE_RUNNING)
		fprintf(stderr, "%s: the agent never started in '%s': is it statically linked, or setuid?\n",
			prog, o.argv[0]);

	output = o.output;
	if (!output) {
		snprintf(outbuf, sizeof(outbuf), "pprof-alloc.%d.pb.gz",
			 (int)child);
		output = outbuf;
	}
	if (s.pending_modules)
		mapping_set__open_reported(&s.maps);
	command_line(o.argv, cmd, sizeof(cmd));
	{
		struct report_info info = {
			.command = cmd,
			.ended = ended,
			.lost_records = rf.hdr->lost_records,
			.lost_bytes = rf.hdr->lost_bytes,
			.live_overflow = rf.hdr->live_overflow,
			.agent_samples = s.heap.allocs + rf.hdr->lost_samples,
			.skipped_busy = rc.skipped_busy,
			.resyncs = rc.resyncs,
			.time_nanos = (int64_t)time(NULL) * 1000000000ll,
			.duration_nanos = (int64_t)(now_ns() - start_ns),
			.symbolize = o.symbolize,
		};

		err = report__write(&s.heap, &s.maps, &info, output);
		if (err) {
			fprintf(stderr, "%s: cannot write %s: %s\n", prog,
				output, strerror(-err));
			code = 1;
		} else if (!o.quiet) {
			fprintf(stderr, "%s: %s %s; wrote %s (%" PRIu64
				" samples",
				prog, o.argv[0], ended, output, s.heap.allocs);
			if (info.lost_records)
				fprintf(stderr, ", %" PRIu64
					" records LOST: ring full, try a larger --ring-size",
					info.lost_records);
			fprintf(stderr, ")\n");
		}
		if (o.top)
			report__top(&s.heap, &s.maps, o.top, stdout);
	}
	mapping_set__fini(&s.maps);
	heap__fini(&s.heap);
out_close_sfd:
	close(sfd);
out_fini_consumer:
	ring_consumer__fini(&rc);
out_close_ring:
	ringfile__close(&rf);
out_free_agent:
	free(agent);
	return code;
}
