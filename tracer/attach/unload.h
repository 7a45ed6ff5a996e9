/* SPDX-License-Identifier: MIT */
/*
 * unload.h - after a detach, an injected agent leaves the process
 * (unload.c).
 */
#ifndef PA_TRACER_UNLOAD_H
#define PA_TRACER_UNLOAD_H

#include <sys/types.h>
#include "attach.h"

enum {
	UNLOAD_DONE	= 0,	/* unloaded: nothing of it is left, or why
				   says what stays (the stub, the entry
				   page: a call let go to finish) */
	UNLOAD_STAYS	= 1,	/* off, but loaded: why says why */
	UNLOAD_NOTHING	= 2,	/* not ours to unload (preloaded, or gone) */
};

/*
 * Turn the detached agent of pid off (no thread, no memfd), then unload it
 * with the call stub and the entry page if no thread is inside it and the
 * program holds no copy of its functions' addresses.  UNLOAD_* or -errno
 * (it could not even be turned off), with why (ATTACH_WHY_SIZE) for
 * UNLOAD_STAYS and -errno, and empty or what stays for UNLOAD_DONE.  Threads stopped meanwhile count in
 * st->longest_stop_ns.
 */
int unload__agent(pid_t pid, const struct attach_config *cfg,
		  struct attach_stats *st, char *why);

#endif /* PA_TRACER_UNLOAD_H */
