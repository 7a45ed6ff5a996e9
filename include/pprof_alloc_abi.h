/* SPDX-License-Identifier: MIT */
/*
 * pprof_alloc_abi.h - the memory file shared by the agent and the tracer.
 *
 * This header is the only thing that crosses between the agent (inside the
 * target) and the tracer (outside).  Everything here is a byte layout; both
 * sides are x86_64/aarch64 little-endian LP64 and the static asserts pin every
 * size so that a change to a struct is a deliberate ABI change.
 *
 * The memfd ("pprof-alloc" in /proc/PID/fd) is laid out as:
 *
 *   0          PA_HEADER_SIZE  live_offset     stack_offset  site_offset stats  file_size
 *   +----------+---------------+---------------+-------------+----------+--------+
 *   | struct   | data ring     | live table    | stack table | site     | struct |
 *   | pa_header| (power of two)| (pow2 entries)| (pow2 ent.) | table    |pa_stats|
 *   +----------+---------------+---------------+-------------+----------+--------+
 *
 * The site table is there only in a memfd made for --rate 1 (its
 * site_capacity is then pa_site_capacity(live_capacity), else 0).
 *
 * Header: written once at creation (magic, version, sizes, sampling config),
 * then only the counters below it change: data_head, the agent counters and
 * agent_state by the agent, data_tail by the tracer.  Each side keeps the
 * sizes and offsets in its own memory after validating them once; neither
 * re-reads them from shared memory.
 *
 * Data ring: free-running 64-bit head and tail; position p lives at byte
 * (p & (data_size - 1)).  A record starts with struct pa_rec_hdr:
 *
 *   +----------------------------+------------+----------+-----------
 *   | len (u32): bytes, incl. hdr| type (u16) | flags    | payload...
 *   |  | PA_REC_BUSY while written            | (u16)    |
 *   +----------------------------+------------+----------+-----------
 *
 * Producers (any thread of the target) reserve space with a CAS on data_head
 * after checking it against data_tail, write the header with PA_REC_BUSY set,
 * fill the payload, then store len without the busy bit with release order.
 * A record never wraps: when it does not fit before the end of the ring, the
 * producer reserves the rest of the ring too and writes a PA_REC_PAD record
 * there.  The consumer reads len with acquire order at data_tail: 0 means
 * "reserved but not yet written", PA_REC_BUSY means "being written"; it stops
 * at either.  After consuming it zeroes the bytes (so a fresh reservation
 * reads as 0 until its producer writes the header) and advances data_tail
 * with release order.  A full ring drops the record and counts it in
 * lost_records; the producer never waits - except in exact mode (rate 1)
 * while a tracer says it is draining: then it waits for room, and gives
 * up (for that tracer: gave_up_on) when the tail has not moved for
 * PA_PRESSURE_MAX_MS; one record waits at most PA_PRESSURE_RECORD_MS.
 *
 * Exact mode (rate 1, with a site table): an allocation whose stack the
 * agent walked itself is not written to the ring at all.  It is counted in
 * the site table, one entry per (stack-table index, size, flags), and its
 * live-table entry names the site (site = index + 1), so that its free
 * counts there too.  Only what the agent cannot count - a stack copy for
 * the tracer to unwind, a stack or site that found no room in its table,
 * an allocation the live table could not hold, module records - goes
 * through the ring, with back-pressure.
 *
 * Agent counters: each thread counts its calls and bytes per hook in its
 * own thread-local counters (no shared cache line on the fast path) and
 * adds them to hook_counts now and then: on each sampled allocation, every
 * 2^16 frees, and at thread exit.  They lag by at most a sampling interval
 * per thread.
 *
 * Allocator statistics: the tracer asks by setting command to
 * PA_CMD_STATS and waking the futex on it; the agent's stats thread (a
 * thread of its own, never a signal handler, never a thread inside the
 * allocator) reads mallinfo2/malloc_info or jemalloc's mallctl into the
 * stats area, bumps stats_seq (a futex too) and puts command back to
 * PA_CMD_NONE.  stats_thread says whether that thread exists.  It is
 * started only for a tracer that wants it: stats_wanted in the header of a
 * launched program's memfd, PA_ATTACH_STATS when attaching.
 *
 * jemalloc's own heap profile: the tracer writes PA_CMD_JEPROF the same
 * way (with the address of a mallctl it found in the executable's symbol
 * table in pa_stats.jeprof.mallctl, or 0); the stats thread makes a memfd,
 * has jemalloc write its dump into it ("prof.dump" on /proc/self/fd/N),
 * fills pa_stats.jeprof, bumps its seq (a futex) and keeps the memfd open
 * until the tracer, having opened /proc/PID/fd/N itself, writes
 * PA_CMD_JEPROF_DONE - or PA_JEPROF_HOLD_MS has passed.  Then it closes it
 * and puts command back to PA_CMD_NONE.
 *
 * Live table: open addressing on the allocation address, linear probing of
 * at most PA_LIVE_MAX_PROBE slots.  key is 0 (empty), PA_LIVE_TOMBSTONE
 * (deleted, reusable) or the address; an address with PA_LIVE_BUSY set is
 * being filled in.  It holds exactly the sampled allocations that are still
 * live, so the agent knows which frees to report, and a tracer that comes
 * late (or reads a dead process's memfd) still sees the live heap.
 */
#ifndef PPROF_ALLOC_ABI_H
#define PPROF_ALLOC_ABI_H

#include <stdint.h>
#include <unistd.h>

#define PA_MAGIC		0x434c4146524f5050ULL	/* "PPORFALC" in memory */
#define PA_ABI_VERSION		10u
#define PA_MEMFD_NAME		"pprof-alloc"
#define PA_HEADER_SIZE		4096u

/* Does path - a /proc/PID/maps name, a /proc/PID/fd link, a core's NT_FILE
 * name - name the ring's memfd: "/memfd:pprof-alloc", ended there or by
 * " (deleted)"?  Not the memfd an attach loads the agent's code from
 * ("/memfd:pprof-alloc-agent.so"), which merely starts the same. */
static inline int pa_is_memfd_path(const char *path)
{
	static const char name[] = "/memfd:" PA_MEMFD_NAME;
	unsigned int i;

	for (i = 0; i < sizeof(name) - 1; i++)
		if (path[i] != name[i])
			return 0;
	return !path[i] || path[i] == ' ';
}

/* Environment the tracer passes to a launched target. */
#define PA_ENV_FD		"PPROF_ALLOC_FD"	/* inherited memfd number */
#define PA_ENV_SESSION		"PPROF_ALLOC_SESSION"	/* "@" + socket name */
/* --follow-children: descendants record too, into memfds of their own,
 * sized as "rate:max_frames:ring_size:live_size:unwind:stack_bytes:stats"
 * says (the launched process's own sizes). */
#define PA_ENV_FOLLOW		"PPROF_ALLOC_FOLLOW"
/*
 * The launched process's own later images (a launcher that execs the
 * program doing the work: a pyenv shim, env, nice): "PID:NS:" and then
 * the sizes as in PA_ENV_FOLLOW.  PID (PA_EXEC_PID_DIGITS digits) and NS,
 * the inode of its pid namespace (PA_EXEC_NS_DIGITS; 0 when /proc cannot
 * tell), both with leading zeros, are written in the child after the fork
 * (tracer/attach/launch.c); an agent whose getpid() is PID in that namespace
 * hands a memfd of its own over (PA_CHILD_EXEC_MAGIC) and the tracer reads
 * that from then on.  The namespace: a descendant in a pid namespace of
 * its own may have the same number.
 */
#define PA_ENV_EXEC		"PPROF_ALLOC_EXEC"
#define PA_EXEC_PID_DIGITS	10
#define PA_EXEC_NS_DIGITS	20

/* The inode of this process's pid namespace, from /proc/self/ns/pid
 * ("pid:[4026531836]"), or 0.  Async-signal-safe: after a fork too. */
static inline unsigned long long pa_pidns_inode(void)
{
	char buf[64];
	unsigned long long v = 0;
	ssize_t n = readlink("/proc/self/ns/pid", buf, sizeof(buf) - 1);
	ssize_t i;

	if (n <= 6 || buf[0] != 'p' || buf[3] != ':' || buf[4] != '[')
		return 0;
	for (i = 5; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
		v = v * 10 + (unsigned long long)(buf[i] - '0');
	return i < n && buf[i] == ']' ? v : 0;
}

/*
 * What a descendant of a launched program sends to the tracer's session
 * socket (agent/session.c) when it runs with the agent, unprofiled: its
 * command name.  Its pid comes with it from the kernel (SCM_CREDENTIALS).
 * A followed descendant (PA_ENV_FOLLOW) sends PA_CHILD_FOLLOW_MAGIC with
 * its new memfd attached (SCM_RIGHTS), for the tracer to read; the
 * launched process itself, exec'd (PA_ENV_EXEC), PA_CHILD_EXEC_MAGIC.
 */
#define PA_CHILD_MAGIC		0x646c696863617070ull	/* "ppachild" */
#define PA_CHILD_FOLLOW_MAGIC	0x776c6f6663617070ull	/* "ppacfolw" */
#define PA_CHILD_EXEC_MAGIC	0x6365786563617070ull	/* "ppacexec" */
struct pa_child_note {
	uint64_t magic;
	char comm[16];
};

/* Limits both sides enforce. */
#define PA_MAX_FRAMES		256u
#define PA_RING_MIN		(64u * 1024)
#define PA_RING_MAX		(1ull << 30)	/* a pad's len fits 31 bits */
#define PA_LIVE_MIN		1024u
#define PA_LIVE_MAX		(1u << 26)
#define PA_LIVE_MAX_PROBE	32u
#define PA_RECORD_ALIGN		8u
#define PA_PAGE_SIZE		4096u	/* the tables' layout unit */

/* agent_state */
enum pa_agent_state {
	PA_STATE_CREATED	= 0,	/* memfd made, no agent yet */
	PA_STATE_RUNNING	= 1,	/* agent hooked and recording */
	PA_STATE_DISABLED	= 2,	/* agent failed or gave up; passes through */
	PA_STATE_DETACHED	= 3,	/* hooks removed; may be attached again */
};

/*
 * tracer_state.  A launched agent waits (at most PA_TRACER_WAIT_MS, in its
 * constructor, before main) until the tracer has read the process's
 * mappings, so that even a program that exits at once can be symbolized.
 */
enum pa_tracer_state {
	PA_TRACER_NONE		= 0,
	PA_TRACER_READY		= 1,
};
#define PA_TRACER_WAIT_MS	2000u

/*
 * exit_state: the last reading.  When exit_wanted is set, the agent's
 * destructor (exit(), after the program's atexit handlers) writes
 * PA_EXIT_WAITING and wakes the futex, then sleeps on it until the tracer,
 * having drained the ring and read the process, writes PA_EXIT_READ and
 * wakes it - at most PA_EXIT_WAIT_MS, and only while the tracer's loop
 * is seen to run (tracer_beat moves within PA_EXIT_BEAT_MS).
 */
enum pa_exit_state {
	PA_EXIT_NONE	= 0,
	PA_EXIT_WAITING	= 1,
	PA_EXIT_READ	= 2,
};
#define PA_EXIT_WAIT_MS		1000u
#define PA_EXIT_BEAT_MS		200u

/*
 * An injected agent's stats thread looks for its tracer every
 * PA_ORPHAN_CHECK_MS; one in another PID namespace is gone when
 * tracer_beat has not moved for PA_ORPHAN_BEAT_MS (agent/orphan.c).
 */
#define PA_ORPHAN_CHECK_MS	250u
#define PA_ORPHAN_BEAT_MS	2000u

enum pa_command {
	PA_CMD_NONE	= 0,
	PA_CMD_DETACH	= 1,	/* remove the hooks, stop recording */
	PA_CMD_STATS	= 2,	/* fill the stats area (the stats thread) */
	PA_CMD_JEPROF	= 3,	/* jemalloc's heap profile into a memfd */
	PA_CMD_JEPROF_DONE = 4,	/* ... which the tracer has opened */
};

/* The hooks the agent counts, as indices of pa_header.hook_counts. */
enum pa_hook {
	PA_HOOK_MALLOC, PA_HOOK_CALLOC, PA_HOOK_REALLOC, PA_HOOK_REALLOCARRAY,
	PA_HOOK_POSIX_MEMALIGN, PA_HOOK_ALIGNED_ALLOC, PA_HOOK_MEMALIGN,
	PA_HOOK_VALLOC, PA_HOOK_PVALLOC, PA_HOOK_FREE,
	PA_HOOK_COUNT
};
#define PA_HOOK_SLOTS		16

/* pa_header.stats_thread */
enum pa_stats_thread {
	PA_STATS_NONE	= 0,	/* no stats thread (preloaded without a tracer) */
	PA_STATS_READY	= 1,	/* waiting for PA_CMD_STATS */
	PA_STATS_FAILED	= 2,	/* could not be started */
	PA_STATS_NO_PTHREAD = 3, /* no pthread_create in the process: glibc
				  * < 2.34 and libpthread.so.0 not loaded */
	PA_STATS_STARTING = 4,	/* being made: READY (or FAILED) follows, as
				   soon as the new thread is scheduled */
};

/*
 * How the agent records a sample's stack (unwind_mode, and the same value
 * in pprof_alloc_attach's flags).  FP: the frame-pointer walk alone.
 * DWARF: the walk (which still gives frames[0], and is the fallback) plus
 * a copy of the registers and the top of the stack (struct pa_stack_copy)
 * for the tracer to unwind with the modules' CFI.  AUTO: the copy only
 * when the walk went through a module the agent judged to be built
 * without frame pointers.
 */
enum pa_unwind {
	PA_UNWIND_FP	= 0,
	PA_UNWIND_DWARF	= 1,
	PA_UNWIND_AUTO	= 2,
};
#define PA_STACK_BYTES_DEFAULT	16384u
#define PA_STACK_BYTES_MIN	256u
#define PA_STACK_BYTES_MAX	65536u

/* pprof_alloc_attach's flags */
#define PA_ATTACH_STATS		0x1	/* start the stats thread */
#define PA_ATTACH_ENTRY		0x2	/* map the entry page */
#define PA_ATTACH_INJECTED	0x4	/* the tracer dlopened the agent: it
					   may turn off and be unloaded */
/* bits 8-15: enum pa_unwind; bits 16-47: stack_bytes */
#define PA_ATTACH_UNWIND(mode, stack_bytes) \
	((uint64_t)(mode) << 8 | (uint64_t)(stack_bytes) << 16)
#define PA_ATTACH_UNWIND_MODE(flags)	((uint32_t)((flags) >> 8 & 0xff))
#define PA_ATTACH_STACK_BYTES(flags)	((uint32_t)((flags) >> 16))

/*
 * Entry points a tracer calls inside the target (with ptrace) after it has
 * dlopened the agent; both return 0 or a negative errno.  attach starts
 * recording (making the memfd if there is none) and hooks the malloc
 * family in every module's GOT; detach removes the hooks.  Both may be
 * called again: attach after detach starts over with an empty live table.
 */
#define PA_ATTACH_SYMBOL	"pprof_alloc_attach"
/* Hook modules loaded since (a tracer calls it when dlopen_calls moves);
 * returns 1 while one of them is still being relocated: call again. */
#define PA_RESCAN_SYMBOL	"pprof_alloc_rescan"
#define PA_DETACH_SYMBOL	"pprof_alloc_detach"
/*
 * After a detach, an injected agent leaves (tracer/attach/unload.c): off ends its
 * thread and gives up its memfd (-EPERM: preloaded, it stays); release,
 * called while every other thread is stopped, unmaps the rest of what it
 * mapped - with PA_RELEASE_UNLOADING also the pages its hooks read, as the
 * tracer then dlcloses it.
 */
#define PA_OFF_SYMBOL		"pprof_alloc_off"
#define PA_RELEASE_SYMBOL	"pprof_alloc_release"
#define PA_RELEASE_UNLOADING	0x1

/*
 * Entry patching: an allocator linked into the program (its own malloc,
 * jemalloc's je_ or Rust's _rjem_ names) is called directly, through no
 * GOT, so the tracer patches each function's first instructions with a
 * jump (tracer/attach/entry.c).  The agent exports this table under
 * PA_ENTRY_SYMBOL: for each family (name prefix) and function, the hook
 * the patched entry should reach and the pointer through which that hook
 * calls the original (the tracer stores there the address of the relocated
 * first instructions, which jump back).  page is PA_ENTRY_PAGE_SIZE bytes,
 * read and execute, mapped by the agent within reach of a rel32 jump from
 * the program when asked (entry_wanted, PA_ATTACH_ENTRY); the tracer
 * writes the stubs and relocated code there through /proc/PID/mem.  All
 * values are the agent's and are checked by the tracer before use.
 */
#define PA_ENTRY_SYMBOL		"pprof_alloc_entry"
#define PA_ENTRY_MAGIC		0x70656e74u	/* "tnep" */
#define PA_ENTRY_PAGE_SIZE	8192u
#define PA_ENTRY_FAMILIES	3		/* "", "je_", "_rjem_" */
enum pa_entry_fn {
	PA_EP_MALLOC, PA_EP_FREE, PA_EP_CALLOC, PA_EP_REALLOC,
	PA_EP_POSIX_MEMALIGN, PA_EP_ALIGNED_ALLOC, PA_EP_MEMALIGN,
	PA_EP_VALLOC, PA_EP_PVALLOC,
	PA_EP_MALLOCX, PA_EP_RALLOCX, PA_EP_SDALLOCX, PA_EP_DALLOCX,
	PA_EP_FNS
};
struct pa_entry_table {
	uint32_t magic;
	uint32_t abi_version;		/* PA_ABI_VERSION */
	uint32_t families;		/* PA_ENTRY_FAMILIES */
	uint32_t fns;			/* PA_EP_FNS */
	uint64_t page;			/* the entry page, or 0 */
	uint64_t page_size;		/* PA_ENTRY_PAGE_SIZE */
	int64_t nest_tls;		/* %fs offset of the agent's 32-bit
					   count of calls inside a patched
					   function (initial-exec TLS) */
	int64_t bytes_left_tls;		/* %fs offset of the thread's 64-bit
					   byte countdown to its next sample */
	uint64_t hook[PA_ENTRY_FAMILIES][PA_EP_FNS];
	uint64_t real_slot[PA_ENTRY_FAMILIES][PA_EP_FNS];
};

struct pa_header {
	/* Written once, at creation. */
	uint64_t magic;
	uint32_t abi_version;
	uint32_t header_size;		/* sizeof(struct pa_header) */
	uint64_t file_size;		/* size of the whole memfd */
	uint64_t data_offset;		/* == PA_HEADER_SIZE */
	uint64_t data_size;		/* power of two */
	uint64_t live_offset;		/* == data_offset + data_size */
	uint64_t live_capacity;		/* entries, power of two */
	uint64_t stack_offset;		/* == live_offset + live table */
	uint64_t stack_capacity;	/* pa_stack_capacity(live_capacity,
					   site_capacity != 0, max_frames) */
	uint64_t sample_rate;		/* mean bytes between samples; 1 = all */
	uint32_t max_frames;		/* <= PA_MAX_FRAMES */
	uint32_t unwind_mode;		/* enum pa_unwind */
	uint32_t stack_bytes;		/* stack copied per sample (not fp) */
	uint32_t reserved1a;
	uint64_t site_offset;		/* == stack_offset + stack table */
	uint64_t site_capacity;		/* entries: 0 (none) or a power of
					   two (pa_site_capacity) */
	uint32_t inuse_chunk;		/* exact mode: the unit of a thread's
					   share of inuse_bytes (below) */
	uint32_t inuse_live_max;	/* ... the most threads counting at
					   once (the bound is 2 chunks each) */
	uint8_t  reserved1[128 - 120];

	/* Written by the agent. */
	uint32_t agent_pid;
	uint32_t agent_state;		/* enum pa_agent_state */
	uint64_t agent_start_ns;	/* CLOCK_MONOTONIC at agent start */
	uint32_t dlopen_calls;		/* bumped by the dlopen hook */
	uint32_t unwind_modules;	/* modules with an unwind table */
	uint64_t unwind_table_bytes;	/* the agent's unwind tables' memory
					   (its own mappings, not the memfd) */
	/* Exact mode: requested bytes of the live table's blocks, counted
	 * by the agent (agent/inuse.c).  inuse_bytes is the sum of the
	 * threads' shares: never below the bytes in use, at most
	 * 2 * inuse_chunk above them per thread in inuse_live_threads (at
	 * most inuse_live_max). */
	uint64_t inuse_bytes;
	uint64_t inuse_peak;		/* inuse_bytes' highest */
	uint64_t inuse_peak_ns;		/* CLOCK_MONOTONIC(_COARSE) near it */
	uint64_t inuse_peak_one;	/* the exact peak, when one thread
					   alone ever counted (else 0) */

	/* Producers' position: alone on its line, every sample CASes it. */
	uint64_t data_head;
	uint8_t  reserved3[56];

	/* Consumer's position and state; written by the tracer. */
	uint64_t data_tail;
	uint32_t tracer_state;		/* enum pa_tracer_state */
	uint32_t stats_wanted;		/* launched: start the stats thread */
	uint32_t draining;		/* exact mode: a tracer's token while it
					   reads the ring (producers wait for
					   room), 0 when none does */
	uint32_t exit_wanted;		/* a tracer reads the process at its
					   exit: the agent waits for it */
	uint32_t exit_state;		/* enum pa_exit_state (a futex) */
	uint32_t tracer_beat;		/* bumped by the tracer's loop at each
					   pass (at least every 50 ms) */
	uint32_t entry_wanted;		/* launched: the program defines
					   allocator functions itself; map the
					   entry page (struct pa_entry_table) */
	uint32_t entry_patched;		/* functions whose entry the tracer
					   patched (informational) */
	uint64_t mallctl_at;		/* the program's own jemalloc's
					   mallctl, which it does not export
					   (from its .symtab), or 0: the stats
					   thread may ask it */
	uint8_t  reserved4[16];

	/* Agent counters, touched only on rare paths (ring or table full). */
	uint64_t lost_records;		/* records dropped: ring full */
	uint64_t lost_bytes;		/* sampled bytes of dropped allocations */
	uint64_t live_overflow;		/* samples not put in the live table */
	uint64_t lost_samples;		/* allocation records among lost_records */
	uint64_t pressure_waits;	/* exact mode: records that waited for
					   room in the ring */
	uint64_t pressure_wait_ns;	/* ... and how long, in all */
	uint64_t site_misses;		/* exact mode: samples that went to the
					   ring, no site taking them */
	uint32_t gave_up_on;		/* the draining token the agent stopped
					   waiting for (no room for
					   PA_PRESSURE_MAX_MS), or 0 */
	uint32_t pressure_drops;	/* records dropped after waiting
					   PA_PRESSURE_RECORD_MS */

	/* Commands from the tracer, on a line of their own: the agent reads
	 * it on every slow path.  The tracer writes command (enum
	 * pa_command); the agent sets it back to PA_CMD_NONE when done. */
	uint32_t command;
	uint32_t tracer_pid;		/* informational */
	uint8_t  reserved6[56];

	/* Agent counters, atomic adds by the agent (see above). */
	uint64_t samples;		/* sampled allocations, recorded or not */
	uint64_t live_entries;		/* live-table occupancy */
	uint32_t stats_thread;		/* enum pa_stats_thread */
	uint32_t stats_seq;		/* bumped after each stats reply */
	uint32_t stats_tid;		/* the stats thread (tracers must not
					   borrow it for remote calls) */
	uint32_t orphaned;		/* an injected agent turned itself off:
					   the pid of its tracer, which ended
					   without detaching (agent/orphan.c);
					   0 otherwise.  A tracer that
					   attaches again clears it */
	uint64_t unwind_fallbacks;	/* samples whose walk by the unwind
					   tables gave out (--unwind auto) */
	uint64_t sites_used;		/* exact mode: site entries claimed
					   (may pass site_capacity) */
	uint32_t inuse_threads;		/* exact mode: threads that ever
					   counted */
	uint32_t inuse_live_threads;	/* ... and have not ended */
	uint64_t stack_words_used;	/* words of the stack arena claimed
					   (may pass its end) */
	struct pa_hook_count {
		uint64_t calls;
		uint64_t bytes;		/* requested; 0 for free */
	} hook_counts[PA_HOOK_SLOTS];

	/* The tracer that owns the agent: one at a time (tracer/attach/owner.c).
	 * owner is its pid and the low 32 bits of its start time (clock
	 * ticks, /proc/PID/stat), claimed by compare-and-swap from 0 or from
	 * a dead owner's value; owner_ns its PID namespace's inode, written
	 * after; owner_addr serve's listen address (NUL-terminated), or "". */
	uint64_t owner;
	uint64_t owner_ns;
	char     owner_addr[64];

	/* Exact mode: bytes of the agent's own block map (agent/blockmap.c,
	 * not in the memfd), as of its last flush of counts. */
	uint64_t blockmap_bytes;

	/* Exact mode: the site lanes claimed so far (the lanes in use are
	 * [0, site_lanes_used)); see struct pa_site_lane. */
	uint32_t site_lanes_used;
	/* unwind tables the agent built on a program's thread (at a walk),
	 * not on its own (the stats thread, agent/unwind_cfi.c) */
	uint32_t unwind_inline_builds;

	uint8_t  reserved_end[PA_HEADER_SIZE - 864];
};

/* Record header (see the drawing above). */
#define PA_REC_BUSY		0x80000000u
#define PA_REC_LEN_MASK		0x7fffffffu

enum pa_rec_type {
	PA_REC_PAD	= 1,	/* filler to the end of the ring */
	PA_REC_ALLOC	= 2,	/* struct pa_rec_alloc */
	PA_REC_FREE	= 3,	/* struct pa_rec_free */
	PA_REC_MODULE	= 4,	/* struct pa_rec_module */
};

struct pa_rec_hdr {
	uint32_t len;
	uint16_t type;
	uint16_t flags;
};

/* pa_rec_alloc.hdr.flags */
#define PA_ALLOC_TRUNCATED	0x1	/* stack longer than max_frames */
#define PA_ALLOC_UNTRACKED	0x2	/* no room in the live table: its free
					   comes unverified */
#define PA_ALLOC_STACK		0x4	/* a struct pa_stack_copy follows the
					   frames */
#define PA_ALLOC_WHOLE		0x8	/* the frames are the agent's walk by
					   its unwind tables to the thread's
					   entry (or max_frames) */
#define PA_ALLOC_MOVED		0x10	/* exact mode: a block counted at a
					   site moves to the ring (its site
					   counted it freed): in use again,
					   not allocated again */

/*
 * A sampled allocation.  frames[0] is the return address into the function
 * that called the allocator; frames[nframes-1] the outermost frame walked.
 */
struct pa_rec_alloc {
	struct pa_rec_hdr hdr;
	uint64_t seq;		/* per-thread sample number: (tid, seq) is
				   unique; no shared counter to contend on */
	uint64_t time_ns;	/* CLOCK_MONOTONIC */
	uint64_t addr;
	uint64_t size;		/* requested bytes */
	uint32_t tid;
	uint32_t nframes;
	uint64_t frames[];
};

/*
 * With PA_ALLOC_STACK, after frames[nframes] (so at an 8-byte boundary):
 * the registers and stack of the allocator's caller at the moment of the
 * call, for DWARF unwinding by the tracer, as perf --call-graph dwarf
 * records them.  regs are DWARF register numbers of arch (an ELF e_machine;
 * x86_64: 0-15 rax rdx rcx rbx rsi rdi rbp rsp r8-r15, 16 the return
 * address column, i.e. the pc).  Only the registers in regs_mask are known:
 * on x86_64 the agent gives the pc (== frames[0], a return address), the
 * stack pointer and the frame pointer of the caller.  stack holds size
 * bytes read from the stack pointer upward, clipped to the stack's end;
 * the record is padded to 8 bytes after it.
 */
#define PA_UNWIND_REGS		33	/* room for aarch64's x0-x30, sp, pc */

struct pa_stack_copy {
	uint16_t arch;		/* EM_X86_64 (62), EM_AARCH64 (183) */
	uint16_t reserved;
	uint32_t size;		/* bytes of stack[] */
	uint64_t regs_mask;	/* bit i: regs[i] is known */
	uint64_t regs[PA_UNWIND_REGS];
	uint8_t stack[];
};

/* pa_rec_free.hdr.flags */
#define PA_FREE_UNVERIFIED	0x1	/* a free near a sample the live table
					   had no room for: the address may
					   never have been sampled; size 0 */

/*
 * The free (or realloc away) of a sampled allocation.  alloc_id names the
 * allocation it ends (pa_alloc_id of its tid and seq): realloc reports the
 * free after the real realloc succeeded, so another thread may have been
 * handed the same address, sampled it and recorded it first; the tracer
 * then sees a free whose id is not that of the address's current sample,
 * and knows it belongs to the block that address held before.
 */
struct pa_rec_free {
	struct pa_rec_hdr hdr;
	uint64_t alloc_id;	/* 0 if unverified */
	uint64_t time_ns;
	uint64_t addr;
	uint64_t size;		/* the size that was allocated */
	uint32_t tid;
	uint32_t reserved;
};

#define PA_BUILD_ID_MAX		32
#define PA_PATH_MAX		4096

/*
 * An executable segment of a loaded ELF module, as the agent sees it with
 * dl_iterate_phdr: at start for every module, and after dlopen for new
 * ones.  The tracer reads /proc/PID/maps while the process lives; these
 * records are what it has for a library that was loaded and used just
 * before the process died.  path is what the loader used (not trusted: the
 * tracer opens it only if the file's build ID matches build_id).
 */
struct pa_rec_module {
	struct pa_rec_hdr hdr;
	uint64_t bias;		/* load bias (dlpi_addr) */
	uint64_t start, end;	/* page-aligned run-time range */
	uint64_t offset;	/* file offset of start */
	uint32_t path_len;	/* bytes of path, no NUL */
	uint8_t build_id_len;	/* <= PA_BUILD_ID_MAX */
	uint8_t reserved[3];
	uint8_t build_id[PA_BUILD_ID_MAX];
	char path[];
};

#define PA_LIVE_TOMBSTONE	UINT64_MAX
#define PA_LIVE_BUSY		1ull

struct pa_live_entry {
	uint64_t key;		/* 0, PA_LIVE_TOMBSTONE, addr or addr|BUSY */
	uint64_t size;
	uint64_t alloc_id;	/* pa_alloc_id(tid, seq) */
	uint64_t time_ns;
	uint32_t stack_id;	/* index in the stack table, or PA_STACK_NONE */
	uint32_t site;		/* exact mode: index in the site table + 1
				   (counted there, no ring record); 0: its
				   allocation and free go through the ring */
};

/*
 * Stack table: the distinct stacks of the live table's samples (and, in
 * exact mode, of every site), so that a tracer that comes late (or reads
 * a dead process's memfd) knows where each was allocated.  Insert-only.
 * Two parts at stack_offset, for a table of stack_capacity units
 * (pa_stack_capacity):
 *
 *   index  pa_stack_slots(cap) uint32_t slots: open addressing on
 *          pa_stack_hash, at most PA_STACK_MAX_PROBE probes; a slot is 0
 *          (empty), PA_STACK_SLOT_BUSY (being filled, or no room was left
 *          for its stack) or a stack's id;
 *   arena  pa_stack_words(cap) uint64_t words, taken in order (the
 *          header's stack_words_used, a fetch-and-add, may pass the end).
 *          A stack is stored once, at word id (its stack_id, >= 1): a head
 *          word (nframes in the low 32 bits, the hash's high 32 bits, never
 *          0, above them), then its nframes frames.
 *
 * Stacks take the words they need (a cc1plus stack is ~40 frames, a
 * churn's 5), not max_frames each.  A producer claims an empty slot with a
 * CAS to PA_STACK_SLOT_BUSY, takes nframes + 1 words, writes the frames,
 * stores the head word with release order, then the slot.  A reader that
 * sees a head word with a hash (acquire) sees the frames.  Two threads
 * interning the same new stack at once may store it twice - harmless, the
 * tracer compares frames, not ids.  No room (a full probe run, or the
 * arena used up) gives PA_STACK_NONE: the sample is still recorded, with
 * its stack in its ring record; only a late reader would lack it.
 */
#define PA_STACK_NONE		UINT32_MAX
#define PA_STACK_SLOT_BUSY	UINT32_MAX
#define PA_STACK_MAX_PROBE	16u
/* Arena words per unit of capacity: a stack of 23 frames and its head. */
#define PA_STACK_MEAN_WORDS	24u

/* Index slots: a power of two (probes wrap by mask), at least twice the
 * capacity. */
static inline uint64_t pa_stack_slots(uint64_t capacity)
{
	uint64_t n = 1;

	while (n < 2 * capacity)
		n <<= 1;
	return n;
}

static inline uint64_t pa_stack_words(uint64_t capacity)
{
	return capacity * PA_STACK_MEAN_WORDS;
}

/* Bytes of the index, where the arena starts. */
static inline uint64_t pa_stack_arena_offset(uint64_t capacity)
{
	return pa_stack_slots(capacity) * sizeof(uint32_t);
}

static inline uint64_t pa_stack_table_size(uint64_t capacity)
{
	return pa_stack_arena_offset(capacity) +
	       pa_stack_words(capacity) * sizeof(uint64_t);
}

static inline uint64_t pa_stack_head(uint32_t nframes, uint64_t hash)
{
	uint64_t h = hash >> 32;

	return (h ? h : 1) << 32 | nframes;
}

/*
 * The frames of stack id in the table at base (stack_capacity stacks):
 * their number, or -1 when id names no published stack of at most
 * max_frames frames.  For the tracer, base is the target's memory: every
 * word is read once.
 */
static inline int pa_stack_get(const uint8_t *base, uint64_t capacity,
			       uint32_t id, uint32_t max_frames,
			       uint64_t *frames)
{
	const volatile uint64_t *arena = (const volatile uint64_t *)
		(base + pa_stack_arena_offset(capacity));
	uint64_t words = pa_stack_words(capacity), head;
	uint32_t n, i;

	if (!id || id >= words)
		return -1;
	head = __atomic_load_n(&arena[id], __ATOMIC_ACQUIRE);
	n = (uint32_t)head;
	if (!(head >> 32) || n > max_frames || (uint64_t)id + n >= words)
		return -1;
	for (i = 0; i < n; i++)
		frames[i] = arena[id + 1 + i];
	return (int)n;
}

/*
 * The table's capacity, in units of PA_STACK_MEAN_WORDS arena words (and
 * two index slots each), for a live table of live_capacity entries.
 * Sampling: room for the live samples' stacks (a sixteenth of the entries,
 * 1024 to 16384) at their full depth, max_frames each, as the fixed
 * entries were.  Exact mode (a site table): every site's stack, 3/8 of
 * the entries' units - 393,216 for the default 1M: 72 MiB of arena, some
 * 230,000 stacks of a compiler's 40 frames - made resident as used.
 */
static inline uint64_t pa_stack_capacity(uint64_t live_capacity, int exact,
					 uint32_t max_frames)
{
	uint64_t n = live_capacity / 16;

	if (exact)
		return live_capacity / 8 * 3 < 1024 ? 1024 :
		       live_capacity / 8 * 3;
	n = n < 1024 ? 1024 : n > 16384 ? 16384 : n;
	return n * ((max_frames + PA_STACK_MEAN_WORDS) / PA_STACK_MEAN_WORDS);
}

/*
 * Site table (exact mode): site_capacity entries, one per (stack-table
 * index, requested size, flags), counting the allocations made there and
 * the frees of them; then an index of 2 * site_capacity uint32_t slots.
 * Entries are taken in order (the header's sites_used, a fetch-and-add),
 * so a reader scans only the first sites_used; the index finds them: open
 * addressing on pa_site_hash, at most PA_SITE_MAX_PROBE probes, a slot
 * being 0 (empty), PA_SITE_SLOT_BUSY (being filled, or its entry could
 * not be had) or an entry's index + 1.  A producer claims an empty slot
 * with a CAS to PA_SITE_SLOT_BUSY, takes an entry, writes its key, stores
 * its state PA_SITE_READY with release order, then the slot.  Two threads
 * adding the same key at once may make two entries (a busy slot is passed
 * over): the tracer sums entries by stack and size.  allocs and frees
 * only grow; a free is counted after its allocation, so a reader that
 * loads frees before allocs never sees frees > allocs.  Most counts go to
 * the threads' lanes (below), so the entries are half a cache line.
 */
#define PA_SITE_READY		2u
#define PA_SITE_MAX_PROBE	16u
#define PA_SITE_SLOT_BUSY	UINT32_MAX
/* pa_site.flags */
#define PA_SITE_TRUNCATED	0x1	/* the stack was cut at max_frames */

struct pa_site {
	uint64_t size;		/* requested bytes */
	uint32_t stack_id;	/* index in the stack table */
	uint16_t state;		/* 0 (being filled) or PA_SITE_READY */
	uint16_t flags;
	uint64_t allocs;	/* allocations counted here */
	uint64_t frees;		/* ... and frees of them */
};

/* Sites for a live table of live_capacity entries (exact mode). */
static inline uint64_t pa_site_capacity(uint64_t live_capacity)
{
	return live_capacity / 2 < 4096 ? 4096 : live_capacity / 2;
}

/*
 * Site lanes (exact mode), after the index: PA_SITE_LANES arrays of
 * pa_lane_sites(capacity) counters, one per site index.  A lane belongs to
 * one thread at a time (the agent hands them out; a thread that ends gives
 * its lane back and the next one goes on adding to it), so its counts
 * grow with plain stores and two threads never share a cache line for
 * them.  A site's allocations are its entry's allocs plus every lane's at
 * its index, and the same for frees; the tracer sums lanes
 * [0, site_lanes_used).  Each count only grows, a lane's as the entry's;
 * a free is counted (wherever it is) after its allocation, with release
 * order, so a reader that loads every free before any allocation never
 * sees more frees than allocations.  Sites past a lane's end, and threads
 * with no lane, count in the entry.
 */
#define PA_SITE_LANES		16u
#define PA_LANE_SITES_MAX	65536u

struct pa_site_lane {
	uint64_t allocs;
	uint64_t frees;
};

static inline uint64_t pa_lane_sites(uint64_t capacity)
{
	return capacity < PA_LANE_SITES_MAX ? capacity : PA_LANE_SITES_MAX;
}

/* Offset of the lanes from the site table's start. */
static inline uint64_t pa_site_lanes_offset(uint64_t capacity)
{
	return capacity * (sizeof(struct pa_site) + 2 * sizeof(uint32_t));
}

/* Bytes of a site table of capacity entries, with its index and lanes. */
static inline uint64_t pa_site_table_size(uint64_t capacity)
{
	return pa_site_lanes_offset(capacity) +
	       (capacity ? PA_SITE_LANES * pa_lane_sites(capacity) *
				   sizeof(struct pa_site_lane) : 0);
}

/* The site table a memfd for this rate has: exact mode only. */
static inline uint64_t pa_sites_for_rate(uint64_t sample_rate,
					 uint64_t live_capacity)
{
	return sample_rate == 1 ? pa_site_capacity(live_capacity) : 0;
}

static inline uint64_t pa_site_hash(uint32_t stack_id, uint64_t size,
				    uint16_t flags)
{
	uint64_t x = size * 0x9e3779b97f4a7c15ULL ^
		     ((uint64_t)stack_id << 16 | flags);

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 29;
	return x;
}

/* Exact mode: a producer that found the ring full waits for room while
 * the tail moves, and gives up when it has not moved for this long. */
#define PA_PRESSURE_MAX_MS	1000u
/* ... and one record waits at most this long, however the tail moves. */
#define PA_PRESSURE_RECORD_MS	5000u

/* An allocation's identity: its thread and that thread's sample number. */
static inline uint64_t pa_alloc_id(uint32_t tid, uint64_t seq)
{
	return (uint64_t)tid << 40 | (seq & ((1ull << 40) - 1));
}

/*
 * The stats area: the agent's last reply to PA_CMD_STATS.  Complete when
 * seq equals the header's stats_seq.  Nothing in it is trusted by the
 * tracer: lengths are clipped, strings may lack their NUL.
 */
#define PA_STATS_SIZE		(64u * 1024)
#define PA_STATS_INFO_OFFSET	1024u

enum pa_allocator {
	PA_ALLOCATOR_UNKNOWN	= 0,
	PA_ALLOCATOR_GLIBC	= 1,
	PA_ALLOCATOR_JEMALLOC	= 2,
	PA_ALLOCATOR_MIMALLOC	= 3,
	PA_ALLOCATOR_TCMALLOC	= 4,	/* gperftools' */
};

/* pa_stats.flags: which parts were filled in */
#define PA_STATS_MALLINFO2	0x1
#define PA_STATS_MALLOC_INFO	0x2	/* info[] holds malloc_info's XML */
#define PA_STATS_INFO_TRUNC	0x4	/* ... cut at the end of the area */
#define PA_STATS_JEMALLOC	0x8
#define PA_STATS_MIMALLOC	0x10	/* mimalloc[]: mi_process_info */
#define PA_STATS_MI_TEXT	0x20	/* info[] holds mi_stats_print_out's
					   text (INFO_TRUNC: cut short) */
#define PA_STATS_TCMALLOC	0x40	/* tcmalloc[], tcmalloc_mask */
#define PA_STATS_IN_PROGRAM	0x80	/* allocator_path is the main program
					   (an allocator linked into it) */

/* The numeric properties of gperftools' MallocExtension asked, in the
 * order of pa_stats.tcmalloc[] (the tracer keeps the names). */
#define PA_TCMALLOC_PROPERTIES	10
#define PA_TCMALLOC_PROPERTY_NAMES					\
	"generic.current_allocated_bytes", "generic.heap_size",		\
	"generic.total_physical_bytes", "tcmalloc.pageheap_free_bytes",	\
	"tcmalloc.pageheap_unmapped_bytes",				\
	"tcmalloc.central_cache_free_bytes",				\
	"tcmalloc.transfer_cache_free_bytes",				\
	"tcmalloc.thread_cache_free_bytes",				\
	"tcmalloc.current_total_thread_cache_bytes",			\
	"tcmalloc.max_total_thread_cache_bytes"

/*
 * The reply to PA_CMD_JEPROF, at the end of struct pa_stats (its own seq:
 * a STATS reply never touches it, nor this one the rest).  status is
 * enum pa_jeprof_status; err the errno mallctl or the memfd gave.
 */
enum pa_jeprof_status {
	PA_JEPROF_OK		= 0,	/* fd holds size bytes of the dump */
	PA_JEPROF_NO_MALLCTL	= 1,	/* no jemalloc mallctl in the process */
	PA_JEPROF_NO_PROF	= 2,	/* opt.prof false (or not built in) */
	PA_JEPROF_INACTIVE	= 3,	/* prof.active false */
	PA_JEPROF_NO_MEMFD	= 4,	/* memfd_create failed (err) */
	PA_JEPROF_DUMP_FAILED	= 5,	/* prof.dump failed (err) */
	PA_JEPROF_BAD_ADDRESS	= 6,	/* the tracer's mallctl is in no object */
};
#define PA_JEPROF_HOLD_MS	5000u
#define PA_JEPROF_MEMFD_NAME	"pprof-alloc-jeprof"

struct pa_jeprof {
	uint32_t seq;			/* bumped after each reply */
	uint32_t status;		/* enum pa_jeprof_status */
	int32_t err;
	int32_t fd;			/* the memfd in the target, or -1 */
	uint64_t size;			/* bytes jemalloc wrote */
	uint64_t lg_sample;		/* prof.lg_sample */
	uint64_t mallctl;		/* request: the tracer's address of a
					   mallctl, or 0: the agent's own */
	uint64_t used;			/* reply: the mallctl called */
	uint8_t reserved[16];
};

struct pa_stats {
	uint32_t seq;
	uint32_t allocator;		/* enum pa_allocator */
	uint64_t time_ns;		/* CLOCK_MONOTONIC of the reading */
	uint32_t flags;
	uint32_t info_len;		/* bytes at PA_STATS_INFO_OFFSET */
	uint64_t mallinfo2[10];		/* arena ordblks smblks hblks hblkhd
					   usmblks fsmblks uordblks fordblks
					   keepcost */
	uint64_t jemalloc[8];		/* allocated active metadata resident
					   mapped retained narenas, 0 */
	char allocator_path[256];	/* the file of the real malloc */
	uint64_t mimalloc[8];		/* mi_process_info: elapsed_ms
					   user_ms system_ms current_rss
					   peak_rss current_commit
					   peak_commit page_faults */
	uint64_t tcmalloc[PA_TCMALLOC_PROPERTIES];
	uint32_t tcmalloc_mask;		/* which of them were answered */
	uint32_t pad;
	uint8_t reserved[PA_STATS_INFO_OFFSET - 576 - 64];
	struct pa_jeprof jeprof;	/* PA_CMD_JEPROF's request and reply */
	/* info[]: malloc_info's XML or mi_stats_print_out's text,
	 * info_len bytes, at the offset */
};

_Static_assert(sizeof(struct pa_jeprof) == 64, "jeprof");
_Static_assert(sizeof(struct pa_stats) == PA_STATS_INFO_OFFSET, "stats");
_Static_assert(sizeof(struct pa_header) == PA_HEADER_SIZE, "header is a page");
_Static_assert(__builtin_offsetof(struct pa_header, agent_pid) == 128, "layout");
_Static_assert(__builtin_offsetof(struct pa_header, unwind_table_bytes) == 152, "layout");
_Static_assert(__builtin_offsetof(struct pa_header, data_head) == 192, "layout");
_Static_assert(__builtin_offsetof(struct pa_header, unwind_fallbacks) == 480, "layout");
_Static_assert(__builtin_offsetof(struct pa_header, sites_used) == 488, "layout");
_Static_assert(__builtin_offsetof(struct pa_header, data_tail) == 256, "layout");
_Static_assert(__builtin_offsetof(struct pa_header, lost_records) == 320, "layout");
_Static_assert(__builtin_offsetof(struct pa_header, command) == 384, "layout");
_Static_assert(__builtin_offsetof(struct pa_header, samples) == 448, "layout");
_Static_assert(__builtin_offsetof(struct pa_header, hook_counts) == 512, "layout");
_Static_assert(__builtin_offsetof(struct pa_header, owner) == 768, "layout");
_Static_assert(__builtin_offsetof(struct pa_header, site_lanes_used) == 856, "layout");
_Static_assert(sizeof(struct pa_rec_hdr) == 8, "record header");
_Static_assert(sizeof(struct pa_child_note) == 24, "child note");
_Static_assert(sizeof(struct pa_rec_alloc) == 48, "alloc record");
_Static_assert(sizeof(struct pa_rec_free) == 48, "free record");
_Static_assert(sizeof(struct pa_live_entry) == 40, "live entry");
_Static_assert(sizeof(struct pa_site) == 32, "site entry");
_Static_assert(__builtin_offsetof(struct pa_header, site_capacity) == 104, "layout");
_Static_assert(__builtin_offsetof(struct pa_header, draining) == 272, "layout");
_Static_assert(__builtin_offsetof(struct pa_header, exit_state) == 280, "layout");
_Static_assert(__builtin_offsetof(struct pa_header, gave_up_on) == 376, "layout");
_Static_assert(sizeof(struct pa_rec_module) == 80, "module record");
_Static_assert(sizeof(struct pa_stack_copy) == 16 + 8 * PA_UNWIND_REGS,
	       "stack copy");
_Static_assert(__builtin_offsetof(struct pa_header, unwind_mode) == 84, "layout");

static inline uint64_t pa_round_up8(uint64_t n)
{
	return (n + PA_RECORD_ALIGN - 1) & ~(uint64_t)(PA_RECORD_ALIGN - 1);
}

/*
 * Whether a block the agent says it sampled could exist: a user-space
 * address (no 64-bit ABI gives user space more than 2^56 bytes) and a
 * size that fits above it.  The tracer refuses anything else - a real
 * agent never writes it, so it is a target lying to the tracer.
 */
#define PA_USER_ADDR_LIMIT	(1ull << 56)

static inline int pa_block_plausible(uint64_t addr, uint64_t size)
{
	return addr && addr < PA_USER_ADDR_LIMIT &&
	       size <= PA_USER_ADDR_LIMIT - addr;
}

/* Bytes of an allocation record with nframes frames and, when copy, a
 * stack copy of stack_size bytes. */
static inline uint64_t pa_alloc_rec_size(uint32_t nframes, int copy,
					 uint32_t stack_size)
{
	uint64_t len = sizeof(struct pa_rec_alloc) + (uint64_t)nframes * 8;

	if (copy)
		len += sizeof(struct pa_stack_copy) + (uint64_t)stack_size;
	return pa_round_up8(len);
}

/* Whether stack_bytes is in range and its largest record takes at most
 * an eighth of a ring of data_size bytes (so a burst of samples does not
 * fill it at once). */
static inline int pa_stack_bytes_fit(uint32_t stack_bytes, uint64_t data_size,
				     uint32_t max_frames)
{
	return stack_bytes >= PA_STACK_BYTES_MIN &&
	       stack_bytes <= PA_STACK_BYTES_MAX && !(stack_bytes & 7) &&
	       pa_alloc_rec_size(max_frames, 1, stack_bytes) <= data_size / 8;
}

static inline int pa_is_pow2(uint64_t n)
{
	return n && !(n & (n - 1));
}

/*
 * The file size for a ring of data_size bytes, a live table of
 * live_capacity entries and its stack table, or 0 if a size is out of
 * range.  Both sides compute the layout with this one function and compare.
 */
static inline uint64_t pa_layout_file_size(uint64_t data_size,
					   uint64_t live_capacity,
					   uint32_t max_frames,
					   uint64_t site_capacity)
{
	if (!pa_is_pow2(data_size) || data_size < PA_RING_MIN ||
	    data_size > PA_RING_MAX)
		return 0;
	if (!pa_is_pow2(live_capacity) || live_capacity < PA_LIVE_MIN ||
	    live_capacity > PA_LIVE_MAX)
		return 0;
	if (!max_frames || max_frames > PA_MAX_FRAMES)
		return 0;
	if (site_capacity && site_capacity != pa_site_capacity(live_capacity))
		return 0;
	return PA_HEADER_SIZE + data_size +
	       live_capacity * sizeof(struct pa_live_entry) +
	       pa_stack_table_size(pa_stack_capacity(live_capacity,
						      site_capacity != 0,
						      max_frames)) +
	       pa_site_table_size(site_capacity) + PA_STATS_SIZE;
}

static inline uint64_t pa_stack_offset(uint64_t data_size,
				       uint64_t live_capacity)
{
	return PA_HEADER_SIZE + data_size +
	       live_capacity * sizeof(struct pa_live_entry);
}

static inline uint64_t pa_site_offset(uint64_t data_size,
				      uint64_t live_capacity, int exact,
				      uint32_t max_frames)
{
	return pa_stack_offset(data_size, live_capacity) +
	       pa_stack_table_size(pa_stack_capacity(live_capacity, exact,
						     max_frames));
}

/* Offset of the stats area (struct pa_stats): the last PA_STATS_SIZE bytes. */
static inline uint64_t pa_stats_offset(uint64_t file_size)
{
	return file_size - PA_STATS_SIZE;
}

/* Where the probe for a stack of this hash starts. */
static inline uint64_t pa_stack_hash(const uint64_t *frames, uint32_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ n;
	uint32_t i;

	for (i = 0; i < n; i++) {
		h ^= frames[i];
		h *= 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return h;
}

/*
 * Slot where the probe for addr starts in a table of capacity entries: a
 * well-mixed hash, because probes are bounded (PA_LIVE_MAX_PROBE) and any
 * clustering - allocator slabs put blocks at the same offsets page after
 * page - turns into failed inserts long before the table is full.  (A
 * page-windowed hash was tried for cache locality and overflowed at half
 * load.)
 */
static inline uint64_t pa_live_hash(uint64_t addr, uint64_t capacity)
{
	uint64_t x = addr;	/* murmur3's finalizer: every bit mixes */

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x & (capacity - 1);
}

/*
 * Fill in the creation-time part of a header for a zero-filled file of
 * pa_layout_file_size(data_size, live_capacity, max_frames,
 * site_capacity) bytes.
 */
static inline void pa_header_init(struct pa_header *h, uint64_t data_size,
				  uint64_t live_capacity, uint64_t sample_rate,
				  uint32_t max_frames, uint64_t site_capacity)
{
	h->abi_version = PA_ABI_VERSION;
	h->header_size = sizeof(*h);
	h->file_size = pa_layout_file_size(data_size, live_capacity,
					   max_frames, site_capacity);
	h->site_offset = pa_site_offset(data_size, live_capacity,
					site_capacity != 0, max_frames);
	h->site_capacity = site_capacity;
	h->data_offset = PA_HEADER_SIZE;
	h->data_size = data_size;
	h->live_offset = PA_HEADER_SIZE + data_size;
	h->live_capacity = live_capacity;
	h->stack_offset = pa_stack_offset(data_size, live_capacity);
	h->stack_capacity = pa_stack_capacity(live_capacity,
					      site_capacity != 0, max_frames);
	h->sample_rate = sample_rate;
	h->max_frames = max_frames;
	__atomic_store_n(&h->magic, PA_MAGIC, __ATOMIC_RELEASE);
}

#endif /* PPROF_ALLOC_ABI_H */
