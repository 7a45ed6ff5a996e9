/* SPDX-License-Identifier: MIT */
/*
 * readings_procmem.h - what the kernel says a process costs: smaps_rollup, status;
 * whether it is still there (its state), and the machine's OOM kills.
 */
#ifndef PA_TRACER_PROCMEM_H
#define PA_TRACER_PROCMEM_H

#include <stdint.h>
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

/* Resident bytes now, from PROC_ROOT/PID/statm (cheap: no page-table
 * walk).  0 or -errno (-EPROTO: not the format). */
int procmem__rss(const char *proc_root, pid_t pid, uint64_t *bytes);

/* The state letter of PROC_ROOT/PID/stat ('R', 'S', 'Z'...).  0 or -errno
 * (-ENOENT: no such file; -EPROTO: not the format). */
int procmem__state(const char *proc_root, pid_t pid, char *state);

/* The OOM kills the kernel counted since boot, machine-wide: oom_kill in
 * PROC_ROOT/vmstat (Linux 4.13+).  0, -ENOENT (no such key) or -errno. */
int procmem__vmstat_oom_kill(const char *proc_root, uint64_t *kills);

#endif /* PA_TRACER_PROCMEM_H */
