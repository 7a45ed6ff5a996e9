/* SPDX-License-Identifier: MIT */
/*
 * cfi.h - compact unwind tables from a module's .eh_frame, for the agent.
 *
 * A table is an array of rows sorted by address; a row holds from its
 * address up to the next row's, and says how to find the caller's frame
 * from a frame of code there: the CFA (canonical frame address: the stack
 * pointer before the call) as rsp or rbp plus an offset, the return
 * address at CFA - 8 (the x86-64 ABI's), and where the caller's rbp was
 * saved, if it was.  The shape of the kernel's ORC and of the eBPF
 * profilers' stack deltas: a frame is a binary search and a few loads.
 */
#ifndef PA_AGENT_CFI_H
#define PA_AGENT_CFI_H

#include <stddef.h>
#include <stdint.h>

enum cfi_kind {
	CFI_NONE = 0,	/* no FDE here: code without tables */
	CFI_FRAME,	/* CFA = reg + cfa_off; RA at CFA - 8 */
	CFI_PLT,	/* a PLT entry: CFA = rsp + cfa_off, + 8 from byte
			   rbp_off of each 16-byte entry on */
	CFI_SIGNAL,	/* a signal trampoline: the interrupted registers are
			   in the ucontext at rsp */
	CFI_OUTERMOST,	/* the thread's first frame: no caller */
	CFI_OPAQUE,	/* an FDE whose rule we cannot follow (a CFA in rbx,
			   as _dl_runtime_resolve's): the walk ends here */
	CFI_DRAP,	/* a realigned frame: CFA = the word at rbp + cfa_off,
			   RA at CFA - 8, the caller's rbp at rbp */
};

enum cfi_reg {
	CFI_RSP = 0,
	CFI_RBP = 1,
};

/* rbp_off when the caller's rbp is this frame's rbp (not saved) */
#define CFI_RBP_SAME	0
/* rbp_off when the caller's rbp is lost (a rule we do not follow) */
#define CFI_RBP_LOST	INT16_MIN

struct cfi_row {
	uint32_t pc;		/* from the module's load bias */
	int32_t cfa_off;
	int16_t rbp_off;	/* caller's rbp at CFA + rbp_off, or above */
	uint8_t cfa_reg;	/* enum cfi_reg */
	uint8_t kind;		/* enum cfi_kind */
};

/*
 * What the builder reads: the module's .eh_frame_hdr and the readable
 * memory around its .eh_frame, as [lo, hi) of the process's addresses,
 * with bias the module's load bias.  Nothing outside [lo, hi) is read.
 */
struct cfi_source {
	const uint8_t *hdr;		/* .eh_frame_hdr */
	uintptr_t lo, hi;		/* readable, holding hdr and .eh_frame */
	uintptr_t bias;
	uintptr_t text_lo, text_hi;	/* the module's code: FDEs elsewhere
					   are ignored */
	const int *cancel;		/* non-zero: the build stops (NULL,
					   as cfi__source_of leaves it:
					   never) */
};

/* What building found, for the readings and the tests. */
struct cfi_stats {
	uint32_t fdes;		/* FDEs read */
	uint32_t bad_fdes;	/* ... that could not be read: no rows */
	uint32_t none_rows;	/* rows the table cannot describe */
	uint32_t cancelled;	/* src->cancel stopped the build: no rows */
};

struct dl_phdr_info;
/*
 * The source of the table of the module loaded at info (dl_iterate_phdr's,
 * while the module is held loaded): its mapped .eh_frame_hdr, the part of
 * the segment holding it that the file backs, and its code (its executable
 * segments).  0, or -ENOENT if it has no .eh_frame_hdr or no code.
 */
int cfi__source_of(const struct dl_phdr_info *info, struct cfi_source *src);

/*
 * The upper bound on the rows of the table for src: the caller maps that
 * many for cfi__build (0: no usable .eh_frame_hdr).
 */
size_t cfi__max_rows(const struct cfi_source *src);
/*
 * Build the table into rows (cap entries); returns the number of rows
 * written (0: no usable .eh_frame_hdr, or cancelled).  Never reads outside the
 * source's [lo, hi), never writes past cap, terminates on any input.
 */
size_t cfi__build(const struct cfi_source *src, struct cfi_row *rows,
		  size_t cap, struct cfi_stats *st);

/* The row for pc (bias-relative) in a table of n rows, or NULL. */
const struct cfi_row *cfi__find(const struct cfi_row *rows, size_t n,
				uint32_t pc);

#endif /* PA_AGENT_CFI_H */
