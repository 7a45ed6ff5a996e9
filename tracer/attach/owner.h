/* SPDX-License-Identifier: MIT */
/*
 * owner.h - one tracer at a time per agent.
 */
#ifndef PA_TRACER_OWNER_H
#define PA_TRACER_OWNER_H

#include <stddef.h>
#include <sys/types.h>
#include "pprof_alloc_abi.h"

/*
 * Make this process the owner of the agent whose header is hdr (the agent
 * of process target), unless another tracer alive owns it: then -EBUSY
 * with why (size bytes) naming it (its PID, and serve's address).  An owner that died
 * is taken over.  addr is this tracer's listen address, or NULL.
 * 0 or -errno.
 */
int owner__claim(struct pa_header *hdr, pid_t target, const char *addr,
		 char *why, size_t size);

/* Give the agent up, if this process owns it. */
void owner__release(struct pa_header *hdr);

#endif /* PA_TRACER_OWNER_H */
