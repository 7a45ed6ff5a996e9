/* SPDX-License-Identifier: MIT */
/*
 * entry.h - patch the entries of an allocator linked into the program
 * (entry.c).
 */
#ifndef PA_TRACER_ENTRY_H
#define PA_TRACER_ENTRY_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "pprof_alloc_abi.h"

struct entry_fn {
	char name[32];			/* "je_malloc" */
	unsigned int family, fn, slot;	/* enum pa_entry_fn; slot in page */
	uint64_t addr, size;		/* in the target */
	uint64_t file_value;		/* the symbol's value */
	unsigned int len;		/* bytes the moved instructions took */
	bool was_patched;		/* our jump was there already */
	uint8_t orig[32];		/* the file's bytes there */
	uint8_t patch[16];		/* the jump to the slot */
	unsigned int patch_len;		/* its bytes (<= len) */
	uint64_t real_at, real_to;	/* the hook's pointer, its value */
	uint8_t code[192];		/* the slot in the entry page */
	char refused[160];		/* why not, or "" */
};

struct entry_plan {
	pid_t pid;
	char program[PATH_MAX];
	const char *allocator;		/* "jemalloc", ... (static) */
	struct pa_entry_table table;	/* the agent's, checked */
	uint64_t table_addr, agent_lo, agent_hi;
	unsigned int n, patched, restored;
	uint64_t mallctl_at;		/* the program's own mallctl, or 0 */
	uint64_t longest_stop_ns;	/* the threads' longest hold */
	struct entry_fn fn[PA_ENTRY_FAMILIES * PA_EP_FNS];
};

/* Does the ELF file at fd define any function entry patching hooks? */
bool entry__file_wants(int fd);
/* The same for the file at path (false if it cannot be read). */
bool entry__path_wants(const char *path);
/* The allocator the ELF file at fd has linked in, named from its
 * symbols, or "an allocator". */
const char *entry__allocator_of(int fd);

/*
 * Find the program's allocator functions in process pid and plan their
 * patching into the entry page of the agent (our file at agent, or its
 * memfd copy).  0 with p->n == 0: nothing to patch; 0 with functions, some
 * perhaps refused (fn[i].refused says why); or -errno with why.
 */
int entry__plan(pid_t pid, const char *agent, struct entry_plan *p,
		char *why, size_t size);
/* Patch every function the plan did not refuse, all threads stopped. */
int entry__apply(struct entry_plan *p, char *why, size_t size);
/* Put the file's bytes back where our jumps are, all threads stopped. */
int entry__restore(struct entry_plan *p, char *why, size_t size);
/* One line: which allocator, which functions are hooked, which not and
 * why. */
void entry__describe(const struct entry_plan *p, char *buf, size_t size);

#endif /* PA_TRACER_ENTRY_H */
