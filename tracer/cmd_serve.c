// SPDX-License-Identifier: MIT
/*
 * cmd_serve.c - `pprof-alloc serve`'s front-end: options, the PID file,
 * then serve.c's engine.
 */
#include "builtin.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tracer/options/args.h"
#include "tracer/options/options.h"
#include "common/log.h"
#include "tracer/serve/http.h"
#include "tracer/attach/launch.h"
#include "tracer/serve/serve.h"
#include "pa_clock.h"

enum {
	OPT_PID_FILE = 256, OPT_EVERY, OPT_OUT_DIR, OPT_KEEP,
	OPT_HEADER_TIMEOUT, OPT_NOSYM,
};

#define STR_(x) #x
#define STR(x) STR_(x)

static const struct opt serve_opts[] = {
	{ 'p', "pid", "PID", "the process", NULL },
	{ OPT_PID_FILE, "pid-file", "FILE",
	  "... read from FILE (a service's PID file)", NULL },
	{ 'l', "listen", "ADDR:PORT",
	  "where to listen (default 127.0.0.1:6060; another address, or "
	  ":PORT for all, only when given)", NULL },
	{ OPT_EVERY, "every", "SECONDS",
	  "also write a profile this often into --out-dir, as "
	  "pprof-alloc.PID.TIME.pb.gz (atomically)", NULL },
	{ OPT_OUT_DIR, "out-dir", "DIR",
	  "where --every writes (and a last one at exit)", NULL },
	{ OPT_KEEP, "keep", "N",
	  "keep the newest N of those (default 100)", NULL },
	{ OPT_HEADER_TIMEOUT, "header-timeout", "SECONDS",
	  "how long a client has to send a whole request header, from "
	  "connecting or from its last response, before it is disconnected "
	  "(default 10)", NULL },
	OPT_INCLUDE(rec_opts),
	{ OPT_NOSYM, "no-symbolize", NULL, "serve addresses only", NULL },
	OPT_INCLUDE(debug_opts),
	{ 'q', "quiet", NULL, "say nothing on stderr but errors", NULL },
	{ 'h', "help", NULL, "this help", NULL },
	OPT_END,
};
_Static_assert(SERVE_DEFAULT_KEEP == 100u, "--keep's help says 100");
_Static_assert(HTTP_HEADER_TIMEOUT_MS == 10000u,
	       "--header-timeout's help says 10");

static const char *const serve_synopsis[] = {
	"(--pid PID | --pid-file FILE) [OPTIONS]", NULL,
};

static const struct doc_section serve_sections[] = {
	{ "EXIT STATUS",
	  "0 when stopped, 1 if attaching or listening failed, 2 for a usage "
	  "error." },
	{ NULL, NULL },
};

const struct cmd_doc serve_doc = {
	.name = "pprof-alloc serve",
	.page = "pprof-alloc-serve",
	.summary = "serve a running process's heap profile over HTTP",
	.synopsis = serve_synopsis,
	.description =
	  "Attach to a running process and serve its heap profile and memory "
	  "readings over HTTP until stopped (SIGTERM or Ctrl-C detach "
	  "cleanly):\n"
	  "  /debug/pprof/heap     in-use and allocated (pprof; go tool pprof URL)\n"
	  "  /debug/pprof/allocs   the same, allocations first; ?seconds=N on either:\n"
	  "                        the change over the next N seconds; ?peak=1: the\n"
	  "                        heap at its highest first; ?jemalloc=1: the\n"
	  "                        profile the process's own jemalloc keeps (it runs\n"
	  "                        with MALLOC_CONF=prof:true), 409 if it has none\n"
	  "  /metrics              Prometheus text: the readings of `pprof-alloc stats`\n"
	  "  /healthz, /           health, an index page",
	.opts = serve_opts,
	.sections = serve_sections,
};

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

static int serve_option(void *ctx, int c, const char *arg)
{
	struct serve_options *o = ctx;
	uint64_t v;
	double d;
	int mine;

	mine = debug_options__parse(&o->debug, c, arg);
	if (!mine)
		mine = rec_options__parse(&o->rec, c, arg);
	if (mine)
		return mine < 0 ? mine : 0;
	switch (c) {
	case 'p':
		return pid_option(arg, &o->pid) ? -EINVAL : 0;
	case OPT_PID_FILE:
		o->pid_file = arg;
		return 0;
	case 'l':
		o->listen = arg;
		return 0;
	case OPT_EVERY:
		if (parse_seconds(arg, 1, 1e7, &d))
			return bad_option("--every", arg, "want seconds, at least 1");
		o->every_ns = (uint64_t)(d * PA_NSEC_PER_SEC);
		return 0;
	case OPT_OUT_DIR:
		o->out_dir = arg;
		return 0;
	case OPT_KEEP:
		if (parse_size(arg, &v) || !v || v > 1000000)
			return bad_option("--keep", arg, "want a count from 1");
		o->keep = (unsigned int)v;
		o->keep_given = true;
		return 0;
	case OPT_HEADER_TIMEOUT:
		if (parse_seconds(arg, 0.5, 3600, &d))
			return bad_option("--header-timeout", arg,
					  "want seconds, 0.5 to 3600");
		o->header_timeout_ms = (unsigned int)(d * 1000);
		return 0;
	case OPT_NOSYM:
		o->symbolize = false;
		return 0;
	case 'q':
		o->quiet = true;
		return 0;
	default:
		return -ENOTSUP;	/* in the table, not here */
	}
}

/* 0, 1 (the help was printed), or -errno (said). */
static int parse_options(int argc, char **argv, struct serve_options *o)
{
	int err;

	*o = (struct serve_options){
		.listen = "127.0.0.1:6060", .keep = SERVE_DEFAULT_KEEP,
		.symbolize = true,
	};
	rec_options__init(&o->rec, REC_MAX_STACKS_SERVE);
	err = opts__parse(&serve_doc, argc, argv, true, serve_option, o);
	if (err)
		return err;
	if (optind < argc) {
		pr_warn("unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (!o->pid == !o->pid_file) {
		pr_warn("give --pid or --pid-file (one of them)\n");
		return -EINVAL;
	}
	{
		char host[256];
		unsigned int port;

		if (http__parse_listen(o->listen, host, sizeof(host), &port)) {
			pr_warn("invalid --listen '%s': want HOST:PORT, [IPV6]:PORT or :PORT\n",
				o->listen);
			return -EINVAL;
		}
	}
	if (o->pid_file) {
		const char *why;
		pid_t named = 0;

		err = read_pid_file(o->pid_file, &named, &why);
		if (err == -ESRCH) {
			pr_warn("PID file %s names process %d, which does not exist\n",
				o->pid_file, (int)named);
			return -EINVAL;
		}
		if (err) {
			pr_warn("--pid-file %s: %s\n", o->pid_file,
				why ? why : strerror(-err));
			return -EINVAL;
		}
		o->pid = named;
	}
	if (!o->every_ns != !o->out_dir || (o->keep_given && !o->every_ns)) {
		pr_warn("--every and --out-dir go together (and --keep with them)\n");
		return -EINVAL;
	}
	if (o->out_dir) {
		struct stat st;

		if (stat(o->out_dir, &st) || !S_ISDIR(st.st_mode) ||
		    access(o->out_dir, W_OK)) {
			pr_warn("--out-dir %s: not a directory we can write to\n",
				o->out_dir);
			return -EINVAL;
		}
	}
	if (rec_options__finish(&o->rec))
		return -EINVAL;
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	struct serve_options o;
	char *agent;
	int code = 1;

	code = parse_options(argc, argv, &o);
	if (code) {
		debug_options__fini(&o.debug);
		return code == 1 ? 0 : 2;	/* 1: the help */
	}
	code = 1;
	log__set_quiet(o.quiet);
	agent = launch__find_agent();
	if (!agent) {
		pr_warn("cannot find the agent libpprof-alloc.so next to the tracer or in ../lib/pprof-alloc/; set PPROF_ALLOC_AGENT\n");
		goto out_opts;
	}
	code = serve__run(&o, agent);
	free(agent);
out_opts:
	debug_options__fini(&o.debug);
	return code;
}
