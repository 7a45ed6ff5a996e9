// SPDX-License-Identifier: MIT
/*
 * sampler.c - which allocations are sampled.
 *
 * Go's and jemalloc's model: every allocated byte is sampled with
 * probability 1/rate, so the distance in bytes between samples is
 * exponential with mean rate.  Each thread keeps bytes_left, the distance to
 * its next sampled byte; an allocation of size >= bytes_left contains that
 * byte and is sampled, after which a fresh distance is drawn (the process is
 * memoryless, so nothing is carried over).  An allocation of size s is then
 * sampled with probability 1 - exp(-s/rate), which is the weight the tracer
 * undoes.  rate == 1 is "record everything": bytes_left stays 0 and every
 * allocation, including malloc(0), takes the slow path and is sampled.
 *
 * bytes_left starts at 0, so a thread's first allocation comes here and
 * seeds the thread's generator.  Nothing here allocates or makes a system
 * call other than gettid once per thread.
 *
 * The logarithm that makes the distance exponential is our own
 * (sampler__log): libm's is in libm.so.6, which a container image of a
 * program that does not use it lacks.  Its error is a few units in the
 * last place (tests/unit/test-sampler.c compares it with libm's), far
 * below what sampling at random can tell.
 */
#include <time.h>
#include <unistd.h>
#include "agent.h"

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

void sampler__seed(uint64_t *rng, uint64_t salt)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	*rng = splitmix64(salt ^ splitmix64((uint64_t)ts.tv_nsec ^
					    ((uint64_t)ts.tv_sec << 32)));
	if (!*rng)
		*rng = 1;
}

/* xorshift64*: good enough for sampling, two multiplies. */
static uint64_t next_random(uint64_t *rng)
{
	uint64_t x = *rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/*
 * ln(x) for a positive normal x: x = m * 2^e with m in [sqrt(2)/2,
 * sqrt(2)), ln(m) = 2 atanh(s) for s = (m - 1) / (m + 1), |s| < 0.172, a
 * series whose terms after s^19 are below 2^-60 of the sum; ln(2) in two
 * parts (fdlibm's) so that e * ln(2) keeps its precision.  Anything else
 * (0, negative, subnormal, infinite, NaN) gives -1022 ln 2, the smallest
 * normal's: the sampler never asks.
 */
double sampler__log(double x)
{
	static const double ln2_hi = 6.93147180369123816490e-01;
	static const double ln2_lo = 1.90821492927058770002e-10;
	union {
		double d;
		uint64_t u;
	} v = { .d = x };
	int e = (int)((v.u >> 52) & 0x7ff) - 1023;
	double m, s, s2, p;

	if (!(x >= 0x1.0p-1022) || e == 1024)
		return -1022 * (ln2_hi + ln2_lo);
	v.u = (v.u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;
	m = v.d;
	if (m > 1.41421356237309504880) {
		m *= 0.5;
		e++;
	}
	s = (m - 1) / (m + 1);
	s2 = s * s;
	p = 1.0 / 19;
	p = p * s2 + 1.0 / 17;
	p = p * s2 + 1.0 / 15;
	p = p * s2 + 1.0 / 13;
	p = p * s2 + 1.0 / 11;
	p = p * s2 + 1.0 / 9;
	p = p * s2 + 1.0 / 7;
	p = p * s2 + 1.0 / 5;
	p = p * s2 + 1.0 / 3;
	p = p * s2;
	/* 2s + 2s*p, the small part first */
	return e * ln2_hi + (e * ln2_lo + (2 * s * p + 2 * s));
}

uint64_t sampler__draw(uint64_t *rng, uint64_t rate)
{
	/* u in (0, 1]: -log(u) is finite and >= 0 */
	double u = (double)((next_random(rng) >> 11) + 1) * 0x1.0p-53;
	double d = -sampler__log(u) * (double)rate;

	if (d >= 0x1.0p62)
		return 1ull << 62;
	return (uint64_t)d + 1;
}

bool sampler__take(size_t size)
{
	struct pa_thread *t = &pa_thread;
	struct pa_header *hdr;
	int state;

	if (unlikely(agent__forked()))
		return false;
	hdr = __atomic_load_n(&pa_agent.hdr, __ATOMIC_ACQUIRE);
	if (unlikely(hdr && __atomic_load_n(&hdr->command, __ATOMIC_RELAXED)))
		agent__command();
	state = __atomic_load_n(&pa_agent.state, __ATOMIC_ACQUIRE);
	if (state != AGENT_RUNNING) {
		/* Disabled for good: never come back here.  Not started yet:
		 * stay at 0 so that sampling begins when the agent does. */
		if (state == AGENT_DISABLED)
			t->bytes_left = UINT64_MAX;
		/* AGENT_DETACHED stays at 0: a later attach resumes */
		return false;
	}
	/* only while recording: an agent turned off deletes the key, and
	 * must not find it made again (counters.c) */
	if (unlikely(!t->counts_registered))
		agent__register_counts();
	/* inside the program's own allocator (entry.c): its calls to its
	 * own public functions are part of the outer call, which samples */
	if (unlikely(pa_entry_nest))
		return false;
	if (t->depth >= AGENT_MAX_DEPTH) {
		agent__skip_nested(size);
		return false;
	}
	/* the thread's counts to the header: at each sample, which at the
	 * default rate is once per ~512 KiB; at --rate 1 (every call
	 * samples) once per 256 of them */
	if (pa_agent.rate != 1 || !(++t->flush_tick & 255))
		agent__flush_counts();
	if (pa_agent.rate == 1)
		return true;
	if (!t->initialized) {
		sampler__seed(&t->rng, (uintptr_t)t ^ (uint64_t)agent__gettid());
		t->initialized = 1;
		t->bytes_left = sampler__draw(&t->rng, pa_agent.rate);
		if (size < t->bytes_left) {
			t->bytes_left -= size;
			return false;
		}
	}
	t->bytes_left = sampler__draw(&t->rng, pa_agent.rate);
	return true;
}
