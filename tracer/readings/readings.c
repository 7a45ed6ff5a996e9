// SPDX-License-Identifier: MIT
/*
 * readings.c - take one reading of a process's memory, from every source.
 *
 * The sources fail independently - a process without the agent still has
 * smaps and a cgroup, a container may hide the cgroup, a zombie has no
 * smaps - so each part records its own absence and the reading as a
 * whole fails only when procfs knows nothing of the pid.  The agent's
 * counters are read from the shared header word by word, once each; they
 * are counters, so a torn or hostile value is at worst a wrong number,
 * never a wrong size or offset.  A zombie is refused before anything is
 * read: what procfs shows of it is nothing (smaps) or the root cgroup.
 *
 * The agent's memfd (header, ring, live and stack tables, stats area) is
 * shmem, never populated: a page is made when first touched (allocated
 * whole when made only where the kernel does not overcommit).  memfd_bytes is what is resident
 * (the file's blocks, from fstat), which the memory cgroup of whichever
 * process first touched each page is charged as shmem; memfd_size its
 * size, the bound.
 *
 * The OOM verdict compares a counter read at the start of a run with the
 * same counter read after the target's death (readings__oom_verdict).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>
#include <time.h>
#include "readings.h"
#include "pa_clock.h"

const char *const readings_hook_names[PA_HOOK_COUNT] = {
	"malloc", "calloc", "realloc", "reallocarray", "posix_memalign",
	"aligned_alloc", "memalign", "valloc", "pvalloc", "free",
};

static void read_agent(struct agent_counts *a, struct pa_header *hdr,
		       struct ringfile *rf, uint64_t live_capacity)
{
	struct ringfile_losses l;

	int i;

	a->present = true;
	for (i = 0; i < PA_HOOK_COUNT; i++) {
		a->calls[i] = __atomic_load_n(&hdr->hook_counts[i].calls,
					      __ATOMIC_RELAXED);
		a->bytes[i] = __atomic_load_n(&hdr->hook_counts[i].bytes,
					      __ATOMIC_RELAXED);
	}
	a->samples = __atomic_load_n(&hdr->samples, __ATOMIC_RELAXED);
	/* the target's to forge: checked (a corrupt header reads as 0) */
	a->losses_bad = rf && ringfile__losses(rf, &l, NULL) < 0;
	if (!rf) {
		l.records = __atomic_load_n(&hdr->lost_records, __ATOMIC_RELAXED);
		l.samples = __atomic_load_n(&hdr->lost_samples, __ATOMIC_RELAXED);
		l.bytes = __atomic_load_n(&hdr->lost_bytes, __ATOMIC_RELAXED);
		l.live_overflow = __atomic_load_n(&hdr->live_overflow,
						  __ATOMIC_RELAXED);
	}
	a->lost_records = l.records;
	a->lost_samples = l.samples;
	a->lost_bytes = l.bytes;
	a->live_overflow = l.live_overflow;
	a->live_entries = __atomic_load_n(&hdr->live_entries, __ATOMIC_RELAXED);
	a->live_capacity = live_capacity;
	a->sample_rate = __atomic_load_n(&hdr->sample_rate, __ATOMIC_RELAXED);
	a->unwind_modules = __atomic_load_n(&hdr->unwind_modules,
					    __ATOMIC_RELAXED);
	a->unwind_table_bytes = __atomic_load_n(&hdr->unwind_table_bytes,
						__ATOMIC_RELAXED);
	a->unwind_fallbacks = __atomic_load_n(&hdr->unwind_fallbacks,
					      __ATOMIC_RELAXED);
	a->unwind_inline_builds = __atomic_load_n(&hdr->unwind_inline_builds,
						  __ATOMIC_RELAXED);
	a->orphaned = __atomic_load_n(&hdr->orphaned, __ATOMIC_ACQUIRE);
}


/* The memfd's resident bytes: its blocks (a hole has none), or its whole
 * size where they cannot be had (a core's copy has no descriptor). */
static uint64_t memfd_resident(const struct readings_source *src)
{
	struct stat st;

	if (!src->rf || src->rf->fd < 0 || fstat(src->rf->fd, &st) ||
	    st.st_blocks < 0 || (uint64_t)st.st_blocks * 512 > src->file_size)
		return src->file_size;
	return (uint64_t)st.st_blocks * 512;
}

int readings__take(struct readings *r, const struct readings_source *src)
{
	char state;
	int err;

	memset(r, 0, sizeof(*r));
	r->unix_ns = pa_unix_ns();
	r->pid = src->pid;
	if (!procmem__state(src->proc_root, src->pid, &state) &&
	    (state == 'Z' || state == 'X'))
		return -ECHILD;
	r->proc_err = procmem__read(&r->proc, src->proc_root, src->pid);
	if (r->proc_err == -ENOMEM)
		return -ENOMEM;
	/* exiting: its memory is being given back (status has no VmSize
	 * any more) and its cgroup may already read as the root's; no
	 * reading of it, as of a zombie */
	if (!r->proc.status_err && !kvset__get(&r->proc.status, "VmSize"))
		return -ECHILD;
	r->cgroup_err = cgroup__read(&r->cgroup, src->proc_root, src->sys_root,
				     src->pid);
	if (r->cgroup_err == -ENOMEM)
		return -ENOMEM;
	if (src->hdr) {
		read_agent(&r->agent, src->hdr, src->rf, src->live_capacity);
		r->agent.memfd_size = src->file_size;
		r->agent.memfd_bytes = memfd_resident(src);
		if (src->skip_allocator) {
			snprintf(r->alloc.why, sizeof(r->alloc.why),
				 "not read at this reading (every tenth without --interval)");
		} else {
			err = allocstats__ask(&r->alloc, src->hdr,
					      src->file_size,
					      src->stats_timeout_ms);
			if (err)
				return err;
			r->alloc.unix_ns = r->unix_ns;
		}
		r->alloc.calls_seen = src->calls_seen;
	} else {
		snprintf(r->agent_why, sizeof(r->agent_why), "%s",
			 src->no_agent_why ? src->no_agent_why :
					     "no agent in the process");
		r->agent_unreadable = src->agent_unreadable;
		snprintf(r->alloc.why, sizeof(r->alloc.why), "%.150s",
			 r->agent_why);
	}
	if (src->heap) {
		r->has_heap = true;
		heap__totals(src->heap, &r->heap);
		r->heap_samples = src->heap->allocs;
	}
	return r->proc_err == -ESRCH && r->cgroup_err == -ESRCH ? -ESRCH : 0;
}

void readings__oom_verdict(struct readings_oom *v,
			   const struct cgroup_reading *start,
			   const struct cgroup_reading *end, bool has_vm,
			   uint64_t vm_before, uint64_t vm_after,
			   bool sigkilled)
{
	const struct cg_value *a = &start->common[CG_OOM_KILL];
	const struct cg_value *b = &end->common[CG_OOM_KILL];

	memset(v, 0, sizeof(*v));
	v->sigkilled = sigkilled;
	if (start->version && end->version == start->version &&
	    !strcmp(start->dir, end->dir) && a->present && b->present) {
		v->known = true;
		v->counter = start->version == 2 ? "memory.events oom_kill" :
						   "memory.oom_control oom_kill";
		v->before = a->value;
		v->after = b->value;
	} else if (has_vm) {
		v->known = true;
		v->counter = "/proc/vmstat oom_kill";
		v->before = vm_before;
		v->after = vm_after;
	}
	v->killed = v->known && sigkilled && v->after > v->before;
}

void readings__oom_describe(const struct readings_oom *v,
			    const struct readings_end *end, char *buf,
			    size_t len)
{
	const struct cgroup_reading *cg = &end->final;

	buf[0] = 0;
	if (!v->killed)
		return;
	if (!strcmp(v->counter, "/proc/vmstat oom_kill"))
		snprintf(buf, len,
			 "OOM-killed (the kernel's OOM kills, %s, went from %" PRIu64
			 " to %" PRIu64 "; its memory cgroup has no counter)",
			 v->counter, v->before, v->after);
	else
		snprintf(buf, len,
			 "OOM-killed (memory cgroup %s: %s went from %" PRIu64
			 " to %" PRIu64 ")",
			 cg->path, v->counter, v->before, v->after);
}

void readings__end_fini(struct readings_end *e)
{
	if (e->has_final)
		cgroup__fini(&e->final);
	e->has_final = false;
}

void readings__fini(struct readings *r)
{
	procmem__fini(&r->proc);
	cgroup__fini(&r->cgroup);
	allocstats__fini(&r->alloc);
}

const char *readings__allocator_name(uint32_t a)
{
	return a == PA_ALLOCATOR_GLIBC ? "glibc" :
	       a == PA_ALLOCATOR_JEMALLOC ? "jemalloc" :
	       a == PA_ALLOCATOR_MIMALLOC ? "mimalloc" :
	       a == PA_ALLOCATOR_TCMALLOC ? "tcmalloc" : "unknown";
}

void readings__iso_time(int64_t unix_ns, char *buf, size_t len)
{
	time_t t = (time_t)(unix_ns / (int64_t)PA_NSEC_PER_SEC);
	struct tm tm;

	gmtime_r(&t, &tm);
	if (snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (int)(unix_ns / (int64_t)PA_NSEC_PER_MSEC % 1000)) >=
	    (int)len)
		buf[len - 1] = 0;
}
