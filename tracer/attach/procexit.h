/* SPDX-License-Identifier: MIT */
/*
 * procexit.h - how a process ended: from a wait status, or from the zombie
 * of a process that is not our child.
 */
#ifndef PA_TRACER_PROCEXIT_H
#define PA_TRACER_PROCEXIT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* "exited with status N", "was killed by signal N (NAME)"...; *code is the
 * shell's view of it (N, or 128 + the signal). */
void procexit__describe_status(int status, char *buf, size_t len, int *code);
/* Not gone and not a zombie (a zombie that is not ours may stay one). */
bool procexit__alive(pid_t pid);
/* The wait status of pid, which has exited, from its zombie (which may
 * take a moment to become one).  0, or -ESRCH when its parent reaped it. */
int procexit__status(pid_t pid, int *status);
/* How pid, not our child and gone, ended, then suffix; *sigkilled when by
 * SIGKILL, *known cleared when nobody can tell any more. */
void procexit__describe(pid_t pid, const char *suffix, char *ended,
			size_t size, bool *sigkilled, bool *known);
/* The process's comm ("" if unreadable); it changes when it exec()s. */
void procexit__comm(pid_t pid, char *buf, size_t len);

#endif /* PA_TRACER_PROCEXIT_H */
