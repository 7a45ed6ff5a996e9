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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "common/log.h"
#include "elf/symbols.h"
#include "tracer/record/mappings.h"
#include "tracer/output/outpath.h"
#include "pa_clock.h"
#include "tracer/output/pprof_report.h"
#include "tracer/readings/readings_procmem.h"
#include "tracer/report/report_html.h"
#include "shquote.h"

/* For readings__summary and the others: collect the comment lines. */
#define SUMMARY_LINES	12
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
 * Which allocator serves the program's malloc, where it is, and which of
 * its calls the agent sees: one line, on stderr and in the comments.
 */
static void allocator_line(struct run *r, const struct readings *last,
			   struct summary_lines *sl)
{
	const struct alloc_reading *a = last ? &last->alloc : NULL;
	char line[1024];

	if (!r->calls_seen[0])
		return;
	if (a && a->ok && a->allocator != PA_ALLOCATOR_UNKNOWN)
		snprintf(line, sizeof(line), "allocator: %s (%.300s, %s) serves malloc; the agent sees %s",
			 readings__allocator_name(a->allocator), a->path,
			 a->in_program ? "linked into the executable" :
					 "a shared library",
			 r->calls_seen);
	else if (a && a->ok)
		snprintf(line, sizeof(line), "allocator: %s (%.300s, %s) serves malloc; the agent sees %s",
			 a->in_program && r->rec.ast.entry_allocator ?
				 r->rec.ast.entry_allocator : "an unknown one",
			 a->path[0] ? a->path : "no file",
			 a->in_program ? "linked into the executable" :
					 "a shared library",
			 r->calls_seen);
	else
		snprintf(line, sizeof(line), "allocator: not known (%.300s); the agent sees %s",
			 a ? a->why : r->tl_open ? "no reading" :
				 "no readings were taken: --no-readings",
			 r->calls_seen);
	add_summary_line(sl, line);
	pr_info("%s\n", line);
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

/*
 * Exact mode: the agent counted every call's bytes (agent/inuse.c), and
 * its peak is the real one where the tracer's reads of the sites, 50 ms
 * apart, missed it - a heap that rose and fell between two, a program
 * shorter than one.  The profile's peak_* stay the highest read: only the
 * tracer has the stacks.
 */
static void peak_counted(struct run *r, struct readings_end *end,
			 uint64_t now)
{
	struct ringfile_peak p;
	const char *why = NULL;
	uint64_t at;
	int err;

	err = ringfile__peak(&r->rec.rf, &p, &why);
	if (err == -EBADMSG)
		pr_warn("%s: its peak is the tracer's reads'\n", why);
	if (err || (end->has_peak_heap && p.bytes <= end->peak_bytes))
		return;
	end->peak_read_bytes = end->has_peak_heap ? end->peak_bytes : 0;
	if (!end->has_peak_heap)
		end->peak_objects = 0;
	end->has_peak_heap = true;
	end->peak_exact = p.exact;
	end->peak_counted = true;
	end->peak_bytes = (double)p.bytes;
	end->peak_slack = p.exact ? 0 : p.slack;
	/* the RSS read after the tracer's high is not one read after this */
	end->has_peak_rss_then = false;
	if (p.at_ns) {
		at = p.at_ns < r->start_ns ? r->start_ns :
		     p.at_ns > now ? now : p.at_ns;
		end->peak_unix_ns = pa_unix_ns() - (int64_t)(now - at);
		end->peak_after_s = (double)(at - r->start_ns) /
				    PA_NSEC_PER_SEC;
	}
}

/*
 * The highest points: the heap's (its snapshot made ready for the
 * profile) and the resident set's from the kernel (a launched child's
 * wait4; an attached process's VmHWM, from its last reading).
 */
static void read_peaks(struct run *r, struct readings_end *end)
{
	struct heap *h = &r->rec.s.heap;
	uint64_t now = pa_now_ns(), at;

	heap__peak_ready(h);
	if (h->peak_bytes >= 0.5) {
		/* the agent's clock: kept inside the run */
		at = h->peak_ns < r->start_ns ? r->start_ns :
		     h->peak_ns > now ? now : h->peak_ns;
		end->has_peak_heap = true;
		end->peak_exact = h->rate == 1;
		end->peak_stale = h->peak_failed;
		end->peak_bytes = h->peak_bytes;
		end->peak_objects = h->peak_objects;
		end->peak_unix_ns = pa_unix_ns() - (int64_t)(now - at);
		end->peak_after_s = (double)(at - r->start_ns) /
				    PA_NSEC_PER_SEC;
		end->has_peak_rss_then = r->has_peak_rss_then;
		end->peak_rss_then = r->peak_rss_then;
		end->peak_rss_after_ms = (double)r->peak_rss_after_ns /
					 PA_NSEC_PER_MSEC;
	}
	peak_counted(r, end, now);
	/* for a process that dies without its reading at exit; one taken
	 * then has its own VmHWM (timeline__finish) */
	if (r->has_usage && r->usage.ru_maxrss > 0) {
		end->has_peak_rss = true;
		end->peak_rss = (uint64_t)r->usage.ru_maxrss * 1024;
		end->peak_rss_from = "wait4 ru_maxrss, with the children it waited for";
	}
}

/* "; peak heap 1.0 MiB, peak RSS 9.0 MiB, final RSS 8.0 MiB (at exit)"
 * for the summary line on stderr, or "". */
static void peaks_line(const struct readings_end *end,
		       const struct readings *last, char *buf, size_t len)
{
	char b[32], at[96] = "";
	uint64_t rss;
	size_t n = 0;

	buf[0] = 0;
	if (end->has_peak_heap)
		n += (size_t)snprintf(buf, len, "; peak heap %s",
				      readings__human((uint64_t)llround(
						end->peak_bytes), b, sizeof(b)));
	if (end->has_peak_rss && n < len)
		n += (size_t)snprintf(buf + n, len - n, "%s peak RSS %s",
				      n ? "," : ";",
				      readings__human(end->peak_rss, b,
						      sizeof(b)));
	if (!last || !kvset__value(&last->proc.status, "VmRSS", &rss) ||
	    n >= len)
		return;
	if (end->reading && !strcmp(end->reading, "periodic"))
		snprintf(at, sizeof(at), " (last reading, %.1f s before the end)",
			 (double)(end->final_unix_ns - last->unix_ns) /
				 PA_NSEC_PER_SEC);
	else if (end->reading)
		snprintf(at, sizeof(at), " (%s)", end->reading);
	snprintf(buf + n, len - n, "%s final RSS %s%s", n ? "," : ";",
		 readings__human(rss, b, sizeof(b)), at);
}

/*
 * A run without --interval replaced the profile at path: a timeline
 * beside it is an earlier run's, which a report would chart as this one's.
 */
static void drop_old_timeline(const char *path)
{
	char *tl = timeline__sibling(path, ".timeline.jsonl");

	if (tl && unlink(tl) && errno != ENOENT)
		pr_warn("cannot remove %s, an earlier run's timeline: %s\n",
			tl, strerror(errno));
	free(tl);
}

/* --report: the page beside the profile, where it was written. */
static void write_report(const char *profile)
{
	char *path = timeline__sibling(profile, ".html"), why[512] = "";
	struct report_html_stats st;
	int err;

	if (!path) {
		pr_warn("out of memory: no report\n");
		return;
	}
	err = report_html__write(profile, path, &st, why, sizeof(why));
	if (err)
		pr_warn("the report %s was NOT written: %s\n", path,
			why[0] ? why : strerror(-err));
	else
		pr_info("wrote %s\n", path);
	free(path);
}

/* What the profile's writer needs, for outpath__write. */
struct profile_job {
	struct run *r;
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
	const struct readings *last = NULL;
	struct readings_end end;
	char cmd[1024], unwind_line[768], oom[512], full[768], written[PATH_MAX];
	char exact_line[768], peaks[256];
	char loss[512], line_children[512], line_exec[1024];
	struct ringfile_losses losses;
	/* the tracer's own time after the program's work ended (its exit()
	 * began, or its end was seen), apart from the program's slowdown */
	uint64_t t_finish = pa_now_ns(), since, sym_ns = 0, t0;
	char after[128] = "";
	int err;

	since = r->ended_ns && r->ended_ns <= t_finish ? r->ended_ns : t_finish;
	read_end(r, &end, ended, alive, sigkilled);
	read_peaks(r, &end);
	/* again in timeline__finish, when it takes VmHWM */
	readings__peak_rss_floor(&end);
	readings__oom_describe(&end.oom, &end, oom, sizeof(oom));
	if (oom[0])
		snprintf(full, sizeof(full), "%s; %s%s", ended,
			 status_known ? "" : "probably ", oom);
	else
		snprintf(full, sizeof(full), "%s", ended);
	end.ended = full;
	if (r->tl_open) {
		struct readings_source src;

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
	allocator_line(r, last, &sl);	/* "not known" without readings */
	peaks_line(&end, last, peaks, sizeof(peaks));
	readings__end_summary(&end, add_summary_line, &sl);
	children__drain(&r->ch);
	children__summary(&r->ch, line_children, sizeof(line_children));
	if (line_children[0]) {
		add_summary_line(&sl, line_children);
		pr_info("%s\n", line_children);
	}
	if (r->execs) {
		snprintf(line_exec, sizeof(line_exec),
			 "the command exec'd %u time%s: %s; profiled: the last",
			 r->execs, r->execs == 1 ? "" : "s", r->exec_chain);
		add_summary_line(&sl, line_exec);
		pr_info("%s\n", line_exec);
	}
	if (r->rec.ast.entry_line[0])
		add_summary_line(&sl, r->rec.ast.entry_line);
	loss[0] = 0;
	recorder__losses(&r->rec, &losses);
	if (losses.records) {
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
		shquote__argv(r->o->argv, cmd, sizeof(cmd));
	else
		snprintf(cmd, sizeof(cmd), "process %d", (int)r->pid);
	{
		struct report_info info = {
			.command = cmd,
			.jit_names = true,
			.ended = full,
			.lost_records = losses.records,
			.losses_bad = r->rec.rf.losses_bad,
			.lost_bytes = losses.bytes,
			.live_overflow = losses.live_overflow,
			.agent_samples = r->rec.s.heap.allocs + losses.samples,
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

		t0 = pa_now_ns();
		if (r->o->symbolize || r->o->top) {
			struct debuginfo_opts dopts;

			debug_options__get(&r->o->debug, &dopts);
			syms = report__symbols_for(&r->rec.s.maps,
						   &r->rec.s.heap, &dopts,
						   log__quiet());
			if (!syms)
				pr_warn("out of memory loading symbols; writing addresses only\n");
		}
		job.syms = r->o->symbolize ? syms : NULL;
		err = outpath__write(r->output, write_profile, &job,
				     "the profile", written, sizeof(written));
		sym_ns = pa_now_ns() - t0;
		if (!alive)
			snprintf(after, sizeof(after),
				 "; the tracer's work after the exit %.0f ms (%.0f ms of it symbolizing and writing)",
				 (double)(pa_now_ns() - since) / PA_NSEC_PER_MSEC,
				 (double)sym_ns / PA_NSEC_PER_MSEC);
		/* even with -q when it is not where it was to be */
		if (!log__quiet() || err) {
			char lost[640] = "";

			if (info.lost_records)
				snprintf(lost, sizeof(lost),
					 ", %" PRIu64 " records LOST: %s",
					 info.lost_records, loss);
			if (err < 0)
				pr_warn("%s %s; the profile was NOT written (%" PRIu64 " samples%s)%s\n",
					what, full, r->rec.s.heap.allocs, lost,
					peaks);
			else
				pr_warn("%s %s; wrote %s (%" PRIu64 " samples%s)%s%s\n",
					what, full, written,
					r->rec.s.heap.allocs, lost, peaks, after);
		}
		if (!err && r->tl_open && !r->tl.timeline_path)
			drop_old_timeline(r->output);
		if (err >= 0 && r->o->report)
			write_report(written);
		/* even with -q: the profile holds less than came in */
		recorder__warn_limits(&r->rec);
		if (r->o->top)
			report__top(&r->rec.s.heap, syms, r->o->top, stdout);
		symbols__free(syms);
	}
	readings__end_fini(&end);
	return err;
}
