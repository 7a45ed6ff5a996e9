/* SPDX-License-Identifier: MIT */
/*
 * unwind_cfi.h - the agent's stack walk by unwind tables (unwind_cfi.c).
 */
#ifndef PA_AGENT_UNWIND_CFI_H
#define PA_AGENT_UNWIND_CFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where the walk starts: a return address, and the caller's stack pointer
 * and rbp at the call. */
struct cfi_regs {
	uintptr_t pc, sp, bp;
};

enum cfi_end {
	CFI_END_OUTERMOST,	/* the thread's entry: the whole stack */
	CFI_END_ZERO,		/* a return address of 0 */
	CFI_END_NO_TABLE,	/* an address in no module with a table */
	CFI_END_NO_RULE,	/* an address the table has no rule for */
	CFI_END_CUT,		/* the stack said something impossible */
};

struct cfi_walk {
	enum cfi_end end;
	bool truncated;		/* max frames reached */
	/* the remembered walk this one was (found or kept), for a tag: the
	 * caller's name for its frames (unwind_cfi__memo_tag); NULL: none */
	void *memo;
	uint64_t memo_seq;
	uint64_t tag;		/* the tag it had; 0: none */
};

/*
 * The stacks a walk may read: the one it starts on, [lo, hi) (lo at most
 * the start's sp; hi the top of its mapping), and, when that is a signal's
 * alternate stack, the thread's own, [home_lo, home_hi), to which a signal
 * frame may lead once (both 0 if there is none to go to).
 */
struct cfi_stack {
	uintptr_t lo, hi;
	uintptr_t home_lo, home_hi;
};

/*
 * Walk from start through stack: the return addresses into frames
 * (start->pc first), at most max; frames has room for max and for at
 * least CFI_FRAMES_ROOM (a remembered walk is copied whole, and only the
 * count returned are its frames).  A frame interrupted by a signal is
 * written as its pc + 1, so that, like a return address, the byte before
 * is in its instruction.  Reads nothing but the tables and the stack
 * words between a frame's stack pointer and the top of its stack.
 */
#define CFI_FRAMES_ROOM	12u

unsigned int unwind_cfi(const struct cfi_regs *start,
			const struct cfi_stack *stack, uint64_t *frames,
			unsigned int max, struct cfi_walk *walk);

/* Tag w's remembered walk (w->memo) with tag (not 0), if the memo still
 * holds that very walk: a later walk that is the same gets it back in
 * walk->tag.  Async-signal-safe. */
void unwind_cfi__memo_tag(const struct cfi_walk *w, uint64_t tag);

/* Unmap every table and forget them: an injected agent released
 * (pprof_alloc_release), while no thread of the process runs. */
void unwind_cfi__free(void);

/* A forked child, in the atfork handler: no table is built until
 * unwind_cfi__loader_usable() says dl_iterate_phdr may be called again
 * (a module scan returned). */
void unwind_cfi__forget(void);
void unwind_cfi__loader_usable(void);

/* A module scan saw modules loaded: code that was in none may be now. */
void unwind_cfi__modules_added(void);

/* The tables' memory, and the modules with a table. */
size_t unwind_cfi__memory(unsigned int *modules);
/* Write both into the memfd header, if there is one yet (after a table
 * is built, and when a memfd is made). */
void unwind_cfi__publish(void);

/*
 * The builder: the calling thread (the agent's own).  ahead: it builds the
 * table of every module loaded (a program that has not started yet), and
 * of those a dlopen loads later (wake, async-signal-safe, ends its sleep),
 * a table a call of build_wanted (call it again while it returns true);
 * walks on other threads that meet the one it is building wait for it.
 * off: the builder ends.
 */
void unwind_cfi__builder_on(bool ahead, void (*wake)(void));
void unwind_cfi__builder_off(void);
bool unwind_cfi__build_wanted(void);
/* The program exits: the build under way stops (its module gets no table)
 * and no other starts. */
void unwind_cfi__cancel_builds(void);

#endif /* PA_AGENT_UNWIND_CFI_H */
