// SPDX-License-Identifier: MIT
/*
 * callstub.c - the code a borrowed thread runs, and the frame that brings it
 * back.
 *
 * A call made with ptrace alone (set rip, push a return address of 0, catch
 * the fault) leaves the thread's way home in the tracer's memory: if the
 * tracer dies mid-call (kill -9, the OOM killer, a crash), the kernel lets
 * the thread go with the call's registers, it returns to address 0, and the
 * target dies.  So the way home lives in the target instead:
 *
 *   - the frame: a signal frame (struct rt_sigframe, as the kernel lays one
 *     out for a handler) written on the borrowed thread's stack, below the
 *     red zone and a scratch area for arguments.  It holds the thread's
 *     registers, its extended state (the NT_X86_XSTATE image, which has the
 *     xsave layout sigreturn expects, with the software bytes and
 *     FP_XSTATE_MAGIC2 that sigreturn checks written in) and its signal
 *     mask.  An interrupted system call is restarted in the frame as
 *     the kernel would (rip back over the syscall instruction, rax the call
 *     number); one that would continue through restart_syscall returns
 *     -EINTR instead, since rt_sigreturn cancels the restart block - only
 *     if the tracer died: a live tracer restores the exact state itself.
 *     The frame's sigaltstack has an invalid mode, so that sigreturn leaves
 *     the thread's alternate stack as it is.
 *
 *   - the stub: one page of code, mapped r-x once per process and found
 *     again by later attaches (its bytes are compared whole):
 *
 *         call *%r12           the function, arguments in rdi..r9
 *         mov  %rax, 8(%r13)   its result, in the mailbox
 *         movl $1, (%r13)      done
 *         ppoll(NULL, 0, 16(%r13), NULL)     at most 250 ms
 *      1: mov  $15, %eax       rt_sigreturn, frame at rsp
 *         syscall
 *         jmp  1b
 *
 *     The mailbox (struct callstub_mailbox) lies in the frame, above the
 *     call's stack.  The thread runs the call freely (PTRACE_CONT: the
 *     called code's system calls are not stopped, a loader's lock is not
 *     held longer); the tracer reads the mailbox until it says done, then
 *     interrupts the thread in its wait: an event-stop, which with
 *     syscall-stops is the only kind of stop a dying tracer may leave a
 *     thread in (with TRACESYSGOOD a syscall-stop's signal is no signal; a
 *     signal-delivery-stop would deliver its signal).  A tracer that died
 *     leaves the thread waiting that out, then going home.  The
 *     wait is a ppoll because an interrupted ppoll restarts without the
 *     thread's restart block (a futex or poll with a timeout would put
 *     theirs over the one of the call the thread was borrowed from: its
 *     poll, restarted, would have run our wait).
 *
 *   - mapping the stub takes one system call made on the thread: the frame
 *     is written first, then the thread runs libc's "syscall; ret" with
 *     mmap's arguments and returns into glibc's signal restorer ("mov $15,
 *     %rax; syscall"), whose rt_sigreturn takes the same frame: a tracer
 *     that dies there leaves a page mapped and the thread back home.  Both
 *     sequences are looked up by their bytes in the libc the target maps.
 */
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "callstub.h"
#include "elf/maps.h"

#define STUB_CODE_AT	16	/* after a name, never executed */

static const uint8_t stub_bytes[] = {
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

static const uint8_t syscall_ret[] = { 0x0f, 0x05, 0xc3 };
static const uint8_t restorer[] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00,
				    0x0f, 0x05 };

uint64_t callstub__entry(uint64_t page)
{
	return page + STUB_CODE_AT;
}

static int mem_open(pid_t pid, int flags)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int callstub__find(pid_t pid, uint64_t *page)
{
	struct proc_maps *pm;
	uint8_t buf[sizeof(stub_bytes)];
	int fd, err;
	size_t i;

	err = proc_maps__read(pid, &pm);
	if (err)
		return err;
	fd = mem_open(pid, O_RDONLY);
	if (fd < 0) {
		err = fd;
		goto out_maps;
	}
	err = -ENOENT;
	for (i = 0; i < pm->count; i++) {
		const struct maps_entry *m = &pm->entries[i];

		if (m->path[0] || m->end - m->start != CALLSTUB_PAGE ||
		    m->prot != (MAPS_PROT_READ | MAPS_PROT_EXEC))
			continue;
		if (pread(fd, buf, sizeof(buf), (off_t)m->start) ==
			    (ssize_t)sizeof(buf) &&
		    !memcmp(buf, stub_bytes, sizeof(buf))) {
			*page = m->start;
			err = 0;
			break;
		}
	}
	close(fd);
out_maps:
	proc_maps__free(pm);
	return err;
}

int callstub__write(pid_t pid, uint64_t page)
{
	int fd = mem_open(pid, O_RDWR), err = 0;
	ssize_t n;

	if (fd < 0)
		return fd;
	n = pwrite(fd, stub_bytes, sizeof(stub_bytes), (off_t)page);
	if (n != (ssize_t)sizeof(stub_bytes))
		err = n < 0 ? -errno : -EIO;
	close(fd);
	return err;
}

static bool is_libc(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5);
}

/* Look for both sequences in one executable mapping.  Sets what it finds. */
static void search(int fd, const struct maps_entry *m, uint64_t *sc,
		   uint64_t *rt)
{
	size_t len = m->end - m->start;
	uint8_t *text;
	void *hit;

	if (len > (64u << 20))
		return;
	text = malloc(len);
	if (!text)
		return;
	if (pread(fd, text, len, (off_t)m->start) != (ssize_t)len)
		goto out_free;
	if (!*sc && (hit = memmem(text, len, syscall_ret, sizeof(syscall_ret))))
		*sc = m->start + (uint64_t)((uint8_t *)hit - text);
	if (!*rt && (hit = memmem(text, len, restorer, sizeof(restorer))))
		*rt = m->start + (uint64_t)((uint8_t *)hit - text);
out_free:
	free(text);
}

int callstub__gadgets(pid_t pid, uint64_t *sc, uint64_t *rt)
{
	struct proc_maps *pm;
	int fd, err, pass;
	size_t i;

	*sc = *rt = 0;
	err = proc_maps__read(pid, &pm);
	if (err)
		return err;
	fd = mem_open(pid, O_RDONLY);
	if (fd < 0) {
		err = fd;
		goto out_maps;
	}
	/* libc first: both are there in every glibc (getpid and friends end
	 * in "syscall; ret", __restore_rt is the restorer) */
	for (pass = 0; pass < 2 && !(*sc && *rt); pass++)
		for (i = 0; i < pm->count && !(*sc && *rt); i++) {
			const struct maps_entry *m = &pm->entries[i];

			if (!(m->prot & MAPS_PROT_EXEC) || m->path[0] != '/' ||
			    is_libc(m->path) != (pass == 0))
				continue;
			search(fd, m, sc, rt);
		}
	close(fd);
	err = *sc && *rt ? 0 : -ENOENT;
out_maps:
	proc_maps__free(pm);
	return err;
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

int callframe__build(struct callframe *f, const struct user_regs_struct *saved,
		     const uint8_t *xstate, size_t xlen, uint64_t sigmask,
		     uint64_t top, uint64_t pretcode)
{
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
			sc->rip -= 2;
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
	f->ucontext = base + 8;
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

void callstub__mailbox(struct callstub_mailbox *mb)
{
	memset(mb, 0, sizeof(*mb));
	mb->wait_nsec = CALLSTUB_WAIT_NSEC;
}

void callframe__free(struct callframe *f)
{
	free(f->bytes);
	f->bytes = NULL;
}
