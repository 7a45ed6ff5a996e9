// SPDX-License-Identifier: MIT
/*
 * cmd_record.c - the default command's front-end: options, and the choice
 * between launching a command, attaching to a process (trace.c) and
 * reading a core (postmortem.c).
 *
 *   pprof-alloc [options] -- CMD [ARGS...]
 *   pprof-alloc [options] --pid PID
 *   pprof-alloc [options] --core CORE
 *
 * Where the profile and its readings go is checked before anything is
 * launched or attached to (outpath.c), so that a typo costs nothing.
 */
#include "builtin.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include "tracer/options/args.h"
#include "tracer/options/options.h"
#include "common/log.h"
#include "tracer/attach/launch.h"
#include "tracer/output/outpath.h"
#include "tracer/run/postmortem.h"
#include "tracer/run/trace.h"
#include "pa_clock.h"

enum {
	OPT_TOP = 256, OPT_NOSYM, OPT_DURATION, OPT_INTERVAL, OPT_NO_READINGS,
	OPT_PROC_ROOT, OPT_SYS_ROOT, OPT_CORE, OPT_FOLLOW, OPT_REPORT,
	OPT_JEPROF, OPT_VERSION,
};

static const struct opt record_opts[] = {
	{ 'o', "output", "FILE",
	  "where to write the profile (default: pprof-alloc.<pid>.pb.gz)", NULL },
	OPT_INCLUDE(rec_opts),
	{ OPT_TOP, "top", "N", "also print the N largest allocation sites", NULL },
	{ OPT_NOSYM, "no-symbolize", NULL,
	  "keep addresses only (symbolize later with `pprof-alloc symbolize`)", NULL },
	OPT_INCLUDE(debug_opts),
	{ 'p', "pid", "PID",
	  "attach to a running process (ptrace; the agent is loaded into it, "
	  "and unhooked and unloaded again on detach)", NULL },
	{ OPT_DURATION, "duration", "SECONDS",
	  "with --pid: detach after this long (else on Ctrl-C or SIGTERM)", NULL },
	{ OPT_JEPROF, "jemalloc-prof", NULL,
	  "with --pid: write the heap profile that the process's own jemalloc "
	  "keeps (it must run with MALLOC_CONF=prof:true), taken at once, "
	  "instead of sampling; jemalloc's rate (lg_prof_sample) applies", NULL },
	{ OPT_FOLLOW, "follow-children", NULL,
	  "profile the command's descendants too, one profile per process "
	  "beside the main one: heap.PID.COMM.pb.gz for -o heap.pb.gz (a "
	  "process that exec's gets one per program it ran)", NULL },
	{ OPT_CORE, "core", "FILE",
	  "the heap of a process that ran with the agent, from its core dump "
	  "(live table and ring at the crash)", NULL },
	{ OPT_INTERVAL, "interval", "SECONDS",
	  "take a reading of the process's memory (smaps, status, cgroup, "
	  "allocator, agent, sampled heap) this often, one JSON line each in "
	  "PROFILE.timeline.jsonl (heap.pb.gz: heap.*)", NULL },
	{ OPT_NO_READINGS, "no-readings", NULL,
	  "do not write PROFILE.json, the readings at the end (taken as the "
	  "process exits, or at detach)", NULL },
	{ OPT_REPORT, "report", NULL,
	  "also write PROFILE.html (heap.html for -o heap.pb.gz): summary, "
	  "memory over time, flame graphs; see `pprof-alloc report --help`", NULL },
	{ OPT_PROC_ROOT, "proc-root", "DIR",
	  "read /proc files under DIR (containers)", NULL },
	{ OPT_SYS_ROOT, "sys-root", "DIR", "read cgroups under DIR/fs/cgroup", NULL },
	{ 'q', "quiet", NULL, "no summary on stderr", NULL },
	{ 'h', "help", NULL, "this help", NULL },
	{ OPT_VERSION, "version", NULL, "print the version and exit", NULL },
	OPT_END,
};

static const char *const record_synopsis[] = {
	"[OPTIONS] -- COMMAND [ARGS...]",
	"[OPTIONS] --pid PID [--duration SECONDS]",
	"[OPTIONS] --core CORE-FILE",
	NULL,
};

static const struct doc_section record_sections[] = {
	{ "COMMANDS",
	  "The first argument may name another command, with its own options "
	  "(COMMAND --help, or its man page):\n"
	  "  symbolize [OPTIONS] PROFILE -o OUTPUT   add functions and lines\n"
	  "  stats --pid PID [--json|--prometheus]   one reading of a process\n"
	  "  serve --pid PID [--listen ADDR:PORT]    a pprof endpoint\n"
	  "  report PROFILE [-o REPORT.html]         the HTML report\n"
	  "  man [COMMAND]                           a man page, in roff" },
	{ "OUTPUT",
	  "Read the profile with: go tool pprof -top FILE\n\n"
	  "The output's directory is checked before COMMAND starts; if "
	  "writing still fails at the end, the files go to the current "
	  "directory or $TMPDIR (/tmp), and stderr says where." },
	{ "EXIT STATUS",
	  "COMMAND's (128+N if it was killed by signal N), whatever happened "
	  "to the output; 2 for a usage error or an output that cannot be "
	  "written.  Attached: 0; 1 if attaching failed or the profile is not "
	  "where -o said." },
	{ NULL, NULL },
};

const struct cmd_doc record_doc = {
	.name = "pprof-alloc",
	.page = "pprof-alloc",
	.summary = "heap profiles and memory readings of Linux processes",
	.synopsis = record_synopsis,
	.description =
	  "Run COMMAND with the pprof-alloc agent, or attach to the running "
	  "process PID, and write a heap profile (gzipped pprof) of its "
	  "sampled allocations when it exits or, attached, when the tracer "
	  "detaches (after --duration, or on Ctrl-C / SIGTERM).",
	.opts = record_opts,
	.sections = record_sections,
};

static int record_option(void *ctx, int c, const char *arg)
{
	struct trace_options *o = ctx;
	uint64_t v;
	double d;
	int mine;

	mine = debug_options__parse(&o->debug, c, arg);
	if (!mine)
		mine = rec_options__parse(&o->rec, c, arg);
	if (mine)
		return mine < 0 ? mine : 0;
	switch (c) {
	case 'o':
		if (!*arg)
			return bad_option("--output", arg, "empty");
		o->output = arg;
		return 0;
	case OPT_TOP:
		if (parse_size(arg, &v) || v > 100000)
			return bad_option("--top", arg, "want a count");
		o->top = (int)v;
		return 0;
	case OPT_NOSYM:
		o->symbolize = false;
		return 0;
	case 'p':
		return pid_option(arg, &o->pid) ? -EINVAL : 0;
	case OPT_DURATION:
		if (parse_seconds(arg, 0.001, 1e7, &d))
			return bad_option("--duration", arg,
					  "want seconds, at least 0.001");
		o->duration_ms = (uint64_t)(d * 1000);
		return 0;
	case OPT_INTERVAL:
		if (parse_seconds(arg, 0.01, 1e6, &d))
			return bad_option("--interval", arg,
					  "want seconds, at least 0.01");
		o->interval_ns = (uint64_t)(d * PA_NSEC_PER_SEC);
		return 0;
	case OPT_NO_READINGS:
		o->readings = false;
		return 0;
	case OPT_REPORT:
		o->report = true;
		return 0;
	case OPT_PROC_ROOT:
		o->proc_root = arg;
		return 0;
	case OPT_SYS_ROOT:
		o->sys_root = arg;
		return 0;
	case OPT_CORE:
		o->core = arg;
		return 0;
	case OPT_FOLLOW:
		o->follow = true;
		return 0;
	case OPT_JEPROF:
		o->jemalloc_prof = true;
		return 0;
	case 'q':
		o->quiet = true;
		return 0;
	case OPT_VERSION:	/* (main.c answers it as the first argument) */
		printf("pprof-alloc %s\n", PA_VERSION);
		exit(fflush(stdout) ? 1 : 0);
	default:
		return -ENOTSUP;	/* in the table, not here */
	}
}

/* 0, 1 (the help was printed), or -errno (said). */
static int parse_options(int argc, char **argv, struct trace_options *o)
{
	int err;

	*o = (struct trace_options){ .symbolize = true, .readings = true,
			       .proc_root = "/proc" };
	rec_options__init(&o->rec, REC_MAX_STACKS_PROFILE);
	err = opts__parse(&record_doc, argc, argv, true, record_option, o);
	if (err)
		return err;
	if (o->follow && (o->core || o->pid)) {
		pr_warn("--follow-children follows a command that pprof-alloc starts; not with %s\n",
			o->core ? "--core" : "--pid");
		return -EINVAL;
	}
	if (o->core) {
		if (o->pid || optind < argc || o->duration_ms ||
		    o->interval_ns) {
			pr_warn("--core reads a core file: no command, --pid, --duration or --interval with it\n");
			return -EINVAL;
		}
		return 0;
	}
	if (o->jemalloc_prof &&
	    (!o->pid || o->duration_ms || o->interval_ns || o->report)) {
		pr_warn("--jemalloc-prof takes jemalloc's profile of a running process at once: it goes with --pid, without --duration, --interval or --report\n");
		return -EINVAL;
	}
	if (o->jemalloc_prof)
		o->readings = false;	/* the profile only */
	if (o->pid && optind < argc) {
		pr_warn("give either --pid or a command, not both\n");
		return -EINVAL;
	}
	if (o->duration_ms && !o->pid) {
		pr_warn("--duration goes with --pid\n");
		return -EINVAL;
	}
	if (!o->pid && optind >= argc) {
		pr_warn("no command to run\n");
		fprintf(stderr, "Usage: %s [OPTIONS] -- COMMAND [ARGS...]\n"
			"       %s [OPTIONS] --pid PID [--duration SECONDS]\n",
			log__prog(), log__prog());
		return -EINVAL;
	}
	if (o->interval_ns && !o->readings) {
		pr_warn("--interval takes readings; it does not go with --no-readings\n");
		return -EINVAL;
	}
	if (o->report && o->core) {
		pr_warn("--report goes with a command or --pid, not --core (run `%s report PROFILE` on the profile)\n",
			log__prog());
		return -EINVAL;
	}
	if (rec_options__finish(&o->rec))
		return -EINVAL;
	o->argv = o->pid ? NULL : argv + optind;
	return 0;
}

/*
 * Before anything is launched or attached to: can the profile, and the
 * readings beside it, be written where they are to go?  0, or -errno with
 * one line on stderr.
 */
static int check_outputs(const struct trace_options *o)
{
	char why[PATH_MAX + 128];
	const char *sfx[3] = { ".json", ".timeline.jsonl", ".html" };
	int err, i;

	if (!o->output) {
		/* pprof-alloc.<pid>.pb.gz, in the working directory */
		err = outpath__check("pprof-alloc.pid.pb.gz", why, sizeof(why));
		if (err)
			pr_warn("cannot write the profile in the current directory (pprof-alloc.<pid>.pb.gz): %s; give -o FILE\n",
				why);
		return err;
	}
	err = outpath__check(o->output, why, sizeof(why));
	if (err) {
		pr_warn("cannot write the profile %s: %s\n",
			o->output, why);
		return err;
	}
	for (i = 0; i < 3 && !o->core; i++) {
		char *path;

		if ((i < 2 && !o->readings) || (i == 1 && !o->interval_ns) ||
		    (i == 2 && !o->report))
			continue;
		path = timeline__sibling(o->output, sfx[i]);
		if (!path)
			return -ENOMEM;
		err = outpath__check(path, why, sizeof(why));
		if (err)
			pr_warn("cannot write the %s %s: %s (give another -o%s)\n",
				i == 2 ? "report" : "readings", path, why,
				i == 2 ? "" : ", or --no-readings");
		free(path);
		if (err)
			return err;
	}
	return 0;
}

int cmd_record(int argc, char **argv)
{
	struct trace_options o;
	struct run r;
	sigset_t sigs;
	char *agent;
	int sfd, code;

	code = parse_options(argc, argv, &o);
	if (code || check_outputs(&o)) {
		debug_options__fini(&o.debug);
		return code == 1 ? 0 : 2;	/* 1: the help */
	}
	log__set_quiet(o.quiet);
	if (o.core) {
		struct debuginfo_opts dopts;
		struct postmortem_opts po = {
			.core = o.core, .output = o.output,
			.symbolize = o.symbolize, .top = o.top,
			.debug = &dopts,
		};

		debug_options__get(&o.debug, &dopts);
		code = postmortem__run(&po);
		debug_options__fini(&o.debug);
		return code;
	}
	agent = launch__find_agent();
	if (!agent) {
		pr_warn("cannot find the agent libpprof-alloc.so next to the tracer or in ../lib/pprof-alloc/; set PPROF_ALLOC_AGENT\n");
		debug_options__fini(&o.debug);
		return 1;
	}
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGQUIT);
	sigaddset(&sigs, SIGCHLD);
	if (o.follow)
		sigaddset(&sigs, SIGUSR1);	/* a follower's: exec'd */
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		pr_warn("signalfd: %s\n", strerror(errno));
		code = 1;
		goto out_agent;
	}
	trace__init(&r, &o, sfd);
	code = o.jemalloc_prof ? trace__jeprof(&r, agent) :
	       o.pid ? trace__attach(&r, agent) :
		       trace__launch(&r, agent, &sigs);
	children__close(&r.ch);
	close(sfd);
out_agent:
	free(agent);
	debug_options__fini(&o.debug);
	return code;
}
