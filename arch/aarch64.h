/* SPDX-License-Identifier: MIT */
/*
 * aarch64.h - 64-bit Arm for arch.h.
 *
 * Frame records are {saved x29, x30} at x29, but GCC puts the record at
 * the bottom of the frame, under the locals, so the caller's stack
 * pointer is not the record's address plus 16: a hook takes it from its
 * own CFA (__builtin_dwarf_cfa) instead.  The thread pointer (tpidr_el0)
 * points at glibc's 16-byte TCB; struct pthread lies just below it and
 * the thread's stack below that (TLS variant I).  A signal handler returns
 * to the vDSO's __kernel_rt_sigreturn with the stack pointer at the
 * kernel's struct rt_sigframe { siginfo_t info; struct ucontext uc; }.
 * Loads and stores of a thread's own counts need no atomics against its
 * own signal handlers only when they are one instruction; a plain add is
 * three (ldr, add, str), so a count its thread owns takes the generic
 * path (pa_arch_count_inc says it cannot).
 */
#ifndef PA_ARCH_AARCH64_H
#define PA_ARCH_AARCH64_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <ucontext.h>

#define PA_ARCH_NAME	"aarch64"
#define PA_ARCH_EM	183		/* EM_AARCH64 */
#define PA_ARCH_AUDIT	0xc00000b7u		/* AUDIT_ARCH_AARCH64 */
#define PA_ARCH_R_JUMP_SLOT	1026	/* R_AARCH64_JUMP_SLOT */
#define PA_ARCH_R_GLOB_DAT	1025	/* R_AARCH64_GLOB_DAT */

#define PA_DWARF_FP	29		/* x29 */
#define PA_DWARF_SP	31		/* sp */
#define PA_DWARF_RA	32		/* the return address column: the pc
					   (libdwfl's "pc" for aarch64) */
#define PA_DWARF_LR	30		/* x30 */
#define PA_DWARF_NREGS	33

/* not yet: --unwind auto walks frame records, and copies the stack
 * where a module does not keep them (agent/fp_trust.c) */
#define PA_ARCH_AGENT_CFI	0

#define PA_ARCH_SIGFRAME_UC	sizeof(siginfo_t)
#define PA_ARCH_UC_PC	offsetof(ucontext_t, uc_mcontext.pc)
#define PA_ARCH_UC_SP	offsetof(ucontext_t, uc_mcontext.sp)
#define PA_ARCH_UC_FP	offsetof(ucontext_t, uc_mcontext.regs[29])
#define PA_ARCH_UC_LR	offsetof(ucontext_t, uc_mcontext.regs[30])

static inline uintptr_t pa_arch_tp(void)
{
	return (uintptr_t)__builtin_thread_pointer();
}

/* glibc maps a thread's stack with its struct pthread at the top, just
 * under the TCB the thread pointer points to */
static inline uintptr_t pa_arch_thread_top(void)
{
	return pa_arch_tp();
}

static inline int64_t pa_arch_thread_add(int64_t *p, int64_t v)
{
	return __atomic_add_fetch(p, v, __ATOMIC_RELAXED);
}

static inline bool pa_arch_thread_cas(int64_t *p, int64_t *expected,
				      int64_t v)
{
	return __atomic_compare_exchange_n(p, expected, v, 0, __ATOMIC_RELAXED,
					   __ATOMIC_RELAXED);
}

static inline bool pa_arch_count_inc(uint64_t *count)
{
	(void)count;
	return false;
}

/* "mov x29, sp" or "add x29, sp, #imm" (the record's address into x29)
 * within the first len bytes, after the record's "stp x29, x30" (GCC puts
 * a paciasp or bti c first, and may lower sp between them). */
static inline bool pa_arch_frame_prologue(const uint8_t *p, size_t len)
{
	bool stored = false;
	size_t i;

	for (i = 0; i + 4 <= len; i += 4) {
		uint32_t insn = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 |
				(uint32_t)p[i + 2] << 16 |
				(uint32_t)p[i + 3] << 24;

		/* stp x29, x30, [sp, #imm]{!}: pre-index or signed offset */
		if ((insn & 0xffc07fffu) == 0xa9807bfdu ||
		    (insn & 0xffc07fffu) == 0xa9007bfdu)
			stored = true;
		else if ((insn & 0xffc003ffu) == 0x910003fdu)
			return stored;
	}
	return false;
}

/*
 * A return address without its pointer-authentication code: code built
 * with -mbranch-protection=standard signs x30 (paciasp) before saving it
 * in its frame record, putting a code in the bits above the address.
 * xpaclri strips x30 with the mask the kernel set up; it is in the hint
 * space, so a CPU without PAC runs it as a nop (and its addresses carry
 * no code).
 */
static inline uint64_t pa_arch_strip_ra(uint64_t ra)
{
	register uint64_t lr __asm__("x30") = ra;

	__asm__("hint #7" : "+r"(lr));	/* xpaclri */
	return lr;
}

static inline void pa_arch_relax(void)
{
	__asm__ volatile("yield");
}

#endif
