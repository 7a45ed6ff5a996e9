/* SPDX-License-Identifier: MIT */
/*
 * pa_clock.h - the clocks both the agent and the tracer read, in
 * nanoseconds, and the time constants.  pa_now_ns (CLOCK_MONOTONIC) is for
 * durations and deadlines; pa_unix_ns (CLOCK_REALTIME) only for the
 * timestamps a person reads.
 */
#ifndef PA_CLOCK_H
#define PA_CLOCK_H

#include <stdint.h>
#include <time.h>

#define PA_NSEC_PER_USEC	1000ull
#define PA_NSEC_PER_MSEC	1000000ull
#define PA_NSEC_PER_SEC		1000000000ull

static inline uint64_t pa_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * PA_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static inline uint64_t pa_now_ns(void)
{
	return pa_clock_ns(CLOCK_MONOTONIC);
}

/* CLOCK_MONOTONIC at the kernel tick's resolution (a few ms), read with
 * no TSC read: for times that need no more, on paths that run per call. */
static inline uint64_t pa_coarse_ns(void)
{
	return pa_clock_ns(CLOCK_MONOTONIC_COARSE);
}

/* The CPU time of the calling thread. */
static inline uint64_t pa_thread_cpu_ns(void)
{
	return pa_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* Wall time, for what a person reads (timestamps), never for durations. */
static inline int64_t pa_unix_ns(void)
{
	return (int64_t)pa_clock_ns(CLOCK_REALTIME);
}

#endif /* PA_CLOCK_H */
