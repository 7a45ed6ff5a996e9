/* SPDX-License-Identifier: MIT */
/*
 * pa_futex.h - waiting on a word of the memfd, shared by the agent and the
 * tracer.  The memfd is mapped shared in both processes, so a futex on it
 * is keyed by the file and offset (never FUTEX_PRIVATE_FLAG): a wake in
 * one process ends a wait in the other.  A wait may end early (a signal,
 * a spurious wake-up, the word already moved): callers look at the word
 * again and at their own deadline.
 */
#ifndef PA_FUTEX_H
#define PA_FUTEX_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include "pa_clock.h"

/* Wait while *word is val, at most ns nanoseconds (0: no limit). */
static inline void pa_futex_wait(uint32_t *word, uint32_t val, uint64_t ns)
{
	struct timespec t = {
		.tv_sec = (time_t)(ns / PA_NSEC_PER_SEC),
		.tv_nsec = (long)(ns % PA_NSEC_PER_SEC),
	};

	syscall(SYS_futex, word, FUTEX_WAIT, val, ns ? &t : NULL, NULL, 0);
}

/* Wait until *word is no longer val or the monotonic deadline passes:
 * false then. */
static inline bool pa_futex_wait_until(uint32_t *word, uint32_t val,
				       uint64_t deadline)
{
	uint64_t now;

	while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == val) {
		now = pa_now_ns();
		if (now >= deadline)
			return false;
		pa_futex_wait(word, val, deadline - now);
	}
	return true;
}

/* Wake every waiter on word, in any process. */
static inline void pa_futex_wake(uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

#endif /* PA_FUTEX_H */
