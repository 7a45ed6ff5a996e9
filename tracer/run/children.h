/* SPDX-License-Identifier: MIT */
/*
 * children.h - count the launched program's descendants that ran with the
 * agent, unprofiled.
 */
#ifndef PA_TRACER_CHILDREN_H
#define PA_TRACER_CHILDREN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "elf/u64map.h"

#define CHILDREN_NAMES	8
#define CHILDREN_PENDING 256

struct children {
	int fd;			/* the session socket, -1 if none */
	char env[128];		/* PPROF_ALLOC_SESSION=@name */
	struct u64map pids;	/* pids seen, once each */
	uint64_t count;		/* processes, counted once each */
	struct {
		char comm[16];
		uint64_t count;
	} names[CHILDREN_NAMES];/* the first distinct command names */
	uint64_t other_names;	/* processes named otherwise */
	/* --follow-children: a descendant handed over its memfd (fd, ours
	 * to close); NULL: counted as unprofiled, the fd closed */
	void (*on_follow)(void *ctx, pid_t pid, const char *comm, int fd);
	/* the launched process main_pid exec'd and its new image handed
	 * over its memfd (fd, ours to close); NULL: counted, fd closed */
	void (*on_exec)(void *ctx, pid_t pid, const char *comm, int fd);
	pid_t main_pid;
	void *ctx;
	/* hand-overs read but not yet given to on_follow, oldest first */
	struct {
		pid_t pid;
		int fd;
		char comm[16];
	} pending[CHILDREN_PENDING];
	unsigned int pending_head, pending_len;
};

/* Bind a fresh abstract datagram socket for this tracer's session and set
 * c->env for the program's environment.  0 or -errno. */
int children__open(struct children *c);

/* Read every note waiting on the socket (never blocks); hand-overs go to
 * on_follow, the socket read empty again after each, and the launched
 * process's own to on_exec at once. */
void children__drain(struct children *c);

/* One line: "N child processes ran with the agent and were not profiled
 * (cc1 x4, as x4...)", or "" if none. */
void children__summary(const struct children *c, char *buf, size_t size);

void children__close(struct children *c);

#endif /* PA_TRACER_CHILDREN_H */
