/* SPDX-License-Identifier: MIT */
/*
 * trace.h - the default command's run: a command launched with the agent
 * (trace.c), a process attached to (trace.c), or a descendant followed
 * (trace_follow.c), and how each run ends (trace_end.c).  Shared by those
 * files and the front-end, cmd_record.c; nothing else uses it.
 */
#ifndef PA_TRACER_TRACE_H
#define PA_TRACER_TRACE_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>
#include "children.h"
#include "tracer/options/debugopts.h"
#include "exitwatch.h"
#include "follow.h"
#include "tracer/readings/readings.h"
#include "tracer/readings/readings_cgroup.h"
#include "tracer/readings/readings_timeline.h"
#include "tracer/options/recopts.h"
#include "recorder.h"

struct trace_options {
	const char *output;
	struct rec_options rec;	/* rate, sizes, unwinding */
	int top;
	bool symbolize;
	bool quiet;
	pid_t pid;		/* --pid: attach instead of launching */
	uint64_t duration_ms;	/* --duration */
	uint64_t interval_ns;	/* --interval: a timeline line each */
	bool readings;		/* PROFILE.json (not with --no-readings) */
	bool report;		/* --report: PROFILE.html too */
	bool follow;		/* --follow-children */
	bool jemalloc_prof;	/* --jemalloc-prof: jemalloc's own profile */
	const char *proc_root, *sys_root;
	const char *core;	/* --core: a post-mortem profile */
	struct debug_options debug;
	char **argv;		/* NULL with --pid */
};

/* Fill-rate estimate for the adaptive wait: bytes per ms, decaying. */
struct fill_rate {
	uint64_t last_ns;
	double bytes_per_ms;
};

/* Everything one tracing run holds, launched, attached or followed. */
struct run {
	struct trace_options *o;
	struct recorder rec;	/* memfd, consumer, session */
	int sfd, pidfd;
	pid_t pid;		/* the target */
	pid_t child;		/* launched: our child; attached: -1 */
	bool maps_ready, exited, stop, batch;
	int status;		/* launched: its wait status */
	struct rusage usage;	/* ... and its resource usage (ru_maxrss) */
	bool has_usage;
	bool exit_read;		/* its last reading, taken in its exit() */
	uint64_t ended_ns;	/* when its own work ended: its exit() began,
				   or its end was seen; 0: not yet */
	struct exit_watch ew;	/* ... which wakes the loop (exitwatch.c) */
	uint64_t peak_gen_seen;	/* the heap's peak_gen when RSS was read */
	bool peak_rising;	/* the last drain made a new high */
	uint64_t peak_rss_then;	/* RSS read closest to it... */
	uint64_t peak_rss_after_ns;	/* ... this long after it */
	bool has_peak_rss_then;
	int poll_ms;
	struct fill_rate fill;
	uint64_t start_ns, deadline_ns;
	uint64_t invoked_ns;	/* when the tracer started */
	uint64_t last_exec_check;
	bool exec_warned;
	uint64_t exec_seen_ns;	/* comm changed, no hand-over yet */
	char comm[64];		/* at the start-up handshake */
	/* launched: the process exec'd and its new image handed over its
	 * memfd (exec_fd, -1 when none is waiting); the images so far, for
	 * the profile's comments */
	int exec_fd;
	unsigned int execs;
	uint64_t image_ns;	/* when the image we read started */
	uint64_t exe_id[2];	/* its file's device and inode */
	bool has_exe_id;
	char exec_chain[896];
	const char *agent;	/* launched: the agent's file */
	bool entry_wanted;	/* launched: the program defines allocator
				   functions, patched at the handshake */
	char calls_seen[256];	/* which calls the agent sees (readings) */
	char output[PATH_MAX];	/* the profile's path */
	struct timeline tl;
	bool tl_open;
	/* the target's memory cgroup and the machine's OOM kills at the
	 * start, for the verdict at the end */
	struct cgroup_reading cg_start;
	bool have_vm_start;
	uint64_t vm_oom_start;
	struct children ch;	/* launched: descendants with the agent, off */
	struct follow fl;	/* --follow-children: their followers */
	/* a follower (trace__follow_one): the image it follows exec'd
	 * (SIGUSR1); when it stops following, after a signal (the process
	 * may be dying of the same one) */
	bool followed, execd;
	uint64_t stop_at;
	bool stop_following;	/* told to stop: no new followers */
};

/* r zeroed, descriptors at -1, for options o and signalfd sfd. */
void trace__init(struct run *r, struct trace_options *o, int sfd);
/* Run o->argv with the agent (sigs: what the tracer blocked, unblocked
 * in the child); the command's exit status, as a shell reports it. */
int trace__launch(struct run *r, const char *agent, const sigset_t *sigs);
/* Attach to o->pid until it exits, --duration passes, or a signal. */
int trace__attach(struct run *r, const char *agent);
/* --jemalloc-prof: attach to o->pid, write jemalloc's own heap profile,
 * detach (trace_jeprof.c).  0, or 1 said on stderr. */
int trace__jeprof(struct run *r, const char *agent);

/* ---- inside the run (trace*.c) ---- */

/* Until the target exits, the deadline passes, or we are told to stop. */
void trace__loop(struct run *r);
void trace__fini(struct run *r);
void trace__read_start(struct run *r);
void trace__open_outputs(struct run *r);
void trace__readings_source(struct run *r, struct readings_source *src);
void trace__batch_priority(struct run *r, bool batch);
/* A follower: wait up to ms for the main tracer's word that the process
 * exec'd (SIGUSR1). */
bool trace__wait_exec_notice(struct run *r, int ms);
/*
 * Write the profile, the readings and the summary line.  sigkilled: the
 * target died of SIGKILL (as far as known: status_known).  0 written
 * where -o said, 1 written to a fallback, or -errno when nowhere (all
 * said on stderr).
 */
int trace__finish(struct run *r, const char *what, const char *ended,
		  bool alive, bool sigkilled, bool status_known);
/* children.c's callback: the launched process exec'd (trace.c). */
void trace__on_exec(void *ctx, pid_t pid, const char *comm, int fd);
/* --follow-children: children.c's callback, and the wait at the end. */
void trace__on_follow(void *ctx, pid_t pid, const char *comm, int fd);
void trace__wait_for_followers(struct run *r);

#endif /* PA_TRACER_TRACE_H */
