/* SPDX-License-Identifier: MIT */
/*
 * machine.h - the processor's side of a call made in a running process.
 *
 * inject.c borrows a thread, callstub.c gives it a page of code and a way
 * home, unload.c checks every thread's registers and stack: all of it is
 * the same on every processor but for what this interface hides - how
 * ptrace reads and writes a thread's registers, which register holds
 * what, where a stop finds a thread in a system call, the stub's and the
 * gadgets' machine code, and the kernel's signal frame.  One file a
 * processor implements it (machine_x86_64.c, machine_aarch64.c: the
 * Makefile builds the target's), as the kernel's arch/ does; docs/design.md
 * ("Architectures") says what differs.
 */
#ifndef PA_TRACER_MACHINE_H
#define PA_TRACER_MACHINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

/*
 * A thread's general registers as PTRACE_GETREGSET's NT_PRSTATUS gives
 * them, and the system call the kernel would restart or run at the stop
 * (x86-64: orig_rax; aarch64: NT_ARM_SYSTEM_CALL), -1 for none.
 */
struct mregs {
	struct user_regs_struct r;
#ifdef __aarch64__
	int syscallno;
#endif
};

int mregs__get(pid_t tid, struct mregs *m);
/* Registers and the system call number (-1: none, and no restart). */
int mregs__set(pid_t tid, const struct mregs *m);

uint64_t mregs__pc(const struct mregs *m);
uint64_t mregs__sp(const struct mregs *m);
/* The return address a leaf has not saved yet (aarch64's x30), or 0. */
uint64_t mregs__lr(const struct mregs *m);
/* A function's or a system call's result. */
uint64_t mregs__ret(const struct mregs *m);
/* At a syscall-stop: the call's number and its i'th argument. */
long mregs__nr(const struct mregs *m);
uint64_t mregs__arg(const struct mregs *m, int i);

/*
 * Where a stop that is not a syscall-stop (an interrupt) found the thread:
 * the number of the system call it was in - interrupted, and set to
 * restart as the kernel does - or had just returned from; -1 if neither.
 * aarch64 forgets the call before the stop and keeps only its number
 * (x8) and the svc before or at the pc: read at pid's pc.
 */
long mregs__syscall_at_stop(pid_t pid, const struct mregs *m);
/* Do the registers at such a stop still hold the call's arguments?  Not
 * on aarch64 once the call returned: x0 is then its result. */
bool mregs__args_kept(pid_t pid, const struct mregs *m);

/*
 * At a syscall-entry stop the registers are whole (x86-64).  aarch64
 * reports a syscall-stop in x7 and hides x7's value meanwhile, so a state
 * taken there cannot be put back: the thread is caught after the call
 * instead, at an interrupt.
 */
extern const bool machine_entry_regs_whole;

/* No system call: none to run at an entry stop, none to restart. */
void mregs__skip_syscall(struct mregs *m);

/* At a syscall-entry stop, m becomes the state that makes the call again
 * when it runs: before the call's instruction, no system call. */
void mregs__rewind_entry(struct mregs *m);

/*
 * m becomes a call of the stub at pc (callstub.c) on the stack sp: the
 * function fn, the mailbox mailbox, up to 6 arguments.  No system call,
 * no single-step or other mode left from the thread's own state.
 */
void mregs__call(struct mregs *m, uint64_t pc, uint64_t sp, uint64_t fn,
		 uint64_t mailbox, const uint64_t *args, int nargs);
/*
 * m becomes system call nr, made by the "syscall; ret" at gadget, with up
 * to 6 arguments, returning to ret: in x30 on aarch64; x86-64 returns to
 * the word at sp, which the caller writes (callframe's return slot).
 */
void mregs__syscall(struct mregs *m, uint64_t gadget, uint64_t sp,
		    uint64_t ret, long nr, const uint64_t *args, int nargs);

/* The size of the instruction that makes a system call: a syscall-stop's
 * pc is the gadget's plus this.  Where instructions may start. */
extern const unsigned machine_syscall_len, machine_insn_align;

/*
 * The thread's floating-point and vector state, as the frame holds it
 * (x86-64: NT_X86_XSTATE; aarch64: NT_PRFPREG).  *len in: buf's size,
 * out: the state's.
 */
#define MACHINE_EXT_MAX	(64 * 1024)
int machine__get_ext(pid_t tid, void *buf, size_t *len);
int machine__set_ext(pid_t tid, const void *buf, size_t len);

/* The stub's bytes (callstub.c's layout), and where its code starts. */
extern const uint8_t machine_stub[];
extern const size_t machine_stub_size, machine_stub_code;
/* "syscall; ret" and the signal restorer, looked for by their bytes:
 * the restorer in libc (x86-64) or the vDSO (aarch64). */
extern const uint8_t machine_syscall_ret[], machine_restorer[];
extern const size_t machine_syscall_ret_size, machine_restorer_size;
extern const bool machine_restorer_in_vdso;

/*
 * A signal frame, built in the tracer's memory, to be written at base:
 * rt_sigreturn with the stack pointer at sp puts the thread back.
 */
struct callframe {
	uint8_t *bytes;
	size_t len;
	uint64_t base;		/* where bytes go */
	uint64_t sp;		/* the frame proper: the stack pointer for
				   rt_sigreturn and for calls */
	uint64_t ret_slot;	/* x86-64: the word under sp a "ret" into
				   the restorer takes; 0 on aarch64 */
	uint64_t mailbox;	/* a struct callstub_mailbox, in bytes */
};

/*
 * Build the frame that returns the thread to saved (as a system call the
 * stop interrupted restarts), its state ext (ext_len bytes, from
 * machine__get_ext) and its signal mask, below top (exclusive); the
 * return slot, if any, holds ret.  0 or -errno.
 */
int callframe__build(struct callframe *f, const struct mregs *saved,
		     const uint8_t *ext, size_t ext_len, uint64_t sigmask,
		     uint64_t top, uint64_t ret);
void callframe__free(struct callframe *f);

/*
 * The restorer's address was found on pid's stack at addr: is it a signal
 * handler's way back to a kernel signal frame?  The interrupted stack
 * pointer if so, else 0.  The memory is read, never trusted.
 */
uint64_t machine__sigframe_sp(pid_t pid, uint64_t addr);

/* The general registers of r, for a scan, with their names; how many. */
#define MACHINE_GREGS_MAX	34
size_t machine__gregs(const struct user_regs_struct *r, uint64_t *v,
		      const char **names);
uint64_t machine__gregs_sp(const struct user_regs_struct *r);
uint64_t machine__gregs_pc(const struct user_regs_struct *r);
/* The link register (aarch64's x30), or 0 where return addresses are
 * pushed. */
uint64_t machine__gregs_lr(const struct user_regs_struct *r);
void machine__gregs_set_pc(struct user_regs_struct *r, uint64_t pc);

#endif /* PA_TRACER_MACHINE_H */
