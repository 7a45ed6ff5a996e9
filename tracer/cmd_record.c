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
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include "args.h"
#include "elf/log.h"
#include "launch.h"
#include "outpath.h"
#include "postmortem.h"
#include "trace.h"
#include "pa_clock.h"

static void usage(FILE *out)
{
	fprintf(out,
"Usage: %s [OPTIONS] -- COMMAND [ARGS...]\n"
"       %s [OPTIONS] --pid PID [--duration SECONDS]\n"
"       %s [OPTIONS] --core CORE-FILE\n"
"       %s symbolize [OPTIONS] PROFILE -o OUTPUT   (see symbolize --help)\n"
"       %s stats --pid PID [--json|--prometheus]    (see stats --help)\n"
"       %s serve --pid PID [--listen ADDR:PORT]     (see serve --help)\n"
"       %s report PROFILE [-o REPORT.html]           (see report --help)\n"
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
"      --jemalloc-prof    with --pid: write the heap profile that the\n"
"                         process's own jemalloc keeps (it must run with\n"
"                         MALLOC_CONF=prof:true), taken at once, instead of\n"
"                         sampling; jemalloc's rate (lg_prof_sample) applies\n"
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
"                         (taken as the process exits, or at detach)\n"
"      --report           also write PROFILE.html (heap.html for -o\n"
"                         heap.pb.gz): summary, memory over time, flame\n"
"                         graphs; see `pprof-alloc report --help`\n"
"      --proc-root DIR    read /proc files under DIR (containers)\n"
"      --sys-root DIR     read cgroups under DIR/fs/cgroup\n"
"  -q, --quiet            no summary on stderr\n"
"  -h, --help             this help\n"
"      --version          print the version and exit\n"
"\n"
"Read the profile with: go tool pprof -top FILE\n"
"The output's directory is checked before COMMAND starts; if writing still\n"
"fails at the end, the files go to the current directory or $TMPDIR (/tmp),\n"
"and stderr says where.\n"
"Exit status: COMMAND's (128+N if it was killed by signal N), whatever\n"
"happened to the output; 2 for a usage error or an output that cannot be\n"
"written.  Attached: 0; 1 if attaching failed or the profile is not where\n"
"-o said.\n",
		log__prog(), log__prog(), log__prog(), log__prog(), log__prog(),
		log__prog(), log__prog());
}

static int parse_options(int argc, char **argv, struct trace_options *o)
{
	enum { OPT_TOP = 256, OPT_NOSYM, OPT_DURATION, OPT_INTERVAL,
	       OPT_NO_READINGS, OPT_PROC_ROOT, OPT_SYS_ROOT, OPT_CORE,
	       OPT_FOLLOW, OPT_REPORT, OPT_JEPROF };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		REC_LONGOPTS,
		{ "top", required_argument, NULL, OPT_TOP },
		{ "no-symbolize", no_argument, NULL, OPT_NOSYM },
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "no-readings", no_argument, NULL, OPT_NO_READINGS },
		{ "report", no_argument, NULL, OPT_REPORT },
		{ "proc-root", required_argument, NULL, OPT_PROC_ROOT },
		{ "sys-root", required_argument, NULL, OPT_SYS_ROOT },
		{ "core", required_argument, NULL, OPT_CORE },
		{ "follow-children", no_argument, NULL, OPT_FOLLOW },
		{ "jemalloc-prof", no_argument, NULL, OPT_JEPROF },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		DEBUG_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	double d;
	int c, mine;

	*o = (struct trace_options){ .symbolize = true, .readings = true,
			       .proc_root = "/proc" };
	rec_options__init(&o->rec, REC_MAX_STACKS_PROFILE);
	while ((c = getopt_long(argc, argv, "+o:r:p:qh", longopts, NULL)) != -1) {
		mine = debug_options__parse(&o->debug, c, optarg);
		if (!mine)
			mine = rec_options__parse(&o->rec, c, optarg);
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
			if (pid_option(optarg, &o->pid))
				return -EINVAL;
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
			o->interval_ns = (uint64_t)(d * PA_NSEC_PER_SEC);
			break;
		case OPT_NO_READINGS:
			o->readings = false;
			break;
		case OPT_REPORT:
			o->report = true;
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
		case OPT_JEPROF:
			o->jemalloc_prof = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return try_help();
		}
	}
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

	if (parse_options(argc, argv, &o) || check_outputs(&o)) {
		debug_options__fini(&o.debug);
		return 2;
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
