/* SPDX-License-Identifier: MIT */
/*
 * recorder.h - one target's recording, whoever asked for it: the agent's
 * memfd (created for a launch, handed over by a follower's process, found
 * or injected by an attach, copied out of a core), the consumer that
 * validates its ring, and the session that aggregates what it holds.
 *
 * The launch/attach run (trace.c), a follower (trace_follow.c), serve
 * (serve.c) and --core (postmortem.c) all record through this; what each
 * adds is its own loop and its own output.
 */
#ifndef PA_TRACER_RECORDER_H
#define PA_TRACER_RECORDER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "tracer/attach/attach.h"
#include "tracer/record/consumer.h"
#include "tracer/options/recopts.h"
#include "tracer/record/ringfile.h"
#include "tracer/record/session.h"
#include "tracer/record/sites.h"

struct recorder {
	struct ringfile rf;
	struct ring_consumer rc;
	struct session s;
	struct site_reader sr;		/* exact mode: the agent's sites */
	uint32_t draining;		/* our token in the header, or 0 */
	uint32_t gave_up;		/* times the agent stopped waiting */
	bool sites_now;			/* the next drain reads the sites */
	/* serve: records drained while the lock was busy, not yet
	 * aggregated (see recorder.c) */
	uint8_t *stage;
	size_t staged, stage_cap;
	/* serve, exact mode: a thread of ours empties the ring into the
	 * stage whatever the main thread is doing (see recorder.c) */
	pthread_t reader;
	bool reader_on;
	int reader_stop;		/* atomic */
	int reader_err;			/* under stage_lock */
	pthread_mutex_t stage_lock;	/* the stage, while a reader runs */
	bool stage_lock_ok;
	uint8_t *spare;			/* the other stage buffer */
	size_t spare_cap;
	uint64_t staged_lost;		/* staged, then not aggregated */
	pid_t pid;
	bool ring_ok;			/* still read: not corrupt */
	/* serve: held while the aggregate changes (never across ptrace) */
	pthread_mutex_t *lock;
	/* attached: the agent's configuration, and what attaching found;
	 * the agent is asked to hook what the target dlopens */
	struct attach_config acfg;
	struct attach_stats ast;
	bool attached;
	bool to_leave;		/* detached, still ours: recorder__leave */
	/* reconcile with the live table even when nothing was lost (serve,
	 * which runs for days: what it serves at the end must be right) */
	bool always_reconcile;
	uint32_t seen_dlopens;
	uint64_t rescan_at;
	uint64_t first_record_ns;	/* when the first record was read */
	/*
	 * Records lost so far, and the tracer's CPU time, the time it waited
	 * for records (the caller adds to wait_ns) and the wall time over
	 * the stretches in which more were lost (between two drains), for
	 * recorder__loss_advice.
	 */
	uint64_t lost_seen, loss_cpu_ns, loss_wait_ns, loss_wall_ns;
	uint64_t last_cpu_ns, last_wait_ns, last_wall_ns;
	uint64_t wait_ns, drain_cpu_ns;
	int losses_warned;		/* recorder__losses said so, once */
};

/* Empty, with no descriptor open: safe to fini. */
void recorder__init(struct recorder *r);
void recorder__fini(struct recorder *r);

/* The agent's configuration for these recording options. */
void recorder__attach_config(struct attach_config *cfg,
			     const struct rec_options *rec, const char *agent,
			     bool stats);

/*
 * Launch: a new memfd for the command about to start, claimed as ours (a
 * --pid or serve on the program refuses), telling the agent how to unwind
 * and whether the stats thread is wanted.  0 or -errno, said.
 */
int recorder__create(struct recorder *r, const struct rec_options *rec,
		     bool stats);
/* A memfd process pid handed over (a follower).  0 or -errno with *why. */
int recorder__open(struct recorder *r, pid_t pid, int fd, const char **why);
/*
 * The consumer and the session over the memfd, bounded by rec's
 * --max-stacks and --live-size (rec NULL: a core's, bounded by the core
 * already).  0 or -errno, said.
 */
int recorder__start(struct recorder *r, pid_t pid,
		    const struct rec_options *rec);
/*
 * Attach to pid with cfg (cfg->agent set): refuse what must not be
 * touched, inject or connect, start, read the target's mappings, and take
 * what an agent already recording holds live (recorder__seed).  A failure
 * after the hooks went in takes them out again.  0 or -errno, said.
 */
int recorder__attach(struct recorder *r, pid_t pid,
		     const struct attach_config *cfg,
		     const struct rec_options *rec);
/*
 * Attached: take the hooks out, draining before and after.  0, or -errno
 * (the target was asked to detach and may still, said).
 */
int recorder__detach(struct recorder *r);
/* After a detach and the last reading: the agent we injected goes
 * (attach__leave).  Does nothing if there is nothing to do. */
void recorder__leave(struct recorder *r);

/* An agent recording before us, or a core: its live samples, stacks
 * included, into the heap.  0 or -ENOMEM. */
int recorder__seed(struct recorder *r);
/* The agent's live table, in the memfd. */
const struct pa_live_entry *recorder__live_table(const struct recorder *r);

/*
 * Read what the ring holds (final: the target is dead or detached, so a
 * half-written record never will be finished).  Warns when a record has
 * been unfinished for too long; a corrupt ring is said once and no
 * longer read.
 */
void recorder__drain(struct recorder *r, uint64_t now, bool final);
/* The same, returning the consumer's error instead of saying it. */
int recorder__drain_quiet(struct recorder *r, uint64_t now, bool final);
/* Read /proc/PID/maps again if a record asked for it. */
void recorder__refresh(struct recorder *r, uint64_t now);
/*
 * Exact mode on a live target (serve): read the ring on a thread of our
 * own from now on, so that producers waiting for room never wait for the
 * main thread (a profile being built, a remote call, the poll interval).
 * Later drains aggregate what it read; a final one stops it.  0, or
 * -errno (then drains read the ring as before).
 */
int recorder__start_reader(struct recorder *r);
/* Attached: after the target's dlopen, have the agent hook the new
 * modules (ptrace: never under the lock); finish threads let go. */
void recorder__rescan(struct recorder *r, uint64_t now);
/*
 * When the agent's live table is still (the target exited, the agent
 * detached) and records were lost or skipped: the table knows better
 * which samples are live.
 */
void recorder__reconcile(struct recorder *r);
/* The target has exited: the last records (final), then the live table's
 * word, in one hold of the lock. */
void recorder__end(struct recorder *r);

/* Exact mode (--rate 1): what was counted where, and whether the agent
 * had to wait for the tracer; "" otherwise. */
void recorder__exact_summary(const struct recorder *r, char *buf,
			     size_t size);
/* Stop saying we read the ring (the agent no longer waits for room). */
void recorder__stop_draining(struct recorder *r);
/* The last drain of an agent that lives on: it reads the sites too, and
 * then we no longer read (a follower that lets its process run). */
void recorder__last_drain(struct recorder *r);

/* Why records were lost, and what would help (see recorder.c). */
void recorder__loss_advice(const struct recorder *r, char *buf, size_t len);

/* The agent's loss counters, checked (ringfile__losses): all zero when
 * they are not plausible, said once as a corrupt header. */
void recorder__losses(struct recorder *r, struct ringfile_losses *l);
/* Warnings on what the profile holds less of than came in. */
void recorder__warn_limits(const struct recorder *r);
/* A comment line on the samples unwound from stack copies, or "";
 * asked: the unwinding the user asked for. */
void recorder__unwind_summary(const struct recorder *r, uint32_t asked,
			      char *buf, size_t size);

#endif /* PA_TRACER_RECORDER_H */
