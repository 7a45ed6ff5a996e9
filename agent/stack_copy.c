// SPDX-License-Identifier: MIT
/*
 * stack_copy.c - the registers and stack bytes a sample carries for DWARF
 * unwinding (--unwind dwarf, or auto where frame pointers cannot be
 * trusted), as perf --call-graph dwarf takes them.
 *
 * What is copied is the state of the allocator's caller at its call, read
 * from the hook's own frame record (the agent keeps frame pointers): its pc
 * (the return address, frames[0]), its stack pointer (just above that
 * record) and its rbp (saved in the record).  The other callee-saved
 * registers are already in the agent's frames by then; real code's CFI
 * finds its frames from rsp and rbp.  Starting at the caller means no
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

/* x86_64 DWARF register numbers (the psABI's). */
#define DWARF_RBP	6
#define DWARF_RSP	7
#define DWARF_RA	16	/* the return address column: the pc */

uint64_t stack_copy__cfg(uint32_t mode, uint32_t stack_bytes)
{
	if (mode == PA_UNWIND_FP)
		stack_bytes = 0;
	return (uint64_t)mode | (uint64_t)stack_bytes << 32;
}

uint32_t stack_copy__size(uintptr_t fp, const uint64_t *frames,
			  unsigned int n, const struct fp_walk *walk)
{
#ifdef __x86_64__
	uint64_t cfg = __atomic_load_n(&pa_agent.unwind_cfg, __ATOMIC_RELAXED);
	uint32_t mode = (uint32_t)cfg, want = (uint32_t)(cfg >> 32);
	uintptr_t sp = fp + 16;

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
#else
	(void)fp;
	(void)frames;
	(void)n;
	(void)walk;
	return 0;
#endif
}

#ifdef __x86_64__
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
#endif

void stack_copy__fill(struct pa_stack_copy *c, uintptr_t fp, uint64_t pc,
		      uint32_t size, const struct fp_walk *walk)
{
#ifdef __x86_64__
	const uintptr_t *record = (const uintptr_t *)fp;

	c->arch = EM_X86_64;
	c->reserved = 0;
	c->size = size;
	memset(c->regs, 0, sizeof(c->regs));
	c->regs[DWARF_RBP] = record[0];
	c->regs[DWARF_RSP] = fp + 16;
	c->regs[DWARF_RA] = pc;
	c->regs_mask = 1ull << DWARF_RBP | 1ull << DWARF_RSP | 1ull << DWARF_RA;
	if (walk->own_stack)
		memcpy(c->stack, (const void *)(fp + 16), size);
	else
		read_foreign(c->stack, fp + 16, size);
#else
	(void)c;
	(void)fp;
	(void)pc;
	(void)size;
	(void)walk;
#endif
}
