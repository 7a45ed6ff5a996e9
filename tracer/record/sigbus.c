// SPDX-License-Identifier: MIT
/*
 * sigbus.c - keep the tracer alive when a mapped file shrinks under it.
 *
 * The tracer maps files that the target can change: the modules it has
 * loaded, opened through /proc/PID/map_files, which libelf and libdw map
 * to read build IDs, symbols, line tables and CFI.  A process that owns
 * such a file can truncate it at any moment; a read of a mapped page past
 * the new end raises SIGBUS (BUS_ADRERR), whose default action would kill
 * the tracer in the middle of a profile.  There is no window to check in:
 * the file can shrink between any check and any read.
 *
 * So the handler puts a private zero page where the missing one was
 * (mmap with MAP_FIXED is async-signal-safe), counts it and returns: the
 * read that faulted runs again and reads zeros, which libelf and libdw
 * take for what they are - corrupt data: an error, or no symbol for that
 * address - never a crash.  Whoever reports on the run says how many pages
 * were replaced (sigbus__pages), so nothing is silently wrong.
 *
 * Anything else - a SIGBUS that is not a missing page (BUS_ADRALN, a
 * hardware error), or a replacement mmap that fails - restores the default
 * action and returns, so the fault happens again and kills the tracer as
 * it would have (a SIGBUS sent by kill is raised again): real bugs still
 * die loudly.
 *
 * The handler runs on whichever thread faulted (symbolize --jobs has
 * several); the counter is atomic, and nothing else is shared.
 */
#include "sigbus.h"
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static uint64_t pages_replaced;
static uintptr_t page_mask;

static void on_sigbus(int sig, siginfo_t *si, void *uctx)
{
	uintptr_t page = (uintptr_t)si->si_addr & page_mask;
	void *p;

	(void)uctx;
	if (si->si_code == BUS_ADRERR && page) {
		p = mmap((void *)page, ~page_mask + 1, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (p != MAP_FAILED) {
			__atomic_add_fetch(&pages_replaced, 1,
					   __ATOMIC_RELAXED);
			return;
		}
	}
	signal(sig, SIG_DFL);
	if (si->si_code <= 0)	/* sent, not a fault: nothing runs again */
		raise(sig);
}

int sigbus__guard(void)
{
	struct sigaction sa;
	long page = sysconf(_SC_PAGESIZE);

	page_mask = ~(uintptr_t)((page > 0 ? page : 4096) - 1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGBUS, &sa, NULL) ? -errno : 0;
}

uint64_t sigbus__pages(void)
{
	return __atomic_load_n(&pages_replaced, __ATOMIC_RELAXED);
}
