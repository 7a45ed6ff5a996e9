// SPDX-License-Identifier: MIT
/*
 * trace_end.c - the end of a run: what it found, written down.
 *
 * The profile (pprof_report.c), the readings beside it (the timeline's
 * last reading, the cgroup read again after the death) and one summary
 * line on stderr.  The target's memory cgroup (and /proc/vmstat) was read
 * when the run started (trace__read_start) and is read again here, so
 * that an OOM kill is told from any other SIGKILL (readings__oom_verdict)
 * and PROFILE.json has the cgroup as the death left it.  Records lost to a
 * full ring are explained (recorder__loss_advice).  Where the profile goes
 * was checked before the run (cmd_record.c); a place that fails anyway
 * (removed meanwhile, disk full) gets a fallback, said loudly
 * (outpath__write).
 */
#include "trace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "elf/log.h"
#include "elf/symbols.h"
#include "mappings.h"
#include "outpath.h"
#include "pa_clock.h"
#include "pprof_report.h"
#include "readings_procmem.h"

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

/*
 * The end of the run: the target's memory cgroup read again (the process
 * is dead, or about to be left), and whether the OOM killer killed it.
 */
static void read_end(struct run *r, struct readings_end *end,
		     const char *ended, bool alive, bool sigkilled)
{
	static const struct cgroup_reading none = { .version = 0 };
	uint64_t vm = 0;
	bool has_vm;

	memset(end, 0, sizeof(*end));
	end->ended = ended;
	end->after_exit = !alive;
	end->final_unix_ns = pa_unix_ns();
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

	return report__write(&job->r->rec.s.heap, &job->r->rec.s.maps, job->syms,
			     job->info, path);
}

int trace__finish(struct run *r, const char *what, const char *ended,
		  bool alive, bool sigkilled, bool status_known)
{
	struct summary_lines sl = { .n = 0 };
	struct readings_end end;
	char cmd[1024], unwind_line[768], oom[512], full[768], written[PATH_MAX];
	char exact_line[768];
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

		trace__readings_source(r, &src);
		last = timeline__finish(&r->tl, &src, alive, &end);
		if (last)
			readings__summary(last, add_summary_line, &sl);
		if (r->tl.timeline_path)
			pr_info("%lu readings in %s, %.2f ms of CPU each\n",
				r->tl.lines, r->tl.timeline_path,
				r->tl.readings ? (double)r->tl.cpu_ns /
						 r->tl.readings /
						 PA_NSEC_PER_MSEC : 0.0);
	}
	readings__end_summary(&end, add_summary_line, &sl);
	children__drain(&r->ch);
	children__summary(&r->ch, line_children, sizeof(line_children));
	if (line_children[0]) {
		add_summary_line(&sl, line_children);
		pr_info("%s\n", line_children);
	}
	loss[0] = 0;
	if (r->rec.rf.hdr->lost_records) {
		char line[600];

		recorder__loss_advice(&r->rec, loss, sizeof(loss));
		snprintf(line, sizeof(line), "records lost: %s", loss);
		add_summary_line(&sl, line);
	}
	if (r->rec.s.pending_modules)
		mapping_set__open_reported(&r->rec.s.maps);
	recorder__unwind_summary(&r->rec, r->o->rec.unwind, unwind_line,
				 sizeof(unwind_line));
	recorder__exact_summary(&r->rec, exact_line, sizeof(exact_line));
	if (r->o->argv)
		command_line(r->o->argv, cmd, sizeof(cmd));
	else
		snprintf(cmd, sizeof(cmd), "process %d", (int)r->pid);
	{
		struct report_info info = {
			.command = cmd,
			.ended = full,
			.lost_records = r->rec.rf.hdr->lost_records,
			.lost_bytes = r->rec.rf.hdr->lost_bytes,
			.live_overflow = r->rec.rf.hdr->live_overflow,
			.agent_samples = r->rec.s.heap.allocs +
					 r->rec.rf.hdr->lost_samples,
			.skipped_busy = r->rec.rc.skipped_busy,
			.resyncs = r->rec.rc.resyncs,
			.time_nanos = (int64_t)time(NULL) * (int64_t)PA_NSEC_PER_SEC,
			.unwind_summary = unwind_line[0] ? unwind_line : NULL,
			.exact_summary = exact_line[0] ? exact_line : NULL,
			.extra_comments = sl.ptrs,
			.nextra = sl.n,
			.duration_nanos = (int64_t)(pa_now_ns() - r->start_ns),
		};
		struct profile_job job = { .r = r, .info = &info };
		struct symbols *syms = NULL;

		if (r->o->symbolize || r->o->top) {
			struct debuginfo_opts dopts;

			debug_options__get(&r->o->debug, &dopts);
			syms = report__symbols(&r->rec.s.maps, &dopts,
					       log__quiet());
			if (!syms)
				pr_warn("out of memory loading symbols; writing addresses only\n");
		}
		job.syms = r->o->symbolize ? syms : NULL;
		err = outpath__write(r->output, write_profile, &job,
				     "the profile", written, sizeof(written));
		/* even with -q when it is not where it was to be */
		if (!log__quiet() || err) {
			char lost[640] = "";

			if (info.lost_records)
				snprintf(lost, sizeof(lost),
					 ", %" PRIu64 " records LOST: %s",
					 info.lost_records, loss);
			if (err < 0)
				pr_warn("%s %s; the profile was NOT written (%" PRIu64 " samples%s)\n",
					what, full, r->rec.s.heap.allocs, lost);
			else
				pr_warn("%s %s; wrote %s (%" PRIu64 " samples%s)\n",
					what, full, written,
					r->rec.s.heap.allocs, lost);
		}
		/* even with -q: the profile holds less than came in */
		recorder__warn_limits(&r->rec);
		if (r->o->top)
			report__top(&r->rec.s.heap, syms, r->o->top, stdout);
		symbols__free(syms);
	}
	readings__end_fini(&end);
	return err;
}
