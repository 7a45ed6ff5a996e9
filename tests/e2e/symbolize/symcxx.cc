// SPDX-License-Identifier: MIT
/*
 * symcxx.cc - C++ allocation sites for run-symbolize-cxx.sh, which builds
 * it itself (g++ -g -O2, frame pointers), records a profile with
 * --no-symbolize and checks the names `pprof-alloc symbolize` gives:
 * demangled in Function.name, mangled in Function.system_name.
 *
 *   symcxx N
 *
 *   ns::fill_pools(int)        (noinline) calls ns::Pool<int>::grow, which
 *                              is always_inline: N mallocs of GROW_INTS
 *                              ints, all kept.  The leaf location has two
 *                              lines: Pool<int>::grow's malloc (@grow_malloc)
 *                              and fill_pools' call (@fill_pools_call).
 *   ns::Pool<double>::reserve  (noinline, out of line) N mallocs of
 *                              RESERVE_DOUBLES doubles, each freed at once
 *                              (@reserve_malloc), called from
 *                              ns::fill_pools too (@fill_pools_reserve).
 *
 * The allocations call malloc directly (not operator new): the agent walks
 * frame pointers, and libstdc++'s operator new has none, so the frame of
 * its caller would be skipped.  Line numbers are found by the "@name"
 * markers.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define GROW_INTS	2000
#define RESERVE_DOUBLES	300

namespace ns {

template <typename T>
class Pool {
public:
	__attribute__((always_inline)) inline T *grow(unsigned long n)
	{
		T *p = static_cast<T *>(std::malloc(n * sizeof(T)));	// @grow_malloc

		if (!p)
			std::abort();
		std::memset(p, 1, n * sizeof(T));
		used_ += n;
		return p;
	}

	__attribute__((noinline)) void reserve(unsigned long n)
	{
		T *p = static_cast<T *>(std::malloc(n * sizeof(T)));	// @reserve_malloc

		if (!p)
			std::abort();
		std::memset(p, 2, n * sizeof(T));
		sum_ += static_cast<unsigned char>(reinterpret_cast<char *>(p)[n % sizeof(T)]);
		std::free(p);
	}

	unsigned long used() const { return used_ + sum_; }

private:
	unsigned long used_ = 0;
	unsigned long sum_ = 0;
};

static int *kept[100000];

__attribute__((noinline)) unsigned long fill_pools(int n)
{
	Pool<int> ints;
	Pool<double> doubles;

	for (int i = 0; i < n; i++) {
		kept[i] = ints.grow(GROW_INTS);	// @fill_pools_call
		kept[i][i % GROW_INTS] = i;
		doubles.reserve(RESERVE_DOUBLES);	// @fill_pools_reserve
	}
	return ints.used() + doubles.used();
}

} // namespace ns

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 0;

	if (n < 0 || n > 100000)
		return 2;
	return ns::fill_pools(n) == 0 && n > 0;
}
