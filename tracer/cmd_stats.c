// SPDX-License-Identifier: MIT
/*
 * cmd_stats.c - `pprof-alloc stats`: one reading of a process, printed.
 *
 *   pprof-alloc stats --pid PID [--json | --prometheus]
 *                     [--proc-root DIR] [--sys-root DIR]
 *
 * Read-only: it never injects or attaches.  The allocator's statistics and
 * the agent's counters come from an agent already in the process (started
 * by `pprof-alloc` or preloaded); without one they are reported as
 * unknown, and the kernel's and the cgroup's readings are printed anyway.
 * With --proc-root the pid names a process of another procfs (a fixture
 * tree, or a host's /proc seen from a container), whose agent this tracer
 * cannot reach: the agent is not looked for.  An agent that may be there
 * but cannot be read (another user's process: its /proc/PID/fd, or the
 * memfd in it, is not ours to open) is reported as unreadable, with why,
 * never as "none".  A zombie is refused: it has no memory left, and
 * procfs names the root cgroup as its.
 *
 * Exit status: 0 printed; 1 no such process (nothing in procfs for it), a
 * zombie, or the output could not be written; 2 usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tracer/attach/attach.h"
#include "tracer/readings/readings.h"
#include "builtin.h"
#include "tracer/options/args.h"
#include "tracer/options/options.h"
#include "common/log.h"


enum { OPT_JSON = 256, OPT_PROM, OPT_PROC, OPT_SYS, OPT_TIMEOUT };

static const struct opt stats_opts[] = {
	{ 'p', "pid", "PID", "the process", NULL },
	{ OPT_JSON, "json", NULL, "JSON (one object), sizes in bytes", NULL },
	{ OPT_PROM, "prometheus", NULL, "Prometheus text exposition format", NULL },
	{ OPT_PROC, "proc-root", "DIR",
	  "read DIR/PID/... instead of /proc/PID/... (the agent is then not "
	  "looked for)", NULL },
	{ OPT_SYS, "sys-root", "DIR",
	  "read cgroups under DIR/fs/cgroup instead of the mounts this tracer "
	  "sees", NULL },
	{ OPT_TIMEOUT, "timeout", "MS",
	  "wait at most MS for the agent's answer (default 500)", NULL },
	{ 'h', "help", NULL, "this help", NULL },
	OPT_END,
};

static const char *const stats_synopsis[] = {
	"--pid PID [--json | --prometheus] [OPTIONS]", NULL,
};

static const struct doc_section stats_sections[] = {
	{ "OUTPUT",
	  "Missing readings are printed as absent (null, '-', or no sample), "
	  "never as zero; an agent that cannot be read (another user's "
	  "process) is said to be so." },
	{ "EXIT STATUS",
	  "0 printed; 1 no such process, or a zombie; 2 usage error." },
	{ NULL, NULL },
};

const struct cmd_doc stats_doc = {
	.name = "pprof-alloc stats",
	.page = "pprof-alloc-stats",
	.summary = "one reading of what a process's memory costs",
	.synopsis = stats_synopsis,
	.description =
	  "Print one reading of what process PID costs: "
	  "/proc/PID/smaps_rollup and status, its memory cgroup (v1 or v2), "
	  "its allocator's statistics and the pprof-alloc agent's counters "
	  "(when an agent is in the process).",
	.opts = stats_opts,
	.sections = stats_sections,
};

enum format { FMT_TEXT, FMT_JSON, FMT_PROMETHEUS };

struct stats_args {
	struct readings_source *src;
	enum format fmt;
	bool proc_given;
};

static int stats_option(void *ctx, int c, const char *arg)
{
	struct stats_args *a = ctx;
	char *end;
	long v;

	switch (c) {
	case 'p':
		return pid_option(arg, &a->src->pid) ? -EINVAL : 0;
	case OPT_JSON:
	case OPT_PROM:
		if (a->fmt != FMT_TEXT) {
			pr_warn("give --json or --prometheus, not both\n");
			return -EINVAL;
		}
		a->fmt = c == OPT_JSON ? FMT_JSON : FMT_PROMETHEUS;
		return 0;
	case OPT_PROC:
		a->src->proc_root = arg;
		a->proc_given = true;
		return 0;
	case OPT_SYS:
		a->src->sys_root = arg;
		return 0;
	case OPT_TIMEOUT:
		errno = 0;
		v = strtol(arg, &end, 10);
		if (errno || *end || v < 0 || v > 60000) {
			pr_warn("invalid --timeout '%s': want milliseconds, 0 to 60000\n",
				arg);
			return -EINVAL;
		}
		a->src->stats_timeout_ms = (int)v;
		return 0;
	default:
		return -ENOTSUP;	/* in the table, not here */
	}
}

int cmd_stats(int argc, char **argv)
{
	struct readings_source src = {
		.proc_root = "/proc", .stats_timeout_ms = 500,
	};
	struct stats_args args = { .src = &src, .fmt = FMT_TEXT };
	struct ringfile rf = { .fd = -1 };
	char agent_why[320];
	struct readings r;
	enum format fmt;
	bool have_rf = false, proc_given;
	char why[ATTACH_WHY_SIZE] = "";
	int err, code = 0;

	err = opts__parse(&stats_doc, argc, argv, true, stats_option, &args);
	if (err)
		return err == 1 ? 0 : 2;	/* 1: the help */
	fmt = args.fmt;
	proc_given = args.proc_given;
	if (optind < argc) {
		pr_warn("unexpected argument '%s'\n",
			argv[optind]);
		return 2;
	}
	if (!src.pid) {
		pr_warn("which process? give --pid PID\n");
		return 2;
	}
	if (proc_given) {
		src.no_agent_why = "not looked for: --proc-root names another procfs";
	} else {
		err = attach__find_agent(src.pid, &rf, why);
		if (!err) {
			have_rf = true;
			src.hdr = rf.hdr;
			src.rf = &rf;
			ringfile__set_born(&rf, src.pid);
			src.file_size = rf.file_size;
			src.live_capacity = rf.live_capacity;
		} else if (err == -ENOENT) {
			src.no_agent_why = "no pprof-alloc agent in the process";
		} else {
			/* it may be there: say that it could not be read */
			snprintf(agent_why, sizeof(agent_why), "%s%s",
				 why[0] ? why : strerror(-err),
				 err == -EACCES || err == -EPERM ?
				 "; run stats as root or as the process's user" :
				 "");
			src.no_agent_why = agent_why;
			src.agent_unreadable = true;
		}
	}
	err = readings__take(&r, &src);
	if (err == -ENOMEM) {
		pr_warn("out of memory\n");
		code = 1;
		goto out_close;
	}
	if (err == -ESRCH) {
		pr_warn("no process %d (nothing in %s/%d)\n",
			(int)src.pid, src.proc_root, (int)src.pid);
		code = 1;
		goto out_fini;
	}
	if (err == -ECHILD) {
		pr_warn("process %d is a zombie: it has exited (its parent has not reaped it yet) and has no memory or cgroup left to read\n",
			(int)src.pid);
		code = 1;
		goto out_fini;
	}
	if (fmt == FMT_JSON)
		readings__json(&r, stdout, true);
	else if (fmt == FMT_PROMETHEUS)
		readings__prometheus(&r, stdout);
	else
		readings__text(&r, stdout);
	if (fflush(stdout) || ferror(stdout)) {
		pr_warn("cannot write the output: %s\n",
			strerror(errno));
		code = 1;
	}
out_fini:
	readings__fini(&r);
out_close:
	if (have_rf)
		ringfile__close(&rf);
	return code;
}
