// SPDX-License-Identifier: MIT
/*
 * postmortem.c - a heap profile from the core dump of a process that ran
 * with the agent (pprof-alloc --core FILE).
 *
 * The agent's memfd is a shared mapping of a file with no name on disk,
 * which the kernel dumps by default (coredump_filter bit 1, "anonymous
 * shared", covers it), so the core holds the header, the ring, the live
 * table and the stack table as they were at the crash.  It is found among
 * the core's file mappings (NT_FILE, "/memfd:pprof-alloc"), else as the
 * segment that starts with the agent's magic, copied out whole, and
 * validated like a live memfd: magic, ABI version, and every size against
 * the layout and against what the core holds.
 *
 * The heap at the crash is the live table (each entry with its stack from
 * the stack table); the records still in the ring are drained on top of
 * it (a record already in the table is recognised by its allocation id),
 * and then the live table has the last word on what was still live.  The
 * code mappings come from the core (elf/core_modules.c): NT_FILE's files,
 * then the dynamic loader's list (r_debug) in the core's memory for what
 * NT_FILE lacks (gcore and crash handlers may write none, or cut it), each
 * with the load bias and GNU build ID of its ELF headers in the core; then
 * the agent's own module records in the ring, if any are left.  Files are
 * opened by path only when their build ID matches; symbols come from the
 * same lookup as `pprof-alloc symbolize` (--debug-dir, debuginfod).
 *
 * A profile whose frames no module names is not written: when the
 * executable's code or every frame is in no known module, one line says
 * what each source lacked and the exit status is 1.
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
#include "elf/core_modules.h"
#include "common/log.h"
#include "elf/symbols.h"
#include "pa_clock.h"
#include "tracer/output/pprof_report.h"
#include "recorder.h"
#include "tracer/record/stackwalk.h"



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

/*
 * The core's modules into ms: what core_modules__find read (NT_FILE, then
 * the loader's list).  A path only the loader's list or the auxiliary
 * vector gave may be a symbolic link (AT_EXECFN, PT_INTERP's
 * /lib64/ld-linux-x86-64.so.2) that mapping_set__open_reported would not
 * follow: without --sysroot, where the path is this machine's, it is
 * resolved first - the build ID still decides whether the file is the one.
 */
static int note_modules(const struct core_modules *cm, struct mapping_set *ms)
{
	size_t i;
	int err;

	for (i = 0; i < cm->nsegs; i++) {
		const struct core_module_seg *s = &cm->segs[i];
		const char *path = s->path;
		char *real = NULL;

		if (s->source == CORE_MOD_LOADER && !ms->root) {
			real = realpath(s->path, NULL);
			if (real)
				path = real;
		}
		if (s->is_exe && !ms->exe)
			ms->exe = strdup(path);
		err = mapping_set__note(ms, s->start, s->end, s->offset,
					s->bias, path, strlen(path),
					s->build_id,
					s->build_id_len <= PA_BUILD_ID_MAX ?
						s->build_id_len : 0);
		free(real);
		if (err == -ENOMEM)
			return err;
	}
	return 0;
}

/* Frames of the profile's stacks in no module the core named, and the
 * bytes allocated with such a frame in their stack. */
struct coverage {
	uint64_t frames, unknown;
	double bytes, unknown_bytes;
};

static void coverage(const struct heap *h, const struct mapping_set *ms,
		     struct coverage *cv)
{
	size_t b, i;

	memset(cv, 0, sizeof(*cv));
	for (b = 0; b < h->nbuckets; b++) {
		const struct heap_bucket *k = &h->buckets[b];
		bool any = false;

		for (i = 0; i < k->nframes; i++) {
			uint64_t a = h->frames[k->frames_at + i];

			if (a == STACKWALK_TRUNCATED || a == HEAP_FRAME_OTHER)
				continue;
			cv->frames++;
			if (!mapping_set__find(ms, a)) {
				cv->unknown++;
				any = true;
			}
		}
		cv->bytes += k->alloc_bytes;
		if (any)
			cv->unknown_bytes += k->alloc_bytes;
	}
}

/* What each source of module names lacked, for a message. */
static void sources_why(const struct core *c, const struct core_modules *cm,
			char *buf, size_t len)
{
	snprintf(buf, len, "%s; %s",
		 cm->nt_file_why[0] ? cm->nt_file_why :
		 c->file_note == CORE_FILE_NOTE_OK ?
			"NT_FILE does not name them" : "no NT_FILE note",
		 cm->loader_why[0] ? cm->loader_why :
			"the dynamic loader's list (r_debug) does not name them");
}

/* The agent's memfd in the core, copied out and validated. */
static int read_memfd(const struct core *c, uint8_t **out,
		      struct pa_header *copy, const char **why)
{
	uint64_t fsize, start = 0, size = 0, magic;
	size_t i;
	uint8_t *buf;

	for (i = 0; i < c->nfiles && !size; i++)
		if (pa_is_memfd_path(c->files[i].path)) {
			start = c->files[i].start;
			size = c->files[i].end - start;
		}
	/* no NT_FILE entry names it: a segment that starts with the
	 * agent's magic (the memfd is mapped from its start) */
	for (i = 0; i < c->nsegs && !size; i++)
		if (!core__read(c, c->segs[i].vaddr, &magic, sizeof(magic)) &&
		    magic == PA_MAGIC) {
			start = c->segs[i].vaddr;
			size = c->segs[i].memsz;
		}
	if (!size) {
		*why = "no pprof-alloc agent memory in it (the process did not run with the agent)";
		return -ENOENT;
	}
	if (core__read(c, start, copy, sizeof(*copy))) {
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
						copy->site_capacity != 0,
						copy->max_frames) ||
	    fsize > size || !copy->sample_rate ||
	    copy->stack_capacity != pa_stack_capacity(copy->live_capacity,
						      copy->site_capacity != 0,
						      copy->max_frames)) {
		*why = "the agent's header does not agree with its layout";
		return -EPROTO;
	}
	buf = malloc(fsize);
	if (!buf) {
		*why = "out of memory for the agent's memory";
		return -ENOMEM;
	}
	if (core__read(c, start, buf, fsize)) {
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
	struct ringfile_losses losses;
	struct core c;
	struct symbols *syms = NULL;
	struct core_modules cm = { 0 };
	struct coverage cv;
	char why_buf[160], what[512], ended[128], outbuf[64], unwind[768];
	char exact[768], sources[400];
	bool exe_known;
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
	rec.s.maps.root = o->debug ? o->debug->sysroot : NULL;
	err = core_modules__find(&c, &cm);
	if (!err)
		err = note_modules(&cm, &rec.s.maps);
	if (!err)
		err = recorder__seed(&rec);
	if (err) {
		pr_warn("--core %s: %s\n", o->core, strerror(-err));
		goto out_rec;
	}
	/* the modules' files, for unwinding the ring's stack copies */
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
			    rec.rf.live_capacity, NULL))
		goto out_rec;
	mapping_set__open_reported(&rec.s.maps);

	/* a profile of addresses nobody can name is no profile: say what
	 * the core lacked instead */
	coverage(&rec.s.heap, &rec.s.maps, &cv);
	exe_known = !c.has_auxv || !c.auxv.entry ||
		    mapping_set__find(&rec.s.maps, c.auxv.entry);
	if (cv.unknown && (!exe_known || cv.unknown == cv.frames)) {
		sources_why(&c, &cm, sources, sizeof(sources));
		pr_warn("--core %s: cannot name the modules of %" PRIu64 " of the profile's %" PRIu64 " frames%s: %s\n",
			o->core, cv.unknown, cv.frames,
			exe_known ? "" : ", the executable's among them",
			sources);
		goto out_rec;
	}
	if (cv.unknown) {
		sources_why(&c, &cm, sources, sizeof(sources));
		pr_warn("--core %s: %" PRIu64 " of the profile's %" PRIu64 " frames (in the stacks of %.1f%% of the bytes allocated) are in no module the core names: %s\n",
			o->core, cv.unknown, cv.frames,
			cv.bytes > 0 ? 100.0 * cv.unknown_bytes / cv.bytes : 0.0,
			sources);
	}

	if (cm.from_loader) {
		snprintf(sources, sizeof(sources), "%s%s%s%s%s",
			 cm.nt_file_why[0] ? " (" : "", cm.nt_file_why,
			 cm.nt_file_why[0] ? ")" : "",
			 cm.loader_why[0] ? "; " : "", cm.loader_why);
		pr_info("--core %s: %u module%s named by the dynamic loader's list (r_debug) in the core's memory, %u by NT_FILE%s\n",
			o->core, cm.from_loader, cm.from_loader == 1 ? "" : "s",
			cm.from_nt_file, sources);
	}

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
	recorder__losses(&rec, &losses);
	{
		struct report_info info = {
			.command = what, .ended = ended,
			.lost_records = losses.records,
			.losses_bad = rec.rf.losses_bad,
			.lost_bytes = losses.bytes,
			.live_overflow = losses.live_overflow,
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
	core_modules__free(&cm);
out_core:
	core__close(&c);
	return code;
}
