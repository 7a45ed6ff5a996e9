/* SPDX-License-Identifier: MIT */
/*
 * pa_clock.h - the one clock both the agent and the tracer read, and the
 * time constants.  CLOCK_MONOTONIC, in nanoseconds: durations and
 * deadlines, never wall time (readings take CLOCK_REALTIME themselves).
 */
#ifndef PA_CLOCK_H
#define PA_CLOCK_H

#include <stdint.h>
#include <time.h>

#define PA_NSEC_PER_USEC	1000ull
#define PA_NSEC_PER_MSEC	1000000ull
#define PA_NSEC_PER_SEC		1000000000ull

static inline uint64_t pa_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * PA_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

#endif /* PA_CLOCK_H */
