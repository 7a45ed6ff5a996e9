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
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "attach.h"
#include "readings.h"
#include "builtin.h"
#include "args.h"
#include "elf/log.h"


static void usage(FILE *out)
{
	fprintf(out,
"Usage: pprof-alloc stats --pid PID [--json | --prometheus] [OPTIONS]\n"
"Print one reading of what process PID costs: /proc/PID/smaps_rollup and\n"
"status, its memory cgroup (v1 or v2), its allocator's statistics and the\n"
"pprof-alloc agent's counters (when an agent is in the process).\n"
"\n"
"  -p, --pid PID        the process\n"
"      --json           JSON (one object), sizes in bytes\n"
"      --prometheus     Prometheus text exposition format\n"
"      --proc-root DIR  read DIR/PID/... instead of /proc/PID/... (the\n"
"                       agent is then not looked for)\n"
"      --sys-root DIR   read cgroups under DIR/fs/cgroup instead of the\n"
"                       mounts this tracer sees\n"
"      --timeout MS     wait at most MS for the agent's answer (default 500)\n"
"  -h, --help           this help\n"
"\n"
"Missing readings are printed as absent (null, '-', or no sample), never\n"
"as zero; an agent that cannot be read (another user's process) is said to\n"
"be so.  Exit status: 0 printed; 1 no such process, or a zombie; 2 usage\n"
"error.\n");
}

enum format { FMT_TEXT, FMT_JSON, FMT_PROMETHEUS };

int cmd_stats(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_PROM, OPT_PROC, OPT_SYS, OPT_TIMEOUT };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "prometheus", no_argument, NULL, OPT_PROM },
		{ "proc-root", required_argument, NULL, OPT_PROC },
		{ "sys-root", required_argument, NULL, OPT_SYS },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct readings_source src = {
		.proc_root = "/proc", .stats_timeout_ms = 500,
	};
	struct ringfile rf = { .fd = -1 };
	char agent_why[320];
	struct readings r;
	enum format fmt = FMT_TEXT;
	bool have_rf = false, proc_given = false;
	char why[ATTACH_WHY_SIZE] = "";
	char *end;
	long v;
	int c, err, code = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (pid_option(optarg, &src.pid))
				return 2;
			break;
		case OPT_JSON:
		case OPT_PROM:
			if (fmt != FMT_TEXT) {
				pr_warn("give --json or --prometheus, not both\n");
				return 2;
			}
			fmt = c == OPT_JSON ? FMT_JSON : FMT_PROMETHEUS;
			break;
		case OPT_PROC:
			src.proc_root = optarg;
			proc_given = true;
			break;
		case OPT_SYS:
			src.sys_root = optarg;
			break;
		case OPT_TIMEOUT:
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v < 0 || v > 60000) {
				pr_warn("invalid --timeout '%s': want milliseconds, 0 to 60000\n",
					optarg);
				return 2;
			}
			src.stats_timeout_ms = (int)v;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			try_help();
			return 2;
		}
	}
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
