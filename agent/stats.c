// SPDX-License-Identifier: MIT
/*
 * stats.c - the stats thread: allocator statistics read inside the target.
 *
 * glibc's mallinfo2 and malloc_info, jemalloc's mallctl, mimalloc's
 * mi_process_info and mi_stats_print_out, and gperftools' tcmalloc
 * MallocExtension_GetNumericProperty can only be called from inside the
 * process, and only from a thread that holds no
 * allocator lock: not from a hook (a signal handler may have interrupted
 * the allocator on that very thread, and the hooks cannot tell), not from
 * a signal handler.  So the agent keeps one thread of its own for them,
 * made from a safe context (the constructor of a launched program, or the
 * thread a tracer borrowed for pprof_alloc_attach), which sleeps on the
 * header's command word (a shared futex: the tracer wakes it through its
 * own mapping of the memfd) and answers PA_CMD_STATS:
 *
 *   tracer: command = STATS, FUTEX_WAKE(&command)
 *   agent:  fill the stats area, stats_seq++, FUTEX_WAKE(&stats_seq),
 *           command STATS -> NONE (a DETACH written meanwhile is kept)
 *
 * Its stack is a mapping of the agent's own (a guard page under 256 KiB),
 * not glibc's: glibc keeps the stacks of ended threads in a cache, mapped,
 * and an injected agent's thread ends at detach (stats__stop, for
 * pprof_alloc_off: attach.c), which must leave nothing mapped behind.  So
 * the thread is joinable, is told to end (stopping, and a wake of the
 * word it sleeps on, repeated: it may be just about to sleep), joined
 * with pthread_tryjoin_np - once that returns, the kernel has cleared the
 * thread's id, it runs nothing any more - and its stack unmapped.
 *
 * It never samples (its countdown is infinite), blocks every asynchronous
 * signal (the program's handlers run on its own threads) but not the
 * synchronous ones (a blocked SIGSEGV would be forced to its default
 * action for the whole process), and is named "pprof-alloc".  Its tid is in
 * the header so that a tracer never borrows it for a remote call.  Reading
 * glibc's statistics takes each arena's lock for a walk of its free lists,
 * as any mallinfo2 caller does; it runs only when a tracer asks.
 *
 * The allocator is the one that serves malloc: the object that defines the
 * real malloc (what the hooks forward to) must also define the function
 * asked, so a mimalloc or tcmalloc merely loaded beside another allocator
 * is never asked.  The functions are looked up in the loaded modules
 * (dynsym.c, as dlsym would in the global scope); the agent never links
 * them.
 *
 * mimalloc 2.0 has no numeric statistics API besides mi_process_info; its
 * statistics table (mi_stats_print_out) is text, written through a callback
 * straight into the stats area and parsed by the tracer.  Both allocate
 * nothing (mimalloc may map its per-thread data for this thread, from the
 * system, at the first call).
 *
 * It also answers PA_CMD_JEPROF: jemalloc's own heap profile, for a
 * process whose jemalloc samples itself (prof:true).  jemalloc writes its
 * dump to a file name it open(2)s with O_CREAT|O_TRUNC; the name given is
 * /proc/self/fd/N of a memfd made here, so nothing touches a filesystem,
 * a container's included, and nothing is left behind if anyone dies: the
 * memfd is closed once the tracer has opened it (PA_CMD_JEPROF_DONE), or
 * after PA_JEPROF_HOLD_MS.  The mallctl called is the tracer's (an address
 * it found in the executable's symbol table: a jemalloc linked in
 * statically exports nothing) or the first of mallctl, je_mallctl and
 * _rjem_mallctl that is defined when the thread starts.
 *
 * The thread allocates nothing (a thread's first malloc would give it an
 * arena of its own): the allocator is identified (dynsym.c) and the
 * FILE that malloc_info writes to (a stream of our own over the stats area,
 * fopencookie, unbuffered, so it writes straight into the memfd) is made
 * before the thread starts, by the thread that starts it.  Not fmemopen:
 * its current version is 2.22, newer than the agent may need
 * (glibc_compat.h), and its old one a different implementation; the
 * stream also says exactly when the answer did not fit.
 *
 * Launched, it is also the builder of the unwind tables (unwind_cfi.c),
 * between answers.  Not while the program waits in its constructor for
 * the tracer (stats__hold_builds): the tracer's first reading asks for
 * the allocator's statistics then, and a table being built (libc's takes
 * a millisecond) would hold the answer, and the program, that long.  The
 * builds start once that question is answered (or when the program
 * starts), so the builder is under way before the program's first walk.
 */
#include <gnu/libc-version.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "agent.h"
#include "unwind_cfi.h"
#include "entry.h"
#include "dynsym.h"
#include "pa_clock.h"
#include "pa_futex.h"

#define STATS_STACK	(256u * 1024)
#define STATS_GUARD	4096u
/* how long stats__stop waits for the thread to end (it may be answering) */
#define STATS_STOP_MS	2000u

struct glibc_mallinfo2 {	/* struct mallinfo2, glibc 2.33+ */
	size_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks,
	       uordblks, fordblks, keepcost;
};

static struct {
	struct glibc_mallinfo2 (*mallinfo2)(void);
	int (*malloc_info)(int, FILE *);
	int (*mallctl)(const char *, void *, size_t *, void *, size_t);
	void (*mi_process_info)(size_t *, size_t *, size_t *, size_t *,
				size_t *, size_t *, size_t *, size_t *);
	void (*mi_stats_print_out)(void (*)(const char *, void *), void *);
	int (*tc_property)(const char *, size_t *);
	int (*prof_mallctl)(const char *, void *, size_t *, void *, size_t);
	uint32_t allocator;
	bool in_program;	/* malloc is the main program's own */
	FILE *info;
} fn;

/* Where fn.info writes: the stats area's info[] less its last byte (the
 * tracer takes a reply only if it is shorter than the area). */
static struct info_sink {
	char *buf;
	size_t cap, pos;
	bool truncated;		/* a write did not fit */
} sink;

static int started;
/* The running thread: its id, its stack (guard page first), and the word
 * that tells it to end. */
static pthread_t stats_th;
static void *stats_stack;
static int stopping;

/* preload.c has the real one; unit tests link the agent without it */
__attribute__((weak)) void *agent__real_malloc(void)
{
	return NULL;
}


/* An injected agent whose tracer died turns itself off (orphan.c). */
static void check_tracer(struct pa_header *hdr)
{
	uint32_t gone;

	if (__atomic_load_n(&pa_agent.state, __ATOMIC_ACQUIRE) !=
	    AGENT_RUNNING)
		return;
	gone = orphan__tracer_gone(hdr, pa_now_ns());
	if (!gone)
		return;
	__atomic_store_n(&hdr->orphaned, gone, __ATOMIC_RELEASE);
	__atomic_store_n(&hdr->command, PA_CMD_DETACH, __ATOMIC_RELEASE);
	agent__command();
}


static ssize_t sink_write(void *cookie, const char *p, size_t n)
{
	struct info_sink *s = cookie;

	if (n > s->cap - s->pos) {
		n = s->cap - s->pos;
		s->truncated = true;
	}
	memcpy(s->buf + s->pos, p, n);
	s->pos += n;
	return (ssize_t)n;	/* short: stdio marks the stream's error */
}

static int sink_seek(void *cookie, off64_t *off, int whence)
{
	struct info_sink *s = cookie;
	off64_t base = whence == SEEK_SET ? 0 :
		       whence == SEEK_CUR ? (off64_t)s->pos :
		       whence == SEEK_END ? (off64_t)s->cap : -1;

	if (base < 0 || *off < -base || *off > (off64_t)s->cap - base)
		return -1;
	s->pos = (size_t)(base + *off);
	*off = (off64_t)s->pos;
	return 0;
}

/* What the sink holds, if anything, is info[]'s reply, of kind flag. */
static void sink_done(struct pa_stats *st, uint32_t flag)
{
	if (!sink.pos)
		return;
	if (sink.truncated)
		st->flags |= PA_STATS_INFO_TRUNC;
	st->info_len = (uint32_t)sink.pos;
	st->flags |= flag;
}

/* A FILE over [buf, buf + cap), written from its start; NULL on failure. */
static FILE *open_sink(char *buf, size_t cap)
{
	static const cookie_io_functions_t io = {
		.write = sink_write,
		.seek = sink_seek,
	};

	sink.buf = buf;
	sink.cap = cap;
	sink.pos = 0;
	return fopencookie(&sink, "w", io);
}

/* name's global definition if it is in the object of real malloc, or NULL */
static void *served_by(const char *name, void *real_malloc)
{
	void *f = dynsym__global(name);

	return f && real_malloc && dynsym__same_module(f, real_malloc) ? f
								       : NULL;
}

/* A jemalloc to ask for its profile: whichever serves malloc or not. */
static void find_prof_mallctl(void)
{
	static const char *const names[] = {
		"mallctl", "je_mallctl", "_rjem_mallctl",
	};
	unsigned int i;

	for (i = 0; i < 3 && !fn.prof_mallctl; i++)
		fn.prof_mallctl = (__typeof__(fn.prof_mallctl))
			dynsym__global(names[i]);
}

/* Which allocator serves malloc, and what we can ask it: from nothing
 * each time a thread starts, as after a detach that left the agent loaded
 * (a stale answer kept the program's jemalloc as the allocator and lost
 * its mallctl, which fill() adopts only for an allocator not known). */
static void find_allocator(struct pa_stats *st)
{
	void *real_malloc = agent__real_malloc();
	struct dynsym_module m;

	fn.mallinfo2 = NULL;
	fn.malloc_info = NULL;
	fn.mallctl = NULL;
	fn.mi_process_info = NULL;
	fn.mi_stats_print_out = NULL;
	fn.tc_property = NULL;
	fn.prof_mallctl = NULL;
	fn.allocator = PA_ALLOCATOR_UNKNOWN;

	if (real_malloc && dynsym__module_of(real_malloc, &m)) {
		/* the program is "" in the loader's list; dladdr said argv[0] */
		strncpy(st->allocator_path,
			*m.name ? m.name : program_invocation_name,
			sizeof(st->allocator_path) - 1);
		st->allocator_path[sizeof(st->allocator_path) - 1] = 0;
	}
	fn.in_program = real_malloc &&
			entry__in_program((uintptr_t)real_malloc);
	fn.mallctl = (__typeof__(fn.mallctl))served_by("mallctl", real_malloc);
	find_prof_mallctl();
	if (fn.mallctl) {
		fn.allocator = PA_ALLOCATOR_JEMALLOC;
		return;
	}
	fn.mi_process_info = (__typeof__(fn.mi_process_info))
		served_by("mi_process_info", real_malloc);
	if (fn.mi_process_info) {
		fn.allocator = PA_ALLOCATOR_MIMALLOC;
		fn.mi_stats_print_out = (__typeof__(fn.mi_stats_print_out))
			served_by("mi_stats_print_out", real_malloc);
		return;
	}
	fn.tc_property = (__typeof__(fn.tc_property))
		served_by("MallocExtension_GetNumericProperty", real_malloc);
	if (fn.tc_property) {
		fn.allocator = PA_ALLOCATOR_TCMALLOC;
		return;
	}
	if (real_malloc && dynsym__same_module(real_malloc,
					       (void *)&gnu_get_libc_version)) {
		fn.allocator = PA_ALLOCATOR_GLIBC;
		fn.mallinfo2 = (__typeof__(fn.mallinfo2))
			dynsym__global("mallinfo2");
		fn.malloc_info = (__typeof__(fn.malloc_info))
			dynsym__global("malloc_info");
	}
}

static uint64_t size_ctl(const char *name, bool *ok)
{
	size_t v = 0, sz = sizeof(v);

	if (fn.mallctl(name, &v, &sz, NULL, 0) || sz != sizeof(v)) {
		*ok = false;
		return 0;
	}
	return v;
}

static void read_jemalloc(struct pa_stats *st)
{
	static const char *const names[] = {
		"stats.allocated", "stats.active", "stats.metadata",
		"stats.resident", "stats.mapped", "stats.retained",
	};
	uint64_t epoch = 1;
	unsigned int narenas = 0;
	size_t sz = sizeof(epoch), usz = sizeof(narenas);
	uint64_t got = 0;
	bool ok;
	unsigned int i;

	/* refresh jemalloc's cached statistics first */
	fn.mallctl("epoch", &epoch, &sz, &epoch, sz);
	for (i = 0; i < 6; i++) {
		ok = true;
		st->jemalloc[i] = size_ctl(names[i], &ok);
		if (ok)
			got |= 1ull << i;
	}
	if (!fn.mallctl("arenas.narenas", &narenas, &usz, NULL, 0) &&
	    usz == sizeof(narenas)) {
		st->jemalloc[6] = narenas;
		got |= 1ull << 6;
	}
	st->jemalloc[7] = got;	/* which of the above were read */
	if (got)
		st->flags |= PA_STATS_JEMALLOC;
}

/* mi_stats_print_out's callback: each piece of text, into the sink */
static void mi_text(const char *msg, void *arg)
{
	struct info_sink *s = arg;
	size_t n = strnlen(msg, s->cap);

	sink_write(s, msg, n);
}

static void read_mimalloc(struct pa_stats *st)
{
	size_t v[8] = { 0 };
	unsigned int i;

	fn.mi_process_info(&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
			   &v[7]);
	for (i = 0; i < 8; i++)
		st->mimalloc[i] = v[i];
	st->flags |= PA_STATS_MIMALLOC;
	if (!fn.mi_stats_print_out || !sink.buf)
		return;
	sink.pos = 0;
	sink.truncated = false;
	fn.mi_stats_print_out(mi_text, &sink);
	sink_done(st, PA_STATS_MI_TEXT);
}

static void read_tcmalloc(struct pa_stats *st)
{
	static const char *const names[PA_TCMALLOC_PROPERTIES] = {
		PA_TCMALLOC_PROPERTY_NAMES
	};
	uint32_t got = 0;
	size_t v;
	unsigned int i;

	for (i = 0; i < PA_TCMALLOC_PROPERTIES; i++) {
		v = 0;
		st->tcmalloc[i] = 0;
		if (fn.tc_property(names[i], &v)) {	/* 1: known */
			st->tcmalloc[i] = v;
			got |= 1u << i;
		}
	}
	st->tcmalloc_mask = got;
	if (got)
		st->flags |= PA_STATS_TCMALLOC;
}

static void read_glibc(struct pa_stats *st)
{
	if (fn.mallinfo2) {
		struct glibc_mallinfo2 mi = fn.mallinfo2();

		st->mallinfo2[0] = mi.arena;
		st->mallinfo2[1] = mi.ordblks;
		st->mallinfo2[2] = mi.smblks;
		st->mallinfo2[3] = mi.hblks;
		st->mallinfo2[4] = mi.hblkhd;
		st->mallinfo2[5] = mi.usmblks;
		st->mallinfo2[6] = mi.fsmblks;
		st->mallinfo2[7] = mi.uordblks;
		st->mallinfo2[8] = mi.fordblks;
		st->mallinfo2[9] = mi.keepcost;
		st->flags |= PA_STATS_MALLINFO2;
	}
	if (fn.malloc_info && fn.info) {
		clearerr(fn.info);
		fseek(fn.info, 0, SEEK_SET);
		sink.truncated = false;
		fn.malloc_info(0, fn.info);
		fflush(fn.info);
		sink_done(st, PA_STATS_MALLOC_INFO);
	}
}

/*
 * A jemalloc linked into the program exports no mallctl: the tracer found
 * it in the program's symbol table (hdr->mallctl_at).  Taken only when
 * malloc is the program's own and the address is in the same object.
 */
static void adopt_program_mallctl(void)
{
	uint64_t at = pa_agent.hdr ?
		      __atomic_load_n(&pa_agent.hdr->mallctl_at, __ATOMIC_ACQUIRE) : 0;
	void *real_malloc = agent__real_malloc();

	if (fn.allocator != PA_ALLOCATOR_UNKNOWN || !fn.in_program || !at ||
	    !real_malloc || !dynsym__same_module((void *)(uintptr_t)at, real_malloc))
		return;
	fn.mallctl = (__typeof__(fn.mallctl))(uintptr_t)at;
	fn.allocator = PA_ALLOCATOR_JEMALLOC;
}

static void fill(struct pa_stats *st)
{
	adopt_program_mallctl();
	st->flags = fn.in_program ? PA_STATS_IN_PROGRAM : 0;
	st->info_len = 0;
	st->allocator = fn.allocator;
	if (fn.allocator == PA_ALLOCATOR_GLIBC)
		read_glibc(st);
	else if (fn.allocator == PA_ALLOCATOR_JEMALLOC)
		read_jemalloc(st);
	else if (fn.allocator == PA_ALLOCATOR_MIMALLOC)
		read_mimalloc(st);
	else if (fn.allocator == PA_ALLOCATOR_TCMALLOC)
		read_tcmalloc(st);
	st->time_ns = pa_now_ns();
}

/* ---- jemalloc's heap profile (PA_CMD_JEPROF) ----------------------- */

static void fd_path(char *buf, int fd)
{
	static const char prefix[] = "/proc/self/fd/";
	char digits[12];
	int n = 0;

	do
		digits[n++] = (char)('0' + fd % 10);
	while ((fd /= 10) && n < 11);
	memcpy(buf, prefix, sizeof(prefix) - 1);
	buf += sizeof(prefix) - 1;
	while (n)
		*buf++ = digits[--n];
	*buf = 0;
}

/* Have jemalloc dump into a new memfd; status says how it went. */
static int dump_jeprof(struct pa_jeprof *jp)
{
	uint64_t want = __atomic_load_n(&jp->mallctl, __ATOMIC_RELAXED);
	__typeof__(fn.prof_mallctl) ctl = fn.prof_mallctl;
	char path[32];
	const char *name = path;
	size_t lg = 0, sz;
	bool on = false;
	struct dynsym_module m;
	int fd, err;

	jp->status = PA_JEPROF_NO_MALLCTL;
	if (want) {
		/* the tracer's: in a loaded object, or not called at all */
		jp->status = PA_JEPROF_BAD_ADDRESS;
		if (!dynsym__module_of((void *)(uintptr_t)want, &m))
			return -1;
		ctl = (__typeof__(ctl))(uintptr_t)want;
	}
	if (!ctl)
		return -1;
	jp->used = (uint64_t)(uintptr_t)ctl;
	sz = sizeof(on);
	jp->status = PA_JEPROF_NO_PROF;
	if ((jp->err = ctl("opt.prof", &on, &sz, NULL, 0)) || !on)
		return -1;
	sz = sizeof(on);
	jp->status = PA_JEPROF_INACTIVE;
	if ((jp->err = ctl("prof.active", &on, &sz, NULL, 0)) || !on)
		return -1;
	sz = sizeof(lg);
	if (!ctl("prof.lg_sample", &lg, &sz, NULL, 0) && sz == sizeof(lg))
		jp->lg_sample = lg;
	fd = (int)syscall(SYS_memfd_create, PA_JEPROF_MEMFD_NAME, MFD_CLOEXEC);
	if (fd < 0) {
		jp->status = PA_JEPROF_NO_MEMFD;
		jp->err = errno;
		return -1;
	}
	fd_path(path, fd);
	err = ctl("prof.dump", NULL, NULL, &name, sizeof(name));
	if (err) {
		jp->status = PA_JEPROF_DUMP_FAILED;
		jp->err = err;
		close(fd);
		return -1;
	}
	jp->size = (uint64_t)lseek(fd, 0, SEEK_END);
	jp->status = PA_JEPROF_OK;
	jp->err = 0;
	return fd;
}

/*
 * Answer PA_CMD_JEPROF, then hold the memfd open until the tracer says it
 * has opened it (or PA_JEPROF_HOLD_MS), close it, and put the command back
 * to NONE - first, so that a tracer too late learns it from its own CAS.
 */
static void answer_jeprof(struct pa_header *hdr, struct pa_jeprof *jp)
{
	uint64_t deadline = pa_now_ns() + PA_JEPROF_HOLD_MS * PA_NSEC_PER_MSEC;
	uint32_t expected, cmd;
	uint64_t now;
	int fd;

	jp->err = 0;
	jp->size = 0;
	jp->lg_sample = 0;
	jp->used = 0;
	fd = dump_jeprof(jp);
	jp->fd = fd;
	__atomic_store_n(&jp->seq, jp->seq + 1, __ATOMIC_RELEASE);
	pa_futex_wake(&jp->seq);
	while (fd >= 0 &&
	       (cmd = __atomic_load_n(&hdr->command, __ATOMIC_ACQUIRE)) ==
		       PA_CMD_JEPROF &&
	       (now = pa_now_ns()) < deadline) {
		pa_futex_wait(&hdr->command, cmd, deadline - now);
	}
	expected = PA_CMD_JEPROF;
	if (!__atomic_compare_exchange_n(&hdr->command, &expected, PA_CMD_NONE,
					 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) &&
	    expected == PA_CMD_JEPROF_DONE)
		__atomic_compare_exchange_n(&hdr->command, &expected,
					    PA_CMD_NONE, 0, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE);
	if (fd >= 0)
		close(fd);
}

/*
 * The stats thread's answers may look symbols up (dl_iterate_phdr: the
 * loader's lock).  A fork in a process whose only other thread is this
 * one lets the child build unwind tables at once only if this thread
 * holds no loader lock across the fork: each side says what it does, then
 * looks at the other's word (both sequentially consistent, so at least
 * one sees the other), and this thread waits for the fork to be over.
 */
static int in_answer, forking;
static int in_build;		/* the answer is an unwind table's build */
static int builds_held;		/* stats__hold_builds */
/* the longest a fork waits for a table being built to be done */
#define FORK_BUILD_WAIT_MS	20u

static void answer_enter(void)
{
	struct timespec ms = { 0, PA_NSEC_PER_MSEC };

	for (;;) {
		__atomic_store_n(&in_answer, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&forking, __ATOMIC_SEQ_CST))
			return;
		__atomic_store_n(&in_answer, 0, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&forking, __ATOMIC_SEQ_CST))
			nanosleep(&ms, NULL);
	}
}

static void answer_exit(void)
{
	__atomic_store_n(&in_answer, 0, __ATOMIC_SEQ_CST);
}

bool stats__fork_begin(void)
{
	unsigned int ms;

	/* a count: two threads may fork at once */
	__atomic_add_fetch(&forking, 1, __ATOMIC_SEQ_CST);
	/* a table being built (a millisecond or a few) is waited for, a
	 * little: a child would lose it until its first module scan (no
	 * new build starts while forking is up; answer_enter) */
	for (ms = 0; ms < FORK_BUILD_WAIT_MS &&
		     __atomic_load_n(&in_build, __ATOMIC_SEQ_CST) &&
		     __atomic_load_n(&in_answer, __ATOMIC_SEQ_CST); ms++)
		agent__pause_ms(1);
	return !__atomic_load_n(&in_answer, __ATOMIC_SEQ_CST);
}

void stats__fork_end(bool child)
{
	if (child) {	/* the only thread: no other fork is under way */
		__atomic_store_n(&forking, 0, __ATOMIC_SEQ_CST);
		/* a hold is the parent's launch's, not the child's */
		__atomic_store_n(&builds_held, 0, __ATOMIC_RELEASE);
		/* nor a build: the builder is not the child's */
		__atomic_store_n(&in_build, 0, __ATOMIC_SEQ_CST);
	}
	else
		__atomic_sub_fetch(&forking, 1, __ATOMIC_SEQ_CST);
}

static bool build_ahead;	/* stats__start's ahead, for the thread */
static struct pa_header *builder_hdr;

/* A launched program dlopened (unwind_cfi.c): the thread's sleep ends. */
static void wake_builder(void)
{
	struct pa_header *hdr = __atomic_load_n(&builder_hdr, __ATOMIC_ACQUIRE);

	if (hdr)
		pa_futex_wake(&hdr->command);
}

static void *stats_main(void *arg)
{
	struct pa_header *hdr = arg;
	uint8_t *area = (uint8_t *)hdr + pa_stats_offset(pa_agent.map_size);
	struct pa_stats *st = (struct pa_stats *)area;
	uint32_t cmd, seq, expected;

	pa_thread.bytes_left = UINT64_MAX;	/* never samples */
	prctl(PR_SET_NAME, "pprof-alloc", 0, 0, 0);
	__atomic_store_n(&hdr->stats_tid, agent__gettid(), __ATOMIC_RELAXED);
	/* launched: the program's modules' unwind tables are built here,
	 * before its walks need them (unwind_cfi.c) */
	__atomic_store_n(&builder_hdr, hdr, __ATOMIC_RELEASE);
	if (PA_ARCH_AGENT_CFI)
		unwind_cfi__builder_on(build_ahead, wake_builder);
	__atomic_store_n(&hdr->stats_thread, PA_STATS_READY, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&stopping, __ATOMIC_ACQUIRE)) {
		cmd = __atomic_load_n(&hdr->command, __ATOMIC_ACQUIRE);
		/* a tracer's question first (it may hold a launch until
		 * answered), then the tables */
		if (cmd != PA_CMD_STATS && cmd != PA_CMD_JEPROF &&
		    __atomic_load_n(&builds_held, __ATOMIC_ACQUIRE)) {
			/* the release wakes the word; one that came before
			 * this wait is seen a millisecond later */
			pa_futex_wait(&hdr->command, cmd, PA_NSEC_PER_MSEC);
			continue;
		}
		if (cmd != PA_CMD_STATS && cmd != PA_CMD_JEPROF) {
			bool built;

			/* under the loader's lock: a fork waits, as for an
			 * answer (stats__fork_begin) */
			answer_enter();
			__atomic_store_n(&in_build, 1, __ATOMIC_SEQ_CST);
			built = unwind_cfi__build_wanted();
			__atomic_store_n(&in_build, 0, __ATOMIC_SEQ_CST);
			answer_exit();
			if (built)
				continue;
		}
		if (cmd == PA_CMD_JEPROF) {
			answer_enter();
			answer_jeprof(hdr, &st->jeprof);
			answer_exit();
			continue;
		}
		if (cmd != PA_CMD_STATS) {
			if (!pa_agent.attached ||
			    __atomic_load_n(&pa_agent.state, __ATOMIC_ACQUIRE) !=
				    AGENT_RUNNING) {
				pa_futex_wait(&hdr->command, cmd, 0);
				continue;
			}
			pa_futex_wait(&hdr->command, cmd,
				      PA_ORPHAN_CHECK_MS * PA_NSEC_PER_MSEC);
			check_tracer(hdr);
			continue;
		}
		answer_enter();
		fill(st);
		answer_exit();
		seq = __atomic_load_n(&hdr->stats_seq, __ATOMIC_RELAXED) + 1;
		st->seq = seq;
		__atomic_store_n(&hdr->stats_seq, seq, __ATOMIC_RELEASE);
		expected = PA_CMD_STATS;
		__atomic_compare_exchange_n(&hdr->command, &expected,
					    PA_CMD_NONE, 0, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE);
		pa_futex_wake(&hdr->stats_seq);
		/* the launch's first reading is answered: build now, so
		 * that the builder is under way when the program starts */
		__atomic_store_n(&builds_held, 0, __ATOMIC_RELEASE);
	}
	unwind_cfi__builder_off();
	__atomic_store_n(&builder_hdr, NULL, __ATOMIC_RELEASE);
	return NULL;
}

void stats__hold_builds(bool hold)
{
	__atomic_store_n(&builds_held, hold, __ATOMIC_RELEASE);
	if (!hold)
		wake_builder();
}

int stats__start(bool ahead)
{
	static const int sync_signals[] = {
		SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS,
	};
	struct pa_header *hdr = pa_agent.hdr;
	const struct dynsym_threads *th_fn;
	sigset_t block, old;
	pthread_attr_t attr;
	uint8_t *stack;
	int expected = 0, err;
	unsigned int i;

	if (!hdr)
		return -EINVAL;
	/* a thread a stop timed out on, which ended after all: joined, and
	 * a new one made */
	th_fn = dynsym__threads();
	if (__atomic_load_n(&started, __ATOMIC_ACQUIRE) && stats_stack &&
	    th_fn && !th_fn->tryjoin(stats_th, NULL)) {
		munmap(stats_stack, STATS_GUARD + STATS_STACK);
		stats_stack = NULL;
		__atomic_store_n(&started, 0, __ATOMIC_RELEASE);
	}
	if (!__atomic_compare_exchange_n(&started, &expected, 1, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return 0;
	build_ahead = ahead;
	/* what may allocate is done here, not in the thread: a thread's
	 * first malloc would give it an arena of its own in the target */
	find_allocator((struct pa_stats *)((uint8_t *)hdr +
					   pa_stats_offset(pa_agent.map_size)));
	if (fn.malloc_info) {
		fn.info = open_sink((char *)hdr +
					    pa_stats_offset(pa_agent.map_size) +
					    PA_STATS_INFO_OFFSET,
				    PA_STATS_SIZE - PA_STATS_INFO_OFFSET - 1);
		/* unbuffered: no stdio buffer to allocate at the first write */
		if (fn.info)
			setvbuf(fn.info, NULL, _IONBF, 0);
	} else if (fn.mi_stats_print_out) {
		/* no FILE: mimalloc writes through a callback */
		sink.buf = (char *)hdr + pa_stats_offset(pa_agent.map_size) +
			   PA_STATS_INFO_OFFSET;
		sink.cap = PA_STATS_SIZE - PA_STATS_INFO_OFFSET - 1;
	}
	/* libpthread may have come since the agent started */
	dynsym__find_threads();
	th_fn = dynsym__threads();
	if (!th_fn) {
		/* glibc < 2.34 and a program that never loaded libpthread:
		 * no thread can be made, and nothing asks for one */
		__atomic_store_n(&hdr->stats_thread, PA_STATS_NO_PTHREAD,
				 __ATOMIC_RELEASE);
		return -ENOSYS;
	}
	/* a stack of our own, which stats__stop unmaps (glibc would keep
	 * its own in its cache); joinable, the default */
	stack = mmap(NULL, STATS_GUARD + STATS_STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
		     -1, 0);
	if (stack == MAP_FAILED)
		goto out_failed;
	mprotect(stack, STATS_GUARD, PROT_NONE);
	if (th_fn->attr_init(&attr))
		goto out_unmap;
	th_fn->attr_setstack(&attr, stack + STATS_GUARD, STATS_STACK);
	sigfillset(&block);
	for (i = 0; i < sizeof(sync_signals) / sizeof(sync_signals[0]); i++)
		sigdelset(&block, sync_signals[i]);
	/* SETMASK, not BLOCK: the caller's mask may be a tracer's block-all
	 * (a borrowed thread), and glibc's SIGCANCEL and SIGSETXID, which
	 * its sigprocmask leaves out of any set (as pthread_sigmask, the
	 * same code; per thread on Linux), must reach this thread, or the
	 * program's next setuid would wait for it for ever */
	sigprocmask(SIG_SETMASK, &block, &old);
	__atomic_store_n(&stopping, 0, __ATOMIC_RELEASE);
	/* a tracer that asks before the thread runs (a busy machine) waits
	 * for it rather than hear there is none */
	__atomic_store_n(&hdr->stats_thread, PA_STATS_STARTING,
			 __ATOMIC_RELEASE);
	err = th_fn->create(&stats_th, &attr, stats_main, hdr);
	sigprocmask(SIG_SETMASK, &old, NULL);
	th_fn->attr_destroy(&attr);
	if (err)
		goto out_unmap;
	stats_stack = stack;
	return 0;
out_unmap:
	munmap(stack, STATS_GUARD + STATS_STACK);
out_failed:
	__atomic_store_n(&hdr->stats_thread, PA_STATS_FAILED, __ATOMIC_RELEASE);
	return -EAGAIN;
}

int stats__stop(void)
{
	const struct dynsym_threads *th_fn = dynsym__threads();
	struct pa_header *hdr = pa_agent.hdr;
	unsigned int i;

	if (stats_stack && th_fn && hdr) {
		__atomic_store_n(&stopping, 1, __ATOMIC_RELEASE);
		/* woken again and again: it may have looked at stopping just
		 * before, and be about to sleep on the command word */
		for (i = 0; i < STATS_STOP_MS; i++) {
			pa_futex_wake(&hdr->command);
			if (!th_fn->tryjoin(stats_th, NULL))
				break;
			agent__pause_ms(1);
		}
		if (i == STATS_STOP_MS) {
			/* still answering: it stays, and goes on (if it has
			 * seen stopping already and ends, the next start
			 * joins it) */
			__atomic_store_n(&stopping, 0, __ATOMIC_RELEASE);
			return -ETIMEDOUT;
		}
		munmap(stats_stack, STATS_GUARD + STATS_STACK);
		stats_stack = NULL;
		__atomic_store_n(&hdr->stats_tid, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&hdr->stats_thread, PA_STATS_NONE,
				 __ATOMIC_RELEASE);
	}
	/* the stream over the stats area: its FILE is glibc's (on its list
	 * of streams, its functions ours) */
	if (fn.info)
		fclose(fn.info);
	fn.info = NULL;
	memset(&sink, 0, sizeof(sink));
	__atomic_store_n(&started, 0, __ATOMIC_RELEASE);
	return 0;
}
