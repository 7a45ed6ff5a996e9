/* SPDX-License-Identifier: MIT */
/*
 * readings_cgroup.h - what a process's memory cgroup is charged, v1 or v2.
 */
#ifndef PA_TRACER_CGROUP_H
#define PA_TRACER_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>
#include "kvfile.h"

/* A reading of one file or one derived figure. */
struct cg_value {
	uint64_t value;
	bool present;		/* false: the file or key is not there */
	bool unlimited;		/* "max" (v2) or the v1 no-limit value */
};

/* Names both versions map onto, where the meaning is the same. */
enum cg_common {
	CG_USAGE, CG_LIMIT, CG_HIGH, CG_PEAK, CG_ANON, CG_FILE, CG_KERNEL,
	CG_SLAB, CG_SHMEM, CG_WORKINGSET_REFAULTS, CG_PAGE_FAULTS,
	CG_MAJOR_PAGE_FAULTS, CG_OOM_KILL,
	CG_COMMON_COUNT
};
extern const char *const cgroup_common_names[CG_COMMON_COUNT];
/* true for counters (Prometheus _total), false for gauges */
extern const bool cgroup_common_is_counter[CG_COMMON_COUNT];

#define CG_MAX_FILES 8

struct cg_pressure {
	bool present;
	double avg10, avg60, avg300;
	uint64_t total_us;
};

struct cgroup_reading {
	int version;			/* 1 or 2; 0: none found (see why) */
	char why[256];
	char path[PATH_MAX];		/* as /proc/PID/cgroup gives it */
	char dir[PATH_MAX];		/* the directory read */
	struct { const char *name; struct cg_value v; } files[CG_MAX_FILES];
	int nfiles;			/* the single-number files, in order */
	struct cg_value common[CG_COMMON_COUNT];
	struct kvset stat;		/* memory.stat, every key */
	bool has_stat;
	struct kvset events;		/* v2 memory.events */
	bool has_events;
	struct kvset oom_control;	/* v1 memory.oom_control */
	bool has_oom_control;
	struct cg_pressure some, full;	/* v2 memory.pressure */
	char problems[256];		/* files there but unreadable */
};

/*
 * Find the memory cgroup of pid from PROC_ROOT/PID/cgroup and read it.
 * sys_root NULL: the cgroup mounts are found in /proc/self/mountinfo;
 * otherwise they are taken to be SYS_ROOT/fs/cgroup (v2, or its
 * "unified" subdirectory) and SYS_ROOT/fs/cgroup/memory (v1).  v2 is
 * read when the process's v2 cgroup has memory.stat or memory.current,
 * else v1.  Missing files are left absent.  Returns 0 (also when no memory
 * cgroup was found: version 0 and why say so), -ESRCH when
 * PROC_ROOT/PID/cgroup cannot be read, or -ENOMEM.
 */
int cgroup__read(struct cgroup_reading *cg, const char *proc_root,
		 const char *sys_root, pid_t pid);

/*
 * Read again the cgroup an earlier reading found (its version, path and
 * dir), without asking /proc: the process may be gone, its cgroup not.
 * 0 (a directory that is no longer there: version 0 and why say so) or
 * -ENOMEM.
 */
int cgroup__reread(struct cgroup_reading *cg,
		   const struct cgroup_reading *found);
void cgroup__fini(struct cgroup_reading *cg);

#endif /* PA_TRACER_CGROUP_H */
