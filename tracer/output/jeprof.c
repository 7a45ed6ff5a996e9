// SPDX-License-Identifier: MIT
/*
 * jeprof.c - jemalloc's own heap profile of a process, asked of its agent
 * and turned into the aggregate every profile is written from.
 *
 * A process whose jemalloc runs with prof:true samples itself (a mean of
 * 2^lg_prof_sample bytes between samples, 512 KiB by default) and keeps
 * every sampled stack's in-use counts; "prof.dump" writes them out.  That
 * call takes jemalloc's locks, so it is made where the allocator
 * statistics are read: on the agent's stats thread (agent/stats.c has
 * its side, pprof_alloc_abi.h the protocol), never from a hook or a
 * signal handler, and never through ptrace.
 *
 *   tracer: jeprof.mallctl = ADDR or 0; command NONE -> JEPROF; wake
 *   agent:  memfd N; mallctl("prof.dump", /proc/self/fd/N); reply; seq++
 *   tracer: open /proc/PID/fd/N; command JEPROF -> JEPROF_DONE; wake
 *   agent:  close N; command -> NONE
 *
 * The dump never touches a filesystem: jemalloc open(2)s /proc/self/fd/N,
 * which reopens the memfd; the tracer opens the same through
 * /proc/PID/fd/N, which works across mount and PID namespaces (a
 * container's /tmp is not ours), and whoever dies, the memfd goes with the
 * last descriptor.  The tracer's CAS to JEPROF_DONE succeeding proves the
 * agent had not closed N when the tracer opened it (the agent puts the
 * command back before it closes), so what was opened is the dump and not
 * a file the program opened as N since.
 *
 * The dump is the target's: it is read with read(2) into our memory (never
 * mapped: the target could shrink it under us), at most JEPROF_MAX_BYTES,
 * and parsed strictly (jeprof_dump.c).
 *
 * Its stacks start inside jemalloc (its backtrace code, then malloc or
 * whichever entry was called) and, while our hooks are in, the agent.
 * Those frames are dropped: those in jemalloc's module (the one holding
 * the mallctl called) or the agent's, and, with symbols, those named as
 * jemalloc's are - the public entry points, its je_- and _rjem_-prefixed
 * private namespace, its C++ operators - for a jemalloc linked into the
 * executable, whose module is the program's too.  jeprof drops the same
 * frames by name.
 */
#include "jeprof.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "elf/symbols.h"
#include "elf/symtab.h"
#include "pa_clock.h"
#include "pa_futex.h"
#include "tracer/record/ringfile.h"

static const char *const mallctl_names[] = {
	"mallctl", "je_mallctl", "_rjem_mallctl",
};


static bool cas(uint32_t *word, uint32_t from, uint32_t to)
{
	return __atomic_compare_exchange_n(word, &from, to, 0, __ATOMIC_ACQ_REL,
					   __ATOMIC_ACQUIRE);
}

/* The agent's word on why there is no dump, as one line. */
static int refused(pid_t pid, const struct pa_jeprof *jp, char *why,
		   size_t n)
{
	int err = jp->err > 0 && jp->err < 4096 ? jp->err : 0;

	switch (jp->status) {
	case PA_JEPROF_NO_MALLCTL:
		snprintf(why, n, "process %d has no jemalloc to ask: no mallctl, je_mallctl or _rjem_mallctl among its dynamic symbols or its executable's",
			 (int)pid);
		return -ENOENT;
	case PA_JEPROF_NO_PROF:
		snprintf(why, n, "jemalloc in process %d runs without prof:true: start it with MALLOC_CONF=prof:true (a jemalloc built without --enable-prof cannot profile)",
			 (int)pid);
		return -ENOTSUP;
	case PA_JEPROF_INACTIVE:
		snprintf(why, n, "jemalloc in process %d has profiling turned off (prof.active false): start it with MALLOC_CONF=prof:true,prof_active:true, or have it set mallctl \"prof.active\"",
			 (int)pid);
		return -ENOTSUP;
	case PA_JEPROF_NO_MEMFD:
		snprintf(why, n, "the agent in process %d could not make a memfd for jemalloc's dump: %s",
			 (int)pid, strerror(err));
		return -EIO;
	case PA_JEPROF_DUMP_FAILED:
		snprintf(why, n, "jemalloc in process %d could not write its dump to /proc/self/fd/N (mallctl \"prof.dump\": %s): is there a /proc in its mount namespace?",
			 (int)pid, strerror(err));
		return -EIO;
	case PA_JEPROF_BAD_ADDRESS:
		snprintf(why, n, "the mallctl found in process %d's executable is in no object the process has loaded",
			 (int)pid);
		return -EFAULT;
	default:
		snprintf(why, n, "the agent in process %d answered with an unknown status %u",
			 (int)pid, jp->status);
		return -EPROTO;
	}
}

/* Read the dump on fd (ours), at most JEPROF_MAX_BYTES. */
static int read_dump(int fd, uint64_t size, char **out, size_t *len,
		     char *why, size_t n)
{
	struct stat st;
	size_t cap, got = 0;
	ssize_t r;
	char *buf;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(why, n, "jemalloc's dump is not a regular file");
		return -EINVAL;
	}
	if (size > JEPROF_MAX_BYTES || (uint64_t)st.st_size > JEPROF_MAX_BYTES) {
		snprintf(why, n, "jemalloc's dump is larger than %u MiB: not read",
			 JEPROF_MAX_BYTES >> 20);
		return -EFBIG;
	}
	cap = (size_t)st.st_size + 1;	/* one more: it may have grown */
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	while (got < cap) {
		r = pread(fd, buf + got, cap - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(why, n, "cannot read jemalloc's dump: %s",
				 strerror(errno));
			free(buf);
			return -EIO;
		}
		if (!r)
			break;
		got += (size_t)r;
	}
	if (got == cap) {
		snprintf(why, n, "jemalloc's dump changed while it was read");
		free(buf);
		return -EINVAL;
	}
	*out = buf;
	*len = got;
	return 0;
}

int jeprof__ask(pid_t pid, struct pa_header *hdr, uint64_t file_size,
		uint64_t mallctl, char **dump, size_t *len,
		struct jeprof_reply *reply, char *why, size_t why_size)
{
	uint64_t deadline = pa_now_ns() + JEPROF_ANSWER_MS * PA_NSEC_PER_MSEC;
	struct pa_stats *area;
	struct pa_jeprof *jp, got;
	char path[64];
	uint32_t seq, state;
	int fd, err;

	state = ringfile__stats_state(hdr, deadline);
	if (state != PA_STATS_READY) {
		snprintf(why, why_size, "the agent in process %d %s, which asks jemalloc for its profile",
			 (int)pid, state == PA_STATS_STARTING ?
			 "has a stats thread that did not start in time" :
			 state == PA_STATS_FAILED ?
			 "could not start its stats thread" :
			 state == PA_STATS_NO_PTHREAD ?
			 "has no stats thread (no pthread_create in the process: glibc before 2.34, libpthread.so.0 not loaded)" :
			 "has no stats thread (it was preloaded without a tracer, or the tracer that attached ran with --no-readings)");
		return -ENOTSUP;
	}
	if (file_size < PA_HEADER_SIZE + PA_STATS_SIZE) {
		snprintf(why, why_size, "the agent's memfd has no stats area");
		return -EPROTO;
	}
	area = (struct pa_stats *)((uint8_t *)hdr + pa_stats_offset(file_size));
	jp = &area->jeprof;
	__atomic_store_n(&jp->mallctl, mallctl, __ATOMIC_RELAXED);
	seq = __atomic_load_n(&jp->seq, __ATOMIC_ACQUIRE);
	/* a reading under way (the stats command) ends in milliseconds */
	while (!cas(&hdr->command, PA_CMD_NONE, PA_CMD_JEPROF)) {
		if (pa_now_ns() >= deadline) {
			snprintf(why, why_size, "the agent in process %d stayed busy with another command",
				 (int)pid);
			return -EBUSY;
		}
		nanosleep(&(struct timespec){ 0, 5 * PA_NSEC_PER_MSEC }, NULL);
	}
	pa_futex_wake(&hdr->command);
	if (!pa_futex_wait_until(&jp->seq, seq, deadline)) {
		/* take the command back, unless it is being answered now */
		if (cas(&hdr->command, PA_CMD_JEPROF, PA_CMD_NONE))
			snprintf(why, why_size, "the agent in process %d did not answer in %d s (an agent older than this tracer?)",
				 (int)pid, JEPROF_ANSWER_MS / 1000);
		else
			snprintf(why, why_size, "jemalloc in process %d did not write its dump in %d s",
				 (int)pid, JEPROF_ANSWER_MS / 1000);
		return -ETIMEDOUT;
	}
	memcpy(&got, jp, sizeof(got));
	reply->lg_sample = got.lg_sample;
	reply->mallctl = got.used;
	if (got.status != PA_JEPROF_OK)
		return refused(pid, &got, why, why_size);
	if (got.fd < 0) {
		snprintf(why, why_size, "the agent in process %d named no dump",
			 (int)pid);
		err = -EPROTO;
		goto out_release;
	}
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, got.fd);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		snprintf(why, why_size, "cannot open jemalloc's dump, %s: %s",
			 path, strerror(errno));
		err = -errno;
		goto out_release;
	}
	if (!cas(&hdr->command, PA_CMD_JEPROF, PA_CMD_JEPROF_DONE)) {
		close(fd);
		snprintf(why, why_size, "the agent in process %d let jemalloc's dump go before it could be read",
			 (int)pid);
		return -ETIMEDOUT;
	}
	pa_futex_wake(&hdr->command);
	err = read_dump(fd, got.size, dump, len, why, why_size);
	close(fd);
	return err;
out_release:
	if (cas(&hdr->command, PA_CMD_JEPROF, PA_CMD_JEPROF_DONE))
		pa_futex_wake(&hdr->command);
	return err;
}

int jeprof__fetch(pid_t pid, struct pa_header *hdr, uint64_t file_size,
		  uint64_t mallctl, struct jeprof_dump *d,
		  struct jeprof_reply *reply, char *why, size_t why_size)
{
	char *dump = NULL;
	size_t len = 0;
	int err;

	memset(d, 0, sizeof(*d));
	err = jeprof__ask(pid, hdr, file_size, mallctl, &dump, &len, reply,
			  why, why_size);
	if (err)
		return err;
	err = jeprof_dump__parse(d, dump, len, why, why_size);
	free(dump);
	if (err == -ENOMEM)
		snprintf(why, why_size, "out of memory reading jemalloc's dump");
	return err;
}

struct report_info jeprof__report_info(const struct jeprof_dump *d, pid_t pid,
				       const char *command, char *source,
				       size_t size)
{
	snprintf(source, size,
		 "jemalloc's own heap profile of process %d (mallctl prof.dump): sampling period %" PRIu64
		 " bytes, %zu stacks, counts unbiased as jeprof does (x 1/(1-exp(-(bytes/objects)/period)) per stack); allocated counts only with prof_accum:true",
		 (int)pid, d->period, d->nstacks);
	return (struct report_info){
		.command = command,
		.source = source,
		.no_peak = true,
		.time_nanos = (int64_t)time(NULL) * (int64_t)PA_NSEC_PER_SEC,
	};
}

uint64_t jeprof__exe_mallctl(const struct mapping_set *ms)
{
	const struct module *m;
	uint64_t v;
	size_t i, j;

	for (i = 0; i < ms->nmods; i++) {
		m = &ms->mods[i];
		if (!m->is_exe || m->fd < 0 || !m->has_bias)
			continue;
		for (j = 0; j < 3; j++)
			if (!elfsym__find_symtab(m->fd, mallctl_names[j], &v))
				return v + m->bias;
	}
	return 0;
}

/* ---- the dump's stacks into the aggregate ----------------------------- */

/* jemalloc's functions by name, for one linked into the executable. */
static bool jemalloc_name(const char *name)
{
	static const char *const entries[] = {
		"malloc", "calloc", "realloc", "free", "posix_memalign",
		"aligned_alloc", "memalign", "valloc", "pvalloc",
		"reallocarray", "mallocx", "rallocx", "xallocx", "sdallocx",
		"nallocx", "malloc_default", "prof_backtrace_impl",
	};
	static const char *const prefixes[] = {
		"je_", "_rjem_", "_Znwm", "_Znam", "_ZL7newImpl",
	};
	size_t i;

	for (i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
		if (!strcmp(name, entries[i]))
			return true;
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

static bool agent_path(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strcmp(base, "libpprof-alloc.so") ||
	       !strncmp(path, "/memfd:pprof-alloc-agent.so", 27);
}

static bool jemalloc_frame(const struct mapping_set *ms,
			   struct symbolizer *sym, size_t jemalloc_mod,
			   uint64_t pc)
{
	const struct mapping *m = mapping_set__find(ms, pc);
	struct sym_frame f[16];
	const char *name;
	int n;

	if (m && (m->module == jemalloc_mod ||
		  agent_path(ms->mods[m->module].path)))
		return true;
	if (!sym || !pc)
		return false;
	n = symbolizer__lookup(sym, pc - 1, f, 16);
	if (n <= 0)
		return false;
	/* the function holding the address: the outermost of its frames */
	name = f[n - 1].system_name ? f[n - 1].system_name : f[n - 1].function;
	return name && jemalloc_name(name);
}

int jeprof__fill(struct heap *h, const struct jeprof_dump *d,
		 const struct mapping_set *ms, struct symbols *syms,
		 uint64_t mallctl)
{
	struct symbolizer *sym = syms ? symbols__symbolizer(syms) : NULL;
	const struct mapping *at = mallctl ? mapping_set__find(ms, mallctl) :
					     NULL;
	size_t jemalloc_mod = SIZE_MAX;
	double io, ib, ao, ab;
	size_t i;
	int made;

	/* a jemalloc of its own module; linked into the program, by name */
	if (at && !ms->mods[at->module].is_exe)
		jemalloc_mod = at->module;
	for (i = 0; i < d->nstacks; i++) {
		const struct jeprof_stack *st = &d->stacks[i];
		const uint64_t *frames = d->frames + st->frames_at;
		uint32_t skip = 0;
		int64_t b;

		while (skip < st->nframes &&
		       jemalloc_frame(ms, sym, jemalloc_mod, frames[skip]))
			skip++;
		if (skip == st->nframes)	/* jemalloc's own: keep whole */
			skip = 0;
		b = heap__bucket(h, frames + skip, st->nframes - skip, 0, false,
				 &made);
		if (b < 0)
			return (int)b;
		h->buckets[b].mixed = 1;
		jeprof__scale(st->objs, st->bytes, d->period, &io, &ib);
		jeprof__scale(st->accum_objs, st->accum_bytes, d->period, &ao,
			      &ab);
		heap__add(h, b, ao, ab, io, ib);
	}
	return 0;
}
