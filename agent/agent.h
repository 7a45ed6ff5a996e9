/* SPDX-License-Identifier: MIT */
/*
 * agent.h - what the agent's files share: the process-wide agent state, the
 * per-thread sampler state, and the inline fast paths the hooks use.
 *
 * Fast paths are here so that an unsampled malloc costs a thread-local
 * compare, a subtraction and a branch, and an unsampled free one byte load
 * from the live filter.  Everything else is out of line.
 */
#ifndef PA_AGENT_H
#define PA_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "arch/arch.h"
#include "live.h"
#include "ring.h"
#include "sites.h"
#include "stacks.h"
#include "unwind_cfi.h"

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

/*
 * Where a hook was called from, taken in the hook itself: fp is its frame
 * record (the agent keeps frame pointers: the caller's frame pointer at
 * fp, the return address into the caller at fp + 8) and sp the caller's
 * stack pointer once the hook returns, the hook's CFA - fp + 16 on x86_64,
 * but on aarch64 wherever the frame's size puts it (arch/aarch64.h).
 */
struct hook_frame {
	uintptr_t fp, sp;
};

#define HOOK_FRAME()							\
	((struct hook_frame){ (uintptr_t)__builtin_frame_address(0),	\
			      (uintptr_t)__builtin_dwarf_cfa() })

/*
 * On a function that takes HOOK_FRAME() and hands it to a call it could
 * make as a tail jump: the jump would free the frame first, and the callee
 * build its own where the record was (on x86_64 the callee's push happens
 * to write the same record back; on aarch64 its locals go there).
 */
#ifdef __clang__
#define HOOK_KEEPS_FRAME __attribute__((disable_tail_calls))
#else
#define HOOK_KEEPS_FRAME __attribute__((optimize("no-optimize-sibling-calls")))
#endif

/* An address at the top of the calling thread's own stack: its TCB (see
 * arch/arch.h). */
static inline uintptr_t agent__thread_self(void)
{
	return pa_arch_thread_top();
}

/* The calling thread's id, by the system call: glibc's gettid is 2.30+
 * and the agent needs nothing newer than 2.17 (glibc_compat.h). */
static inline uint32_t agent__gettid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

/*
 * Sleep ms milliseconds on a path a tracer's borrowed thread may run
 * (pprof_alloc_*): by ppoll, never nanosleep.  The thread was borrowed
 * from a system call that the kernel restarts through its restart block
 * (a poll or nanosleep with a timeout); nanosleep resets that block even
 * when it is not interrupted, and the call restarted afterwards returned
 * EINTR to the program.  ppoll uses none.
 */
static inline void agent__pause_ms(unsigned int ms)
{
	struct {
		long sec, nsec;
	} ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	syscall(SYS_ppoll, NULL, 0, &ts, NULL, 8);
}

enum agent_state {
	AGENT_NOT_STARTED = 0,	/* before the constructor: pass through */
	AGENT_RUNNING	  = 1,
	AGENT_DISABLED	  = 2,	/* failed to start, or a forked child */
	AGENT_DETACHED	  = 3,	/* a tracer detached; may attach again */
};

struct pa_agent {
	int state;			/* enum agent_state, atomic */
	int fd;				/* the memfd, kept open for tracers */
	struct pa_header *hdr;
	size_t map_size;
	struct ring_producer ring;
	struct live_table live;
	struct stack_table stacks;
	struct site_table sites;	/* exact mode (rate 1): counted here */
	uint64_t rate;
	uint32_t max_frames;
	uint64_t unwind_cfg;		/* stack_copy__cfg(): mode and
					   stack_bytes in one atomic word */
	int atfork_done;
	int attached;			/* hooked through GOTs, not preload */
	int injected;			/* dlopened by a tracer: may be turned
					   off and unloaded (agent__off) */
	int off;			/* turned off: hdr is a placeholder
					   (agent__off), NULL once released */
};

/* Which frees the slow path reports (the fast path reads only the filter). */
enum watch_frees {
	WATCH_NONE	= 0,	/* not recording */
	WATCH_FILTER	= 1,	/* frees of addresses in the live table */
};

struct pa_thread {
	uint64_t bytes_left;		/* until the next sample; 0 = slow path */
	uint64_t rng;
	uint64_t stack_lo, stack_hi;	/* cached mapping holding the stack */
	uint8_t stack_own;		/* it is the thread's own: never stale */
	uint64_t seq;			/* samples taken by this thread */
	uint32_t tid;
	uint8_t depth;			/* slow paths running on this thread */
	uint8_t initialized;
	uint8_t counts_registered;	/* flushed at thread exit (counters.c) */
	uint8_t flush_tick;		/* --rate 1: flush every 256 samples */
	uint8_t in_scan;		/* in a module scan (modules.c) */
	uint8_t fork_single;		/* forking a process that had no
					   thread but this one and ours */
	uint8_t fork_began;		/* ... and stats__fork_begin ran */
	uint8_t no_wait;		/* a tracer's call (attach.c): never
					   waits for the ring (ring.c) */
	uint8_t open_records;		/* reserved in the ring, not yet
					   committed: a signal handler on top
					   of them must not wait (ring.c) */
	/* calls and bytes per hook since the last flush (counters.c) */
	uint64_t calls[PA_HOOK_COUNT];
	uint64_t bytes[PA_HOOK_COUNT];
	/* exact mode: samples taken and live entries added (less those
	 * removed) since the last flush, kept here rather than bounced
	 * between cores at every call (counters.c) */
	uint64_t samples;
	uint64_t live_delta;
	/* exact mode: this thread's bytes in use and its share of the
	 * header's inuse_bytes (inuse.c) */
	int64_t inuse_net, inuse_held, inuse_top;
	uint32_t inuse_epoch;
	/* the last stack interned, and the last site (its index + 1):
	 * checked first, key and all (agent.c) */
	uint32_t last_stack, last_site;
	/* exact mode: the site lane this thread counts in (sites.h): 0 none
	 * claimed yet, LANE_NONE none to be had, else its index + 1; its
	 * counters and site cache as of the table's generation lane_gen */
	uint8_t lane;
	uint8_t lane_busy;
	uint32_t lane_gen;
	struct site_lane lane_at;
};

#define LANE_NONE	0xffu

/* A sample taken, a live entry in or out: the header's counters, through
 * the thread's own at --rate 1 (see counters.c). */
void agent__count_sample(void);
void agent__count_live(int64_t delta);
/* Exact mode: flush: the thread's peak to the header (exiting: its share
 * too); see agent__count_inuse below. */
#define PA_INUSE_CHUNK	(16 * 1024)
extern uint32_t pa_inuse_epoch;
void agent__inuse_join(int64_t bytes);
void agent__inuse_moved(int64_t net);

/* *p += v in one step, the sum returned: atomic against this thread's
 * signal handlers, not against other threads (none writes *p): one
 * instruction on x86-64, an atomic add elsewhere (arch/). */
static inline int64_t pa_thread_add(int64_t *p, int64_t v)
{
	return pa_arch_thread_add(p, v);
}
void agent__flush_inuse(bool exiting);
/* Exact mode: the thread's site lane given back (it ends; agent.c). */
void agent__release_lane(void);
void agent__inuse_reset(struct pa_header *hdr);

extern struct pa_agent pa_agent;
extern int pa_watch_frees;
/* PPROF_ALLOC_UNWIND_CHECK: with --unwind auto, copy the stack of every
 * sample the tables unwound too, for the tracer to check against libdwfl */
extern int pa_unwind_check;
extern uint8_t pa_live_filter[LIVE_FILTER_SIZE];
extern __thread struct pa_thread pa_thread;

/* Exact mode: a live block's requested bytes in (> 0) or out (inuse.c):
 * the thread's own count, the shared one only when the count leaves the
 * thread's window or passes its high (agent__inuse_moved), or the
 * thread's first count since a start (agent__inuse_join). */
static inline void agent__count_inuse(int64_t bytes)
{
	struct pa_thread *t = &pa_thread;
	int64_t net;

	if (pa_agent.rate != 1 || !bytes)
		return;
	if (__builtin_expect(t->inuse_epoch !=
			     __atomic_load_n(&pa_inuse_epoch, __ATOMIC_RELAXED),
			     0))
		return agent__inuse_join(bytes);
	net = pa_thread_add(&t->inuse_net, bytes);
	if (__builtin_expect(net > t->inuse_held ||
			     net < t->inuse_held - 2 * PA_INUSE_CHUNK ||
			     net > t->inuse_top, 0))
		agent__inuse_moved(net);
}
/* Calls of a patched allocator function running on this thread: the
 * entry page's code counts them around the original (entry.c). */
extern __thread uint32_t pa_entry_nest;

/* Count a call to a hook (the fast path: two thread-local adds). */
static inline void count_call(enum pa_hook hook, size_t size)
{
	pa_thread.calls[hook]++;
	pa_thread.bytes[hook] += size;
}

/* Count a free; false every 2^16 of them, when the thread should flush
 * its counts (a thread that only frees never reaches a slow path). */
#define FREE_FLUSH_MASK 0xffffu
void agent__flush_counts(void);
static inline bool count_free(void)
{
	return (++pa_thread.calls[PA_HOOK_FREE] & FREE_FLUSH_MASK) != 0;
}

/* True when an allocation of size must go to the slow path. */
static inline bool sampler__due(size_t size)
{
	struct pa_thread *t = &pa_thread;

	if (likely(size < t->bytes_left)) {
		t->bytes_left -= size;
		return false;
	}
	return true;
}

/*
 * True when free(p) must go to the slow path: p may be a live sample, a
 * sample the live table had no room for, or a bootstrap block (the last
 * two have sticky filter marks).  One byte load.
 */
static inline bool agent__free_watched(const void *p)
{
	return live_filter_hit(pa_live_filter, (uintptr_t)p);
}

/* Slow path of sampler__due: decides whether this allocation is sampled and
 * draws the next interval. */
bool sampler__take(size_t size);
/* Exponential interval with mean rate, from the thread's generator. */
uint64_t sampler__draw(uint64_t *rng, uint64_t rate);
/* ln(x) for a positive normal x, without libm (sampler.c). */
double sampler__log(double x);
void sampler__seed(uint64_t *rng, uint64_t salt);

/* True (and the agent disabled) in a child forked without atfork
 * handlers; checked on slow paths before shared state is touched. */
bool agent__forked(void);
/* A sample skipped because slow paths nested too deep: count it lost. */
void agent__skip_nested(size_t size);
/* Record a sampled allocation made by the hook whose frame is fp. */
void agent__record_alloc(void *p, size_t size, struct hook_frame fp);
/*
 * A slow path may be interrupted by a signal handler that allocates: the
 * ring and the live table are lock-free, so nested slow paths record
 * normally.  Handlers nest only as deep as there are distinct signals; past
 * AGENT_MAX_DEPTH a sample is counted as lost rather than risk the stack.
 */
#define AGENT_MAX_DEPTH 4

/*
 * Take p out of the live table; true if it was there (*old gets its
 * entry).  Call before the real free or realloc.
 */
bool agent__take_live(void *p, struct pa_live_entry *old);
/* Exact mode: the block at p, if the block map has it, out and its free
 * counted at its site; true if so (nothing else to do for it). */
bool agent__end_mapped(void *p);
/* Report the free of p: old from agent__take_live, or NULL if p was not in
 * the table (reported, unverified, only once the table has overflowed). */
void agent__emit_free(void *p, const struct pa_live_entry *old);
/* Put back an entry taken by agent__take_live (a realloc that failed). */
void agent__unfree(const struct pa_live_entry *old);

/* modules.c: report loaded modules (all not yet reported). */
void modules__scan(void);
/* Scan every module, not only those added since the last scan. */
void modules__rescan_all(void);
/* After a sample: rescan if a dlopen happened lately. */
void modules__after_sample(uint64_t now_ns);
/* The same after a count at a site, which reads no clock of its own: the
 * clock is read only when there is something to check. */
void modules__after_count(void);

/* counters.c: have this thread's counts flushed when it exits. */
void agent__register_counts(void);

/*
 * stats.c: start the stats thread that answers PA_CMD_STATS, once (later
 * calls do nothing).  Only from a safe context: a constructor, or a thread
 * the tracer borrowed.  It builds the unwind tables too (unwind_cfi.c):
 * ahead, those of every module loaded, for a program that has not
 * started yet.  0 or -errno (the header's stats_thread says so).
 */
int stats__start(bool ahead);
/* No table is built while hold is set (the launch's wait: stats.c). */
void stats__hold_builds(bool hold);
/* Around a fork (atfork handlers): true if the stats thread, when there
 * is one, is not answering (holds no loader lock) and will not start to
 * before stats__fork_end. */
bool stats__fork_begin(void);
void stats__fork_end(bool child);
/* preload.c: the allocator's own malloc, for naming the allocator. */
void *agent__real_malloc(void);

/* Start recording (the constructor calls it once).  0 or -errno. */
int agent__start(void);

/* session.c: a launched program's descendants, unprofiled, say so. */
bool session__init(void);	/* PPROF_ALLOC_SESSION names a socket */
void session__announce(void);
/* A followed descendant hands its memfd to the tracer.  0 or -errno. */
int session__hand_over(int fd);
/* The launched process, exec'd: the same with PA_CHILD_EXEC_MAGIC. */
int session__hand_over_exec(int fd);
/* modules.c: a forked child that records again reports every module. */
void modules__forget(void);
/* Attach and detach, for pprof_alloc_attach/detach (see the ABI header). */
int agent__attach(uint64_t rate, uint64_t max_frames, uint64_t ring_size,
		  uint64_t live_size, uint64_t flags);
int agent__detach(void);
/* The GOT slots are back: the tracer may go on (agent_state). */
void agent__detached(void);
/* An injected agent, detached: turn off completely, then (every other
 * thread stopped by the tracer) let go of the rest (agent.c). */
int agent__off(void);
int agent__release(bool unloading);
/* stats.c: end the stats thread and unmap its stack (agent__off).  0 or
 * -ETIMEDOUT (it is still answering: it stays). */
int stats__stop(void);
/* counters.c: delete the pthread key and make none until restarted.  0
 * or -EBUSY. */
int counters__stop(void);
void counters__restart(void);
/* The tracer asked for something (header command word): do it.  Called on
 * slow paths (attach.c). */
void agent__command(void);
/* orphan.c: the pid of an injected agent's tracer when it is gone (it
 * died without detaching), else 0.  The stats thread only. */
uint32_t orphan__tracer_gone(struct pa_header *hdr, uint64_t now_ns);

/* An attached agent hooks modules loaded since (attach.c); true when one
 * was still being loaded and must be looked at again. */
bool agent__hook_new_modules(void);
/* What to patch into GOTs: set by preload.c, which owns the hooks. */
struct got_hook;
extern unsigned int (*pa_hook_table)(struct got_hook *hooks);
int pprof_alloc_attach(uint64_t rate, uint64_t max_frames, uint64_t ring_size,
		       uint64_t live_size, uint64_t flags);
int pprof_alloc_detach(void);
int pprof_alloc_rescan(void);
int pprof_alloc_off(void);
int pprof_alloc_release(uint64_t flags);

/* The mapping of /proc/self/maps holding addr (raw syscalls, no
 * allocation): its bounds and whether it is writable.  0 or -1. */
int agent__mapping_of(uintptr_t addr, uintptr_t *lo, uintptr_t *hi,
		      bool *writable);

/* What a frame-pointer walk found besides its frames. */
struct fp_walk {
	bool truncated;		/* the chain went on past max */
	unsigned int top;	/* frames[top] and on were read at the top
				   of the thread's stack: its entry (glibc);
				   UINT_MAX if the walk never got there */
	uintptr_t stack_hi;	/* end of the stack it checked; 0: none */
	bool own_stack;		/* ... the thread's own, which is readable
				   all the way (not a coroutine's) */
	bool complete;		/* --unwind auto: the unwind tables took the
				   walk to the thread's entry (or max) */
	bool tables_gave_out;	/* --unwind auto: ... they did not */
	/* complete: the walk by the tables, for its memo's tag */
	struct cfi_walk cfi;
};

/*
 * Walk the frame-pointer chain from fp, whose return address is frames[0].
 * Reads only inside the mapping that holds the current stack.  Returns the
 * number of frames.  With --unwind auto the unwind tables are tried first
 * (unwind_cfi.c): a walk they take to the thread's entry is the answer
 * (walk->complete), else the frame-pointer walk is.
 */
unsigned int unwind_fp(struct hook_frame from, uint64_t *frames,
		       unsigned int max, struct fp_walk *walk);

/* stack_copy.c: the unwind config word for mode and stack_bytes (0 bytes
 * for fp); how many stack bytes this sample copies (0: none); and filling
 * the copy in a record reserved for that many. */
uint64_t stack_copy__cfg(uint32_t mode, uint32_t stack_bytes);
uint32_t stack_copy__size(struct hook_frame fp, const uint64_t *frames,
			  unsigned int n, const struct fp_walk *walk);
struct pa_stack_copy;
void stack_copy__fill(struct pa_stack_copy *c, struct hook_frame fp,
		      uint64_t pc, uint32_t size, const struct fp_walk *walk);

/* fp_trust.c: classify the executable segments of a module not seen yet
 * (modules.c calls it from its scans). */
struct dl_phdr_info;
void fp_trust__note(const struct dl_phdr_info *info);
/* Whether a walk of n frames went through code without frame pointers,
 * so that its stack should be copied for DWARF unwinding. */
bool fp_trust__walk_needs_copy(const uint64_t *frames, unsigned int n,
			       const struct fp_walk *walk);
/* A walk met code in no module seen: scan again (once per call). */
bool fp_trust__take_rescan(void);
bool fp_trust__rescan_wanted(void);	/* the same, without taking it */
/* Bytes of static TLS of the modules seen (for at_thread_top). */
uint64_t fp_trust__static_tls(void);

#endif /* PA_AGENT_H */
