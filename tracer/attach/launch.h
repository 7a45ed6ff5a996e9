/* SPDX-License-Identifier: MIT */
/*
 * launch.h - start a command with the agent preloaded and a memfd given.
 */
#ifndef PA_TRACER_LAUNCH_H
#define PA_TRACER_LAUNCH_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

/*
 * Fork and exec argv (PATH searched) with LD_PRELOAD=agent (prepended to
 * any existing LD_PRELOAD), memfd inherited and named in PPROF_ALLOC_FD,
 * extra ("NAME=VALUE"s, NULL-terminated, or NULL: the session's socket,
 * following) in the environment and the signal mask and dispositions
 * reset.  Returns 0 with *pid set once
 * the exec has succeeded; if it failed, -errno of the exec (the child is
 * reaped), or -ELIBBAD for a program on musl, not run.  *why gets what
 * went wrong.
 */
int launch__spawn(char *const argv[], const char *agent, int memfd,
		  const char *const *extra, const sigset_t *unblock, pid_t *pid,
		  const char **why);

/* Where the agent library is: $PPROF_ALLOC_AGENT, next to the tracer
 * (build tree), or ../lib/pprof-alloc/ (installed).  malloc'd path or NULL
 * with errno set. */
char *launch__find_agent(void);

/* Why the agent never started in the program argv0 ran, in one sentence
 * (an allocator linked into it, static, setuid). */
void launch__why_not_started(const char *argv0, char *buf, size_t size);

/* Does the program argv0 runs define allocator functions itself (an
 * allocator linked in, hooked by patching its entries)? */
bool launch__wants_entry(const char *argv0);

#endif /* PA_TRACER_LAUNCH_H */
