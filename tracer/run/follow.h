/* SPDX-License-Identifier: MIT */
/*
 * follow.h - --follow-children: the launched program's descendants, each
 * profiled by a tracer process of its own.
 */
#ifndef PA_TRACER_FOLLOW_H
#define PA_TRACER_FOLLOW_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A follower's exit status: its profile written, nothing sampled (no
 * profile), or not written (it said why). */
#define FOLLOW_WROTE	0
#define FOLLOW_FAILED	1
#define FOLLOW_EMPTY	3

struct follower {
	pid_t pid;		/* the process followed */
	pid_t tracer;		/* the process following it; 0 once reaped */
	char *output;		/* its profile's path */
	bool told;		/* told that its process exec'd */
};

struct follow {
	char base[PATH_MAX];	/* the main profile's path without .pb.gz */
	struct follower *v;
	size_t n, cap;
	size_t running;
	uint64_t wrote, empty, failed;
	uint64_t adopted_ended;	/* orphaned descendants reaped */
	uint64_t refused;	/* hand-overs after we were told to stop */
	uint64_t gone;		/* ... of processes gone before they could
				   be looked at */
};

/* Profiles of descendants go beside output: OUTPUT-BASE.PID.COMM.pb.gz. */
void follow__init(struct follow *f, const char *output);

/* The path for process pid's profile, named comm (sanitized; a second
 * image of the same process name gets .2, ...): malloc'd, or NULL. */
char *follow__name(const struct follow *f, pid_t pid, const char *comm);

/* The tracer following pid's latest image, or 0 if none runs (or it was
 * told its image exec'd). */
pid_t follow__tracer_of(const struct follow *f, pid_t pid);

/* tracer was told (SIGUSR1) that the image it follows exec'd. */
void follow__told(struct follow *f, pid_t tracer);

/* Whether pid is root, a descendant of root, or (adopted as the
 * subreaper's) of this process: only those hand over memfds; any local
 * process can write to the session's abstract socket.  1 yes, 0 no,
 * -ESRCH: pid is gone already (a short-lived one: nobody can tell). */
int follow__is_descendant(pid_t pid, pid_t root);

/* A hand-over after we were told to stop: the agent of fd's memfd is
 * turned off and stops waiting for us; fd is closed. */
void follow__refuse(struct follow *f, int fd);

/* tracer now follows pid and writes output (taken over).  0 or -ENOMEM
 * (output is then freed). */
int follow__add(struct follow *f, pid_t pid, pid_t tracer, char *output);

/* Reap the followers, and the orphaned descendants adopted as their
 * subreaper, that have ended - all but keep, the launched child, whose
 * status its caller takes (never blocks). */
void follow__reap(struct follow *f, pid_t keep);

/* Whether we have any child left (followers, adopted descendants). */
bool follow__descendants(void);

/* Send sig to every follower still running. */
void follow__signal(const struct follow *f, int sig);

/* "followed N processes: wrote M profiles (BASE.*.pb.gz), ..." or "". */
void follow__summary(const struct follow *f, char *buf, size_t size);

void follow__fini(struct follow *f);

#endif /* PA_TRACER_FOLLOW_H */
