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
 * While the ring is calm the tracer runs as SCHED_BATCH, so its wake-ups do
 * not preempt the target's threads - on a machine whose cores the target
 * keeps busy, a 10 ms poll alone cost it about 5% (bench-alloc, 2 cores).
 * When the ring passes a quarter full it goes back to normal priority, so
 * that on a loaded machine it keeps up rather than let records drop; back
 * to batch below 1/32.
 *
 * Signals: SIGINT and SIGQUIT typed at the terminal reach the whole
 * foreground process group, the command included, so they are forwarded
 * only when they were sent to the tracer alone (si_code != SI_KERNEL).
 * SIGTERM and SIGHUP are always forwarded.  The tracer keeps running until
 * the command exits, so nothing it recorded is lost.
 *
 * Outputs: where the profile and its readings go is checked before
 * anything is launched or attached to (tracer/outpath.c); a place that
 * fails anyway at the end (removed meanwhile, disk full) gets a fallback,
 * said loudly, and the exit status stays the command's.
 *
 * The end: the target's memory cgroup (and /proc/vmstat) is read when the
 * run starts and again after the target's death, so that an OOM kill is
 * told from any other SIGKILL (readings__oom_verdict) and PROFILE.json has
 * the cgroup as the death left it.  Records lost to a full ring are
 * explained by what the tracer was doing meanwhile: busy all the time (it
 * cannot keep up: a larger ring only delays the loss, sampling helps) or
 * waiting (a burst filled the ring between drains: a larger ring helps).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "args.h"
#include "attach.h"
#include "debugopts.h"
#include "consumer.h"
#include "heap.h"
#include "launch.h"
#include "mappings.h"
#include "outpath.h"
#include "owner.h"
#include "children.h"
#include "follow.h"
#include "inject.h"
#include "postmortem.h"
#include "recopts.h"
#include "report.h"
#include "ringfile.h"
#include "stats_cmd.h"
#include "symbolize_cmd.h"
#include "serve.h"
#include "session.h"
#include "sigbus.h"
#include "stackwalk.h"
#include "symbols.h"
#include "timeline.h"
#include "pa_clock.h"

#define POLL_MIN_MS		1
#define POLL_START_MS		10
/* A follower told to stop gives its process this long to exit first: the
 * terminal's Ctrl-C reaches both. */
#define FOLLOW_GRACE_NS		(300ull * 1000000)
#define POLL_MAX_MS		50

/* Records lost while the tracer waited for records less than this share
 * of the time: it could not keep up (see loss_advice). */
#define LOSS_WAIT_SHARE		0.2

static const char *prog = "pprof-alloc";

struct options {
	const char *output;
	struct rec_options rec;	/* rate, sizes, unwinding */
	int top;
	bool symbolize;
	bool quiet;
	pid_t pid;		/* --pid: attach instead of launching */
	uint64_t duration_ms;	/* --duration */
	uint64_t interval_ns;	/* --interval: a timeline line each */
	bool readings;		/* PROFILE.json (not with --no-readings) */
	bool follow;		/* --follow-children */
	const char *proc_root, *sys_root;
	const char *core;	/* --core: a post-mortem profile */
	struct debug_options debug;
	char **argv;		/* NULL with --pid */
};

static void usage(FILE *out)
{
	fprintf(out,
"Usage: %s [OPTIONS] -- COMMAND [ARGS...]\n"
"       %s [OPTIONS] --pid PID [--duration SECONDS]\n"
"       %s [OPTIONS] --core CORE-FILE\n"
"       %s symbolize [OPTIONS] PROFILE -o OUTPUT   (see symbolize --help)\n"
"       %s stats --pid PID [--json|--prometheus]    (see stats --help)\n"
"       %s serve --pid PID [--listen ADDR:PORT]     (see serve --help)\n"
"Run COMMAND with the pprof-alloc agent, or attach to the running process\n"
"PID, and write a heap profile (gzipped pprof) of its sampled allocations\n"
"when it exits or, attached, when the tracer detaches (after --duration,\n"
"or on Ctrl-C / SIGTERM).\n"
"\n"
"  -o, --output FILE      where to write the profile\n"
"                         (default: pprof-alloc.<pid>.pb.gz)\n"
REC_OPTIONS_HELP
"      --top N            also print the N largest allocation sites\n"
"      --no-symbolize     keep addresses only (symbolize later with\n"
"                         `pprof-alloc symbolize`)\n"
DEBUG_OPTIONS_HELP
"  -p, --pid PID          attach to a running process (ptrace; the agent is\n"
"                         loaded into it, and unhooked again on detach)\n"
"      --duration SECONDS with --pid: detach after this long\n"
"      --follow-children  profile the command's descendants too, one\n"
"                         profile per process beside the main one:\n"
"                         heap.PID.COMM.pb.gz for -o heap.pb.gz (a process\n"
"                         that exec's gets one per program it ran)\n"
"      --core FILE        the heap of a process that ran with the agent, from\n"
"                         its core dump (live table and ring at the crash)\n"
"      --interval SECONDS take a reading of the process's memory (smaps,\n"
"                         status, cgroup, allocator, agent, sampled heap)\n"
"                         this often, one JSON line each in\n"
"                         PROFILE.timeline.jsonl (heap.pb.gz: heap.*)\n"
"      --no-readings      do not write PROFILE.json, the readings at the end\n"
"                         (taken every second, or every --interval)\n"
"      --proc-root DIR    read /proc files under DIR (containers)\n"
"      --sys-root DIR     read cgroups under DIR/fs/cgroup\n"
"  -q, --quiet            no summary on stderr\n"
"  -h, --help             this help\n"
"\n"
"Read the profile with: go tool pprof -top FILE\n"
"The output's directory is checked before COMMAND starts; if writing still\n"
"fails at the end, the files go to the current directory or $TMPDIR (/tmp),\n"
"and stderr says where.\n"
"Exit status: COMMAND's (128+N if it was killed by signal N), whatever\n"
"happened to the output; 2 for a usage error or an output that cannot be\n"
"written.  Attached: 0; 1 if attaching failed or the profile is not where\n"
"-o said.\n",
		prog, prog, prog, prog, prog, prog);
}

static int bad_option(const char *opt, const char *arg, const char *what)
{
	fprintf(stderr, "%s: invalid %s '%s': %s\n", prog, opt, arg, what);
	return -EINVAL;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_TOP = 256, OPT_NOSYM, OPT_DURATION, OPT_INTERVAL,
	       OPT_NO_READINGS, OPT_PROC_ROOT, OPT_SYS_ROOT, OPT_CORE,
	       OPT_FOLLOW };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		REC_LONGOPTS,
		{ "top", required_argument, NULL, OPT_TOP },
		{ "no-symbolize", no_argument, NULL, OPT_NOSYM },
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "no-readings", no_argument, NULL, OPT_NO_READINGS },
		{ "proc-root", required_argument, NULL, OPT_PROC_ROOT },
		{ "sys-root", required_argument, NULL, OPT_SYS_ROOT },
		{ "core", required_argument, NULL, OPT_CORE },
		{ "follow-children", no_argument, NULL, OPT_FOLLOW },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		DEBUG_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	double d;
	int c, mine;

	*o = (struct options){ .symbolize = true, .readings = true,
			       .proc_root = "/proc" };
	rec_options__init(&o->rec, REC_MAX_STACKS_PROFILE);
	while ((c = getopt_long(argc, argv, "+o:r:p:qh", longopts, NULL)) != -1) {
		mine = debug_options__parse(&o->debug, prog, c, optarg);
		if (!mine)
			mine = rec_options__parse(&o->rec, prog, c, optarg);
		if (mine < 0)
			return mine;
		if (mine)
			continue;
		switch (c) {
		case 'o':
			if (!*optarg)
				return bad_option("--output", optarg, "empty");
			o->output = optarg;
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
		case 'p':
			if (parse_size(optarg, &v) || !v || v > INT32_MAX)
				return bad_option("--pid", optarg,
						  "want a process id");
			o->pid = (pid_t)v;
			break;
		case OPT_DURATION:
			if (parse_seconds(optarg, 0.001, 1e7, &d))
				return bad_option("--duration", optarg,
						  "want seconds, at least 0.001");
			o->duration_ms = (uint64_t)(d * 1000);
			break;
		case OPT_INTERVAL:
			if (parse_seconds(optarg, 0.01, 1e6, &d))
				return bad_option("--interval", optarg,
						  "want seconds, at least 0.01");
			o->interval_ns = (uint64_t)(d * 1e9);
			break;
		case OPT_NO_READINGS:
			o->readings = false;
			break;
		case OPT_PROC_ROOT:
			o->proc_root = optarg;
			break;
		case OPT_SYS_ROOT:
			o->sys_root = optarg;
			break;
		case OPT_CORE:
			o->core = optarg;
			break;
		case OPT_FOLLOW:
			o->follow = true;
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
	if (o->follow && (o->core || o->pid)) {
		fprintf(stderr, "%s: --follow-children follows a command that pprof-alloc starts; not with %s\n",
			prog, o->core ? "--core" : "--pid");
		return -EINVAL;
	}
	if (o->core) {
		if (o->pid || optind < argc || o->duration_ms ||
		    o->interval_ns) {
			fprintf(stderr, "%s: --core reads a core file: no command, --pid, --duration or --interval with it\n",
				prog);
			return -EINVAL;
		}
		return 0;
	}
	if (o->pid && optind < argc) {
		fprintf(stderr, "%s: give either --pid or a command, not both\n",
			prog);
		return -EINVAL;
	}
	if (o->duration_ms && !o->pid) {
		fprintf(stderr, "%s: --duration goes with --pid\n", prog);
		return -EINVAL;
	}
	if (!o->pid && optind >= argc) {
		fprintf(stderr, "%s: no command to run\n", prog);
		fprintf(stderr, "Usage: %s [OPTIONS] -- COMMAND [ARGS...]\n"
			"       %s [OPTIONS] --pid PID [--duration SECONDS]\n",
			prog, prog);
		return -EINVAL;
	}
	if (o->interval_ns && !o->readings) {
		fprintf(stderr, "%s: --interval takes readings; it does not go with --no-readings\n",
			prog);
		return -EINVAL;
	}
	if (rec_options__finish(&o->rec, prog))
		return -EINVAL;
	o->argv = o->pid ? NULL : argv + optind;
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

/* The tracer's own CPU time (one thread). */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Before anything is launched or attached to: can the profile, and the
 * readings beside it, be written where they are to go?  0, or -errno with
 * one line on stderr.
 */
static int check_outputs(const struct options *o)
{
	char why[PATH_MAX + 128];
	const char *sfx[2] = { ".json", ".timeline.jsonl" };
	int err, i;

	if (!o->output) {
		/* pprof-alloc.<pid>.pb.gz, in the working directory */
		err = outpath__check("pprof-alloc.pid.pb.gz", why, sizeof(why));
		if (err)
			fprintf(stderr, "%s: cannot write the profile in the current directory (pprof-alloc.<pid>.pb.gz): %s; give -o FILE\n",
				prog, why);
		return err;
	}
	err = outpath__check(o->output, why, sizeof(why));
	if (err) {
		fprintf(stderr, "%s: cannot write the profile %s: %s\n", prog,
			o->output, why);
		return err;
	}
	for (i = 0; i < 2 && o->readings && !o->core; i++) {
		char *path;

		if (i == 1 && !o->interval_ns)
			break;
		path = timeline__sibling(o->output, sfx[i]);
		if (!path)
			return -ENOMEM;
		err = outpath__check(path, why, sizeof(why));
		if (err)
			fprintf(stderr, "%s: cannot write the readings %s: %s (give another -o, or --no-readings)\n",
				prog, path, why);
		free(path);
		if (err)
			return err;
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

/* Everything one tracing run holds, launched or attached. */
struct run {
	struct options *o;
	struct ringfile rf;
	struct ring_consumer rc;
	struct session s;
	int sfd, pidfd;
	pid_t pid;		/* the target */
	pid_t child;		/* launched: our child; attached: -1 */
	bool ring_ok, maps_ready, exited, stop, batch;
	int status;		/* launched: its wait status */
	int poll_ms;
	struct fill_rate fill;
	uint64_t start_ns, deadline_ns;
	uint64_t invoked_ns;	/* when the tracer started */
	uint64_t last_exec_check;
	bool exec_warned;
	/* attached: have the agent hook what the target dlopens */
	const struct attach_config *acfg;
	struct attach_stats *ast;
	uint32_t seen_dlopens;
	uint64_t rescan_at;
	char comm[64];		/* at the start-up handshake */
	uint64_t first_record_ns;
	char output[PATH_MAX];	/* the profile's path */
	struct timeline tl;
	bool tl_open;
	/* the target's memory cgroup and the machine's OOM kills at the
	 * start, for the verdict at the end */
	struct cgroup_reading cg_start;
	bool have_vm_start;
	uint64_t vm_oom_start;
	/* records lost so far, and the tracer's CPU time, the time it
	 * waited for records (poll) and the wall time over the stretches in
	 * which more were lost (between two drains) */
	uint64_t lost_seen, loss_cpu_ns, loss_wait_ns, loss_wall_ns;
	uint64_t last_cpu_ns, last_wait_ns, last_wall_ns;
	uint64_t wait_ns;	/* waited for records, in all */
	uint64_t drain_cpu_ns;	/* CPU time spent draining, in all */
	struct children ch;	/* launched: descendants with the agent, off */
	struct follow fl;	/* --follow-children: their followers */
	/* a follower (run_followed): the image it follows exec'd (SIGUSR1);
	 * when it stops following, after a signal (the process may be
	 * dying of the same one) */
	bool followed, execd;
	uint64_t stop_at;
	bool stop_following;	/* told to stop: no new followers */
};

static void batch_priority(struct run *r, bool batch)
{
	struct sched_param sp = { 0 };

	if (r->batch == batch)
		return;
	sched_setscheduler(0, batch ? SCHED_BATCH : SCHED_OTHER, &sp);
	r->batch = batch;	/* best effort: a failure changes nothing */
}

/* Not gone and not a zombie (a zombie that is not ours may stay one). */
static bool process_alive(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	if (kill(pid, 0) && errno == ESRCH)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno != ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

/*
 * The wait status of a process that has exited and not been reaped yet:
 * field 52 of /proc/PID/stat (exit_code, Linux 3.5+).  0, or -ESRCH.
 */
static int zombie_status(pid_t pid, int *status)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || (p[2] != 'Z' && p[2] != 'X'))
		return -ESRCH;
	/* field 3 is the state, after ") " */
	for (field = 3, p += 2; *p && field < 52; p++)
		if (*p == ' ')
			field++;
	if (field != 52 || *p < '0' || *p > '9')
		return -ESRCH;
	*status = (int)strtol(p, NULL, 10);
	return 0;
}

/* The target's comm ("" if unreadable); it changes when it exec()s. */
static void read_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	buf[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
}

/*
 * The exit status of pid, which has exited (its pidfd said so): from its
 * zombie, which may take a moment to become one (the pidfd is told before
 * the state is set).  0, or -ESRCH when its parent reaped it first.
 */
static int exit_status(pid_t pid, int *status)
{
	struct timespec ms = { 0, 1000000 };
	int i;

	for (i = 0; i < 200; i++) {
		if (!zombie_status(pid, status))
			return 0;
		if (!process_alive(pid) && kill(pid, 0) && errno == ESRCH)
			return -ESRCH;
		nanosleep(&ms, NULL);
	}
	return -ESRCH;
}

/*
 * How a process that is not our child ended, from its zombie: "exited
 * with status N" or "was killed by signal N", then suffix; or, when its
 * parent reaped it first, that it is unknown (an OOM kill is then told by
 * the counter alone: *sigkilled is set, *known cleared).
 */
static void describe_exit(pid_t pid, const char *suffix, char *ended,
			  size_t size, bool *sigkilled, bool *known)
{
	int status, dummy;

	*known = true;
	if (!exit_status(pid, &status)) {
		describe_end(status, ended, size, &dummy);
		strncat(ended, suffix, size - strlen(ended) - 1);
		*sigkilled = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
		return;
	}
	snprintf(ended, size, "exited%s (how is unknown: its parent reaped it first)",
		 suffix);
	*sigkilled = true;
	*known = false;
}

/* A follower whose process ended, told nothing: a moment for the main
 * tracer's word that the process exec'd (SIGUSR1), which is on its way if
 * the new program announced itself.  True if it came. */
static bool wait_exec_notice(struct run *r, int ms)
{
	struct signalfd_siginfo si;
	struct pollfd pfd = { .fd = r->sfd, .events = POLLIN };
	uint64_t end = pa_now_ns() + (uint64_t)ms * 1000000ull;

	while (pa_now_ns() < end) {
		poll(&pfd, 1, 10);
		while (read(r->sfd, &si, sizeof(si)) == sizeof(si))
			if (si.ssi_signo == SIGUSR1)
				return true;
	}
	return false;
}

/*
 * The agent of a launched program records the process image that started;
 * if that image exec()s another program (a wrapper script, env, nice...),
 * the new image's agent records into a memfd nobody reads.  Say so: seen
 * by comm (still readable from the zombie at exit) or by /proc/PID/exe.
 */
static void warn_if_exec(struct run *r)
{
	char comm[64];

	if (r->exec_warned || !r->comm[0] || r->o->follow)
		return;		/* followed, the new program is profiled */
	read_comm(r->pid, comm, sizeof(comm));
	if (!comm[0] || !strcmp(comm, r->comm))
		return;
	fprintf(stderr, "%s: warning: %s exec'd another program (%s); only what ran before the exec is profiled - run the final program directly\n",
		prog, r->comm, comm);
	r->exec_warned = true;
}

static void readings_source(struct run *r, struct readings_source *src)
{
	*src = (struct readings_source){
		.proc_root = r->o->proc_root, .sys_root = r->o->sys_root,
		.pid = r->pid, .hdr = r->rf.hdr, .file_size = r->rf.file_size,
		.live_capacity = r->rf.live_capacity,
		.stats_timeout_ms = 200, .heap = &r->s.heap,
	};
}

/* The profile's path, then the readings' files beside it. */
static void open_outputs(struct run *r)
{
	int err;

	if (r->o->output)
		snprintf(r->output, sizeof(r->output), "%s", r->o->output);
	else
		snprintf(r->output, sizeof(r->output), "pprof-alloc.%d.pb.gz",
			 (int)r->pid);
	if (!r->o->readings)
		return;
	err = timeline__open(&r->tl, r->output, r->o->interval_ns);
	if (err == -ENOMEM)
		fprintf(stderr, "%s: out of memory: no readings\n", prog);
	r->tl_open = !err;
	if (err)
		timeline__close(&r->tl);
	/* a followed process may be gone before the first reading */
	r->tl.quiet_none = r->followed;
}

/*
 * After each drain: did the agent lose records since the last one?  Then
 * the stretch between the two counts towards what the tracer was doing
 * while records were lost: on a CPU, waiting for records, or neither
 * (waiting for a CPU).
 */
static void note_losses(struct run *r, uint64_t wall, uint64_t cpu)
{
	uint64_t lost = __atomic_load_n(&r->rf.hdr->lost_records,
					__ATOMIC_RELAXED);

	if (lost > r->lost_seen && r->last_wall_ns && wall > r->last_wall_ns) {
		r->loss_cpu_ns += cpu - r->last_cpu_ns;
		r->loss_wait_ns += r->wait_ns - r->last_wait_ns;
		r->loss_wall_ns += wall - r->last_wall_ns;
	}
	r->lost_seen = lost;
	r->last_cpu_ns = cpu;
	r->last_wait_ns = r->wait_ns;
	r->last_wall_ns = wall;
}

static void drain(struct run *r, uint64_t now, bool final)
{
	uint64_t cpu0, cpu1;
	int err;

	if (!r->ring_ok)
		return;
	cpu0 = cpu_ns();
	err = ring_consumer__drain(&r->rc, session__on_record, &r->s, now,
				   final);
	cpu1 = cpu_ns();
	r->drain_cpu_ns += cpu1 - cpu0;
	note_losses(r, pa_now_ns(), cpu1);
	if (err >= 0) {
		if (ring_consumer__stalled(&r->rc, now, ring_consumer__stall_warn_ns()))
			fprintf(stderr, RING_STALL_WARNING, prog, (double)ring_consumer__stall_warn_ns() / 1e9, (int)r->pid);
		return;
	}
	r->ring_ok = false;
	if (err == -EPROTO)
		fprintf(stderr, "%s: the target's ring is corrupt (%s); no longer reading it\n",
			prog, r->rc.error);
	else
		fprintf(stderr, "%s: cannot keep up with the ring: %s\n", prog,
			strerror(-err));
}

/*
 * Until the target exits (launched: SIGCHLD; attached: its pidfd), the
 * deadline passes, or we are told to stop (attached: SIGINT/SIGTERM).
 */
static void trace_loop(struct run *r)
{
	while (!r->exited && !r->stop) {
		struct pollfd pfd[3] = {
			{ .fd = r->sfd, .events = POLLIN },
			{ .fd = r->pidfd, .events = POLLIN },
			{ .fd = r->ch.fd, .events = POLLIN },	/* -1: none */
		};
		struct signalfd_siginfo si;
		uint64_t pending = r->ring_ok ?
			ring_consumer__pending(&r->rc) : 0;
		uint64_t now = pa_now_ns();
		int wait = r->maps_ready ? r->poll_ms : 1;

		/* an agent that has not started by now never will (a static or
		 * setuid program): stop polling for it every millisecond */
		if (!r->maps_ready &&
		    now - r->start_ns > PA_TRACER_WAIT_MS * 1000000ull)
			r->maps_ready = true;

		if (r->deadline_ns) {
			if (now >= r->deadline_ns)
				break;
			if ((r->deadline_ns - now) / 1000000 < (uint64_t)wait)
				wait = (int)((r->deadline_ns - now) / 1000000) + 1;
		}
		if (pending <= r->rf.data_size / 8) {
			uint64_t t0 = pa_now_ns();

			poll(pfd, 3, wait);
			r->wait_ns += pa_now_ns() - t0;
		}
		/* every time round: a followed descendant waits for us */
		children__drain(&r->ch);
		if (r->pidfd >= 0 && (pfd[1].revents & POLLIN))
			r->exited = true;
		/* no pidfd (an old kernel, or pidfd_open refused): look */
		if (r->child < 0 && r->pidfd < 0 && !process_alive(r->pid))
			r->exited = true;
		while (read(r->sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGCHLD) {
				siginfo_t info = { 0 };

				/* look before reaping: the zombie's comm */
				if (r->child > 0 &&
				    !waitid(P_PID, (id_t)r->child, &info,
					    WEXITED | WNOHANG | WNOWAIT) &&
				    info.si_pid == r->child)
					warn_if_exec(r);
				if (r->child > 0 &&
				    waitpid(r->child, &r->status, WNOHANG) ==
					    r->child)
					r->exited = true;
				if (r->o->follow)
					follow__reap(&r->fl, r->child);
				continue;
			}
			if (r->followed) {
				if (si.ssi_signo == SIGUSR1) {
					r->execd = true;
					r->stop = true;
				} else if (!r->stop_at) {
					r->stop_at = pa_now_ns() +
						     FOLLOW_GRACE_NS;
				}
				continue;
			}
			if (r->child < 0) {
				r->stop = true;	/* attached: detach */
				continue;
			}
			if ((si.ssi_signo == SIGINT ||
			     si.ssi_signo == SIGQUIT) &&
			    si.ssi_code == SI_KERNEL)
				continue;	/* the terminal told the child */
			if (si.ssi_signo != SIGUSR1)
				r->stop_following = true;
			kill(r->child, (int)si.ssi_signo);
		}
		now = pa_now_ns();
		if (r->stop_at && now >= r->stop_at)
			r->stop = true;
		if (!r->maps_ready && !r->exited &&
		    __atomic_load_n(&r->rf.hdr->agent_state, __ATOMIC_ACQUIRE) ==
			    PA_STATE_RUNNING) {
			mapping_set__refresh(&r->s.maps);
			r->s.last_refresh = now;
			r->maps_ready = true;
			read_comm(r->pid, r->comm, sizeof(r->comm));
			/* the first reading while it waits for us: a program
			 * that exits at once still has one (one taken as it
			 * exits is none) */
			if (r->tl_open) {
				struct readings_source src;

				readings_source(r, &src);
				timeline__tick(&r->tl, pa_now_ns(), &src);
			}
			__atomic_store_n(&r->rf.hdr->tracer_state,
					 PA_TRACER_READY, __ATOMIC_RELEASE);
		}
		if (r->ring_ok) {
			pending = ring_consumer__pending(&r->rc);
			r->poll_ms = next_wait_ms(&r->fill, pending, now,
						  r->rf.data_size);
			if (pending > r->rf.data_size / 4)
				batch_priority(r, false);
			else if (pending < r->rf.data_size / 32)
				batch_priority(r, true);
		}
		r->s.alive = !r->exited;
		drain(r, now, r->exited);
		if (!r->first_record_ns && r->rc.records)
			r->first_record_ns = pa_now_ns();
		if (r->tl_open && r->maps_ready && !r->exited) {
			struct readings_source src;

			readings_source(r, &src);
			timeline__tick(&r->tl, pa_now_ns(), &src);
		}
		if (r->acfg)
			remote__settle();	/* threads let go before they stopped */
		if (r->acfg && !r->exited) {
			uint32_t calls = __atomic_load_n(&r->rf.hdr->dlopen_calls,
							 __ATOMIC_ACQUIRE);

			/* the target dlopened something: its allocations may
			 * not reach a hooked module soon, so ask now - again
			 * in 10 ms while a module is still being relocated,
			 * in 100 ms when no thread could be borrowed */
			if (calls != r->seen_dlopens && now >= r->rescan_at) {
				int rc = attach__rescan(r->pid, r->acfg, r->ast);

				if (!rc)
					r->seen_dlopens = calls;
				r->rescan_at = now + (rc < 0 ? 100000000ull :
							       10000000ull);
			}
		}
		if (r->child > 0 && !r->exec_warned && r->comm[0] &&
		    now - r->last_exec_check > 500000000ull) {
			r->last_exec_check = now;
			warn_if_exec(r);
		}
		if (!r->exited)
			session__refresh(&r->s, now);
	}
}

/*
 * After the last drain, when the agent's live table is still (the target
 * exited, or the agent detached): if anything was lost, the table knows
 * better which samples are live than the records that reached us.
 */
static void reconcile(struct run *r)
{
	if (!r->rf.hdr->lost_records && !r->rc.skipped_busy && !r->rc.resyncs)
		return;
	if (heap__reconcile(&r->s.heap,
			    (const struct pa_live_entry *)((uint8_t *)r->rf.hdr +
							   PA_HEADER_SIZE +
							   r->rf.data_size),
			    r->rf.live_capacity))
		fprintf(stderr, "%s: out of memory reconciling with the live table\n",
			prog);
}

/* After the summary: what the profile holds less of than came in. */
static void warn_limits(const struct run *r)
{
	const struct heap *h = &r->s.heap;

	if (r->rc.skipped_busy || r->rc.resyncs)
		fprintf(stderr, "%s: warning: %" PRIu64 " records were left half-written by the target's threads and skipped; %" PRIu64 " times the ring had to be resynchronized\n",
			prog, r->rc.skipped_busy, r->rc.resyncs);
	if (h->folded || h->folded_sizes)
		fprintf(stderr, "%s: warning: more than --max-stacks %zu (stack, size) pairs, or %zu frames in them: %" PRIu64 " samples of new stacks are in [other], %" PRIu64 " of known stacks with new sizes have no size label\n",
			prog, h->max_buckets,
			h->max_buckets * (size_t)HEAP_FRAMES_PER_PAIR,
			h->folded, h->folded_sizes);
	if (sigbus__pages())
		fprintf(stderr, "%s: warning: %" PRIu64 " pages of files the target mapped were cut off while the tracer read them (the target truncated a module file); symbols from it may be missing\n",
			prog, sigbus__pages());
	if (h->live_dropped)
		fprintf(stderr, "%s: warning: more than %zu samples live at once (the agent's live table holds %" PRIu64 "; raise --live-size): %" PRIu64 " more count as allocated but not as in use\n",
			prog, h->max_live, r->rf.live_capacity, h->live_dropped);
}

/* For readings__summary and the others: collect the comment lines. */
#define SUMMARY_LINES	8
struct summary_lines {
	char lines[SUMMARY_LINES][1024];
	const char *ptrs[SUMMARY_LINES];
	size_t n;
};

static void add_summary_line(void *ctx, const char *line)
{
	struct summary_lines *sl = ctx;

	if (sl->n >= SUMMARY_LINES)
		return;
	snprintf(sl->lines[sl->n], sizeof(sl->lines[0]), "%s", line);
	sl->ptrs[sl->n] = sl->lines[sl->n];
	sl->n++;
}

/* A comment line on the samples unwound from stack copies, or "". */
static void unwind_summary(const struct run *r, char *buf, size_t size)
{
	static const char *const modes[] = { "fp", "dwarf", "auto" };
	struct stackwalk_stats st = { 0 };
	/* the agent's, which may not be what was asked (an agent already
	 * there with a ring too small for the copy keeps its own) */
	uint32_t mode = r->rf.hdr ? r->rf.hdr->unwind_mode : r->o->rec.unwind;

	buf[0] = 0;
	if (mode > PA_UNWIND_AUTO)
		mode = r->o->rec.unwind;
	if (r->s.sw)
		stackwalk__stats(r->s.sw, &st);
	if (mode == PA_UNWIND_FP && !st.records)
		return;
	snprintf(buf, size,
		 "unwind %s: %" PRIu64 " samples with a stack copy: %" PRIu64
		 " unwound to the outermost frame, %" PRIu64
		 " cut short ([truncated]), %" PRIu64
		 " left with frame-pointer frames; %.1f us of CPU each",
		 modes[mode],
		 st.records, st.outermost, st.cut, st.failed,
		 st.records ? (double)st.cpu_ns / (double)st.records / 1e3 :
			      0.0);
}

/*
 * Why records were lost, and what would help, from what the tracer was
 * doing while they were.  Waiting for records (asleep in poll, the ring
 * not yet an eighth full) a good share of that time, it let a burst fill
 * the ring between two drains, which a larger ring absorbs.  Hardly ever
 * waiting - draining, or ready to and waiting for a CPU the program's
 * threads held - it could not take records as fast as they came, and a
 * larger ring only postpones the loss: fewer records would help (sampling,
 * or no stack copies to unwind).
 */
static void loss_advice(const struct run *r, char *buf, size_t len)
{
	double wall = (double)r->loss_wall_ns;
	double busy = wall > 0 ? (double)r->loss_cpu_ns / wall : 0;
	double waited = wall > 0 ? (double)r->loss_wait_ns / wall : 0;
	double per_ns = r->rc.records ? (double)r->drain_cpu_ns /
					(double)r->rc.records : 0;
	struct stackwalk_stats st = { 0 };
	char how[160];

	if (!r->loss_wall_ns) {
		/* lost before we came, or not seen by a drain */
		snprintf(buf, len, "the ring was full");
		return;
	}
	if (waited >= LOSS_WAIT_SHARE) {
		snprintf(buf, len,
			 "the ring (%" PRIu64 " KiB) filled while the tracer waited between drains (%.0f%% of the time they were lost): try a larger --ring-size",
			 r->rf.data_size >> 10, waited * 100);
		return;
	}
	if (r->s.sw)
		stackwalk__stats(r->s.sw, &st);
	if (r->rf.sample_rate == 1)
		snprintf(how, sizeof(how),
			 "sample instead of recording every allocation (--rate 4096, say)");
	else
		snprintf(how, sizeof(how), "sample less often (a --rate above %" PRIu64 ")",
			 r->rf.sample_rate);
	snprintf(buf, len,
		 "the program made records faster than the tracer can take them (while they were lost it waited %.0f%% of the time, ran %.0f%%, at %.1f us of CPU per record, about %.0f records/s); a larger --ring-size would not help: %s%s",
		 waited * 100, busy * 100, per_ns / 1e3,
		 per_ns > 0 ? 1e9 / per_ns : 0.0, how,
		 st.records ? ", or --unwind fp (no stack copies to unwind)" :
			      "");
}

/*
 * The end of the run: the target's memory cgroup read again (the process
 * is dead, or about to be left), and whether the OOM killer killed it.
 */
static void read_end(struct run *r, struct readings_end *end,
		     const char *ended, bool alive, bool sigkilled)
{
	static const struct cgroup_reading none = { .version = 0 };
	struct timespec ts;
	uint64_t vm = 0;
	bool has_vm;

	memset(end, 0, sizeof(*end));
	end->ended = ended;
	end->after_exit = !alive;
	clock_gettime(CLOCK_REALTIME, &ts);
	end->final_unix_ns = (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
	if (!cgroup__reread(&end->final, &r->cg_start))
		end->has_final = true;
	else
		cgroup__fini(&end->final);
	has_vm = r->have_vm_start &&
		 !procmem__vmstat_oom_kill(r->o->proc_root, &vm);
	readings__oom_verdict(&end->oom, &r->cg_start,
			      end->has_final ? &end->final : &none,
			      has_vm, r->vm_oom_start, vm, sigkilled);
}

/* What the profile's writer needs, for outpath__write. */
struct profile_job {
	const struct run *r;
	struct symbols *syms;
	const struct report_info *info;
};

static int write_profile(const char *path, void *ctx)
{
	const struct profile_job *job = ctx;

	return report__write(&job->r->s.heap, &job->r->s.maps, job->syms,
			     job->info, path);
}

/*
 * Write the profile, the readings and the summary line.  sigkilled: the
 * target died of SIGKILL (as far as known: status_known).  0 written
 * where -o said, 1 written to a fallback, or -errno when nowhere (all
 * said on stderr).
 */
static int finish(struct run *r, const char *what, const char *ended,
		  bool alive, bool sigkilled, bool status_known)
{
	struct summary_lines sl = { .n = 0 };
	struct readings_end end;
	char cmd[1024], unwind_line[320], oom[512], full[768], written[PATH_MAX];
	char loss[512], line_children[512];
	int err;

	read_end(r, &end, ended, alive, sigkilled);
	readings__oom_describe(&end.oom, &end, oom, sizeof(oom));
	if (oom[0])
		snprintf(full, sizeof(full), "%s; %s%s", ended,
			 status_known ? "" : "probably ", oom);
	else
		snprintf(full, sizeof(full), "%s", ended);
	end.ended = full;
	if (r->tl_open) {
		struct readings_source src;
		const struct readings *last;

		readings_source(r, &src);
		last = timeline__finish(&r->tl, &src, alive, &end);
		if (last)
			readings__summary(last, add_summary_line, &sl);
		if (!r->o->quiet && r->tl.timeline_path)
			fprintf(stderr, "%s: %lu readings in %s, %.2f ms of CPU each\n",
				prog, r->tl.lines, r->tl.timeline_path,
				r->tl.readings ? (double)r->tl.cpu_ns /
						 r->tl.readings / 1e6 : 0.0);
	}
	readings__end_summary(&end, add_summary_line, &sl);
	children__drain(&r->ch);
	children__summary(&r->ch, line_children, sizeof(line_children));
	if (line_children[0]) {
		add_summary_line(&sl, line_children);
		if (!r->o->quiet)
			fprintf(stderr, "%s: %s\n", prog, line_children);
	}
	loss[0] = 0;
	if (r->rf.hdr->lost_records) {
		char line[600];

		loss_advice(r, loss, sizeof(loss));
		snprintf(line, sizeof(line), "records lost: %s", loss);
		add_summary_line(&sl, line);
	}
	if (r->s.pending_modules)
		mapping_set__open_reported(&r->s.maps);
	unwind_summary(r, unwind_line, sizeof(unwind_line));
	if (r->o->argv)
		command_line(r->o->argv, cmd, sizeof(cmd));
	else
		snprintf(cmd, sizeof(cmd), "process %d", (int)r->pid);
	{
		struct report_info info = {
			.command = cmd,
			.ended = full,
			.lost_records = r->rf.hdr->lost_records,
			.lost_bytes = r->rf.hdr->lost_bytes,
			.live_overflow = r->rf.hdr->live_overflow,
			.agent_samples = r->s.heap.allocs +
					 r->rf.hdr->lost_samples,
			.skipped_busy = r->rc.skipped_busy,
			.resyncs = r->rc.resyncs,
			.time_nanos = (int64_t)time(NULL) * 1000000000ll,
			.unwind_summary = unwind_line[0] ? unwind_line : NULL,
			.extra_comments = sl.ptrs,
			.nextra = sl.n,
			.duration_nanos = (int64_t)(pa_now_ns() - r->start_ns),
		};
		struct profile_job job = { .r = r, .info = &info };
		struct symbols *syms = NULL;

		if (r->o->symbolize || r->o->top) {
			struct debuginfo_opts dopts;

			debug_options__get(&r->o->debug, &dopts);
			syms = report__symbols(&r->s.maps, &dopts, r->o->quiet);
			if (!syms)
				fprintf(stderr, "%s: out of memory loading symbols; writing addresses only\n",
					prog);
		}
		job.syms = r->o->symbolize ? syms : NULL;
		err = outpath__write(r->output, write_profile, &job,
				     "the profile", written, sizeof(written));
		/* even with -q when it is not where it was to be */
		if (!r->o->quiet || err) {
			fprintf(stderr, "%s: %s %s; ", prog, what, full);
			if (err < 0)
				fprintf(stderr, "the profile was NOT written (%" PRIu64
					" samples", r->s.heap.allocs);
			else
				fprintf(stderr, "wrote %s (%" PRIu64 " samples",
					written, r->s.heap.allocs);
			if (info.lost_records)
				fprintf(stderr, ", %" PRIu64 " records LOST: %s",
					info.lost_records, loss);
			fprintf(stderr, ")\n");
		}
		/* even with -q: the profile holds less than came in */
		warn_limits(r);
		if (r->o->top)
			report__top(&r->s.heap, syms, r->o->top, stdout);
		symbols__free(syms);
	}
	readings__end_fini(&end);
	return err;
}

/* At the start of the run, what the verdict at the end compares with. */
static void read_start(struct run *r)
{
	if (cgroup__read(&r->cg_start, r->o->proc_root, r->o->sys_root,
			 r->pid) == -ENOMEM)
		fprintf(stderr, "%s: out of memory reading the target's cgroup\n",
			prog);
	r->have_vm_start = !procmem__vmstat_oom_kill(r->o->proc_root,
						     &r->vm_oom_start);
}

static int setup_consumer(struct run *r)
{
	int err = ring_consumer__init(&r->rc, r->rf.hdr,
				      (uint8_t *)r->rf.hdr + PA_HEADER_SIZE,
				      r->rf.data_size, r->rf.max_frames);

	if (err)
		fprintf(stderr, "%s: %s\n", prog, strerror(-err));
	if (session__init(&r->s, r->pid, r->rf.sample_rate,
			  r->rf.max_frames) && !err) {
		err = -ENOMEM;
		fprintf(stderr, "%s: %s\n", prog, strerror(-err));
	}
	session__set_limits(&r->s, r->o->rec.max_stacks, r->rf.live_capacity,
			    r->o->rec.live_size);
	r->ring_ok = true;
	r->poll_ms = POLL_START_MS;
	r->lost_seen = __atomic_load_n(&r->rf.hdr->lost_records,
				       __ATOMIC_RELAXED);
	return err;
}

/* What a run holds, whichever way it ended (launched, attached, a
 * follower); r was zeroed, with its descriptors at -1, before it began. */
static void run_fini(struct run *r)
{
	follow__fini(&r->fl);
	if (r->tl_open)
		timeline__close(&r->tl);
	cgroup__fini(&r->cg_start);
	if (r->pidfd >= 0)
		close(r->pidfd);
	r->pidfd = -1;
	session__fini(&r->s);
	ring_consumer__fini(&r->rc);
	ringfile__close(&r->rf);
}

/* Close every descriptor above stderr but a and b. */
static void close_others(int a, int b)
{
	int lo = a < b ? a : b, hi = a < b ? b : a;

	if (lo > 3)
		close_range(3, (unsigned int)lo - 1, 0);
	if (hi > lo + 1)
		close_range((unsigned int)lo + 1, (unsigned int)hi - 1, 0);
	close_range((unsigned int)hi + 1, ~0u, 0);
}

/*
 * A follower (--follow-children), forked by the main tracer when process
 * pid handed over its memfd fd: read its ring as a launched run reads its
 * own, until the process exits, execs (SIGUSR1 from the main tracer), or
 * we are told to stop (the agent there is then turned off by the header's
 * command).  Quiet but for trouble; the main tracer sums up.  Returns a
 * FOLLOW_* exit status.
 */
static int run_followed(struct run *m, pid_t pid, const char *comm, int fd,
			const char *output)
{
	struct options o = *m->o;
	struct run rr, *r = &rr;
	char ended[160], what[64];
	const char *why = NULL;
	bool alive = false, sigkilled = false, status_known = true;
	int err, code = FOLLOW_FAILED;

	/* what the main tracer holds is not ours: its ring, its session
	 * socket, the module files it opened; only fd and the signalfd stay */
	if (m->rf.hdr)
		munmap(m->rf.hdr, m->rf.file_size);
	close_others(fd, m->sfd);
	o.output = output;
	o.quiet = true;
	o.top = 0;
	o.argv = NULL;
	memset(r, 0, sizeof(*r));
	r->o = &o;
	r->invoked_ns = pa_now_ns();
	r->sfd = m->sfd;
	r->pidfd = -1;
	r->child = -1;
	r->ch.fd = -1;
	r->followed = true;
	r->pid = pid;
	err = ringfile__open(&r->rf, fd, false, &why);
	if (err) {
		fprintf(stderr, "%s: process %d (%s), followed: %s; not profiled\n",
			prog, (int)pid, comm, why);
		close(fd);
		return FOLLOW_FAILED;
	}
	r->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (r->pidfd < 0 && errno == ESRCH)
		r->exited = true;	/* gone already: its ring remains */
	r->start_ns = pa_now_ns();
	read_start(r);
	open_outputs(r);
	if (setup_consumer(r))
		goto out_fini;
	trace_loop(r);
	snprintf(what, sizeof(what), "process %d (%s)", (int)pid, comm);
	if (r->exited && !r->execd) {
		char now_comm[64];
		int status;

		/* it exec'd, and the new program ended before the main
		 * tracer told us: the zombie bears the new name; reaped
		 * already, the notice may still be on its way */
		if (!exit_status(pid, &status)) {
			read_comm(pid, now_comm, sizeof(now_comm));
			if (now_comm[0] && strncmp(now_comm, comm, 15))
				r->execd = true;
		} else if (wait_exec_notice(r, 100)) {
			r->execd = true;
		}
	}
	if (r->exited && !r->execd) {
		describe_exit(pid, "", ended, sizeof(ended), &sigkilled,
			      &status_known);
		drain(r, pa_now_ns(), true);
		reconcile(r);
	} else if (r->execd) {
		snprintf(ended, sizeof(ended),
			 "exec'd another program (followed on in a profile of its own)");
		drain(r, pa_now_ns(), true);
		reconcile(r);
	} else {
		/* still running: the agent there turns off at its next
		 * sample; what it recorded so far is ours */
		__atomic_store_n(&r->rf.hdr->command, PA_CMD_DETACH,
				 __ATOMIC_RELEASE);
		drain(r, pa_now_ns(), false);
		alive = true;
		snprintf(ended, sizeof(ended),
			 "was left running after %.1f s (its agent turned off)",
			 (double)(pa_now_ns() - r->start_ns) / 1e9);
	}
	if (!r->s.heap.allocs && !r->rf.hdr->lost_records) {
		code = FOLLOW_EMPTY;
		goto out_fini;
	}
	code = finish(r, what, ended, alive, sigkilled, status_known) < 0 ?
		       FOLLOW_FAILED : FOLLOW_WROTE;
out_fini:
	run_fini(r);
	return code;
}

/* children.c: a descendant handed over its memfd; fork its follower. */
static void on_follow(void *ctx, pid_t pid, const char *comm, int fd)
{
	struct run *r = ctx;
	pid_t old = follow__tracer_of(&r->fl, pid), tracer;
	char *output;

	if (old > 0) {
		kill(old, SIGUSR1);	/* that image exec'd: its end */
		follow__told(&r->fl, old);
	}
	if (!follow__is_descendant(pid, r->child)) {
		fprintf(stderr, "%s: process %d (%s) handed over a memfd but is no descendant of the program; ignored\n",
			prog, (int)pid, comm);
		close(fd);
		return;
	}
	if (r->stop_following) {
		/* we were told to stop: its agent turns off, and stops
		 * waiting for us */
		follow__refuse(&r->fl, fd);
		return;
	}
	output = follow__name(&r->fl, pid, comm);
	if (!output) {
		fprintf(stderr, "%s: out of memory: process %d (%s) is not followed\n",
			prog, (int)pid, comm);
		close(fd);
		return;
	}
	fflush(NULL);		/* nothing buffered is written twice */
	tracer = fork();
	if (tracer < 0) {
		fprintf(stderr, "%s: cannot fork a tracer for process %d (%s): %s; it is not followed\n",
			prog, (int)pid, comm, strerror(errno));
		free(output);
		close(fd);
		return;
	}
	if (tracer == 0)
		_exit(run_followed(r, pid, comm, fd, output));
	close(fd);
	if (follow__add(&r->fl, pid, tracer, output))
		fprintf(stderr, "%s: out of memory: the follower of process %d is not counted\n",
			prog, (int)pid);
}

/*
 * The program has exited and its profile is written: wait for the
 * followers (a daemon it started may run on), still handing new
 * descendants to followers of their own.  A signal to us tells them to
 * stop following.
 */
static void wait_for_followers(struct run *r)
{
	uint64_t start = pa_now_ns();
	bool said = false, told = r->stop_following;

	if (told)
		follow__signal(&r->fl, SIGTERM);
	/* the followers, and while not told to stop, the descendants we
	 * adopted (a daemon whose agent has not handed over yet) */
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = r->sfd, .events = POLLIN },
			{ .fd = r->ch.fd, .events = POLLIN },
		};
		struct signalfd_siginfo si;

		follow__reap(&r->fl, 0);
		children__drain(&r->ch);
		if (!r->fl.running && (told || !follow__descendants()))
			break;
		if (!said && !r->o->quiet && pa_now_ns() - start > 1000000000ull) {
			fprintf(stderr, "%s: waiting for the program's descendants still running (%zu followed); Ctrl-C stops following them and writes their profiles\n",
				prog, r->fl.running);
			said = true;
		}
		poll(pfd, 2, 200);
		while (read(r->sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGCHLD)
				continue;
			follow__signal(&r->fl, SIGTERM);
			told = r->stop_following = true;
		}
	}
}

static int run_launch(struct run *r, const char *agent, const sigset_t *sigs)
{
	struct options *o = r->o;
	char ended[128], follow_env[160];
	const char *extra[3] = { NULL }, *why = NULL;
	int err, code, nextra = 0;

	err = ringfile__create(&r->rf, o->rec.ring_size, o->rec.live_size, o->rec.rate,
			       o->rec.max_frames);
	if (err) {
		fprintf(stderr, "%s: cannot create the ring memfd: %s\n", prog,
			strerror(-err));
		return 1;
	}
	/* ours from the start: a --pid or serve on the program refuses */
	owner__claim(r->rf.hdr, 0, NULL, &why);
	/* the agent starts its stats thread only if we will ask */
	r->rf.hdr->stats_wanted = o->readings;
	r->rf.hdr->unwind_mode = o->rec.unwind;
	r->rf.hdr->stack_bytes = o->rec.stack_bytes;
	r->start_ns = pa_now_ns();
	if (children__open(&r->ch)) {
		if (o->follow) {
			fprintf(stderr, "%s: cannot open a socket for the program's children (%s): they cannot be followed\n",
				prog, strerror(errno));
			ringfile__close(&r->rf);
			return 1;
		}
		fprintf(stderr, "%s: cannot open a socket for the program's children (%s); they will not be counted\n",
			prog, strerror(errno));
	}
	/* followed: a daemon whose parent exits becomes our child, so we
	 * know it is there before its agent says so (follow.c) */
	if (o->follow && prctl(PR_SET_CHILD_SUBREAPER, 1))
		fprintf(stderr, "%s: cannot become the program's subreaper (%s): a daemon it starts may be missed\n",
			prog, strerror(errno));
	if (r->ch.fd >= 0) {
		extra[nextra++] = r->ch.env;
		if (o->follow) {
			snprintf(follow_env, sizeof(follow_env),
				 PA_ENV_FOLLOW "=%" PRIu64 ":%u:%" PRIu64 ":%" PRIu64 ":%u:%u:%d",
				 o->rec.rate, o->rec.max_frames,
				 o->rec.ring_size, o->rec.live_size,
				 o->rec.unwind, o->rec.stack_bytes,
				 o->readings ? 1 : 0);
			extra[nextra++] = follow_env;
		}
	}
	err = launch__spawn(o->argv, agent, r->rf.fd, extra, sigs, &r->child,
			    &why);
	if (err) {
		fprintf(stderr, "%s: %s '%s': %s\n", prog, why, o->argv[0],
			strerror(-err));
		ringfile__close(&r->rf);
		return err == -ENOENT ? 127 : 126;
	}
	r->pid = r->child;
	/* the agent waits for us before main(): nothing much has run yet */
	read_start(r);
	open_outputs(r);
	if (o->follow) {
		follow__init(&r->fl, r->output);
		r->ch.on_follow = on_follow;
		r->ch.ctx = r;
	}
	if (setup_consumer(r)) {
		code = 1;
		goto out_fini;
	}
	batch_priority(r, true);
	trace_loop(r);
	describe_end(r->status, ended, sizeof(ended), &code);
	reconcile(r);
	if (__atomic_load_n(&r->rf.hdr->agent_state, __ATOMIC_ACQUIRE) !=
	    PA_STATE_RUNNING)
		fprintf(stderr, "%s: the agent never started in '%s': is it statically linked, or setuid?\n",
			prog, o->argv[0]);
	/* the command's status, whatever happened to the output (said) */
	finish(r, o->argv[0], ended, false,
	       WIFSIGNALED(r->status) && WTERMSIG(r->status) == SIGKILL, true);
	if (o->follow) {
		char line[PATH_MAX + 256];

		wait_for_followers(r);
		follow__summary(&r->fl, line, sizeof(line));
		if (line[0] && (!o->quiet || r->fl.failed))
			fprintf(stderr, "%s: %s\n", prog, line);
	}
out_fini:
	run_fini(r);
	return code;
}

static int run_attach(struct run *r, const char *agent)
{
	struct options *o = r->o;
	struct attach_config cfg = {
		.agent = agent, .rate = o->rec.rate, .ring_size = o->rec.ring_size,
		.live_size = o->rec.live_size, .max_frames = o->rec.max_frames,
		.timeout_ms = 5000, .stats = o->readings,
		.unwind = o->rec.unwind, .stack_bytes = o->rec.stack_bytes,
	};
	struct attach_stats st;
	char ended[128], what[32];
	const char *why = NULL;
	uint64_t t0 = pa_now_ns();
	bool sigkilled = false, status_known = true;
	int err, code = 0;

	r->pid = o->pid;
	err = attach__check(r->pid, &why);
	if (!err)
		err = attach__connect(r->pid, &cfg, &r->rf, &st, &why);
	if (err) {
		fprintf(stderr, "%s: %s\n", prog, why);
		return 1;
	}
	read_start(r);
	open_outputs(r);
	r->pidfd = (int)syscall(SYS_pidfd_open, r->pid, 0);
	if (r->pidfd < 0 && !o->quiet)
		fprintf(stderr, "%s: note: pidfd_open: %s; watching process %d by polling\n",
			prog, strerror(errno), (int)r->pid);
	r->start_ns = pa_now_ns();
	if (o->duration_ms)
		r->deadline_ns = r->start_ns + o->duration_ms * 1000000ull;
	if (!o->quiet)
		fprintf(stderr, "%s: %s process %d in %.1f ms (thread stopped at most %.2f ms); Ctrl-C to detach and write the profile\n",
			prog, st.existing ? "connected to the agent in" :
			st.reattached ? "re-attached to" : "attached to",
			(int)r->pid, (double)(r->start_ns - t0) / 1e6,
			(double)st.longest_stop_ns / 1e6);
	if (!o->quiet && (r->rf.sample_rate != o->rec.rate ||
			  r->rf.data_size != o->rec.ring_size ||
			  r->rf.live_capacity != o->rec.live_size))
		fprintf(stderr, "%s: note: the agent there records with rate %" PRIu64
			", a %" PRIu64 " KiB ring and %" PRIu64
			" live entries (set when it started)\n",
			prog, r->rf.sample_rate, r->rf.data_size >> 10,
			r->rf.live_capacity);
	if (setup_consumer(r)) {
		code = 1;
		goto out_fini;
	}
	mapping_set__refresh(&r->s.maps);
	r->maps_ready = true;
	r->acfg = &cfg;
	r->ast = &st;
	r->seen_dlopens = __atomic_load_n(&r->rf.hdr->dlopen_calls,
					  __ATOMIC_ACQUIRE);
	if (st.existing) {
		uint8_t *base = (uint8_t *)r->rf.hdr;

		/* it was recording before us: take what is live from its
		 * tables (stacks included) */
		if (heap__seed(&r->s.heap,
			       (const struct pa_live_entry *)(base +
				       PA_HEADER_SIZE + r->rf.data_size),
			       r->rf.live_capacity,
			       base + pa_stack_offset(r->rf.data_size,
						      r->rf.live_capacity),
			       r->rf.stack_capacity, r->rf.max_frames))
			fprintf(stderr, "%s: out of memory reading the live table\n",
				prog);
		else if (!o->quiet)
			fprintf(stderr, "%s: %" PRIu64 " live samples from before we came (%" PRIu64 " skipped: no stack, or an impossible address or size)\n",
				prog, r->s.heap.seeded, r->s.heap.unseeded);
	}
	batch_priority(r, true);
	trace_loop(r);

	if (r->exited) {
		/* not our child: its exit code is in its zombie's stat, until
		 * its parent reaps it */
		describe_exit(r->pid, " while attached", ended, sizeof(ended),
			      &sigkilled, &status_known);
		drain(r, pa_now_ns(), true);
		reconcile(r);
	} else {
		drain(r, pa_now_ns(), false);
		err = attach__detach(r->pid, &cfg, &r->rf, &st, &why);
		if (err)
			fprintf(stderr, "%s: %s\n", prog, why);
		/* a thread let go before it stopped is detached at its stop,
		 * not after the symbolization that follows (at most 1 s) */
		for (int i = 0; i < 100 && remote__settle(); i++)
			usleep(10000);
		drain(r, pa_now_ns(), err == 0 || kill(r->pid, 0) != 0);
		if (!err)
			reconcile(r);
		snprintf(ended, sizeof(ended), "%s after %.1f s",
			 err ? "was asked to detach" : "was detached",
			 (double)(pa_now_ns() - r->start_ns) / 1e9);
	}
	snprintf(what, sizeof(what), "process %d", (int)r->pid);
	if (!o->quiet && r->first_record_ns)
		fprintf(stderr, "%s: first record %.1f ms after start; longest thread stop %.2f ms (attach and detach)\n",
			prog, (double)(r->first_record_ns - r->invoked_ns) / 1e6,
			(double)st.longest_stop_ns / 1e6);
	else if (!o->quiet)
		fprintf(stderr, "%s: no record arrived (the process allocated nothing sampled); longest thread stop %.2f ms\n",
			prog, (double)st.longest_stop_ns / 1e6);
	if (finish(r, what, ended, !r->exited, sigkilled, status_known))
		code = 1;
out_fini:
	run_fini(r);
	return code;
}

int main(int argc, char **argv)
{
	struct options o;
	struct run r;
	sigset_t sigs;
	char *agent;
	int code;

	/* before anything maps a file the target can shrink (sigbus.c) */
	if (sigbus__guard())
		fprintf(stderr, "%s: cannot install the SIGBUS handler: %s\n",
			prog, strerror(errno));
	if (argc > 1 && !strcmp(argv[1], "symbolize"))
		return symbolize_cmd__main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "stats"))
		return stats_cmd__main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "serve"))
		return serve__main(argc - 1, argv + 1);
	if (parse_options(argc, argv, &o) || check_outputs(&o)) {
		debug_options__fini(&o.debug);
		return 2;
	}
	if (o.core) {
		struct debuginfo_opts dopts;
		struct postmortem_opts po = {
			.core = o.core, .output = o.output,
			.symbolize = o.symbolize, .quiet = o.quiet,
			.top = o.top, .debug = &dopts,
		};

		debug_options__get(&o.debug, &dopts);
		code = postmortem__run(&po);
		debug_options__fini(&o.debug);
		return code;
	}
	agent = launch__find_agent();
	if (!agent) {
		fprintf(stderr, "%s: cannot find the agent libpprof-alloc.so next to the tracer or in ../lib/pprof-alloc/; set PPROF_ALLOC_AGENT\n",
			prog);
		return 1;
	}
	memset(&r, 0, sizeof(r));
	r.invoked_ns = pa_now_ns();
	r.o = &o;
	r.rf.fd = -1;
	r.pidfd = -1;
	r.child = -1;
	r.ch.fd = -1;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGQUIT);
	sigaddset(&sigs, SIGCHLD);
	if (o.follow)
		sigaddset(&sigs, SIGUSR1);	/* a follower's: exec'd */
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	r.sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	if (r.sfd < 0) {
		fprintf(stderr, "%s: signalfd: %s\n", prog, strerror(errno));
		free(agent);
		return 1;
	}
	code = o.pid ? run_attach(&r, agent) : run_launch(&r, agent, &sigs);
	children__close(&r.ch);
	close(r.sfd);
	free(agent);
	debug_options__fini(&o.debug);
	return code;
}
