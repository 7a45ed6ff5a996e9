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
 * process once, whatever it says.  sendto never blocks (MSG_DONTWAIT) and
 * allocates nothing: called from a constructor or an atfork handler.  With
 * no one reading (the tracer gone) the datagram is simply dropped.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "agent.h"

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

void session__announce(void)
{
	struct pa_child_note note = { .magic = PA_CHILD_MAGIC };
	int fd;

	if (!session_len)
		return;
	prctl(PR_GET_NAME, note.comm, 0, 0, 0);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	sendto(fd, &note, sizeof(note), MSG_DONTWAIT | MSG_NOSIGNAL,
	       (const struct sockaddr *)&session_addr, session_len);
	close(fd);
}
