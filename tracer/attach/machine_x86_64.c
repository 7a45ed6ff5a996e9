// SPDX-License-Identifier: MIT
/*
 * machine_x86_64.c - machine.h for x86-64.
 *
 * Registers come whole from PTRACE_GETREGSET's NT_PRSTATUS, orig_rax
 * included: it is the system call a stop found the thread in (-1 for
 * none), and setting it to -1 at a syscall-entry stop skips the call.  The
 * kernel prepares an interrupted call's restart on the way out of a stop,
 * after the tracer has seen the registers, so a frame for rt_sigreturn
 * (which cancels restarts) applies it itself: rip back over the two-byte
 * syscall instruction, rax the call's number again.
 *
 * The frame is the kernel's struct rt_sigframe: the restorer's address in
 * the return-address slot that rt_sigreturn skips, the ucontext, and the
 * xsave image of NT_X86_XSTATE, with the software bytes and
 * FP_XSTATE_MAGIC2 that sigreturn checks written in.  Its sigaltstack has
 * an invalid mode, so that sigreturn leaves the thread's alternate stack as
 * it is.  glibc's restorer is "mov $15, %rax; syscall" in libc.
 *
 * The stub (callstub.c) calls the function in r12 with the mailbox in r13,
 * which the call preserves:
 *
 *         call *%r12           the function, arguments in rdi..r9
 *         mov  %rax, 8(%r13)   its result, in the mailbox
 *         movl $1, (%r13)      done
 *         ppoll(NULL, 0, 16(%r13), NULL)     at most 250 ms
 *      1: mov  $15, %eax       rt_sigreturn, frame at rsp
 *         syscall
 *         jmp  1b
 */
#include <cpuid.h>
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include "callstub.h"
#include "machine.h"

const uint8_t machine_stub[] = {
	'p', 'p', 'r', 'o', 'f', '-', 'a', 'l', 'l', 'o', 'c', ' ',
	's', 't', 'u', 'b',
	0x41, 0xff, 0xd4,			/* call *%r12 */
	0x49, 0x89, 0x45, 0x08,			/* mov %rax, 8(%r13) */
	0x41, 0xc7, 0x45, 0x00, 1, 0, 0, 0,	/* movl $1, (%r13) */
	0x31, 0xff,				/* xor %edi, %edi */
	0x31, 0xf6,				/* xor %esi, %esi */
	0x49, 0x8d, 0x55, 0x10,			/* lea 16(%r13), %rdx */
	0x45, 0x31, 0xd2,			/* xor %r10d, %r10d */
	0x41, 0xb8, 0x08, 0x00, 0x00, 0x00,	/* mov $8, %r8d */
	0xb8, 0x0f, 0x01, 0x00, 0x00,		/* mov $SYS_ppoll, %eax */
	0x0f, 0x05,				/* syscall */
	0xb8, 0x0f, 0x00, 0x00, 0x00,		/* 1: mov $15, %eax */
	0x0f, 0x05,				/* syscall */
	0xeb, 0xf7,				/* jmp 1b */
};
const size_t machine_stub_size = sizeof(machine_stub);
const size_t machine_stub_code = 16;	/* after a name, never executed */

const uint8_t machine_syscall_ret[] = { 0x0f, 0x05, 0xc3 };
const size_t machine_syscall_ret_size = sizeof(machine_syscall_ret);
const uint8_t machine_restorer[] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00,
				     0x00, 0x0f, 0x05 };
const size_t machine_restorer_size = sizeof(machine_restorer);
const bool machine_restorer_in_vdso = false;

const unsigned machine_insn_align = 1;
const unsigned machine_syscall_len = 2;
const bool machine_entry_regs_whole = true;

#define EFLAGS_TF	0x100ull
#define EFLAGS_DF	0x400ull

int mregs__get(pid_t tid, struct mregs *m)
{
	struct iovec iov = { &m->r, sizeof(m->r) };

	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &iov))
		return -errno;
	return iov.iov_len == sizeof(m->r) ? 0 : -EIO;
}

int mregs__set(pid_t tid, const struct mregs *m)
{
	struct iovec iov = { (void *)&m->r, sizeof(m->r) };

	return ptrace(PTRACE_SETREGSET, tid, (void *)NT_PRSTATUS, &iov) ?
		       -errno : 0;
}

uint64_t mregs__pc(const struct mregs *m) { return m->r.rip; }
uint64_t mregs__sp(const struct mregs *m) { return m->r.rsp; }
uint64_t mregs__lr(const struct mregs *m) { (void)m; return 0; }
uint64_t mregs__ret(const struct mregs *m) { return m->r.rax; }
long mregs__nr(const struct mregs *m) { return (long)m->r.orig_rax; }

uint64_t mregs__arg(const struct mregs *m, int i)
{
	switch (i) {
	case 0: return m->r.rdi;
	case 1: return m->r.rsi;
	case 2: return m->r.rdx;
	case 3: return m->r.r10;
	case 4: return m->r.r8;
	case 5: return m->r.r9;
	default: return 0;
	}
}

bool mregs__args_kept(pid_t pid, const struct mregs *m)
{
	(void)pid;
	(void)m;
	return true;		/* rdi.. stay; the result is in rax */
}

long mregs__syscall_at_stop(pid_t pid, const struct mregs *m)
{
	(void)pid;
	return (long)m->r.orig_rax < 0 ? -1 : (long)m->r.orig_rax;
}

void mregs__skip_syscall(struct mregs *m)
{
	m->r.orig_rax = (unsigned long long)-1;
}

void mregs__rewind_entry(struct mregs *m)
{
	m->r.rip -= machine_syscall_len;
	m->r.rax = m->r.orig_rax;
	m->r.orig_rax = (unsigned long long)-1;
}

static void set_args(struct mregs *m, const uint64_t *args, int nargs,
		     bool syscall)
{
	unsigned long long *reg[6] = { &m->r.rdi, &m->r.rsi, &m->r.rdx,
				       syscall ? &m->r.r10 : &m->r.rcx,
				       &m->r.r8, &m->r.r9 };
	int i;

	for (i = 0; i < 6; i++)
		*reg[i] = i < nargs ? args[i] : 0;
}

void mregs__call(struct mregs *m, uint64_t pc, uint64_t sp, uint64_t fn,
		 uint64_t mailbox, const uint64_t *args, int nargs)
{
	m->r.rip = pc;
	m->r.rsp = sp;
	m->r.r12 = fn;
	m->r.r13 = mailbox;
	m->r.rax = 0;
	m->r.orig_rax = (unsigned long long)-1;	/* no restart; at a syscall
						   entry, skip it */
	m->r.eflags &= ~(EFLAGS_DF | EFLAGS_TF);
	set_args(m, args, nargs, false);
}

void mregs__syscall(struct mregs *m, uint64_t gadget, uint64_t sp,
		    uint64_t ret, long nr, const uint64_t *args, int nargs)
{
	(void)ret;		/* in the return slot under sp */
	m->r.rip = gadget;
	m->r.rsp = sp - 8;
	m->r.rax = (unsigned long long)nr;
	m->r.orig_rax = (unsigned long long)-1;
	m->r.eflags &= ~(EFLAGS_DF | EFLAGS_TF);
	set_args(m, args, nargs, true);
}

int machine__get_ext(pid_t tid, void *buf, size_t *len)
{
	struct iovec iov = { buf, *len };

	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov))
		return -errno;
	*len = iov.iov_len;
	return 0;
}

int machine__set_ext(pid_t tid, const void *buf, size_t len)
{
	struct iovec iov = { (void *)buf, len };

	return ptrace(PTRACE_SETREGSET, tid, (void *)NT_X86_XSTATE, &iov) ?
		       -errno : 0;
}

/* The kernel's x86_64 signal frame (arch/x86/include/uapi/asm/sigcontext.h,
 * asm-generic/ucontext.h), which glibc's headers do not give as such. */
struct k_sigcontext {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2;
	uint64_t fpstate;
	uint64_t reserved1[8];
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
	struct k_sigcontext uc_mcontext;
	uint64_t uc_sigmask;
};

_Static_assert(sizeof(struct k_sigcontext) == 256, "sigcontext layout");
_Static_assert(sizeof(struct k_ucontext) == 304, "ucontext layout");

#define UC_FP_XSTATE		0x1
#define UC_SIGCONTEXT_SS	0x2
#define UC_STRICT_RESTORE_SS	0x4
#define FP_XSTATE_MAGIC1	0x46505853u
#define FP_XSTATE_MAGIC2	0x46505845u
#define SW_BYTES_AT		464	/* software bytes of the fxsave area */
#define XFEATURE_TILEDATA	(1ull << 18)
#define SS_BAD_MODE		3	/* neither 0, SS_ONSTACK nor SS_DISABLE */
#define USER_CS			0x33

#define ERESTARTSYS		512
#define ERESTARTNOINTR		513
#define ERESTARTNOHAND		514
#define ERESTART_RESTARTBLOCK	516

/*
 * How much of the xsave image sigreturn is to restore: the features XCR0
 * enables (the NT_X86_XSTATE image carries XCR0 in its software bytes),
 * less AMX's tile data, which the kernel hands out per process and which a
 * frame may not carry unless the process asked for it; and the size of the
 * standard-format image that covers them (CPUID leaf 0xd).
 */
static int xstate_extent(const uint8_t *xstate, size_t xlen, uint64_t *features,
			 uint32_t *size)
{
	uint64_t xcr0;
	uint32_t end = 576, a, b, c, d;
	int i;

	memcpy(&xcr0, xstate + SW_BYTES_AT, 8);
	xcr0 &= ~XFEATURE_TILEDATA;
	if (!(xcr0 & 3))
		return -EINVAL;
	for (i = 2; i < 63; i++) {
		if (!(xcr0 & (1ull << i)))
			continue;
		__cpuid_count(0xd, i, a, b, c, d);
		if (a + b > end)
			end = a + b;
	}
	if (end > xlen)
		return -EINVAL;
	*features = xcr0;
	*size = end;
	return 0;
}

int callframe__build(struct callframe *f, const struct mregs *m,
		     const uint8_t *xstate, size_t xlen, uint64_t sigmask,
		     uint64_t top, uint64_t pretcode)
{
	const struct user_regs_struct *saved = &m->r;
	struct k_ucontext uc;
	struct k_sigcontext *sc = &uc.uc_mcontext;
	struct {
		uint32_t magic1, extended_size;
		uint64_t xfeatures;
		uint32_t xstate_size, padding[7];
	} sw;
	uint32_t xsize, magic2 = FP_XSTATE_MAGIC2;
	struct callstub_mailbox mb;
	uint64_t fp, base, features;
	long nr = (long)saved->orig_rax, ret = (long)saved->rax;
	int err;

	memset(f, 0, sizeof(*f));
	if (xlen < SW_BYTES_AT + sizeof(sw))
		return -EINVAL;
	err = xstate_extent(xstate, xlen, &features, &xsize);
	if (err)
		return err;

	fp = (top - xsize - sizeof(magic2)) & ~63ull;
	base = ((fp - sizeof(uc) - sizeof(mb)) & ~15ull) - 8;

	memset(&uc, 0, sizeof(uc));
	uc.uc_flags = UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS;
	uc.uc_stack.ss_flags = SS_BAD_MODE;
	uc.uc_sigmask = sigmask;
	sc->r8 = saved->r8; sc->r9 = saved->r9;
	sc->r10 = saved->r10; sc->r11 = saved->r11;
	sc->r12 = saved->r12; sc->r13 = saved->r13;
	sc->r14 = saved->r14; sc->r15 = saved->r15;
	sc->rdi = saved->rdi; sc->rsi = saved->rsi;
	sc->rbp = saved->rbp; sc->rbx = saved->rbx;
	sc->rdx = saved->rdx; sc->rax = saved->rax;
	sc->rcx = saved->rcx; sc->rsp = saved->rsp;
	sc->rip = saved->rip; sc->eflags = saved->eflags;
	sc->cs = (uint16_t)saved->cs;
	sc->ss = (uint16_t)saved->ss;
	sc->fpstate = fp;
	/* rt_sigreturn sets orig_rax to -1: no restart after it, so do here
	 * what the kernel would have done on the way out of the stop */
	if (nr >= 0) {
		switch (-ret) {
		case ERESTARTSYS:
		case ERESTARTNOINTR:
		case ERESTARTNOHAND:
			sc->rip -= machine_syscall_len;
			sc->rax = (uint64_t)nr;
			break;
		case ERESTART_RESTARTBLOCK:
			sc->rax = (uint64_t)-EINTR;
			break;
		}
	}

	f->len = fp + xsize + sizeof(magic2) - base;
	f->bytes = calloc(1, f->len);
	if (!f->bytes)
		return -ENOMEM;
	f->base = base;
	f->ret_slot = base;
	f->sp = base + 8;
	f->mailbox = base + 8 + sizeof(uc);
	memcpy(f->bytes, &pretcode, 8);
	memcpy(f->bytes + 8, &uc, sizeof(uc));
	callstub__mailbox(&mb);
	memcpy(f->bytes + 8 + sizeof(uc), &mb, sizeof(mb));
	memcpy(f->bytes + (fp - base), xstate, xsize);
	memset(&sw, 0, sizeof(sw));
	sw.magic1 = FP_XSTATE_MAGIC1;
	sw.extended_size = xsize + sizeof(magic2);
	sw.xfeatures = features;
	sw.xstate_size = xsize;
	memcpy(f->bytes + (fp - base) + SW_BYTES_AT, &sw, sizeof(sw));
	memcpy(f->bytes + (fp - base) + xsize, &magic2, sizeof(magic2));
	return 0;
}

/*
 * The kernel's rt_sigframe starts with the restorer's address: then a
 * ucontext - uc_flags (a few low bits), uc_link (0), uc_stack, and the
 * sigcontext, whose cs is the user code segment and whose fpstate, if
 * any, lies above the frame.  A stale copy of the restorer's address in a
 * buffer nobody wrote is no frame.
 */
uint64_t machine__sigframe_sp(pid_t pid, uint64_t addr)
{
	uint64_t f[30];
	struct iovec local = { f, sizeof(f) };
	struct iovec remote = { (void *)(uintptr_t)addr, sizeof(f) };
	uint16_t cs;

	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) !=
	    (ssize_t)sizeof(f))
		return 0;
	cs = (uint16_t)f[24];		/* cs, gs, fs, ss at +192 */
	if ((f[1] & ~0xfull) || f[2] || cs != USER_CS ||
	    (f[29] && (f[29] <= addr || f[29] - addr >= (1u << 20))))
		return 0;
	return f[21];			/* uc_mcontext.rsp */
}

size_t machine__gregs(const struct user_regs_struct *r, uint64_t *v,
		      const char **names)
{
	static const char *const name[] = {
		"rip", "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp",
		"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
	};
	const uint64_t val[] = {
		r->rip, r->rax, r->rbx, r->rcx, r->rdx, r->rsi, r->rdi, r->rbp,
		r->r8, r->r9, r->r10, r->r11, r->r12, r->r13, r->r14, r->r15,
	};
	size_t i, n = sizeof(val) / sizeof(val[0]);

	for (i = 0; i < n; i++) {
		v[i] = val[i];
		names[i] = name[i];
	}
	return n;
}

uint64_t machine__gregs_sp(const struct user_regs_struct *r)
{
	return r->rsp;
}

uint64_t machine__gregs_pc(const struct user_regs_struct *r)
{
	return r->rip;
}

uint64_t machine__gregs_lr(const struct user_regs_struct *r)
{
	(void)r;
	return 0;
}

void machine__gregs_set_pc(struct user_regs_struct *r, uint64_t pc)
{
	r->rip = pc;
}
