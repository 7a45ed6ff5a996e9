// SPDX-License-Identifier: MIT
/*
 * session.c - a traced program's descendants say they ran with the agent.
 *
 * The tracer that launches a program names, in PPROF_ALLOC_SESSION, a
 * unix datagram socket it reads ("@name": abstract).  The launched process
 * keeps the variable, so its descendants inherit it along with LD_PRELOAD.
 * Only the launched process is profiled: a descendant's agent - a program
 * it exec'd (no PPROF_ALLOC_FD: agent__start), or a child it forked (the
 * atfork handler) - stays off and sends one datagram, its command name;
 * the kernel adds its pid (SCM_CREDENTIALS), so the tracer counts each
 * process once, whatever it says.  The send never blocks (MSG_DONTWAIT; a
 * full queue is tried again for at most 1 s) and allocates nothing:
 * called from a constructor or an atfork handler.  With no one reading
 * (the tracer gone) the datagram is simply dropped.
 *
 * With --follow-children (PPROF_ALLOC_FOLLOW, read in agent.c) a
 * descendant records instead: it makes a memfd of its own and hands it
 * over in the same kind of datagram (SCM_RIGHTS), which the tracer reads
 * from.  A hand-over that fails (the socket's queue full, the tracer gone)
 * leaves the descendant off and announced, as without the option.
 *
 * The launched process itself, when it execs another program (a shim, a
 * wrapper script, env), is no descendant: its new image finds its own pid
 * in PPROF_ALLOC_EXEC and hands a memfd over the same way, marked
 * PA_CHILD_EXEC_MAGIC, whether or not descendants are followed.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "agent.h"
#include "pa_clock.h"

static struct sockaddr_un session_addr;
static socklen_t session_len;

bool session__init(void)
{
	const char *name = getenv(PA_ENV_SESSION);
	size_t n;

	if (!name || name[0] != '@')
		return false;
	n = strlen(name);
	if (n < 2 || n > sizeof(session_addr.sun_path))
		return false;
	memset(&session_addr, 0, sizeof(session_addr));
	session_addr.sun_family = AF_UNIX;
	memcpy(session_addr.sun_path + 1, name + 1, n - 1);	/* abstract */
	session_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	return true;
}

/* One note, with memfd attached if it is not -1.  0 or -errno. */
static int send_note(uint64_t magic, int memfd)
{
	struct pa_child_note note = { .magic = magic };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { &note, sizeof(note) };
	struct msghdr msg = {
		.msg_name = &session_addr, .msg_namelen = session_len,
		.msg_iov = &iov, .msg_iovlen = 1,
	};
	int fd, i, err = 0;

	if (!session_len)
		return -ENOTCONN;
	prctl(PR_GET_NAME, note.comm, 0, 0, 0);
	if (memfd >= 0) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &memfd, sizeof(int));
	}
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* the tracer's queue holds few datagrams (net.unix.max_dgram_qlen):
	 * when a burst of descendants fills it, wait for the tracer to
	 * drain it, a bounded while (1 s) */
	for (i = 0; i < 500; i++) {
		struct timespec ms2 = { 0, 2 * PA_NSEC_PER_MSEC };

		err = 0;
		if (sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
			break;
		err = -errno;
		if (err != -EAGAIN)
			break;
		nanosleep(&ms2, NULL);
	}
	close(fd);
	return err;
}

void session__announce(void)
{
	send_note(PA_CHILD_MAGIC, -1);
}

int session__hand_over(int fd)
{
	return send_note(PA_CHILD_FOLLOW_MAGIC, fd);
}

int session__hand_over_exec(int fd)
{
	return send_note(PA_CHILD_EXEC_MAGIC, fd);
}
