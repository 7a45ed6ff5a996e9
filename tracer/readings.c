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
 * never a wrong size or offset.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "readings.h"

const char *const readings_hook_names[PA_HOOK_COUNT] = {
	"malloc", "calloc", "realloc", "reallocarray", "posix_memalign",
	"aligned_alloc", "memalign", "valloc", "pvalloc", "free",
};

static void read_agent(struct agent_counts *a, struct pa_header *hdr,
		       uint64_t live_capacity)
{
	int i;

	a->present = true;
	for (i = 0; i < PA_HOOK_COUNT; i++) {
		a->calls[i] = __atomic_load_n(&hdr->hook_counts[i].calls,
					      __ATOMIC_RELAXED);
		a->bytes[i] = __atomic_load_n(&hdr->hook_counts[i].bytes,
					      __ATOMIC_RELAXED);
	}
	a->samples = __atomic_load_n(&hdr->samples, __ATOMIC_RELAXED);
	a->lost_records = __atomic_load_n(&hdr->lost_records, __ATOMIC_RELAXED);
	a->lost_samples = __atomic_load_n(&hdr->lost_samples, __ATOMIC_RELAXED);
	a->lost_bytes = __atomic_load_n(&hdr->lost_bytes, __ATOMIC_RELAXED);
	a->live_overflow = __atomic_load_n(&hdr->live_overflow,
					   __ATOMIC_RELAXED);
	a->live_entries = __atomic_load_n(&hdr->live_entries, __ATOMIC_RELAXED);
	a->live_capacity = live_capacity;
	a->sample_rate = __atomic_load_n(&hdr->sample_rate, __ATOMIC_RELAXED);
}

int readings__take(struct readings *r, const struct readings_source *src)
{
	struct timespec ts;
	int err;

	memset(r, 0, sizeof(*r));
	clock_gettime(CLOCK_REALTIME, &ts);
	r->unix_ns = (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
	r->pid = src->pid;
	r->proc_err = procmem__read(&r->proc, src->proc_root, src->pid);
	if (r->proc_err == -ENOMEM)
		return -ENOMEM;
	r->cgroup_err = cgroup__read(&r->cgroup, src->proc_root, src->sys_root,
				     src->pid);
	if (r->cgroup_err == -ENOMEM)
		return -ENOMEM;
	if (src->hdr) {
		read_agent(&r->agent, src->hdr, src->live_capacity);
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
	} else {
		snprintf(r->alloc.why, sizeof(r->alloc.why), "%s",
			 src->no_agent_why ? src->no_agent_why :
					     "no agent in the process");
	}
	if (src->heap) {
		r->has_heap = true;
		heap__totals(src->heap, &r->heap);
		r->heap_samples = src->heap->allocs;
	}
	return r->proc_err == -ESRCH && r->cgroup_err == -ESRCH ? -ESRCH : 0;
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
	       a == PA_ALLOCATOR_JEMALLOC ? "jemalloc" : "unknown";
}

void readings__iso_time(int64_t unix_ns, char *buf, size_t len)
{
	time_t t = (time_t)(unix_ns / 1000000000ll);
	struct tm tm;

	gmtime_r(&t, &tm);
	if (snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (int)(unix_ns / 1000000 % 1000)) >=
	    (int)len)
		buf[len - 1] = 0;
}
