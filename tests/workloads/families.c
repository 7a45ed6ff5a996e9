// SPDX-License-Identifier: MIT
/*
 * families.c - every allocator entry point, each called from its own
 * function, K times (tests/e2e/run-families.sh knows the sizes below).
 *
 *   families K
 *
 * Per round, with what an exact profile must show at each function
 * (alloc_objects alloc_space inuse_objects inuse_space):
 *
 *   fam_malloc                malloc(1001), kept               1 1001 1 1001
 *   fam_malloc_zero           malloc(0), kept                  1 0 1 0
 *   fam_calloc                calloc(7, 129), kept             1 903 1 903
 *   fam_realloc_src           malloc(300) ...                  1 300 0 0
 *   fam_realloc               ... realloc'd to 5000, kept      1 5000 1 5000
 *   fam_realloc_null          realloc(NULL, 2222), kept        1 2222 1 2222
 *   fam_realloc_zero_src      malloc(777) ...                  1 777 0 0
 *   fam_realloc_zero          ... realloc(p, 0): freed         nothing
 *   fam_realloc_fail_src      malloc(444) ...                  1 444 1 444
 *   fam_realloc_fail          ... realloc(p, SIZE_MAX/2) fails nothing
 *   fam_reallocarray          reallocarray(NULL, 10, 33), then
 *                             reallocarray(p, 20, 33), kept    2 990 1 660
 *   fam_reallocarray_src      malloc(555) ...                  1 555 1 555
 *   fam_reallocarray_overflow ... reallocarray(p, SIZE_MAX/8, 16) fails
 *                                                              nothing
 *   fam_posix_memalign        posix_memalign(64, 3000), kept   1 3000 1 3000
 *   fam_posix_memalign_bad    alignments 24 and 0: EINVAL;
 *                             huge size: ENOMEM                nothing
 *   fam_aligned_alloc         aligned_alloc(256, 2048), kept   1 2048 1 2048
 *   fam_memalign              memalign(128, 1500), kept        1 1500 1 1500
 *   fam_valloc                valloc(3000), kept               1 3000 1 3000
 *   fam_pvalloc               pvalloc(5000), kept              1 5000 1 5000
 *   fam_malloc_fail           malloc(SIZE_MAX/2): NULL         nothing
 *   fam_calloc_overflow       calloc(SIZE_MAX/4, 8): NULL      nothing
 *   fam_free_null             free(NULL)                       nothing
 *
 * The program checks every result (alignment, errno, contents preserved
 * by realloc, malloc_usable_size >= the request) and exits 1 on a
 * failure, naming it.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* volatile sizes: the compiler must neither fold nor warn about them */
static volatile size_t huge = SIZE_MAX / 2;
static volatile size_t huge_elems = SIZE_MAX / 4;
static volatile size_t overflow_elems = SIZE_MAX / 8;
static volatile size_t zero;

static void *kept[4096];
static size_t nkept;
static int failures;

#define CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "families: %s: check failed: %s\n",	\
			__func__, #cond);				\
		failures++;						\
	}								\
} while (0)

static void keep(void *p)
{
	if (nkept < sizeof(kept) / sizeof(kept[0]))
		kept[nkept++] = p;
}

/* A usable block of at least n bytes, written end to end. */
static int usable(void *p, size_t n)
{
	if (!p || malloc_usable_size(p) < n)
		return 0;
	memset(p, 0xab, n);
	return 1;
}

__attribute__((noinline)) static void fam_malloc(void)
{
	void *p = malloc(1001);

	CHECK(usable(p, 1001));
	keep(p);
}

__attribute__((noinline)) static void fam_malloc_zero(void)
{
	void *p = malloc(zero);

	CHECK(p != NULL);	/* glibc: a unique pointer */
	keep(p);
}

__attribute__((noinline)) static void fam_calloc(void)
{
	unsigned char *p = calloc(7, 129);
	size_t i;

	CHECK(p != NULL);
	if (!p)
		return;
	for (i = 0; i < 7 * 129; i++)
		if (p[i]) {
			CHECK(!"calloc returned non-zero memory");
			break;
		}
	CHECK(usable(p, 903));
	keep(p);
}

__attribute__((noinline)) static void *fam_realloc_src(void)
{
	unsigned char *p = malloc(300);

	CHECK(usable(p, 300));
	if (p)
		p[299] = 0x42;
	return p;
}

__attribute__((noinline)) static void fam_realloc(void)
{
	unsigned char *p = fam_realloc_src(), *q;

	q = realloc(p, 5000);
	CHECK(q != NULL);
	if (!q)
		return;
	CHECK(q[0] == 0xab && q[299] == 0x42);
	CHECK(usable(q, 5000));
	keep(q);
}

__attribute__((noinline)) static void fam_realloc_null(void)
{
	void *p = realloc(NULL, 2222);

	CHECK(usable(p, 2222));
	keep(p);
}

__attribute__((noinline)) static void *fam_realloc_zero_src(void)
{
	void *p = malloc(777);

	CHECK(usable(p, 777));
	return p;
}

__attribute__((noinline)) static void fam_realloc_zero(void)
{
	void *p = fam_realloc_zero_src(), *q;

	q = realloc(p, zero);	/* glibc: frees p, returns NULL */
	CHECK(q == NULL);
	if (q)
		keep(q);
}

__attribute__((noinline)) static void *fam_realloc_fail_src(void)
{
	void *p = malloc(444);

	CHECK(usable(p, 444));
	return p;
}

__attribute__((noinline)) static void fam_realloc_fail(void)
{
	unsigned char *p = fam_realloc_fail_src(), *q;

	errno = 0;
	q = realloc(p, huge);
	CHECK(q == NULL && errno == ENOMEM);
	if (q) {
		keep(q);
		return;
	}
	/* p is untouched and still ours */
	CHECK(p[0] == 0xab && p[443] == 0xab && usable(p, 444));
	keep(p);
}

__attribute__((noinline)) static void fam_reallocarray(void)
{
	unsigned char *p = reallocarray(NULL, 10, 33), *q;

	CHECK(usable(p, 330));
	if (!p)
		return;
	p[329] = 0x17;
	q = reallocarray(p, 20, 33);
	CHECK(q != NULL);
	if (!q)
		return;
	CHECK(q[0] == 0xab && q[329] == 0x17 && usable(q, 660));
	keep(q);
}

__attribute__((noinline)) static void *fam_reallocarray_src(void)
{
	void *p = malloc(555);

	CHECK(usable(p, 555));
	return p;
}

__attribute__((noinline)) static void fam_reallocarray_overflow(void)
{
	unsigned char *p = fam_reallocarray_src(), *q;

	errno = 0;
	q = reallocarray(p, overflow_elems, 16);
	CHECK(q == NULL && errno == ENOMEM);
	if (q) {
		keep(q);
		return;
	}
	CHECK(p[554] == 0xab && usable(p, 555));
	keep(p);
}

__attribute__((noinline)) static void fam_posix_memalign(void)
{
	void *p = NULL;
	int err = posix_memalign(&p, 64, 3000);

	CHECK(err == 0 && p && (uintptr_t)p % 64 == 0);
	CHECK(usable(p, 3000));
	keep(p);
}

__attribute__((noinline)) static void fam_posix_memalign_bad(void)
{
	void *p = (void *)&failures;
	int err;

	err = posix_memalign(&p, 24, 100);
	CHECK(err == EINVAL);
	CHECK(p == (void *)&failures);	/* untouched on failure */
	err = posix_memalign(&p, zero, 100);
	CHECK(err == EINVAL);
	err = posix_memalign(&p, 64, huge);
	CHECK(err == ENOMEM);
	if (!err)
		keep(p);
}

__attribute__((noinline)) static void fam_aligned_alloc(void)
{
	void *p = aligned_alloc(256, 2048);

	CHECK(p && (uintptr_t)p % 256 == 0);
	CHECK(usable(p, 2048));
	keep(p);
}

__attribute__((noinline)) static void fam_memalign(void)
{
	void *p = memalign(128, 1500);

	CHECK(p && (uintptr_t)p % 128 == 0);
	CHECK(usable(p, 1500));
	keep(p);
}

__attribute__((noinline)) static void fam_valloc(void)
{
	void *p = valloc(3000);

	CHECK(p && (uintptr_t)p % 4096 == 0);
	CHECK(usable(p, 3000));
	keep(p);
}

__attribute__((noinline)) static void fam_pvalloc(void)
{
	void *p = pvalloc(5000);

	CHECK(p && (uintptr_t)p % 4096 == 0);
	CHECK(usable(p, 8192));	/* rounded up to whole pages */
	keep(p);
}

__attribute__((noinline)) static void fam_malloc_fail(void)
{
	void *p;

	errno = 0;
	p = malloc(huge);
	CHECK(p == NULL && errno == ENOMEM);
	if (p)
		keep(p);
}

__attribute__((noinline)) static void fam_calloc_overflow(void)
{
	void *p;

	errno = 0;
	p = calloc(huge_elems, 8);
	CHECK(p == NULL && errno == ENOMEM);
	if (p)
		keep(p);
}

__attribute__((noinline)) static void fam_free_null(void)
{
	void *volatile p = NULL;

	free(p);
	CHECK(malloc_usable_size(p) == 0);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1, r;

	if (rounds < 1 || rounds > 100) {
		fprintf(stderr, "usage: families K (1..100)\n");
		return 2;
	}
	for (r = 0; r < rounds; r++) {
		fam_malloc();
		fam_malloc_zero();
		fam_calloc();
		fam_realloc();
		fam_realloc_null();
		fam_realloc_zero();
		fam_realloc_fail();
		fam_reallocarray();
		fam_reallocarray_overflow();
		fam_posix_memalign();
		fam_posix_memalign_bad();
		fam_aligned_alloc();
		fam_memalign();
		fam_valloc();
		fam_pvalloc();
		fam_malloc_fail();
		fam_calloc_overflow();
		fam_free_null();
	}
	printf("families: %d rounds, %zu blocks kept, %d failed checks\n",
	       rounds, nkept, failures);
	return failures ? 1 : 0;
}
