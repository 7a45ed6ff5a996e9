/* SPDX-License-Identifier: MIT */
/*
 * runsort.h - a natural merge sort, stable, defined per element type so
 * that the comparison is inlined (qsort() calls it through a pointer, once
 * per comparison, on the symbolizer's hot path).  It merges the runs already in
 * order, pairwise, so input that comes mostly sorted - scope pieces in DIE
 * order, line table rows sequence by sequence - costs one pass to find
 * them and a few to merge; sorted input costs the one pass and nothing is
 * allocated.
 *
 *	RUNSORT_DEFINE(sort_rows, struct row, row_before)
 *
 * defines static int sort_rows(struct row *a, size_t n), sorting by
 * bool row_before(const struct row *x, const struct row *y) (x must come
 * first), equal elements staying in their order; 0 or -ENOMEM (a is then
 * as it was).
 */
#ifndef PA_ELF_RUNSORT_H
#define PA_ELF_RUNSORT_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define RUNSORT_DEFINE(name, type, before)				\
static int name(type *a, size_t n)					\
{									\
	type *tmp, *src = a, *dst;					\
	size_t *runs, nruns = 1;					\
									\
	for (size_t i = 1; i < n; i++)					\
		nruns += before(&a[i], &a[i - 1]);			\
	if (nruns <= 1)							\
		return 0;	/* one run: sorted */			\
	tmp = malloc(n * sizeof(*tmp));					\
	runs = malloc((nruns + 1) * sizeof(*runs));			\
	if (!tmp || !runs) {						\
		free(tmp);						\
		free(runs);						\
		return -ENOMEM;						\
	}								\
	/* Run starts, then n. */					\
	nruns = 0;							\
	runs[nruns++] = 0;						\
	for (size_t i = 1; i < n; i++)					\
		if (before(&a[i], &a[i - 1]))				\
			runs[nruns++] = i;				\
	runs[nruns] = n;						\
	dst = tmp;							\
	while (nruns > 1) {						\
		size_t merged = 0;					\
									\
		for (size_t r = 0; r < nruns; r += 2) {			\
			size_t lo = runs[r], mid = runs[r + 1], hi;	\
			size_t i = lo, j = mid, k = lo;			\
									\
			runs[merged++] = lo;				\
			if (r + 1 == nruns) {	/* the odd one out */	\
				memcpy(dst + lo, src + lo,		\
				       (n - lo) * sizeof(*a));		\
				break;					\
			}						\
			hi = runs[r + 2];				\
			while (i < mid && j < hi)			\
				dst[k++] = before(&src[j], &src[i]) ?	\
					   src[j++] : src[i++];		\
			memcpy(dst + k, src + i, (mid - i) * sizeof(*a)); \
			k += mid - i;					\
			memcpy(dst + k, src + j, (hi - j) * sizeof(*a)); \
		}							\
		runs[merged] = n;					\
		nruns = merged;						\
		src = dst;						\
		dst = src == a ? tmp : a;				\
	}								\
	if (src != a)							\
		memcpy(a, src, n * sizeof(*a));				\
	free(tmp);							\
	free(runs);							\
	return 0;							\
}

#endif /* PA_ELF_RUNSORT_H */
