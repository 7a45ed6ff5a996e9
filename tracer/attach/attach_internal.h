/* SPDX-License-Identifier: MIT */
/*
 * attach_internal.h - what attach.c shares with unload.c, which takes an
 * injected agent out again: finding modules in the target's maps, their
 * symbols, and a thread to borrow, by attach.c's rules.
 */
#ifndef PA_TRACER_ATTACH_INTERNAL_H
#define PA_TRACER_ATTACH_INTERNAL_H

#include <stdint.h>
#include <sys/types.h>
#include "elf/maps.h"
#include "inject.h"

/* The first mapping, at file offset 0, of the agent (the file at agent,
 * or one loaded from a memfd of ours), of libc, of libdl; NULL if none. */
const struct maps_entry *attach__agent_map(const struct proc_maps *pm,
					   const char *agent);
const struct maps_entry *attach__libc_map(const struct proc_maps *pm);
const struct maps_entry *attach__libdl_map(const struct proc_maps *pm);

/* The file mapped at m, opened (ours: our agent's file, for an agent
 * memfd that map_files does not let us open).  fd or -errno. */
int attach__open_mapped(pid_t pid, const struct maps_entry *m,
			const char *ours);

/* The address in the target of function name of the file mapped at m.
 * 0 or -errno (-ENOENT: no such symbol). */
int attach__symbol(pid_t pid, const struct maps_entry *m, const char *ours,
		   const char *name, uint64_t *addr);

/* Borrow a thread of pid (an idle one, else a busy one at a system call
 * it may be borrowed at).  0 or -errno with why (ATTACH_WHY_SIZE). */
int attach__borrow(struct remote *r, pid_t pid, int timeout_ms, char *why);

#endif /* PA_TRACER_ATTACH_INTERNAL_H */
