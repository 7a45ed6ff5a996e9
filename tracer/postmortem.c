// SPDX-License-Identifier: MIT
/*
 * postmortem.c - a heap profile from the core dump of a process that ran
 * with the agent (pprof-alloc --core FILE).
 *
 * The agent's memfd is a shared mapping of a file with no name on disk,
 * which the kernel dumps by default (coredump_filter bit 1, "anonymous
 * shared", covers it), so the core holds the header, the ring, the live
 * table and the stack table as they were at the crash.  It is found among
 * the core's file mappings (NT_FILE, "/memfd:pprof-alloc"), copied out
 * whole, and validated like a live memfd: magic, ABI version, and every
 * size against the layout and against what the core holds.
 *
 * The heap at the crash is the live table (each entry with its stack from
 * the stack table); the records still in the ring are drained on top of
 * it (a record already in the table is recognised by its allocation id),
 * and then the live table has the last word on what was still live.  The
 * code mappings come from the core: each executable segment's NT_FILE
 * entry gives path and offset, and the ELF header page of the file, which
 * the kernel dumps by default (coredump_filter bit 4), gives the load bias
 * and the GNU build ID.  The agent's own module records in the ring, if
 * any are left, fill in what the core lacks.  Files are opened by path only
 * when their build ID matches; symbols come from the same lookup as
 * `pprof-alloc symbolize` (--debug-dir, debuginfod).
 */
#include "postmortem.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "elf/core.h"
#include "elf/log.h"
#include "elf/symbols.h"
#include "pa_clock.h"
#include "pprof_report.h"
#include "recorder.h"



/* Files the core names that are not on this machine: a core dumped in a
 * container names them by its paths - say how to reach them, once. */
static void hint_sysroot(const struct mapping_set *ms)
{
	size_t i, n = 0;
	const char *first = NULL;

	for (i = 0; i < ms->nmods; i++) {
		const char *p = ms->mods[i].path;

		if (ms->mods[i].fd >= 0 || !p || p[0] != '/' ||
		    !strncmp(p, "/memfd:", 7) || !access(p, F_OK))
			continue;
		if (!first)
			first = p;
		n++;
	}
	if (n)
		pr_warn("%zu file%s the core names %s not on this machine (%s%s): removed since, or the core is from a container, which names them by its paths (--sysroot DIR reads them under its root DIR)\n",
			n, n == 1 ? "" : "s", n == 1 ? "is" : "are", first,
			n > 1 ? ", ..." : "");
}

/* Every executable file mapping of the core, with its module. */
static int note_modules(const struct core *c, struct mapping_set *ms)
{
	size_t i, j;
	int err;

	for (i = 0; i < c->nsegs; i++) {
		const struct core_segment *s = &c->segs[i];
		const struct core_file_map *f = NULL, *first = NULL;
		uint8_t id[PA_BUILD_ID_MAX];
		size_t id_len;
		uint64_t bias = 0;

		if (!s->exec)
			continue;
		for (j = 0; j < c->nfiles && !f; j++)
			if (c->files[j].start == s->vaddr)
				f = &c->files[j];
		if (!f || f->path[0] != '/')
			continue;
		for (j = 0; j < c->nfiles; j++)
			if (!strcmp(c->files[j].path, f->path) &&
			    (!first || c->files[j].start < first->start))
				first = &c->files[j];
		if (first->offset ||
		    !core__module_identity(c, first->start, &bias, id,
					   sizeof(id), &id_len))
			continue;
		err = mapping_set__note(ms, s->vaddr, s->vaddr + s->memsz,
					f->offset, bias, f->path,
					strlen(f->path), id, id_len);
		if (err == -ENOMEM)
			return err;
	}
	return 0;
}

/* The agent's memfd in the core, copied out and validated. */
static int read_memfd(const struct core *c, uint8_t **out,
		      struct pa_header *copy, const char **why)
{
	const struct core_file_map *f = NULL;
	uint64_t fsize;
	size_t i;
	uint8_t *buf;

	for (i = 0; i < c->nfiles && !f; i++)
		if (pa_is_memfd_path(c->files[i].path))
			f = &c->files[i];
	if (!f) {
		*why = "no pprof-alloc agent memory in it (the process did not run with the agent)";
		return -ENOENT;
	}
	if (core__read(c, f->start, copy, sizeof(*copy))) {
		*why = "the agent's memory was not dumped (coredump_filter without bit 1, or a truncated core)";
		return -EFAULT;
	}
	if (copy->magic != PA_MAGIC) {
		*why = "the agent's memory does not start with the pprof-alloc magic";
		return -EPROTO;
	}
	if (copy->abi_version != PA_ABI_VERSION) {
		*why = "the agent's memory is of another ABI version than this tracer";
		return -EPROTONOSUPPORT;
	}
	fsize = pa_layout_file_size(copy->data_size, copy->live_capacity,
				    copy->max_frames, copy->site_capacity);
	if (!fsize || fsize != copy->file_size ||
	    copy->site_offset != pa_site_offset(copy->data_size,
						copy->live_capacity,
						copy->max_frames) ||
	    fsize > f->end - f->start || !copy->sample_rate ||
	    copy->stack_capacity != pa_stack_capacity(copy->live_capacity)) {
		*why = "the agent's header does not agree with its layout";
		return -EPROTO;
	}
	buf = malloc(fsize);
	if (!buf) {
		*why = "out of memory for the agent's memory";
		return -ENOMEM;
	}
	if (core__read(c, f->start, buf, fsize)) {
		free(buf);
		*why = "the agent's memory is only partly in the core (truncated?)";
		return -EFAULT;
	}
	*out = buf;
	return 0;
}

int postmortem__run(const struct postmortem_opts *o)
{
	struct recorder rec;
	struct pa_header h;
	struct core c;
	struct symbols *syms = NULL;
	char why_buf[160], what[512], ended[128], outbuf[64], unwind[768];
	char exact[768];
	const char *why = NULL, *output = o->output;
	uint8_t *mem = NULL;
	int err, code = 1;

	recorder__init(&rec);
	err = core__open(&c, o->core, why_buf, sizeof(why_buf));
	if (err) {
		pr_warn("--core %s: %s\n", o->core, why_buf);
		return 1;
	}
	err = read_memfd(&c, &mem, &h, &why);
	if (err) {
		pr_warn("--core %s: %s\n", o->core, why);
		goto out_core;
	}
	ringfile__wrap(&rec.rf, mem, &h);	/* mem is rec's now */
	if (recorder__start(&rec, c.pid, NULL))
		goto out_rec;
	/* the dead hold nothing to look up in /proc */
	rec.s.alive = false;
	err = note_modules(&c, &rec.s.maps);
	if (!err)
		err = recorder__seed(&rec);
	if (err) {
		pr_warn("--core %s: %s\n", o->core, strerror(-err));
		goto out_rec;
	}
	/* the modules' files, for unwinding the ring's stack copies */
	rec.s.maps.root = o->debug ? o->debug->sysroot : NULL;
	if (mapping_set__open_reported(&rec.s.maps) && !rec.s.maps.root &&
	    !log__quiet())
		hint_sysroot(&rec.s.maps);
	err = recorder__drain_quiet(&rec, pa_now_ns(), true);
	if (err == -EPROTO)
		pr_warn("--core %s: the ring is corrupt (%s); using the live table\n",
			o->core, rec.rc.error);
	else if (err < 0)
		goto out_rec;
	/* whatever the ring held, the table has the last word */
	if (heap__reconcile(&rec.s.heap, recorder__live_table(&rec),
			    rec.rf.live_capacity))
		goto out_rec;
	mapping_set__open_reported(&rec.s.maps);

	if (!output) {
		snprintf(outbuf, sizeof(outbuf), "pprof-alloc.%d.pb.gz", c.pid);
		output = outbuf;
	}
	snprintf(what, sizeof(what), "core dump %s of process %d (%s)",
		 o->core, c.pid, c.comm[0] ? c.comm : "?");
	if (c.signal > 0 && c.signal < NSIG)
		snprintf(ended, sizeof(ended), "dumped core on signal %d (%s)",
			 c.signal, strsignal(c.signal));
	else
		snprintf(ended, sizeof(ended), "dumped core");
	if (o->symbolize || o->top)
		syms = report__symbols(&rec.s.maps, o->debug, log__quiet());
	recorder__unwind_summary(&rec, PA_UNWIND_FP, unwind, sizeof(unwind));
	recorder__exact_summary(&rec, exact, sizeof(exact));
	{
		struct report_info info = {
			.command = what, .ended = ended,
			.lost_records = h.lost_records,
			.lost_bytes = h.lost_bytes,
			.live_overflow = h.live_overflow,
			.agent_samples = h.samples,
			.skipped_busy = rec.rc.skipped_busy,
			.resyncs = rec.rc.resyncs,
			.time_nanos = (int64_t)time(NULL) *
				      (int64_t)PA_NSEC_PER_SEC,
			.unwind_summary = unwind[0] ? unwind : NULL,
			.exact_summary = exact[0] ? exact : NULL,
			/* the tables replayed: the heap at the crash, not
			 * the run's peak */
			.no_peak = true,
		};

		err = report__write(&rec.s.heap, &rec.s.maps,
				    o->symbolize ? syms : NULL, &info, output);
	}
	if (err) {
		pr_warn("cannot write %s: %s\n", output, strerror(-err));
	} else {
		code = 0;
		pr_info("%s %s; wrote %s (%" PRIu64
			" live samples from the agent's table, %" PRIu64
			" records from its ring)\n", what, ended,
			output, rec.s.heap.seeded, rec.rc.records);
		if (o->top)
			report__top(&rec.s.heap, syms, o->top, stdout);
	}
	symbols__free(syms);
out_rec:
	recorder__fini(&rec);
out_core:
	core__close(&c);
	return code;
}
