/* SPDX-License-Identifier: MIT */
/*
 * unwind.h - DWARF unwinding of a copied stack, with libdwfl.
 *
 * Given some registers of a thread and a copy of the top of its stack (as
 * the agent records them, or perf --call-graph dwarf), the return
 * addresses of its frames, from the modules' .eh_frame or .debug_frame.
 * Memory is read from the copy, and from the modules' files for addresses
 * in them; nothing is read from a live process.
 */
#ifndef PA_ELF_UNWIND_H
#define PA_ELF_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct unwinder;

/*
 * An architecture's stack copies (struct pa_stack_copy): regs[0..nregs)
 * are DWARF registers, sp the stack pointer's number, pc the slot of the
 * return address column (the pc, given apart to libdwfl).
 */
struct unwind_arch {
	uint16_t em;			/* ELF e_machine */
	unsigned int nregs, sp, pc;
};

/* EM_X86_64's or EM_AARCH64's; NULL for another. */
const struct unwind_arch *unwind__arch(uint16_t em);

/* The state of a thread at a call: DWARF register numbers of arch. */
struct unwind_regs {
	uint16_t arch;			/* ELF e_machine: unwind__arch's */
	uint64_t mask;			/* bit i: regs[i] is known */
	const uint64_t *regs;		/* nregs of them */
	unsigned int nregs;
	uint64_t pc;			/* a return address: the caller of
					   the function it returns to made
					   the call at pc - 1 */
	uint64_t stack_start;		/* address of stack[0] */
	const uint8_t *stack;
	size_t stack_size;
};

/* Why an unwind stopped. */
enum unwind_end {
	UNWIND_OUTERMOST,	/* the CFI says this is the outermost frame */
	UNWIND_CUT,		/* could go no further (no CFI, memory
				   outside the copy, a bad rule) */
	UNWIND_MAX,		/* max frames */
};

/* For arch (an ELF e_machine); NULL with errno set (EAFNOSUPPORT: an
 * architecture this build cannot unwind). */
struct unwinder *unwinder__new(uint16_t arch);
void unwinder__free(struct unwinder *u);

/*
 * Add a module: the ELF file (fd is duplicated, the caller keeps its own),
 * its run-time range [start, end) and load bias; debug_fd (or -1) a
 * separate file with .debug_frame.  The same file at the same bias again
 * is a no-op; another file over the range of a known one is -EEXIST.  0
 * or -errno (-ENOEXEC: libdwfl cannot use the file).
 */
int unwinder__add_module(struct unwinder *u, const char *name, int fd,
			 int debug_fd, uint64_t start, uint64_t end,
			 uint64_t bias);

/* Whether addr is in a module added. */
bool unwinder__covers(struct unwinder *u, uint64_t addr);

/*
 * Whether process pid's vDSO, mapped at [start, end), is this process's
 * own image (AT_SYSINFO_EHDR), byte for byte: the kernel maps the same
 * image into every process of a kind.  Read while the process lives.
 */
bool unwinder__vdso_is_own(pid_t pid, uint64_t start, uint64_t end);

/*
 * Add a vDSO that unwinder__vdso_is_own() found to be this process's own,
 * mapped at [start, end): the image is given to libdwfl from a memfd.  0,
 * or a negative errno (-ENOENT: not an image of this size).
 */
int unwinder__add_vdso(struct unwinder *u, uint64_t start, uint64_t end);

/* Whether the last unwind needed memory above its stack copy: the stack
 * went on past what was copied. */
bool unwinder__past_copy(const struct unwinder *u);

/*
 * Unwind from regs: frames[0] = regs->pc, then each caller's return
 * address, at most max of them.  Returns how many (>= 1), or -EINVAL for
 * registers that cannot start an unwind; *end says why it stopped.
 */
int unwinder__unwind(struct unwinder *u, const struct unwind_regs *regs,
		     uint64_t *frames, unsigned int max, enum unwind_end *end);

#endif /* PA_ELF_UNWIND_H */
