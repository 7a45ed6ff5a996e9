/* SPDX-License-Identifier: MIT */
/*
 * arch.h - what differs between the processors pprof-alloc runs on, behind
 * one small interface: a header per architecture (x86_64.h, aarch64.h), as
 * the kernel's arch/ and libunwind's src/<arch>/ are laid out, picked here
 * by the compiler's target.
 *
 * Each gives, under the same names:
 *
 *   PA_ARCH_NAME, PA_ARCH_EM      its name and ELF e_machine
 *   PA_ARCH_AUDIT                 its AUDIT_ARCH_*, as seccomp sees it
 *   PA_ARCH_R_JUMP_SLOT, _GLOB_DAT  the relocations of a GOT slot that
 *                                 holds a function's address
 *   PA_DWARF_FP, _SP, _RA, _LR    DWARF register numbers: the frame
 *                                 pointer, the stack pointer, the return
 *                                 address column (the pc) and the link
 *                                 register (none on x86_64: -1)
 *   PA_DWARF_NREGS                registers a stack copy carries
 *   pa_arch_tp()                  the thread pointer (TLS is addressed
 *                                 from it)
 *   pa_arch_thread_top()          an address at the top of the thread's
 *                                 own stack that glibc maps with it (the
 *                                 TCB, or just below it)
 *   pa_arch_thread_add/_cas()     *p changed as one step no signal
 *                                 handler of the thread can split
 *   pa_arch_count_inc()           a count only its thread adds to, plus
 *                                 one, in one step (or false: not here)
 *   pa_arch_strip_ra()            a return address read from a frame
 *                                 record, without a pointer
 *                                 authentication code (aarch64's PAC)
 *   pa_arch_relax()               a spin-wait's pause
 *   pa_arch_frame_prologue()      code that sets up a frame record (a
 *                                 function's first bytes)
 *   PA_ARCH_AGENT_CFI             1 if the agent's unwind tables
 *                                 (agent/cfi.c) hold this architecture's
 *                                 rules
 *   PA_ARCH_SIGFRAME_UC           where the kernel's ucontext lies from the
 *                                 stack pointer a signal handler returns to
 *   PA_ARCH_UC_PC/_SP/_FP/_LR     where the interrupted registers lie in a
 *                                 ucontext_t (offsets; _LR -1 if none)
 *
 * Everything here is inline and header-only: the agent's hot paths use it
 * and the agent links nothing but libc.
 */
#ifndef PA_ARCH_H
#define PA_ARCH_H

#if defined(__x86_64__)
#include "arch/x86_64.h"
#elif defined(__aarch64__)
#include "arch/aarch64.h"
#else
#error "pprof-alloc runs on x86_64 and aarch64 Linux"
#endif

#endif
