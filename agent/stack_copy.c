// SPDX-License-Identifier: MIT
/*
 * stack_copy.c - the registers and stack bytes a sample carries for DWARF
 * unwinding (--unwind dwarf, or auto where frame pointers cannot be
 * trusted), as perf --call-graph dwarf takes them.
 *
 * What is copied is the state of the allocator's caller at its call, read
 * from the hook's own frame record (the agent keeps frame pointers): its pc
 * (the return address, frames[0]), its stack pointer (the hook's CFA:
 * struct hook_frame) and its frame pointer (saved in the record).  The
 * other callee-saved registers are already in the agent's frames by then;
 * real code's CFI finds its frames from the stack and frame pointers.  Starting at the caller means no
 * agent frame is copied, and none has to be stripped by the tracer.
 *
 * The bytes are those from the caller's stack pointer up to stack_bytes
 * further or the end of the stack mapping that the frame-pointer walk
 * checked (struct fp_walk).  On the thread's own stack they are read with
 * memcpy: the range lies in one mapping of the thread's stack, committed
 * below its top.  On any other stack (a coroutine's, a signal stack) the
 * walk's bounds only say the range is mapped, not readable - a coroutine
 * library may have moved its guard pages since - so the bytes are read with
 * process_vm_readv on ourselves, which returns short instead of faulting;
 * what it could not read is left zero (where an unwind then stops).
 *
 * The mode and size are one 64-bit word (pa_agent.unwind_cfg), changed by
 * attach while samplers read it, so a sampler never pairs one attach's
 * mode with another's size.  Async-signal-safe; nothing here allocates.
 */
#include <elf.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "agent.h"

uint64_t stack_copy__cfg(uint32_t mode, uint32_t stack_bytes)
{
	if (mode == PA_UNWIND_FP)
		stack_bytes = 0;
	return (uint64_t)mode | (uint64_t)stack_bytes << 32;
}

uint32_t stack_copy__size(struct hook_frame fp, const uint64_t *frames,
			  unsigned int n, const struct fp_walk *walk)
{
	uint64_t cfg = __atomic_load_n(&pa_agent.unwind_cfg, __ATOMIC_RELAXED);
	uint32_t mode = (uint32_t)cfg, want = (uint32_t)(cfg >> 32);
	uintptr_t sp = fp.sp;

	if (mode == PA_UNWIND_FP || !want || !n || !walk->stack_hi ||
	    sp >= walk->stack_hi)
		return 0;
	if (want > PA_STACK_BYTES_MAX)
		want = PA_STACK_BYTES_MAX;
	if (mode == PA_UNWIND_AUTO && walk->complete && pa_unwind_check)
		;	/* copied for the check */
	else if (mode == PA_UNWIND_AUTO &&
		 (walk->complete || !fp_trust__walk_needs_copy(frames, n, walk)))
		return 0;
	return walk->stack_hi - sp < want ? (uint32_t)(walk->stack_hi - sp)
					  : want;
}

/* size bytes at from, or zeros where they cannot be read. */
static void read_foreign(uint8_t *to, uintptr_t from, uint32_t size)
{
	struct iovec local = { to, size };
	struct iovec remote = { (void *)from, size };
	ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);

	if (n < 0)
		n = 0;
	if ((size_t)n < size)
		memset(to + n, 0, size - (size_t)n);
}

void stack_copy__fill(struct pa_stack_copy *c, struct hook_frame fp,
		      uint64_t pc, uint32_t size, const struct fp_walk *walk)
{
	const uintptr_t *record = (const uintptr_t *)fp.fp;

	c->arch = PA_ARCH_EM;
	c->reserved = 0;
	c->size = size;
	memset(c->regs, 0, sizeof(c->regs));
	c->regs[PA_DWARF_FP] = record[0];
	c->regs[PA_DWARF_SP] = fp.sp;
	c->regs[PA_DWARF_RA] = pc;
	c->regs_mask = 1ull << PA_DWARF_FP | 1ull << PA_DWARF_SP |
		       1ull << PA_DWARF_RA;
	if (walk->own_stack)
		memcpy(c->stack, (const void *)fp.sp, size);
	else
		read_foreign(c->stack, fp.sp, size);
}
