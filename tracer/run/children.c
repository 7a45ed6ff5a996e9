// SPDX-License-Identifier: MIT
/*
 * children.c - count the launched program's descendants that ran with the
 * agent, unprofiled.
 *
 * Only the process the tracer starts is profiled.  Its descendants inherit
 * LD_PRELOAD, so they run with the agent too, which then stays off there
 * and sends a note to this tracer's session socket (agent/session.c): an
 * abstract unix datagram socket, named after our pid and random bytes, in
 * PPROF_ALLOC_SESSION.  Without it a make or a compiler driver gave an
 * empty profile and nothing said why.
 *
 * A note is the target's to forge: only its size and magic are checked,
 * the pid is the kernel's (SO_PASSCRED), each process counts once (a fork
 * that then execs sends two notes, the second with the program's name,
 * which replaces the first), and what is kept is bounded - the pid
 * set stops growing at CHILDREN_MAX_PIDS (counting goes on, unduplicated),
 * names at CHILDREN_NAMES.
 *
 * With --follow-children a descendant's note may carry its memfd
 * (SCM_RIGHTS, PA_CHILD_FOLLOW_MAGIC): it goes to on_follow, and the
 * process is not counted here.  Any other descriptor a note brings is
 * closed at once; those beyond the control buffer the kernel drops.
 *
 * The socket's queue is short (net.unix.max_dgram_qlen, 10 by default)
 * and a sender waits only a bounded while when it is full, but on_follow
 * forks, which takes a while in a big tracer.  So hand-overs are first
 * read into a FIFO of their own (CHILDREN_PENDING; beyond it, handed on at
 * once), and the socket is read empty again after each on_follow: a burst
 * of descendants waits on our forks in memory, not in the kernel's queue.
 *
 * The launched process itself hands a memfd over when it execs another
 * program (PA_CHILD_EXEC_MAGIC): only from main_pid, as the kernel says,
 * is that taken (on_exec, at once); from any other process it is a note
 * like PA_CHILD_MAGIC.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "children.h"
#include "pprof_alloc_abi.h"

#define CHILDREN_MAX_PIDS	(1u << 20)

int children__open(struct children *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t nonce = 0;
	socklen_t len;
	int one = 1, n;

	memset(c, 0, sizeof(*c));
	u64map__init(&c->pids);
	if (getrandom(&nonce, sizeof(nonce), GRND_NONBLOCK) != sizeof(nonce))
		nonce ^= (uint64_t)(uintptr_t)&sa;
	n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1,
		     "pprof-alloc.%d.%016llx", (int)getpid(),
		     (unsigned long long)nonce);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
	c->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -errno;
	if (setsockopt(c->fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) ||
	    bind(c->fd, (struct sockaddr *)&sa, len)) {
		int err = -errno;

		close(c->fd);
		c->fd = -1;
		return err;
	}
	snprintf(c->env, sizeof(c->env), PA_ENV_SESSION "=@%s", sa.sun_path + 1);
	return 0;
}

/* Count one process under comm; returns its name's index + 1, or 0 for
 * "others". */
static uint64_t note_name(struct children *c, const char *comm)
{
	int i;

	for (i = 0; i < CHILDREN_NAMES; i++) {
		if (!c->names[i].count) {
			memcpy(c->names[i].comm, comm, sizeof(c->names[i].comm));
			c->names[i].count = 1;
			return (uint64_t)i + 1;
		}
		if (!strncmp(c->names[i].comm, comm, sizeof(c->names[i].comm))) {
			c->names[i].count++;
			return (uint64_t)i + 1;
		}
	}
	c->other_names++;
	return 0;
}

/* The descriptors a message brought: the first in *fd (or -1), the others
 * closed. */
static void take_fds(struct msghdr *msg, int *fd, struct ucred *cred)
{
	struct cmsghdr *cm;

	*fd = -1;
	for (cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
		size_t i, n;

		if (cm->cmsg_level != SOL_SOCKET)
			continue;
		if (cm->cmsg_type == SCM_CREDENTIALS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(*cred))) {
			memcpy(cred, CMSG_DATA(cm), sizeof(*cred));
			continue;
		}
		if (cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len < CMSG_LEN(0))
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			int one;

			memcpy(&one, CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(int));
			if (*fd < 0)
				*fd = one;
			else
				close(one);
		}
	}
}

/* Read every note waiting; hand-overs queue in c->pending. */
static void read_notes(struct children *c)
{
	for (;;) {
		struct pa_child_note note;
		union {
			char buf[CMSG_SPACE(sizeof(struct ucred)) +
				 CMSG_SPACE(4 * sizeof(int))];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = { &note, sizeof(note) };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
				      .msg_control = ctl.buf,
				      .msg_controllen = sizeof(ctl.buf) };
		struct ucred cred = { 0 };
		uint64_t *seen;
		char comm[16];
		ssize_t n;
		size_t i;
		int fd;

		if (c->fd < 0)
			return;
		n = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;		/* EAGAIN: none left */
		}
		take_fds(&msg, &fd, &cred);
		if (n != (ssize_t)sizeof(note) ||
		    (note.magic != PA_CHILD_MAGIC &&
		     note.magic != PA_CHILD_FOLLOW_MAGIC &&
		     note.magic != PA_CHILD_EXEC_MAGIC) ||
		    (msg.msg_flags & MSG_TRUNC) || cred.pid <= 0) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		/* raw: every sink cleans it (untrusted.c) */
		for (i = 0; i < sizeof(comm) - 1 && note.comm[i]; i++)
			comm[i] = note.comm[i];
		comm[i] = 0;
		if (note.magic == PA_CHILD_EXEC_MAGIC && fd >= 0 &&
		    c->on_exec && c->main_pid > 0 && cred.pid == c->main_pid) {
			c->on_exec(c->ctx, cred.pid, comm, fd);
			continue;
		}
		if (note.magic == PA_CHILD_FOLLOW_MAGIC && fd >= 0 &&
		    c->on_follow) {
			unsigned int at;

			if (c->pending_len == CHILDREN_PENDING) {
				c->on_follow(c->ctx, cred.pid, comm, fd);
				continue;
			}
			at = (c->pending_head + c->pending_len++) %
			     CHILDREN_PENDING;
			c->pending[at].pid = cred.pid;
			c->pending[at].fd = fd;
			memcpy(c->pending[at].comm, comm, sizeof(comm));
			continue;
		}
		if (fd >= 0)
			close(fd);
		seen = u64map__find(&c->pids, (uint64_t)cred.pid);
		if (seen) {
			/* a fork that then exec'd: once, by the program's name */
			if (*seen == 0xff)
				continue;
			if (*seen)
				c->names[*seen - 1].count--;
			else
				c->other_names--;
			*seen = 0xff;	/* renamed once at most */
			note_name(c, comm);
			continue;
		}
		if (c->count < CHILDREN_MAX_PIDS)
			u64map__put(&c->pids, (uint64_t)cred.pid,
				    note_name(c, comm));
		else
			note_name(c, comm);
		c->count++;
	}
}

void children__drain(struct children *c)
{
	for (;;) {
		unsigned int at;

		read_notes(c);
		if (!c->pending_len)
			return;
		at = c->pending_head;
		c->pending_head = (at + 1) % CHILDREN_PENDING;
		c->pending_len--;
		c->on_follow(c->ctx, c->pending[at].pid, c->pending[at].comm,
			     c->pending[at].fd);
	}
}

void children__summary(const struct children *c, char *buf, size_t size)
{
	size_t used;
	int i, first;

	buf[0] = 0;
	if (!c->count)
		return;
	used = (size_t)snprintf(buf, size,
				"%llu child process%s ran with the agent and %s not profiled (%s):",
				(unsigned long long)c->count,
				c->count == 1 ? "" : "es",
				c->count == 1 ? "was" : "were",
				c->on_follow ?
				"followed, but forked without atfork handlers or could not hand over" :
				"only the process started is");
	for (i = 0, first = 1; i < CHILDREN_NAMES && c->names[i].comm[0] &&
			       used < size; i++) {
		if (!c->names[i].count)
			continue;	/* renamed away */
		used += (size_t)snprintf(buf + used, size - used, "%s %s x%llu",
					 first ? "" : ",", c->names[i].comm,
					 (unsigned long long)c->names[i].count);
		first = 0;
	}
	if (c->other_names && used < size)
		snprintf(buf + used, size - used, ", others x%llu",
			 (unsigned long long)c->other_names);
}

void children__close(struct children *c)
{
	while (c->pending_len) {
		close(c->pending[c->pending_head].fd);
		c->pending_head = (c->pending_head + 1) % CHILDREN_PENDING;
		c->pending_len--;
	}
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	u64map__fini(&c->pids);
}
