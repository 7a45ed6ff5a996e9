/* SPDX-License-Identifier: MIT */
/*
 * check.h - the assertion macros of the unit tests.
 *
 * A failed check prints the condition (and for the _EQ_ forms both values)
 * with file and line, and exits 1 at once: later checks usually depend on
 * earlier ones, so going on would only add noise.  Checks are counted so
 * that a test can end with CHECK_SUMMARY("test-foo").
 *
 * Each test is one program, so the counter is a static in the header.
 */
#ifndef PA_TEST_CHECK_H
#define PA_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long check_count __attribute__((unused));

#define CHECK(cond)							\
	do {								\
		check_count++;						\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n",	\
				__FILE__, __LINE__, #cond);		\
			exit(1);					\
		}							\
	} while (0)

/* Compares as intmax_t: fine for any int type and uint64_t below 2^63. */
#define CHECK_EQ_INT(a, b)						\
	do {								\
		intmax_t check_a_ = (intmax_t)(a);			\
		intmax_t check_b_ = (intmax_t)(b);			\
		check_count++;						\
		if (check_a_ != check_b_) {				\
			fprintf(stderr, "%s:%d: CHECK_EQ_INT(%s, %s) "	\
				"failed: %jd != %jd\n", __FILE__,	\
				__LINE__, #a, #b, check_a_, check_b_);	\
			exit(1);					\
		}							\
	} while (0)

/* NULL compares equal only to NULL. */
#define CHECK_EQ_STR(a, b)						\
	do {								\
		const char *check_a_ = (a), *check_b_ = (b);		\
		check_count++;						\
		if (!check_a_ || !check_b_ ?				\
			    check_a_ != check_b_ :			\
			    strcmp(check_a_, check_b_) != 0) {		\
			fprintf(stderr, "%s:%d: CHECK_EQ_STR(%s, %s) "	\
				"failed: \"%s\" != \"%s\"\n", __FILE__,	\
				__LINE__, #a, #b,			\
				check_a_ ? check_a_ : "(null)",		\
				check_b_ ? check_b_ : "(null)");	\
			exit(1);					\
		}							\
	} while (0)

#define CHECK_SUMMARY(name)						\
	printf("%s: %lu checks passed\n", (name), check_count)

#endif /* PA_TEST_CHECK_H */
