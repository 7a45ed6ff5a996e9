// SPDX-License-Identifier: MIT
/*
 * trace.c - the default command's run: launch a command with the agent,
 * or attach to a process, and record it until it ends.
 *
 * One thread.  The tracer blocks the signals it cares about and reads them
 * from a signalfd, so the loop is: wait, handle signals, drain the ring
 * into the aggregate (recorder.c), and, when a stack shows a code address
 * outside every known mapping, re-read the target's mappings.  When the
 * command exits, the last records are drained (final: nobody will finish a
 * half-written record now) and trace_end.c writes what the run found.
 *
 * The wait adapts to the traffic: from the bytes each drain found and the
 * time since the last one, the loop estimates the fill rate and waits for
 * about an eighth of the ring to fill (between POLL_MIN_MS and
 * POLL_MAX_MS; the estimate remembers peaks, so a burst after a quiet
 * start is met by a short wait rather than a long one); over 1/8 full it
 * does not wait.  While the ring is calm the tracer runs as SCHED_BATCH,
 * so its wake-ups do not preempt the target's threads on a machine whose
 * cores the target keeps busy.  When the ring passes a quarter full it
 * goes back to normal priority, so that on a loaded machine it keeps up
 * rather than let records drop; back to batch below 1/32.
 *
 * Signals: SIGINT and SIGQUIT typed at the terminal reach the whole
 * foreground process group, the command included, so they are forwarded
 * only when they were sent to the tracer alone (si_code != SI_KERNEL).
 * SIGTERM and SIGHUP are always forwarded.  The tracer keeps running until
 * the command exits, so nothing it recorded is lost.  Attached, SIGINT or
 * SIGTERM detaches: the hooks come out and the target runs on.
 */
#include "trace.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/futex.h>
#include "common/log.h"
#include "tracer/attach/launch.h"
#include "tracer/record/mappings.h"
#include "pa_clock.h"
#include "pa_futex.h"
#include "tracer/attach/procexit.h"
#include "tracer/readings/readings_alloc.h"
#include "tracer/attach/owner.h"
#include "tracer/readings/readings_procmem.h"

#define POLL_MIN_MS		1
#define POLL_START_MS		10
#define POLL_MAX_MS		50
/* A follower told to stop gives its process this long to exit first: the
 * terminal's Ctrl-C reaches both. */
#define FOLLOW_GRACE_NS		(300 * PA_NSEC_PER_MSEC)
/* A launched command is looked at this often for an exec (warn_if_exec). */
#define EXEC_CHECK_NS		(500 * PA_NSEC_PER_MSEC)

void trace__init(struct run *r, struct trace_options *o, int sfd)
{
	memset(r, 0, sizeof(*r));
	recorder__init(&r->rec);
	r->o = o;
	r->invoked_ns = pa_now_ns();
	r->image_ns = r->invoked_ns;
	r->sfd = sfd;
	r->pidfd = -1;
	r->child = -1;
	r->ch.fd = -1;
	r->exec_fd = -1;
	r->poll_ms = POLL_START_MS;
}

static int next_wait_ms(struct fill_rate *f, uint64_t pending, uint64_t now,
			uint64_t ring)
{
	double ms = f->last_ns ? (double)(now - f->last_ns) / PA_NSEC_PER_MSEC : 0;
	double rate = ms > 0.05 ? (double)pending / ms : 0, wait;

	f->last_ns = now;
	/* peaks count at once, quiet periods fade slowly */
	f->bytes_per_ms = rate > f->bytes_per_ms ? rate :
			  f->bytes_per_ms * 0.9 + rate * 0.1;
	if (f->bytes_per_ms < 1)
		return POLL_MAX_MS;
	wait = (double)ring / 8 / f->bytes_per_ms;
	return wait < POLL_MIN_MS ? POLL_MIN_MS :
	       wait > POLL_MAX_MS ? POLL_MAX_MS : (int)wait;
}

void trace__batch_priority(struct run *r, bool batch)
{
	struct sched_param sp = { 0 };

	if (r->batch == batch)
		return;
	sched_setscheduler(0, batch ? SCHED_BATCH : SCHED_OTHER, &sp);
	r->batch = batch;	/* best effort: a failure changes nothing */
}

/* A follower whose process ended, told nothing: a moment for the main
 * tracer's word that the process exec'd (SIGUSR1), which is on its way if
 * the new program announced itself.  True if it came. */
bool trace__wait_exec_notice(struct run *r, int ms)
{
	struct signalfd_siginfo si;
	struct pollfd pfd = { .fd = r->sfd, .events = POLLIN };
	uint64_t end = pa_now_ns() + (uint64_t)ms * PA_NSEC_PER_MSEC;

	while (pa_now_ns() < end) {
		poll(&pfd, 1, 10);
		while (read(r->sfd, &si, sizeof(si)) == sizeof(si))
			if (si.ssi_signo == SIGUSR1)
				return true;
	}
	return false;
}

/*
 * The launched process exec()s another program (a shim, a wrapper script,
 * env, nice...): the new image's agent hands a memfd of its own over
 * (agent.c, exec_main), which trace__on_exec takes.  When the comm changes
 * and no hand-over comes - the new program runs without the agent: static,
 * setuid, or its environment lost LD_PRELOAD - say so, once: at its exit,
 * or PA_TRACER_WAIT_MS after the change was seen (a hand-over comes from
 * the new image's constructor, well before that).  Seen by comm, still
 * readable from the zombie at exit.
 */
/* The file the target's image runs, as "dev:ino" in *id; false when it
 * cannot be looked at (a zombie's). */
static bool exe_id(struct run *r, uint64_t id[2])
{
	char link[64];
	struct stat st;

	snprintf(link, sizeof(link), "%s/%d/exe",
		 r->o->proc_root ? r->o->proc_root : "/proc", (int)r->pid);
	if (stat(link, &st))
		return false;
	id[0] = (uint64_t)st.st_dev;
	id[1] = (uint64_t)st.st_ino;
	return true;
}

static void warn_if_exec(struct run *r, bool at_exit)
{
	char comm[64];
	uint64_t now = pa_now_ns(), id[2];

	if (r->exec_warned || !r->comm[0] || r->exec_fd >= 0)
		return;
	procexit__comm(r->pid, comm, sizeof(comm));
	if (!comm[0] || !strcmp(comm, r->comm)) {
		r->exec_seen_ns = 0;
		return;
	}
	/* the same file: the program renamed its thread (PR_SET_NAME) */
	if (r->has_exe_id && exe_id(r, id) && id[0] == r->exe_id[0] &&
	    id[1] == r->exe_id[1])
		return;
	if (!r->exec_seen_ns)
		r->exec_seen_ns = now;
	if (!at_exit &&
	    now - r->exec_seen_ns < PA_TRACER_WAIT_MS * PA_NSEC_PER_MSEC)
		return;
	pr_warn("warning: %s exec'd %s, which runs without the agent (a static or setuid program, or its environment lost LD_PRELOAD); only what ran before the exec is profiled\n",
		r->comm, comm);
	r->exec_warned = true;
}

void trace__on_exec(void *ctx, pid_t pid, const char *comm, int fd)
{
	struct run *r = ctx;

	(void)pid;
	(void)comm;		/* named at the handshake, with its file */
	if (r->exec_fd >= 0)
		close(r->exec_fd);	/* exec'd again before we looked */
	r->exec_fd = fd;
}

/* "comm (exe)" of the image just started, onto the chain. */
static void chain_add(struct run *r)
{
	char link[64], exe[400], entry[480];
	size_t used = strlen(r->exec_chain), len;
	ssize_t n;

	snprintf(link, sizeof(link), "%s/%d/exe",
		 r->o->proc_root ? r->o->proc_root : "/proc", (int)r->pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	r->has_exe_id = exe_id(r, r->exe_id);
	snprintf(entry, sizeof(entry), "%s%s%s%s", r->comm, exe[0] ? " (" : "",
		 exe, exe[0] ? ")" : "");
	len = strlen(entry) + 4;	/* and " -> " before it */
	/* too long: the images first exec'd go, the last one stays */
	while (used && used + len >= sizeof(r->exec_chain) - 8) {
		char *next = strstr(r->exec_chain + (r->exec_chain[0] == '.' ? 7 : 0),
				    " -> ");

		if (!next) {
			used = 0;
			break;
		}
		memmove(r->exec_chain + 3, next, strlen(next) + 1);
		memcpy(r->exec_chain, "...", 3);
		used = strlen(r->exec_chain);
	}
	snprintf(r->exec_chain + used, sizeof(r->exec_chain) - used, "%s%s",
		 used ? " -> " : "", entry);
}

/* An exec'd program that defines its own allocator: its entries are
 * patched only at a launch's handshake, so its own calls go unseen. */
static void warn_own_allocator(struct run *r)
{
	char link[64], exe[PATH_MAX];
	ssize_t n;

	/* the file itself, through /proc: the path may be another mount
	 * namespace's */
	snprintf(link, sizeof(link), "%s/%d/exe",
		 r->o->proc_root ? r->o->proc_root : "/proc", (int)r->pid);
	if (!launch__wants_entry(link))
		return;
	n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	pr_warn("warning: %s, exec'd, defines its own allocator, whose calls from the program itself are seen only when it is started directly: run it directly\n",
		exe);
}

/*
 * The launched process exec'd: from now on read its new image's memfd.
 * What the old image recorded goes: the profile, the readings and the
 * report are the program's that does the work, not its launcher's.  The
 * new agent waits for our handshake (maps_ready) before its main().  A
 * memfd that does not validate leaves the old recording in place, said.
 */
static void take_exec(struct run *r)
{
	struct ringfile rf = { .fd = -1 };
	char owner_why[256];
	const char *why = NULL;
	int fd = r->exec_fd;

	r->exec_fd = -1;
	if (ringfile__open(&rf, fd, &why)) {
		close(fd);
		pr_warn("process %d exec'd, and its new image's recording cannot be read (%s); only what ran before the exec is profiled\n",
			(int)r->pid, why);
		r->exec_warned = true;
		return;
	}
	/* ours, as the launch's was: a --pid or serve on it refuses */
	if (owner__claim(rf.hdr, 0, NULL, owner_why, sizeof(owner_why)))
		pr_warn("process %d exec'd: %s\n", (int)r->pid, owner_why);
	recorder__fini(&r->rec);
	recorder__init(&r->rec);
	r->rec.pid = r->pid;
	r->rec.rf = rf;
	allocstats__forget_quiet();
	/* said; the run goes on to the end without reading it */
	if (recorder__start(&r->rec, r->pid, &r->o->rec))
		pr_warn("process %d exec'd; its new image is not profiled\n",
			(int)r->pid);
	warn_own_allocator(r);
	r->execs++;
	r->image_ns = pa_now_ns();
	r->maps_ready = false;
	r->entry_wanted = false;	/* its header did not ask */
	r->exec_warned = false;
	r->exec_seen_ns = 0;
	r->comm[0] = 0;
	r->exit_read = false;
	r->peak_gen_seen = 0;
	r->peak_rising = false;
	r->has_peak_rss_then = false;
	r->fill = (struct fill_rate){ 0 };
	r->poll_ms = POLL_START_MS;
}

void trace__readings_source(struct run *r, struct readings_source *src)
{
	*src = (struct readings_source){
		.proc_root = r->o->proc_root, .sys_root = r->o->sys_root,
		.pid = r->pid, .hdr = r->rec.rf.hdr, .rf = &r->rec.rf,
		.file_size = r->rec.rf.file_size,
		.live_capacity = r->rec.rf.live_capacity,
		.stats_timeout_ms = 200, .heap = &r->rec.s.heap,
		.calls_seen = r->calls_seen[0] ? r->calls_seen : NULL,
	};
}

/* Which allocator calls the agent sees, in words (readings, comments). */
static void trace__calls_seen(struct run *r, bool attached)
{
	const struct attach_stats *st = &r->rec.ast;

	if (st->entry_patched)
		snprintf(r->calls_seen, sizeof(r->calls_seen),
			 "the program's own allocator through %u functions hooked at their entries, and its libraries' calls",
			 st->entry_patched);
	else if (st->entry_line[0])
		snprintf(r->calls_seen, sizeof(r->calls_seen),
			 "its libraries' calls only (through their GOT slots): the program's own calls to its allocator are not seen");
	else if (attached && !st->existing)
		snprintf(r->calls_seen, sizeof(r->calls_seen),
			 "every module's calls to the malloc family, through their GOT slots (modules loaded later too)");
	else if (attached)
		snprintf(r->calls_seen, sizeof(r->calls_seen),
			 "the calls of the malloc family its agent was already hooking (preloaded: every call; injected by an earlier tracer: through every module's GOT slots)");
	else
		snprintf(r->calls_seen, sizeof(r->calls_seen),
			 "every call to the malloc family (the agent is preloaded ahead of the allocator)");
}

/* The profile's path, then the readings' files beside it. */
void trace__open_outputs(struct run *r)
{
	int err;

	if (r->o->output)
		snprintf(r->output, sizeof(r->output), "%s", r->o->output);
	else
		snprintf(r->output, sizeof(r->output), "pprof-alloc.%d.pb.gz",
			 (int)r->pid);
	if (!r->o->readings)
		return;
	err = timeline__open(&r->tl, r->output, r->o->interval_ns);
	if (err == -ENOMEM)
		pr_warn("out of memory: no readings\n");
	r->tl_open = !err;
	if (err)
		timeline__close(&r->tl);
	/* a followed process may be gone before the first reading */
	r->tl.quiet_none = r->followed;
	r->tl.not_held = r->followed;	/* see trace__loop */
}

/* At the start of the run, what the verdict at the end compares with. */
void trace__read_start(struct run *r)
{
	if (cgroup__read(&r->cg_start, r->o->proc_root, r->o->sys_root,
			 r->pid) == -ENOMEM)
		pr_warn("out of memory reading the target's cgroup\n");
	r->have_vm_start = !procmem__vmstat_oom_kill(r->o->proc_root,
						     &r->vm_oom_start);
}

/* What a run holds, whichever way it ended (launched, attached, a
 * follower); r was zeroed, with its descriptors at -1, before it began. */
void trace__fini(struct run *r)
{
	follow__fini(&r->fl);
	if (r->tl_open)
		timeline__close(&r->tl);
	cgroup__fini(&r->cg_start);
	if (r->pidfd >= 0)
		close(r->pidfd);
	r->pidfd = -1;
	recorder__fini(&r->rec);
}

static void run_loop(struct run *r);

static void release_exit(struct pa_header *hdr)
{
	__atomic_store_n(&hdr->exit_state, PA_EXIT_READ, __ATOMIC_RELEASE);
	syscall(SYS_futex, &hdr->exit_state, FUTEX_WAKE, INT_MAX, NULL, NULL,
		0);
}

/*
 * The heap reached a new high in the records just drained: the RSS beside
 * it (statm: cheap).  The tracer learns of a high only after it, so the
 * reading closest to it is kept with how long after it it was: the one
 * taken before this drain (rss_before at before_ns) when the high came
 * before that, else one taken now.
 */
static void note_peak_rss(struct run *r, uint64_t rss_before,
			  uint64_t before_ns)
{
	const struct heap *h = &r->rec.s.heap;
	uint64_t rss, at;

	r->peak_rising = h->peak_gen != r->peak_gen_seen;
	if (!r->peak_rising)
		return;
	r->peak_gen_seen = h->peak_gen;
	if (rss_before && h->peak_ns <= before_ns) {
		rss = rss_before;
		at = before_ns;
	} else if (!procmem__rss(r->o->proc_root, r->pid, &rss)) {
		at = pa_now_ns();
	} else {
		return;
	}
	r->peak_rss_then = rss;
	r->peak_rss_after_ns = at > h->peak_ns ? at - h->peak_ns : 0;
	r->has_peak_rss_then = true;
}

/*
 * The target is in exit(), held for its last reading (agent/exitwait.c):
 * what the ring and the sites hold first, so that the reading's heap is
 * the end's, then the reading, then it may go.  Once: the word is the
 * target's to write.
 */
static void read_at_exit(struct run *r)
{
	struct pa_header *hdr = r->rec.rf.hdr;
	struct readings_source src;

	if (r->exit_read ||
	    __atomic_load_n(&hdr->exit_state, __ATOMIC_ACQUIRE) !=
		    PA_EXIT_WAITING)
		return;
	r->exit_read = true;
	if (!r->ended_ns)
		r->ended_ns = pa_now_ns();
	r->rec.sites_now = true;
	recorder__drain(&r->rec, pa_now_ns(), false);
	note_peak_rss(r, 0, 0);		/* the last drain's high, if any */
	trace__readings_source(r, &src);
	timeline__take_at_exit(&r->tl, &src);
	release_exit(hdr);
}


/* One image of the target, until it exits, execs (a launched one), the
 * deadline passes, or we are told to stop.  While it runs, its exit()
 * waits for our last reading of it. */
static void loop_image(struct run *r)
{
	struct pa_header *hdr = r->rec.rf.hdr;

	r->ew.fd = -1;
	/* not a follower's: a burst of short-lived descendants would each
	 * wait at exit for its reading */
	if (r->tl_open && !r->followed) {
		__atomic_store_n(&hdr->exit_wanted, 1, __ATOMIC_SEQ_CST);
		/* without it the loop looks every pass, up to 50 ms late */
		exit_watch__start(&r->ew, hdr);
	}
	run_loop(r);
	exit_watch__stop(&r->ew);
	/* detaching, or it ended: nobody reads it at exit any more.  Store
	 * then load, as the agent does the other way round (CAS of
	 * exit_state, then exit_wanted): both sequentially consistent, so one
	 * of the two sees the other's */
	__atomic_store_n(&hdr->exit_wanted, 0, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&hdr->exit_state, __ATOMIC_SEQ_CST) ==
	    PA_EXIT_WAITING)
		release_exit(hdr);
}

/*
 * Until the target exits (launched: SIGCHLD; attached: its pidfd), the
 * deadline passes, or we are told to stop (attached: SIGINT/SIGTERM); a
 * launched process that execs is read on in its new image.
 */
void trace__loop(struct run *r)
{
	for (;;) {
		loop_image(r);
		/* a hand-over sent just before the exit */
		if (r->exited && r->child > 0)
			children__drain(&r->ch);
		if (r->exec_fd < 0 || r->stop)
			break;
		take_exec(r);
		if (r->exited) {
			/* it never waited for us: what it left */
			recorder__drain(&r->rec, pa_now_ns(), true);
			break;
		}
	}
	/* a hand-over from now on (children__drain at the end) is not
	 * read: the new image waits for us in vain a moment */
	r->ch.on_exec = NULL;
	if (r->exec_fd >= 0) {
		close(r->exec_fd);
		r->exec_fd = -1;
	}
}

static void run_loop(struct run *r)
{
	while (!r->exited && !r->stop && r->exec_fd < 0) {
		struct pollfd pfd[4] = {
			{ .fd = r->sfd, .events = POLLIN },
			{ .fd = r->pidfd, .events = POLLIN },
			{ .fd = r->ch.fd, .events = POLLIN },	/* -1: none */
			{ .fd = r->ew.fd, .events = POLLIN },	/* -1: none */
		};
		struct signalfd_siginfo si;
		uint64_t pending = r->rec.ring_ok ?
			ring_consumer__pending(&r->rec.rc) : 0;
		uint64_t now = pa_now_ns(), rss_before;
		int wait = r->maps_ready ? r->poll_ms : 1;

		/* alive: the agent's exit() waits for us only while this
		 * moves (agent/exitwait.c) */
		__atomic_add_fetch(&r->rec.rf.hdr->tracer_beat, 1,
				   __ATOMIC_RELAXED);

		/* an agent that has not started by now never will (a static or
		 * setuid program): stop polling for it every millisecond */
		if (!r->maps_ready &&
		    now - r->image_ns > PA_TRACER_WAIT_MS * PA_NSEC_PER_MSEC)
			r->maps_ready = true;

		/* a reading due sooner than the wait: wake for it */
		if (r->tl_open && r->tl.next_ns && r->maps_ready &&
		    !r->exit_read) {
			uint64_t due = r->tl.next_ns > now ?
				       (r->tl.next_ns - now) / PA_NSEC_PER_MSEC + 1 : 1;

			if (due < (uint64_t)wait)
				wait = (int)due;
		}
		if (r->deadline_ns) {
			if (now >= r->deadline_ns)
				break;
			if ((r->deadline_ns - now) / PA_NSEC_PER_MSEC < (uint64_t)wait)
				wait = (int)((r->deadline_ns - now) / PA_NSEC_PER_MSEC) + 1;
		}
		if (pending <= r->rec.rf.data_size / 8) {
			uint64_t t0 = pa_now_ns();

			/* the agent's start is a futex wake-up, not an fd:
			 * wait on it, then look at the fds without waiting */
			if (!r->maps_ready && !r->exited) {
				uint32_t *st = &r->rec.rf.hdr->agent_state;
				uint32_t was = __atomic_load_n(st,
							       __ATOMIC_ACQUIRE);

				/* (a wait of 0 would have no limit) */
				if (was != PA_STATE_RUNNING && wait > 0)
					pa_futex_wait(st, was, (uint64_t)wait *
							      PA_NSEC_PER_MSEC);
				wait = 0;
			}
			poll(pfd, 4, wait);
			r->rec.wait_ns += pa_now_ns() - t0;
		}
		if (pfd[3].revents & POLLIN)
			exit_watch__ack(&r->ew);
		/* every time round: a followed descendant waits for us */
		children__drain(&r->ch);
		if (r->pidfd >= 0 && (pfd[1].revents & POLLIN))
			r->exited = true;
		if (r->exited && !r->ended_ns)
			r->ended_ns = pa_now_ns();
		/* no pidfd (an old kernel, or pidfd_open refused): look */
		if (r->child < 0 && r->pidfd < 0 && !procexit__alive(r->pid))
			r->exited = true;
		while (read(r->sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGCHLD) {
				siginfo_t info = { 0 };

				/* look before reaping: the zombie's comm,
				 * after a hand-over sent before the exit */
				if (r->child > 0 &&
				    !waitid(P_PID, (id_t)r->child, &info,
					    WEXITED | WNOHANG | WNOWAIT) &&
				    info.si_pid == r->child) {
					children__drain(&r->ch);
					warn_if_exec(r, true);
				}
				if (r->child > 0 &&
				    wait4(r->child, &r->status, WNOHANG,
					  &r->usage) == r->child) {
					r->exited = true;
					r->has_usage = true;
				}
				if (r->o->follow)
					follow__reap(&r->fl, r->child);
				continue;
			}
			if (r->followed) {
				if (si.ssi_signo == SIGUSR1) {
					r->execd = true;
					r->stop = true;
				} else if (!r->stop_at) {
					r->stop_at = pa_now_ns() +
						     FOLLOW_GRACE_NS;
				}
				continue;
			}
			if (r->child < 0) {
				r->stop = true;	/* attached: detach */
				continue;
			}
			if ((si.ssi_signo == SIGINT ||
			     si.ssi_signo == SIGQUIT) &&
			    si.ssi_code == SI_KERNEL)
				continue;	/* the terminal told the child */
			if (si.ssi_signo != SIGUSR1)
				r->stop_following = true;
			kill(r->child, (int)si.ssi_signo);
		}
		now = pa_now_ns();
		if (r->stop_at && now >= r->stop_at)
			r->stop = true;
		if (!r->maps_ready && !r->exited &&
		    __atomic_load_n(&r->rec.rf.hdr->agent_state, __ATOMIC_ACQUIRE) ==
			    PA_STATE_RUNNING) {
			mapping_set__refresh(&r->rec.s.maps);
			r->rec.s.last_refresh = now;
			r->maps_ready = true;
			procexit__comm(r->pid, r->comm, sizeof(r->comm));
			if (r->child > 0)
				chain_add(r);
			/* its own allocator, hooked before main() runs */
			if (r->entry_wanted) {
				attach__patch_entries(r->pid, r->agent,
						      &r->rec.ast);
				r->rec.rf.hdr->entry_patched =
					r->rec.ast.entry_patched;
				__atomic_store_n(&r->rec.rf.hdr->mallctl_at,
						 r->rec.ast.mallctl_at,
						 __ATOMIC_RELEASE);
			}
			trace__calls_seen(r, false);
			/* the first reading while it waits for us: a program
			 * that exits at once still has one (one taken as it
			 * exits is none) */
			if (r->tl_open) {
				struct readings_source src;

				trace__readings_source(r, &src);
				timeline__tick(&r->tl, pa_now_ns(), &src);
			}
			__atomic_store_n(&r->rec.rf.hdr->tracer_state,
					 PA_TRACER_READY, __ATOMIC_RELEASE);
			pa_futex_wake(&r->rec.rf.hdr->tracer_state);
		}
		if (r->rec.ring_ok) {
			pending = ring_consumer__pending(&r->rec.rc);
			r->poll_ms = next_wait_ms(&r->fill, pending, now,
						  r->rec.rf.data_size);
			if (pending > r->rec.rf.data_size / 4)
				trace__batch_priority(r, false);
			else if (pending < r->rec.rf.data_size / 32)
				trace__batch_priority(r, true);
		}
		r->rec.s.alive = !r->exited;
		/* while the heap is rising (the last drain made a new high):
		 * RSS before this drain too, closer to the next high */
		rss_before = 0;
		if (pending && !r->exited && r->peak_rising &&
		    procmem__rss(r->o->proc_root, r->pid, &rss_before))
			rss_before = 0;
		recorder__drain(&r->rec, now, r->exited);
		if (!r->exited) {
			note_peak_rss(r, rss_before, now);
			if (r->tl_open)
				read_at_exit(r);
		}
		/* after the reading at exit, none: it is the last */
		if (r->tl_open && r->maps_ready && !r->exited &&
		    !r->exit_read) {
			struct readings_source src;

			trace__readings_source(r, &src);
			timeline__tick(&r->tl, pa_now_ns(), &src);
		}
		if (!r->exited)
			recorder__rescan(&r->rec, now);
		if (r->child > 0 && !r->exec_warned && r->comm[0] &&
		    now - r->last_exec_check > EXEC_CHECK_NS) {
			r->last_exec_check = now;
			warn_if_exec(r, false);
		}
		if (!r->exited)
			recorder__refresh(&r->rec, now);
	}
}

int trace__launch(struct run *r, const char *agent, const sigset_t *sigs)
{
	struct trace_options *o = r->o;
	char ended[128], follow_env[160], exec_env[192];
	const char *extra[4] = { NULL }, *why = NULL;
	int err, code, nextra = 0;

	if (recorder__create(&r->rec, &o->rec, o->readings))
		return 1;
	r->start_ns = pa_now_ns();
	r->image_ns = r->start_ns;
	r->agent = agent;
	r->entry_wanted = launch__wants_entry(o->argv[0]);
	r->rec.rf.hdr->entry_wanted = r->entry_wanted;
	if (children__open(&r->ch)) {
		if (o->follow) {
			pr_warn("cannot open a socket for the program's children (%s): they cannot be followed\n",
				strerror(errno));
			trace__fini(r);
			return 1;
		}
		pr_warn("cannot open a socket for the program's children (%s); they will not be counted\n",
			strerror(errno));
	}
	/* followed: a daemon whose parent exits becomes our child, so we
	 * know it is there before its agent says so (follow.c) */
	if (o->follow && prctl(PR_SET_CHILD_SUBREAPER, 1))
		pr_warn("cannot become the program's subreaper (%s): a daemon it starts may be missed\n",
			strerror(errno));
	if (r->ch.fd >= 0) {
		extra[nextra++] = r->ch.env;
		/* the pid's digits are the child's to write (launch.c) */
		snprintf(exec_env, sizeof(exec_env),
			 PA_ENV_EXEC "=%0*d:%0*d:%" PRIu64 ":%u:%" PRIu64 ":%" PRIu64 ":%u:%u:%d",
			 PA_EXEC_PID_DIGITS, 0, PA_EXEC_NS_DIGITS, 0, o->rec.rate, o->rec.max_frames,
			 o->rec.ring_size, o->rec.live_size, o->rec.unwind,
			 o->rec.stack_bytes, o->readings ? 1 : 0);
		extra[nextra++] = exec_env;
		if (o->follow) {
			snprintf(follow_env, sizeof(follow_env),
				 PA_ENV_FOLLOW "=%" PRIu64 ":%u:%" PRIu64 ":%" PRIu64 ":%u:%u:%d",
				 o->rec.rate, o->rec.max_frames,
				 o->rec.ring_size, o->rec.live_size,
				 o->rec.unwind, o->rec.stack_bytes,
				 o->readings ? 1 : 0);
			extra[nextra++] = follow_env;
		}
	}
	err = launch__spawn(o->argv, agent, r->rec.rf.fd, extra, sigs, &r->child,
			    &why);
	if (err == -ELIBBAD) {		/* refused: why says it all */
		pr_warn("'%s' %s\n", o->argv[0], why);
		trace__fini(r);
		return 126;
	}
	if (err) {
		pr_warn("%s '%s': %s\n", why, o->argv[0],
			strerror(-err));
		trace__fini(r);
		return err == -ENOENT ? 127 : 126;
	}
	r->pid = r->child;
	r->ch.main_pid = r->child;
	r->ch.on_exec = trace__on_exec;
	r->ch.ctx = r;
	/* the agent waits for us before main(): nothing much has run yet */
	trace__read_start(r);
	trace__open_outputs(r);
	if (o->follow) {
		follow__init(&r->fl, r->output);
		r->ch.on_follow = trace__on_follow;
		r->ch.ctx = r;
	}
	if (recorder__start(&r->rec, r->pid, &o->rec)) {
		code = 1;
		goto out_fini;
	}
	trace__batch_priority(r, true);
	trace__loop(r);
	procexit__describe_status(r->status, ended, sizeof(ended), &code);
	recorder__reconcile(&r->rec);
	if (__atomic_load_n(&r->rec.rf.hdr->agent_state, __ATOMIC_ACQUIRE) !=
	    PA_STATE_RUNNING) {
		char reason[PATH_MAX + 256];

		launch__why_not_started(o->argv[0], reason, sizeof(reason));
		pr_warn("%s\n", reason);
	}
	/* the command's status, whatever happened to the output (said) */
	trace__finish(r, o->argv[0], ended, false,
		      WIFSIGNALED(r->status) && WTERMSIG(r->status) == SIGKILL, true);
	if (o->follow) {
		char line[PATH_MAX + 256];

		trace__wait_for_followers(r);
		follow__summary(&r->fl, line, sizeof(line));
		if (line[0] && (!log__quiet() || r->fl.failed))
			pr_warn("%s\n", line);
	}
out_fini:
	trace__fini(r);
	return code;
}

int trace__attach(struct run *r, const char *agent)
{
	struct trace_options *o = r->o;
	struct attach_config cfg;
	const struct attach_stats *st = &r->rec.ast;
	char ended[128], what[32];
	uint64_t t0 = pa_now_ns();
	bool sigkilled = false, status_known = true;
	int err, code = 0;

	r->pid = o->pid;
	recorder__attach_config(&cfg, &o->rec, agent, o->readings);
	if (recorder__attach(&r->rec, r->pid, &cfg, &o->rec)) {
		trace__fini(r);
		return 1;
	}
	trace__calls_seen(r, true);
	trace__read_start(r);
	trace__open_outputs(r);
	r->pidfd = (int)syscall(SYS_pidfd_open, r->pid, 0);
	if (r->pidfd < 0)
		pr_info("note: pidfd_open: %s; watching process %d by polling\n",
			strerror(errno), (int)r->pid);
	r->start_ns = pa_now_ns();
	if (o->duration_ms)
		r->deadline_ns = r->start_ns + o->duration_ms * PA_NSEC_PER_MSEC;
	pr_info("%s process %d in %.1f ms (thread stopped at most %.2f ms); Ctrl-C to detach and write the profile\n",
		st->existing ? "connected to the agent in" :
		st->reattached ? "re-attached to" : "attached to",
		(int)r->pid, (double)(r->start_ns - t0) / PA_NSEC_PER_MSEC,
		(double)st->longest_stop_ns / PA_NSEC_PER_MSEC);
	if (r->rec.rf.sample_rate != o->rec.rate ||
	    r->rec.rf.data_size != o->rec.ring_size ||
	    r->rec.rf.live_capacity != o->rec.live_size)
		pr_info("note: the agent there records with rate %" PRIu64
			", a %" PRIu64 " KiB ring and %" PRIu64
			" live entries (set when it started)\n",
			r->rec.rf.sample_rate, r->rec.rf.data_size >> 10,
			r->rec.rf.live_capacity);
	r->maps_ready = true;
	trace__batch_priority(r, true);
	trace__loop(r);

	if (r->exited) {
		/* not our child: its exit code is in its zombie's stat, until
		 * its parent reaps it */
		procexit__describe(r->pid, " while attached", ended,
				   sizeof(ended), &sigkilled, &status_known);
		recorder__drain(&r->rec, pa_now_ns(), true);
		recorder__reconcile(&r->rec);
	} else {
		err = recorder__detach(&r->rec);
		snprintf(ended, sizeof(ended), "%s after %.1f s",
			 err ? "was asked to detach" : "was detached",
			 (double)(pa_now_ns() - r->start_ns) / PA_NSEC_PER_SEC);
	}
	snprintf(what, sizeof(what), "process %d", (int)r->pid);
	if (r->rec.first_record_ns)
		pr_info("first record %.1f ms after start; longest thread stop %.2f ms (attach and detach)\n",
			(double)(r->rec.first_record_ns - r->invoked_ns) /
				PA_NSEC_PER_MSEC,
			(double)st->longest_stop_ns / PA_NSEC_PER_MSEC);
	else
		pr_info("no record arrived (the process allocated nothing sampled); longest thread stop %.2f ms\n",
			(double)st->longest_stop_ns / PA_NSEC_PER_MSEC);
	if (trace__finish(r, what, ended, !r->exited, sigkilled, status_known))
		code = 1;
	/* after the last reading, which asked the agent's stats thread */
	recorder__leave(&r->rec);
	trace__fini(r);
	return code;
}
