/* SPDX-License-Identifier: MIT */
/*
 * x86_64.h - x86-64 for arch.h.
 *
 * Frame records are {saved rbp, return address} at rbp, pushed by the call
 * and the prologue, so the caller's stack pointer after the return is the
 * record's address plus 16.  glibc's TCB (tcbhead_t) is at %fs:0 and
 * holds its own address at %fs:0 and %fs:16; a thread's stack ends just
 * below it.  One add or cmpxchg instruction without a lock prefix is
 * atomic against the thread's own signal handlers, which is all a
 * thread-owned count needs, and costs a plain add.
 */
#ifndef PA_ARCH_X86_64_H
#define PA_ARCH_X86_64_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

#define PA_ARCH_NAME	"x86_64"
#define PA_ARCH_EM	62		/* EM_X86_64 */
#define PA_ARCH_AUDIT	0xc000003eu		/* AUDIT_ARCH_X86_64 */
#define PA_ARCH_R_JUMP_SLOT	7	/* R_X86_64_JUMP_SLOT */
#define PA_ARCH_R_GLOB_DAT	6	/* R_X86_64_GLOB_DAT */

#define PA_DWARF_FP	6		/* rbp */
#define PA_DWARF_SP	7		/* rsp */
#define PA_DWARF_RA	16		/* the return address column */
#define PA_DWARF_LR	(-1)
#define PA_DWARF_NREGS	17

/* the agent's unwind tables (agent/cfi.c) follow this architecture's
 * rules: --unwind auto walks by them */
#define PA_ARCH_AGENT_CFI	1

/* __restore_rt returns to the ucontext: rt_sigframe's pretcode popped */
#define PA_ARCH_SIGFRAME_UC	0
#define PA_ARCH_UC_PC	offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP])
#define PA_ARCH_UC_SP	offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP])
#define PA_ARCH_UC_FP	offsetof(ucontext_t, uc_mcontext.gregs[REG_RBP])
#define PA_ARCH_UC_LR	((size_t)-1)

static inline uintptr_t pa_arch_tp(void)
{
	uintptr_t tp;

	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return tp;
}

/* tcbhead_t.self, what pthread_self returns (not pthread_self itself:
 * before glibc 2.34 libc.so.6's returns 0 without libpthread.so.0) */
static inline uintptr_t pa_arch_thread_top(void)
{
	uintptr_t self;

	__asm__("mov %%fs:16, %0" : "=r"(self));
	return self;
}

static inline int64_t pa_arch_thread_add(int64_t *p, int64_t v)
{
	int64_t old = v;

	__asm__ volatile("xaddq %0, %1" : "+r"(old), "+m"(*p) : : "cc");
	return old + v;
}

static inline bool pa_arch_thread_cas(int64_t *p, int64_t *expected,
				      int64_t v)
{
	int64_t old = *expected;
	bool same;

	__asm__ volatile("cmpxchgq %3, %1"
			 : "+a"(old), "+m"(*p), "=@ccz"(same)
			 : "r"(v) : "memory");
	*expected = old;
	return same;
}

static inline bool pa_arch_count_inc(uint64_t *count)
{
	__asm__ volatile("addq $1, %0" : "+m"(*count) : : "memory");
	return true;
}

/* "mov %rsp,%rbp" within the first len bytes, after a "push %rbp" (GCC
 * at -O2 schedules other instructions between the two), an endbr64 first
 * perhaps. */
static inline bool pa_arch_frame_prologue(const uint8_t *p, size_t len)
{
	size_t i, j;

	if (len >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e &&
	    p[3] == 0xfa) {
		p += 4;
		len -= 4;
	}
	for (i = 0; i + 3 <= len; i++) {
		if (p[i] != 0x48 || p[i + 1] != 0x89 || p[i + 2] != 0xe5)
			continue;
		for (j = 0; j < i; j++)
			if (p[j] == 0x55)
				return true;
		return false;
	}
	return false;
}

/* a return address as the call made it (nothing signs them here) */
static inline uint64_t pa_arch_strip_ra(uint64_t ra)
{
	return ra;
}

static inline void pa_arch_relax(void)
{
	__builtin_ia32_pause();
}

#endif
