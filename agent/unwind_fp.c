// SPDX-License-Identifier: MIT
/*
 * unwind_fp.c - frame-pointer stack walk, bounded by the current stack.
 *
 * On x86_64 and aarch64 with frame pointers, each frame record is
 * {saved frame pointer, return address}.  The walk starts at the hook's own
 * frame, so the first return address is in the allocator's caller and the
 * agent's frames never appear.  Code without frame pointers leaves garbage
 * in the chain; the walk must never fault on it, so every record read lies
 * in [sp, stack_hi - 16], is 8-aligned, and each step goes strictly up.
 *
 * stack_hi is the end of the mapping that holds the stack pointer, found
 * by scanning /proc/self/maps with raw system calls into a small on-stack
 * buffer (pthread_getattr_np would allocate), and cached in the thread's
 * state.  When the thread runs on a signal alternate stack the bounds of
 * that stack come from sigaltstack() and are not cached.  Raw syscall() is
 * used because read() is a cancellation point and a malloc must never be
 * the place a thread gets cancelled.
 *
 * A cached range can go stale: coroutine libraries run threads on stacks
 * they map and unmap, and neighbouring anonymous mappings merge.  So before
 * a walk the range [sp, hi) is checked with one msync(MS_ASYNC) - a lookup
 * of the address space, no page is touched - which fails with ENOMEM if any
 * part of it is no longer mapped; then the range is found again.  The
 * check is skipped for the thread's own stack, which lives as long as the
 * thread: a range holding the thread's TCB (glibc puts it at the top of
 * the stack it maps for the thread) or the main stack's __libc_stack_end.
 * The cache is written hi = 0 first, so a signal handler that runs in the
 * middle never sees a torn pair.
 *
 * The walk also tells its caller where the stack ends (the bounds it
 * checked, for the copy that DWARF unwinding wants), whether that stack is
 * the thread's own, and which frame, if any, it read at the top of the
 * thread's stack (see at_thread_top): the frames from there on are the
 * thread's entry, in glibc.
 */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "agent.h"
#include "unwind_cfi.h"

/*
 * The [lo, hi) of the mapping of /proc/self/maps that contains addr, and
 * whether it is writable (*writable may be NULL).  0 or -1.
 */
int agent__mapping_of(uintptr_t addr, uintptr_t *lo, uintptr_t *hi,
		      bool *writable)
{
	char buf[512];
	uintptr_t start = 0, end = 0;
	int state = 0;		/* 0: start, 1: end, 2: perms, 3: rest */
	int perm = 0;		/* characters of perms seen */
	long fd, n, i;
	int found = -1;

	fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/maps",
		     O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (found < 0 && (n = syscall(SYS_read, fd, buf, sizeof(buf))) > 0) {
		for (i = 0; i < n; i++) {
			char c = buf[i];
			int digit = c >= '0' && c <= '9' ? c - '0' :
				    c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

			if (c == '\n') {
				state = 0;
				start = end = 0;
				perm = 0;
			} else if (state == 0) {
				if (digit >= 0)
					start = start << 4 | (uintptr_t)digit;
				else
					state = c == '-' ? 1 : 3;
			} else if (state == 1) {
				if (digit >= 0)
					end = end << 4 | (uintptr_t)digit;
				else
					state = addr >= start && addr < end ? 2 : 3;
			} else if (state == 2) {
				/* "rwxp": the second character is 'w' */
				if (++perm == 2) {
					*lo = start;
					*hi = end;
					if (writable)
						*writable = c == 'w';
					found = 0;
					break;
				}
			}
		}
	}
	syscall(SYS_close, fd);
	return found;
}

extern void *__libc_stack_end;	/* ld.so: the main stack's initial top */

/* Find and cache the mapping holding sp; its end to *hi.  0 or -1. */
static int refresh(struct pa_thread *t, uintptr_t sp, uintptr_t *hi)
{
	uintptr_t mlo, mhi;

	uintptr_t tcb = agent__thread_self();
	uintptr_t top = (uintptr_t)__libc_stack_end;

	__atomic_store_n(&t->stack_hi, 0, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (agent__mapping_of(sp, &mlo, &mhi, NULL))
		return -1;
	t->stack_own = (tcb >= mlo && tcb < mhi) || (top >= mlo && top < mhi);
	t->stack_lo = mlo;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&t->stack_hi, mhi, __ATOMIC_RELAXED);
	*hi = mhi;
	return 0;
}

/*
 * Whether a frame record at fp is one of a thread's first: glibc calls
 * main (from __libc_start_call_main) and thread functions (from
 * start_thread) with a few hundred bytes of its frames above them -
 * measured here, 272 bytes from the main stack's __libc_stack_end to
 * main's frame record and 2032 from a thread's TCB (pthread_self) to its
 * function's.  A walk that stops there (whatever glibc left in rbp) has
 * reached the thread's entry; one that stops deeper met a frameless
 * function's rbp, or garbage, and was cut.
 */
#define MAIN_TOP_SLACK		1024u
#define THREAD_TOP_SLACK	4096u

static bool at_thread_top(uintptr_t fp)
{
	uintptr_t main_top = (uintptr_t)__libc_stack_end;
	uintptr_t tcb = agent__thread_self();

	return (fp < main_top && main_top - fp <= MAIN_TOP_SLACK) ||
	       (fp < tcb &&
		tcb - fp <= THREAD_TOP_SLACK + fp_trust__static_tls());
}

unsigned int unwind_fp(struct hook_frame from, uint64_t *frames,
		       unsigned int max, struct fp_walk *walk)
{
	uintptr_t fp = from.fp;
	struct pa_thread *t = &pa_thread;
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	uintptr_t lo = sp, hi = t->stack_hi, cached_lo = t->stack_lo;
	uintptr_t page = sp & ~(uintptr_t)4095;
	/* the thread's own stack, when this walk is on a signal's
	 * alternate stack (a signal frame leads back to it) */
	uintptr_t home_lo = 0, home_hi = 0;
	unsigned int n = 0;
	bool fresh = false;

	walk->truncated = false;
	walk->top = UINT_MAX;
	walk->own_stack = false;
	walk->stack_hi = 0;
	walk->complete = false;
	walk->tables_gave_out = false;
	walk->cfi.memo = NULL;
	walk->cfi.tag = 0;
	if (!(sp >= cached_lo && sp < hi)) {
		stack_t ss;

		if (!sigaltstack(NULL, &ss) && (ss.ss_flags & SS_ONSTACK)) {
			hi = (uintptr_t)ss.ss_sp + ss.ss_size;
			if (t->stack_own) {
				home_hi = __atomic_load_n(&t->stack_hi,
							  __ATOMIC_RELAXED);
				__atomic_signal_fence(__ATOMIC_SEQ_CST);
				home_lo = home_hi ? t->stack_lo : 0;
			}
		} else {
			if (refresh(t, sp, &hi))
				return 0;
			fresh = true;
		}
	}
	if (hi <= page ||
	    (!(t->stack_own && hi == t->stack_hi) &&
	     msync((void *)page, hi - page, MS_ASYNC))) {
		if (fresh || refresh(t, sp, &hi) || hi <= page ||
		    msync((void *)page, hi - page, MS_ASYNC))
			return 0;
	}
	if (hi < 16)
		return 0;
	walk->stack_hi = hi;
	walk->own_stack = t->stack_own && hi == t->stack_hi &&
			  sp >= t->stack_lo;
	if (PA_ARCH_AGENT_CFI &&
	    (uint32_t)__atomic_load_n(&pa_agent.unwind_cfg, __ATOMIC_RELAXED) ==
	    PA_UNWIND_AUTO && fp >= lo && fp <= hi - 16 && !(fp & 7)) {
		const uintptr_t *record = (const uintptr_t *)fp;
		struct cfi_regs start = { .pc = record[1], .sp = from.sp,
					  .bp = record[0] };
		struct cfi_stack stack = { .lo = lo, .hi = hi,
					   .home_lo = home_lo,
					   .home_hi = home_hi };
		struct cfi_walk *cw = &walk->cfi;

		n = unwind_cfi(&start, &stack, frames, max, cw);
		/* a return address of 0 is not an end glibc makes: a
		 * misread stack, left to the frame-pointer walk */
		if (cw->truncated || cw->end == CFI_END_OUTERMOST) {
			walk->complete = true;
			walk->truncated = cw->truncated;
			return n;
		}
		walk->tables_gave_out = true;
		n = 0;
	}

	while (fp >= lo && fp <= hi - 16 && !(fp & 7)) {
		const uintptr_t *record = (const uintptr_t *)fp;
		uintptr_t next = record[0], ret = pa_arch_strip_ra(record[1]);

		if (!ret)
			break;
		if (n == max) {
			walk->truncated = true;
			break;
		}
		/* frames[0] comes from the hook's own record, never the top */
		if (n && walk->top == UINT_MAX && at_thread_top(fp))
			walk->top = n;
		frames[n++] = ret;
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}
