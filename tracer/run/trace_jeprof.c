// SPDX-License-Identifier: MIT
/*
 * trace_jeprof.c - `--pid PID --jemalloc-prof`: jemalloc's own heap
 * profile of a running process, written as every other profile is.
 *
 * Attach as for any --pid run (the stats thread is what asks jemalloc),
 * find a mallctl the executable keeps only in its .symtab (a jemalloc
 * linked in statically exports none), have the agent dump jemalloc's
 * profile (jeprof.c), detach at once, and write the stacks, less
 * jemalloc's own frames, through the same symbolizer and pprof writer:
 * the mappings are the process's as read after the dump.  No readings
 * file: the profile is jemalloc's, taken in one moment.  The agent's own
 * samples, recorded for the few milliseconds it was attached, are not
 * used.
 */
#include "trace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "common/log.h"
#include "elf/symbols.h"
#include "tracer/output/jeprof.h"
#include "tracer/output/outpath.h"
#include "pa_clock.h"
#include "tracer/output/pprof_report.h"

struct jeprof_job {
	struct heap *h;
	const struct mapping_set *ms;
	struct symbols *syms;
	const struct report_info *info;
};

static int write_profile(const char *path, void *ctx)
{
	const struct jeprof_job *job = ctx;

	return report__write(job->h, job->ms, job->syms, job->info, path);
}

/* The dump, its stacks symbolized, into the profile.  0 or -errno. */
static int write_dump(struct run *r, const struct jeprof_dump *d,
		      uint64_t mallctl)
{
	struct mapping_set *ms = &r->rec.s.maps;
	char source[512], cmd[64], written[PATH_MAX], b1[32];
	struct symbols *syms = NULL;
	struct heap_totals t;
	struct heap h;
	int err;

	mapping_set__refresh(ms);
	if (r->o->symbolize || r->o->top) {
		struct debuginfo_opts dopts;

		debug_options__get(&r->o->debug, &dopts);
		syms = report__symbols(ms, &dopts, log__quiet());
		if (!syms)
			pr_warn("out of memory loading symbols; writing addresses only\n");
	}
	heap__init(&h, d->period);
	err = jeprof__fill(&h, d, ms, syms, mallctl);
	if (err) {
		pr_warn("out of memory building the profile\n");
		goto out_free;
	}
	snprintf(cmd, sizeof(cmd), "process %d", (int)r->pid);
	{
		struct report_info info = jeprof__report_info(d, r->pid, cmd,
							      source,
							      sizeof(source));
		struct jeprof_job job = {
			.h = &h, .ms = ms,
			.syms = r->o->symbolize ? syms : NULL, .info = &info,
		};

		err = outpath__write(r->output, write_profile, &job,
				     "the profile", written, sizeof(written));
	}
	heap__totals(&h, &t);
	if (err >= 0)
		pr_info("jemalloc's profile of process %d: %zu stacks, %s in use (sampling period %" PRIu64
			" bytes); wrote %s\n",
			(int)r->pid, d->nstacks,
			readings__human((uint64_t)t.inuse_bytes, b1, sizeof(b1)),
			d->period, written);
	if (err >= 0 && r->o->top)
		report__top(&h, syms, r->o->top, stdout);
out_free:
	heap__fini(&h);
	symbols__free(syms);
	return err < 0 ? err : 0;
}

int trace__jeprof(struct run *r, const char *agent)
{
	struct trace_options *o = r->o;
	struct attach_config cfg;
	struct jeprof_reply reply = { 0 };
	struct jeprof_dump d;
	char why[1024];
	uint64_t mallctl;
	int err, code = 1;

	r->pid = o->pid;
	/* the stats thread asks jemalloc, --no-readings or not */
	recorder__attach_config(&cfg, &o->rec, agent, true);
	if (recorder__attach(&r->rec, r->pid, &cfg, &o->rec)) {
		trace__fini(r);
		return 1;
	}
	r->start_ns = pa_now_ns();
	if (o->output)
		snprintf(r->output, sizeof(r->output), "%s", o->output);
	else
		snprintf(r->output, sizeof(r->output), "pprof-alloc.%d.pb.gz",
			 (int)r->pid);
	mallctl = jeprof__exe_mallctl(&r->rec.s.maps);
	err = jeprof__fetch(r->pid, r->rec.rf.hdr, r->rec.rf.file_size,
			    mallctl, &d, &reply, why, sizeof(why));
	recorder__detach(&r->rec);
	if (err)
		pr_warn("%s\n", why);
	else if (!write_dump(r, &d, reply.mallctl))
		code = 0;
	jeprof_dump__fini(&d);
	trace__fini(r);
	return code;
}
