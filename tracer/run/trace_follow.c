// SPDX-License-Identifier: MIT
/*
 * trace_follow.c - --follow-children: a profile for each descendant.
 *
 * A descendant's agent hands its memfd over the children socket
 * (children.c); the main tracer forks a follower for it, which reads that
 * ring as a launched run reads its own, until the process exits, execs
 * (the main tracer tells it: SIGUSR1, and a new follower takes the new
 * image) or the follower is told to stop (the agent there is then turned
 * off by the header's command).  Followers are quiet but for trouble; the
 * main tracer keeps their books (follow.c) and sums up.  When the program
 * itself has exited and its profile is written, the main tracer waits for
 * its followers: a daemon the program started may run on.
 */
#include "trace.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "common/log.h"
#include "pa_clock.h"
#include "tracer/attach/procexit.h"

/* Close every descriptor above stderr but a and b. */
static void close_others(int a, int b)
{
	int lo = a < b ? a : b, hi = a < b ? b : a;

	if (lo > 3)
		close_range(3, (unsigned int)lo - 1, 0);
	if (hi > lo + 1)
		close_range((unsigned int)lo + 1, (unsigned int)hi - 1, 0);
	close_range((unsigned int)hi + 1, ~0u, 0);
}

/*
 * A follower (--follow-children), forked by the main tracer when process
 * pid handed over its memfd fd: read its ring as a launched run reads its
 * own, until the process exits, execs (SIGUSR1 from the main tracer), or
 * we are told to stop (the agent there is then turned off by the header's
 * command).  Quiet but for trouble; the main tracer sums up.  Returns a
 * FOLLOW_* exit status.
 */
static int follow_one(struct run *m, pid_t pid, const char *comm, int fd,
			const char *output)
{
	struct trace_options o = *m->o;
	struct run rr, *r = &rr;
	char ended[160], what[64];
	const char *why = NULL;
	struct ringfile_losses losses;
	bool alive = false, sigkilled = false, status_known = true;
	int err, code = FOLLOW_FAILED;

	/* what the main tracer holds is not ours: its ring, its session
	 * socket, the module files it opened; only fd and the signalfd stay */
	if (m->rec.rf.hdr)
		munmap(m->rec.rf.hdr, m->rec.rf.file_size);
	close_others(fd, m->sfd);
	o.output = output;
	o.quiet = true;
	o.top = 0;
	o.argv = NULL;
	log__set_quiet(true);
	trace__init(r, &o, m->sfd);
	r->followed = true;
	r->pid = pid;
	err = recorder__open(&r->rec, pid, fd, &why);
	if (err) {
		pr_warn("process %d (%s), followed: %s; not profiled\n",
			(int)pid, comm, why);
		close(fd);
		return FOLLOW_FAILED;
	}
	r->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (r->pidfd < 0 && errno == ESRCH)
		r->exited = true;	/* gone already: its ring remains */
	r->start_ns = pa_now_ns();
	r->image_ns = r->start_ns;
	trace__read_start(r);
	trace__open_outputs(r);
	if (recorder__start(&r->rec, pid, &o.rec))
		goto out_fini;
	trace__loop(r);
	snprintf(what, sizeof(what), "process %d (%s)", (int)pid, comm);
	if (r->exited && !r->execd) {
		char now_comm[64];
		int status;

		/* it exec'd, and the new program ended before the main
		 * tracer told us: the zombie bears the new name; reaped
		 * already, the notice may still be on its way */
		if (!procexit__status(pid, &status)) {
			procexit__comm(pid, now_comm, sizeof(now_comm));
			if (now_comm[0] && strncmp(now_comm, comm, 15))
				r->execd = true;
		} else if (trace__wait_exec_notice(r, 100)) {
			r->execd = true;
		}
	}
	if (r->exited && !r->execd) {
		procexit__describe(pid, "", ended, sizeof(ended), &sigkilled,
				   &status_known);
		recorder__drain(&r->rec, pa_now_ns(), true);
		recorder__reconcile(&r->rec);
	} else if (r->execd) {
		snprintf(ended, sizeof(ended),
			 "exec'd another program (followed on in a profile of its own)");
		recorder__drain(&r->rec, pa_now_ns(), true);
		recorder__reconcile(&r->rec);
	} else {
		/* still running: the agent there turns off at its next
		 * sample; what it recorded so far is ours */
		__atomic_store_n(&r->rec.rf.hdr->command, PA_CMD_DETACH,
				 __ATOMIC_RELEASE);
		recorder__last_drain(&r->rec);
		alive = true;
		snprintf(ended, sizeof(ended),
			 "was left running after %.1f s (its agent turned off)",
			 (double)(pa_now_ns() - r->start_ns) / PA_NSEC_PER_SEC);
	}
	recorder__losses(&r->rec, &losses);
	if (!r->rec.s.heap.allocs && !losses.records) {
		code = FOLLOW_EMPTY;
		goto out_fini;
	}
	code = trace__finish(r, what, ended, alive, sigkilled, status_known) < 0 ?
		       FOLLOW_FAILED : FOLLOW_WROTE;
out_fini:
	trace__fini(r);
	return code;
}

/* children.c: a descendant handed over its memfd; fork its follower. */
void trace__on_follow(void *ctx, pid_t pid, const char *comm, int fd)
{
	struct run *r = ctx;
	pid_t old = follow__tracer_of(&r->fl, pid), tracer;
	char *output;

	if (old > 0) {
		kill(old, SIGUSR1);	/* that image exec'd: its end */
		follow__told(&r->fl, old);
	}
	switch (follow__is_descendant(pid, r->child)) {
	case 1:
		break;
	case -ESRCH:		/* counted in the summary */
		r->fl.gone++;
		close(fd);
		return;
	default:
		pr_warn("process %d (%s) handed over a memfd but is no descendant of the program; ignored\n",
			(int)pid, comm);
		close(fd);
		return;
	}
	if (r->stop_following) {
		/* we were told to stop: its agent turns off, and stops
		 * waiting for us */
		follow__refuse(&r->fl, fd);
		return;
	}
	output = follow__name(&r->fl, pid, comm);
	if (!output) {
		pr_warn("out of memory: process %d (%s) is not followed\n",
			(int)pid, comm);
		close(fd);
		return;
	}
	fflush(NULL);		/* nothing buffered is written twice */
	tracer = fork();
	if (tracer < 0) {
		pr_warn("cannot fork a tracer for process %d (%s): %s; it is not followed\n",
			(int)pid, comm, strerror(errno));
		free(output);
		close(fd);
		return;
	}
	if (tracer == 0)
		_exit(follow_one(r, pid, comm, fd, output));
	close(fd);
	if (follow__add(&r->fl, pid, tracer, output))
		pr_warn("out of memory: the follower of process %d is not counted\n",
			(int)pid);
}

/*
 * The program has exited and its profile is written: wait for the
 * followers (a daemon it started may run on), still handing new
 * descendants to followers of their own.  A signal to us tells them to
 * stop following.
 */
void trace__wait_for_followers(struct run *r)
{
	uint64_t start = pa_now_ns();
	bool said = false, told = r->stop_following;

	if (told)
		follow__signal(&r->fl, SIGTERM);
	/* the followers, and while not told to stop, the descendants we
	 * adopted (a daemon whose agent has not handed over yet) */
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = r->sfd, .events = POLLIN },
			{ .fd = r->ch.fd, .events = POLLIN },
		};
		struct signalfd_siginfo si;

		follow__reap(&r->fl, 0);
		children__drain(&r->ch);
		if (!r->fl.running && (told || !follow__descendants()))
			break;
		if (!said && pa_now_ns() - start > PA_NSEC_PER_SEC) {
			pr_info("waiting for the program's descendants still running (%zu followed); Ctrl-C stops following them and writes their profiles\n",
				r->fl.running);
			said = true;
		}
		poll(pfd, 2, 200);
		while (read(r->sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGCHLD)
				continue;
			follow__signal(&r->fl, SIGTERM);
			told = r->stop_following = true;
		}
	}
}
