/* SPDX-License-Identifier: MIT */
/*
 * procmem.h - what the kernel says a process costs: smaps_rollup, status.
 */
#ifndef PA_TRACER_PROCMEM_H
#define PA_TRACER_PROCMEM_H

#include <sys/types.h>
#include "kvfile.h"

/* The keys reported, in this order; others a kernel adds are kept too. */
extern const char *const procmem_smaps_keys[];	/* NULL-terminated */
extern const char *const procmem_status_keys[];

struct procmem {
	int smaps_err;		/* 0, or -errno reading smaps_rollup */
	int status_err;
	struct kvset smaps;	/* bytes */
	struct kvset status;	/* bytes, and Threads as a count */
};

/*
 * Read PROC_ROOT/PID/smaps_rollup and PROC_ROOT/PID/status.  A file that
 * cannot be read leaves its error in the struct (the other is still read).
 * Returns 0, -ESRCH when neither could be read, or -ENOMEM.
 */
int procmem__read(struct procmem *pm, const char *proc_root, pid_t pid);
void procmem__fini(struct procmem *pm);

#endif /* PA_TRACER_PROCMEM_H */
