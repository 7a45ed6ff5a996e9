// SPDX-License-Identifier: MIT
/*
 * test-sampler.c - the agent's sampling decisions and the tracer's
 * estimates, together: a known allocation stream goes through the real
 * sampler__due/sampler__take, the sampled sizes are weighted with
 * heap__weight, and the estimates must land near the true totals.
 *
 * The bounds are set from the statistics, not tuned: with n samples the
 * relative standard error of a total is about 1/sqrt(n), and each check
 * allows more than four standard errors, so a correct sampler fails with a
 * probability far below one in ten thousand while a biased one (a weight
 * off by the sampling probability, a skipped reset) fails every time.
 */
#include <math.h>
#include <stdlib.h>
#include "agent/agent.h"
#include "check.h"
#include "tracer/record/heap.h"

static uint64_t lcg = 88172645463325252ULL;

static uint64_t rnd(void)
{
	lcg ^= lcg << 13;
	lcg ^= lcg >> 7;
	lcg ^= lcg << 17;
	return lcg;
}

static void test_draw_mean(void)
{
	uint64_t rng, rate = 524288, i, n = 2000000;
	double sum = 0, sumsq = 0, mean, sd;

	sampler__seed(&rng, 1);
	for (i = 0; i < n; i++) {
		double d = (double)sampler__draw(&rng, rate);

		CHECK(d >= 1);
		sum += d;
		sumsq += d * d;
	}
	mean = sum / (double)n;
	sd = sqrt(sumsq / (double)n - mean * mean);
	/* exponential: mean = sd = rate; standard error of mean 0.07% */
	CHECK(fabs(mean / (double)rate - 1) < 0.005);
	CHECK(fabs(sd / (double)rate - 1) < 0.01);
	/* rate 1 draws are >= 1 byte too */
	CHECK_EQ_INT(sampler__draw(&rng, 1) >= 1, 1);
}

/*
 * The agent's own logarithm (no libm in the agent) against libm's: over
 * the sampler's whole domain, (0, 1] in steps of 2^-53, as ulps of libm's
 * answer; and the draws it makes are exponential: P(d > k rate) =
 * exp(-k), each within 5 standard errors of a binomial proportion.
 */
static void test_log(void)
{
	static const double edges[] = {
		1.0, 0x1.fffffffffffffp-1, 0.5, 0x1.0p-53, 0x1.6a09e667f3bcdp-1,
		0x1.6a09e667f3bccp-1, 0x1.0p-1022, 0.1, 0.75, 1e-300, 3.0, 1e300,
	};
	uint64_t rng = 12345, i, n = 4000000;
	double worst = 0;

	for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		double want = log(edges[i]), got = sampler__log(edges[i]);

		CHECK(fabs(got - want) <= 4 * fabs(nextafter(want, 0) - want) +
					  0x1.0p-1074);
	}
	for (i = 0; i < n; i++) {
		double u, want, got, ulp;

		rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
		/* uniform in (0, 1], and as many near 1, where log -> 0 */
		u = (double)((rng >> 11) + 1) * 0x1.0p-53;
		if (i & 1)
			u = 1 - u * 0x1.0p-20 + 0x1.0p-53;
		if (u > 1)
			u = 1;
		want = log(u);
		got = sampler__log(u);
		if (want == 0) {
			CHECK(got == 0);
			continue;
		}
		ulp = fabs(nextafter(want, 0) - want);
		if (fabs(got - want) / ulp > worst)
			worst = fabs(got - want) / ulp;
	}
	printf("sampler__log: worst %.2f ulp of libm's log over %ju values\n",
	       worst, (uintmax_t)n);
	CHECK(worst <= 4);
}

static void test_draw_tail(void)
{
	static const double ks[] = { 0.01, 0.1, 0.5, 1, 2, 4, 8, 12 };
	uint64_t rng, rate = 1 << 20, i, n = 4000000;
	uint64_t above[8] = { 0 };
	unsigned int k;

	sampler__seed(&rng, 7);
	for (i = 0; i < n; i++) {
		uint64_t d = sampler__draw(&rng, rate);

		for (k = 0; k < 8; k++)
			above[k] += (double)d > ks[k] * (double)rate;
	}
	for (k = 0; k < 8; k++) {
		double p = exp(-ks[k]), got = (double)above[k] / (double)n;
		double se = sqrt(p * (1 - p) / (double)n);

		if (fabs(got - p) > 5 * se + 1e-9) {
			fprintf(stderr, "P(d > %g rate) = %g, want %g (se %g)\n",
				ks[k], got, p, se);
			CHECK(fabs(got - p) <= 5 * se + 1e-9);
		}
	}
}

/* Run the real sampler on a stream; returns estimated bytes and objects. */
static void run_stream(uint64_t rate, uint64_t n, uint64_t min, uint64_t max,
		       double *est_bytes, double *est_objs, double *true_bytes,
		       uint64_t *samples)
{
	struct heap h;
	uint64_t i;

	heap__init(&h, rate);
	pa_agent.rate = rate;
	__atomic_store_n(&pa_agent.state, AGENT_RUNNING, __ATOMIC_RELEASE);
	pa_thread.bytes_left = 0;
	pa_thread.initialized = 0;
	*est_bytes = *est_objs = *true_bytes = 0;
	*samples = 0;
	for (i = 0; i < n; i++) {
		uint64_t size = min + rnd() % (max - min + 1);

		*true_bytes += (double)size;
		if (sampler__due(size) && sampler__take(size)) {
			double w = heap__weight(&h, size);

			*est_bytes += w * (double)size;
			*est_objs += w;
			++*samples;
		}
	}
	heap__fini(&h);
}

static void test_unbiased(void)
{
	double eb, eo, tb;
	uint64_t samples;

	/* big blocks: ~120k samples; bytes within 2% (>4 sigma at 0.3%) */
	run_stream(524288, 1000000, 4096, 131072, &eb, &eo, &tb, &samples);
	CHECK(samples > 50000);
	CHECK(fabs(eb / tb - 1) < 0.02);
	CHECK(fabs(eo / 1000000 - 1) < 0.03);

	/* small blocks: each sampled one stands for ~8000 */
	run_stream(524288, 20000000, 16, 112, &eb, &eo, &tb, &samples);
	CHECK(samples > 2000);
	CHECK(fabs(eb / tb - 1) < 0.10);
	CHECK(fabs(eo / 20000000 - 1) < 0.10);

	/* rate 1: every allocation, including size 0, weight exactly 1 */
	pa_agent.rate = 1;
	pa_thread.bytes_left = 0;
	CHECK(sampler__due(0) && sampler__take(0));
	run_stream(1, 100000, 0, 1000, &eb, &eo, &tb, &samples);
	CHECK_EQ_INT(samples, 100000);
	CHECK(eb == tb);
	CHECK(eo == 100000);
}

static void test_states(void)
{
	pa_agent.rate = 524288;
	pa_thread.bytes_left = 0;
	pa_thread.initialized = 0;
	/* before the agent starts: never sampled, and still 0 so that
	 * sampling begins as soon as it does */
	__atomic_store_n(&pa_agent.state, AGENT_NOT_STARTED, __ATOMIC_RELEASE);
	CHECK(sampler__due(100));
	CHECK(!sampler__take(100));
	CHECK_EQ_INT(pa_thread.bytes_left, 0);
	/* disabled (a forked child): never again on the slow path */
	__atomic_store_n(&pa_agent.state, AGENT_DISABLED, __ATOMIC_RELEASE);
	CHECK(!sampler__take(100));
	CHECK(!sampler__due(1u << 30));
	/* nested inside a hook: not sampled */
	__atomic_store_n(&pa_agent.state, AGENT_RUNNING, __ATOMIC_RELEASE);
	pa_thread.bytes_left = 0;
	pa_thread.depth = AGENT_MAX_DEPTH;
	CHECK(!sampler__take(1u << 30));
	pa_thread.depth = 0;
}

static void test_weight(void)
{
	struct heap h;

	heap__init(&h, 524288);
	CHECK(fabs(heap__weight(&h, 524288) - 1 / (1 - exp(-1))) < 1e-12);
	CHECK(fabs(heap__weight(&h, 16) - 524288.0 / 16) < 1);
	CHECK(heap__weight(&h, 1ull << 40) == 1.0);
	heap__fini(&h);
	heap__init(&h, 1);
	CHECK(heap__weight(&h, 12345) == 1.0);
	heap__fini(&h);
}

int main(void)
{
	test_log();
	test_draw_mean();
	test_draw_tail();
	test_weight();
	test_states();
	test_unbiased();
	CHECK_SUMMARY("test-sampler");
	return 0;
}
