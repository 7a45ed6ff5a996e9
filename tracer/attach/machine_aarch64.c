// SPDX-License-Identifier: MIT
/*
 * machine_aarch64.c - machine.h for 64-bit Arm.
 *
 * Registers come from PTRACE_GETREGSET's NT_PRSTATUS (x0-x30, sp, pc,
 * pstate) and the system call number from NT_ARM_SYSTEM_CALL: -1 skips a
 * call at its entry stop and keeps the kernel from restarting one.  Unlike
 * x86-64, the kernel prepares an interrupted call's restart before a stop
 * (pc back on the svc, x0 its first argument again) and forgets the call:
 * so a stop shows the thread in a call only by the svc at or before its pc
 * and the number in x8, and a frame needs no restart of its own.  (A call
 * that would have gone on through restart_syscall - a relative sleep -
 * runs again whole.)  A syscall-stop hides x7, which the kernel uses to
 * tell entry from exit, and drops writes to it: no state taken at one is
 * whole (machine_entry_regs_whole).
 *
 * The frame is the kernel's struct rt_sigframe { siginfo, ucontext }, at a
 * 16-byte aligned sp: the registers in the sigcontext, and in its reserved
 * area an fpsimd_context (the NT_PRFPREG image) and the terminating null
 * record.  SVE's and SME's larger state is not carried: a thread is only
 * borrowed at a system call, where SVE's beyond the V registers is
 * discarded.  Its sigaltstack has an invalid mode, so that sigreturn
 * leaves the thread's alternate stack as it is.  The restorer, with no
 * SA_RESTORER in glibc, is the vDSO's __kernel_rt_sigreturn; a handler
 * that calls anything saves it (x30) in its frame, under the kernel's.
 *
 * The stub (callstub.c) calls the function in x20 with the mailbox in x19,
 * which the call preserves:
 *
 *         blr  x20                  the function, arguments in x0..x5
 *         str  x0, [x19, #8]        its result, in the mailbox
 *         mov  w1, #1
 *         str  w1, [x19]            done
 *         ppoll(NULL, 0, x19 + 16, NULL, 8)     at most 250 ms
 *      1: mov  x8, #139             rt_sigreturn, frame at sp
 *         svc  #0
 *         b    1b
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include "callstub.h"
#include "machine.h"

#ifndef NT_ARM_SYSTEM_CALL
#define NT_ARM_SYSTEM_CALL	0x404
#endif

#define INSN(x)	(uint8_t)(x), (uint8_t)((x) >> 8), (uint8_t)((x) >> 16), \
		(uint8_t)((x) >> 24)
#define SVC0		0xd4000001u
#define RET		0xd65f03c0u

const uint8_t machine_stub[] = {
	'p', 'p', 'r', 'o', 'f', '-', 'a', 'l', 'l', 'o', 'c', ' ',
	's', 't', 'u', 'b',
	INSN(0xd63f0280),	/* blr x20 */
	INSN(0xf9000660),	/* str x0, [x19, #8] */
	INSN(0x52800021),	/* mov w1, #1 */
	INSN(0xb9000261),	/* str w1, [x19] */
	INSN(0xd2800000),	/* mov x0, #0 */
	INSN(0xd2800001),	/* mov x1, #0 */
	INSN(0x91004262),	/* add x2, x19, #16 */
	INSN(0xd2800003),	/* mov x3, #0 */
	INSN(0xd2800104),	/* mov x4, #8 */
	INSN(0xd2800928),	/* mov x8, #73 (ppoll) */
	INSN(SVC0),		/* svc #0 */
	INSN(0xd2801168),	/* 1: mov x8, #139 (rt_sigreturn) */
	INSN(SVC0),		/* svc #0 */
	INSN(0x17fffffe),	/* b 1b */
};
const size_t machine_stub_size = sizeof(machine_stub);
const size_t machine_stub_code = 16;	/* after a name, never executed */

const uint8_t machine_syscall_ret[] = { INSN(SVC0), INSN(RET) };
const size_t machine_syscall_ret_size = sizeof(machine_syscall_ret);
const uint8_t machine_restorer[] = { INSN(0xd2801168), INSN(SVC0) };
const size_t machine_restorer_size = sizeof(machine_restorer);
const bool machine_restorer_in_vdso = true;

const unsigned machine_insn_align = 4;
const unsigned machine_syscall_len = 4;
const bool machine_entry_regs_whole = false;

#define PSTATE_SS	(1ull << 21)	/* single step */
#define PSTATE_BTYPE	(3ull << 10)	/* a branch's type, for BTI */

int mregs__get(pid_t tid, struct mregs *m)
{
	struct iovec iov = { &m->r, sizeof(m->r) };
	int nr = -1;

	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &iov))
		return -errno;
	if (iov.iov_len != sizeof(m->r))
		return -EIO;
	iov = (struct iovec){ &nr, sizeof(nr) };
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_ARM_SYSTEM_CALL, &iov))
		return -errno;
	m->syscallno = nr;
	return 0;
}

int mregs__set(pid_t tid, const struct mregs *m)
{
	struct iovec iov = { (void *)&m->r, sizeof(m->r) };
	int nr = m->syscallno;

	if (ptrace(PTRACE_SETREGSET, tid, (void *)NT_PRSTATUS, &iov))
		return -errno;
	iov = (struct iovec){ &nr, sizeof(nr) };
	return ptrace(PTRACE_SETREGSET, tid, (void *)NT_ARM_SYSTEM_CALL, &iov) ?
		       -errno : 0;
}

uint64_t mregs__pc(const struct mregs *m) { return m->r.pc; }
uint64_t mregs__sp(const struct mregs *m) { return m->r.sp; }
uint64_t mregs__lr(const struct mregs *m) { return m->r.regs[30]; }
uint64_t mregs__ret(const struct mregs *m) { return m->r.regs[0]; }
long mregs__nr(const struct mregs *m) { return (long)m->r.regs[8]; }

uint64_t mregs__arg(const struct mregs *m, int i)
{
	return i >= 0 && i < 6 ? m->r.regs[i] : 0;
}

static int read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) ==
		       (ssize_t)len ? 0 : -EIO;
}

bool mregs__args_kept(pid_t pid, const struct mregs *m)
{
	uint32_t insn;

	/* at the svc, the restart put x0 back; after it, x0 is the result */
	return m->syscallno >= 0 ||
	       (!(m->r.pc & 3) && !read_mem(pid, m->r.pc, &insn, 4) &&
		insn == SVC0);
}

long mregs__syscall_at_stop(pid_t pid, const struct mregs *m)
{
	uint32_t insn[2];

	if (m->syscallno >= 0)
		return m->syscallno;
	if (m->r.pc < 4 || (m->r.pc & 3) ||
	    read_mem(pid, m->r.pc - 4, insn, sizeof(insn)))
		return -1;
	/* at the svc: interrupted, to restart; after it: returned */
	if (insn[1] == SVC0 || insn[0] == SVC0)
		return (long)m->r.regs[8];
	return -1;
}

void mregs__skip_syscall(struct mregs *m)
{
	m->syscallno = -1;
}

void mregs__rewind_entry(struct mregs *m)
{
	m->r.pc -= machine_syscall_len;
	m->syscallno = -1;
}

static void set_args(struct mregs *m, const uint64_t *args, int nargs)
{
	int i;

	for (i = 0; i < 6; i++)
		m->r.regs[i] = i < nargs ? args[i] : 0;
}

void mregs__call(struct mregs *m, uint64_t pc, uint64_t sp, uint64_t fn,
		 uint64_t mailbox, const uint64_t *args, int nargs)
{
	m->r.pc = pc;
	m->r.sp = sp;
	m->r.regs[20] = fn;
	m->r.regs[19] = mailbox;
	m->r.regs[30] = 0;
	m->r.pstate &= ~(PSTATE_SS | PSTATE_BTYPE);
	m->syscallno = -1;
	set_args(m, args, nargs);
}

void mregs__syscall(struct mregs *m, uint64_t gadget, uint64_t sp,
		    uint64_t ret, long nr, const uint64_t *args, int nargs)
{
	m->r.pc = gadget;
	m->r.sp = sp;
	m->r.regs[30] = ret;
	m->r.regs[8] = (uint64_t)nr;
	m->r.pstate &= ~(PSTATE_SS | PSTATE_BTYPE);
	m->syscallno = -1;
	set_args(m, args, nargs);
}

/* The kernel's user_fpsimd_state (NT_PRFPREG). */
struct k_fpsimd {
	__uint128_t vregs[32];
	uint32_t fpsr, fpcr;
	uint32_t reserved[2];
};

int machine__get_ext(pid_t tid, void *buf, size_t *len)
{
	struct iovec iov = { buf, *len };

	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRFPREG, &iov))
		return -errno;
	if (iov.iov_len != sizeof(struct k_fpsimd))
		return -EIO;
	*len = iov.iov_len;
	return 0;
}

int machine__set_ext(pid_t tid, const void *buf, size_t len)
{
	struct iovec iov = { (void *)buf, len };

	return ptrace(PTRACE_SETREGSET, tid, (void *)NT_PRFPREG, &iov) ?
		       -errno : 0;
}

/* The kernel's arm64 signal frame (arch/arm64/include/uapi/asm/
 * sigcontext.h, ucontext.h), without the libc headers' clashing types. */
struct k_sigcontext {
	uint64_t fault_address;
	uint64_t regs[31];
	uint64_t sp, pc, pstate;
	uint8_t reserved[4096] __attribute__((aligned(16)));
};

struct k_ucontext {
	uint64_t uc_flags;
	uint64_t uc_link;
	struct {
		uint64_t ss_sp;
		int32_t ss_flags;
		int32_t pad;
		uint64_t ss_size;
	} uc_stack;
	uint64_t uc_sigmask;
	uint8_t unused[1024 / 8 - 8];
	struct k_sigcontext uc_mcontext;
};

struct k_rt_sigframe {
	uint8_t info[128];
	struct k_ucontext uc;
};

struct k_fpsimd_context {
	uint32_t magic, size;
	uint32_t fpsr, fpcr;
	__uint128_t vregs[32];
};

_Static_assert(sizeof(struct k_sigcontext) == 4384, "sigcontext layout");
_Static_assert(offsetof(struct k_ucontext, uc_mcontext) == 176,
	       "ucontext layout");
_Static_assert(sizeof(struct k_rt_sigframe) == 4688, "rt_sigframe layout");
_Static_assert(sizeof(struct k_fpsimd_context) == 528, "fpsimd layout");

#define FPSIMD_MAGIC	0x46508001u
#define SS_BAD_MODE	3	/* neither 0, SS_ONSTACK nor SS_DISABLE */
#define SS_AUTODISARM	(1u << 31)
#define FRAME_RESERVED_AT	(offsetof(struct k_rt_sigframe, uc) + \
				 offsetof(struct k_ucontext, uc_mcontext) + \
				 offsetof(struct k_sigcontext, reserved))

int callframe__build(struct callframe *f, const struct mregs *m,
		     const uint8_t *ext, size_t ext_len, uint64_t sigmask,
		     uint64_t top, uint64_t ret)
{
	const struct k_fpsimd *fp = (const struct k_fpsimd *)ext;
	struct k_rt_sigframe *sf;
	struct k_sigcontext *sc;
	struct k_fpsimd_context *fc;
	struct callstub_mailbox mb;
	uint64_t base;

	(void)ret;		/* returns go through x30: no slot */
	memset(f, 0, sizeof(*f));
	if (ext_len != sizeof(*fp))
		return -EINVAL;
	f->len = sizeof(*sf) + sizeof(mb);
	base = (top - f->len) & ~15ull;
	f->bytes = calloc(1, f->len);
	if (!f->bytes)
		return -ENOMEM;
	sf = (struct k_rt_sigframe *)f->bytes;
	sf->uc.uc_stack.ss_flags = SS_BAD_MODE;
	sf->uc.uc_sigmask = sigmask;
	sc = &sf->uc.uc_mcontext;
	memcpy(sc->regs, m->r.regs, sizeof(sc->regs));
	sc->sp = m->r.sp;
	sc->pc = m->r.pc;
	sc->pstate = m->r.pstate;
	fc = (struct k_fpsimd_context *)sc->reserved;
	fc->magic = FPSIMD_MAGIC;
	fc->size = sizeof(*fc);
	fc->fpsr = fp->fpsr;
	fc->fpcr = fp->fpcr;
	memcpy(fc->vregs, fp->vregs, sizeof(fc->vregs));
	/* the null record after it ends the list: calloc's zeros */
	callstub__mailbox(&mb);
	memcpy(f->bytes + sizeof(*sf), &mb, sizeof(mb));
	f->base = base;
	f->sp = base;
	f->ret_slot = 0;
	f->mailbox = base + sizeof(*sf);
	return 0;
}

/* How far above the restorer's copy the frame may start: the handler's
 * own frame, which its locals make as large as they are. */
#define HANDLER_FRAME_MAX	(64u << 10)

/*
 * The restorer's address at addr is the return address a handler's
 * prologue saved: the kernel's rt_sigframe lies above it, where the
 * handler's stack began.  It is found by its shape at a 16-byte boundary:
 * uc_flags and uc_link 0, a sigaltstack's flags the kernel could have
 * written, the fpsimd record first in the reserved area and a known
 * record (or the end) after it, and an interrupted pstate at user level
 * with a stack pointer.  Not the siginfo: the kernel writes it only for
 * an SA_SIGINFO handler, and leaves whatever was on the stack for one
 * installed by signal().  (Where the handler keeps frame records its
 * saved x29 points just above the frame; GCC's -fomit-frame-pointer saves
 * x30 without it, so the shape is what is relied on.)
 */
uint64_t machine__sigframe_sp(pid_t pid, uint64_t addr)
{
	const size_t fsize = sizeof(struct k_rt_sigframe);
	struct iovec local, remote;
	uint64_t lo, s, sp = 0;
	uint8_t *buf;
	ssize_t got;

	lo = (addr + 8 + 15) & ~15ull;
	if (lo < addr)
		return 0;
	buf = malloc(HANDLER_FRAME_MAX + fsize);
	if (!buf)
		return 0;
	/* up to the stack's end: a short read is what is there */
	local = (struct iovec){ buf, HANDLER_FRAME_MAX + fsize };
	remote = (struct iovec){ (void *)(uintptr_t)lo, local.iov_len };
	got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (got < (ssize_t)fsize)
		goto out_free;
	for (s = lo; s + fsize <= lo + (uint64_t)got; s += 16) {
		const struct k_rt_sigframe *sf = (const void *)(buf + (s - lo));
		struct k_fpsimd_context fc;
		uint32_t next[2];	/* the record after it */

		memcpy(&fc, buf + (s - lo) + FRAME_RESERVED_AT, 8);
		if (fc.magic != FPSIMD_MAGIC || fc.size != sizeof(fc))
			continue;
		memcpy(next, buf + (s - lo) + FRAME_RESERVED_AT + sizeof(fc),
		       sizeof(next));
		if (!sf->uc.uc_flags && !sf->uc.uc_link &&
		    ((uint32_t)sf->uc.uc_stack.ss_flags & ~SS_AUTODISARM) <= 2 &&
		    sf->uc.uc_mcontext.sp &&
		    !(sf->uc.uc_mcontext.pstate & 0x1f) &&
		    (next[0] ? next[1] >= 16 && !(next[1] % 16) :
			       !next[1])) {
			sp = sf->uc.uc_mcontext.sp;
			break;
		}
	}
out_free:
	free(buf);
	return sp;
}

size_t machine__gregs(const struct user_regs_struct *r, uint64_t *v,
		      const char **names)
{
	static const char *const name[31] = {
		"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9",
		"x10", "x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18",
		"x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27",
		"x28", "x29", "x30",
	};
	size_t i;

	v[0] = r->pc;
	names[0] = "pc";
	for (i = 0; i < 31; i++) {
		v[i + 1] = r->regs[i];
		names[i + 1] = name[i];
	}
	return 32;
}

uint64_t machine__gregs_sp(const struct user_regs_struct *r)
{
	return r->sp;
}

uint64_t machine__gregs_pc(const struct user_regs_struct *r)
{
	return r->pc;
}

uint64_t machine__gregs_lr(const struct user_regs_struct *r)
{
	return r->regs[30];
}

void machine__gregs_set_pc(struct user_regs_struct *r, uint64_t pc)
{
	r->pc = pc;
}
