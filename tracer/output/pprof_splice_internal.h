/* SPDX-License-Identifier: MIT */
/*
 * pprof_splice_internal.h - what the two halves of pprof_splice.c's
 * reader and writer share: a spliced profile's members and their state.
 * Not for other callers: pprof_splice.h is the interface.
 */
#ifndef PA_TRACER_PPROF_SPLICE_INTERNAL_H
#define PA_TRACER_PPROF_SPLICE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gzip.h"
#include "pprof_samples.h"
#include "pprof_splice.h"

#define MAX_THREADS	8

/* A member of the file, as read. */
struct member {
	const uint8_t *gz;		/* in the input */
	size_t gz_size;
	size_t len;			/* inflated */
	uint8_t *kept;			/* inflated, if it holds other fields */
	bool other;			/* fields other than samples */
	bool done;			/* read (under the pool's lock) */
	struct pprof_sample_tally tally;
};

/* The threads that read members, on after the read returns. */
struct read_pool {
	struct member *members;
	size_t nmembers;
	size_t *order;			/* the order members are taken in */
	size_t next;			/* in order[] */
	size_t scratch_size;		/* the largest member, inflated */
	int err;			/* the first failure: all stop */
	pthread_mutex_t lock;		/* next, err, members' done */
	pthread_cond_t read;		/* a member was read */
	pthread_t tids[MAX_THREADS];
	unsigned int nthreads;
};

struct pprof_splice {
	uint8_t *input;			/* the file as read */
	size_t input_len;
	bool mapped;			/* input is the file mapped */
	struct member *members;
	size_t nmembers;
	struct read_pool pool;
	bool pool_started;
	/* members[1..middle_end) were not read when the rest was taken from
	 * the others: they must hold samples alone */
	size_t middle_end;
	uint8_t *rest;			/* the fields other than samples */
	size_t rest_len;
	size_t total;			/* the protobuf's bytes */
	/* the profile as read, for the samples' checks */
	uint64_t sample_types, strings, locations;
	bool dense;			/* location ids 1..locations */
	bool finished;			/* pprof_splice__finish() said 0 */
	/* pprof_splice__prepare(): the new message packed, where its fields
	 * after the samples start, and those gzipped */
	uint8_t *packed;
	size_t packed_len, split;
	struct gzip_piece *tail;
	size_t ntail;
};

#endif /* PA_TRACER_PPROF_SPLICE_INTERNAL_H */
