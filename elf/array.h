/* SPDX-License-Identifier: MIT */
/*
 * array.h - growing a malloc'd array by doubling, with the overflow checks
 * done once, for the symbolizer and the tools built on it.
 */
#ifndef PA_ELF_ARRAY_H
#define PA_ELF_ARRAY_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * Make room for need elements of elem bytes in *array, whose capacity is
 * *cap (0 for none yet), doubling from 16.  0 or -ENOMEM (the array is
 * then unchanged).
 */
static inline int array__grow(void **array, size_t *cap, size_t need,
			      size_t elem)
{
	size_t new_cap = *cap ? *cap : 16;
	void *grown;

	if (need <= *cap)
		return 0;
	while (new_cap < need) {
		if (new_cap > SIZE_MAX / 2)
			return -ENOMEM;
		new_cap *= 2;
	}
	if (new_cap > SIZE_MAX / elem)
		return -ENOMEM;
	grown = realloc(*array, new_cap * elem);
	if (!grown)
		return -ENOMEM;
	*array = grown;
	*cap = new_cap;
	return 0;
}

/* The first index of sorted a[0..n) whose value is >= key, or n. */
static inline size_t array__lower_bound_u64(const uint64_t *a, size_t n,
					    uint64_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif /* PA_ELF_ARRAY_H */
