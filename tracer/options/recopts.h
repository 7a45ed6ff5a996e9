/* SPDX-License-Identifier: MIT */
/*
 * recopts.h - the options that say how the agent records (rate, stack
 * depth, ring and live-table sizes, unwinding), shared by the launch/attach
 * command and `serve`, the way debugopts.h shares the symbol options.
 */
#ifndef PA_TRACER_RECOPTS_H
#define PA_TRACER_RECOPTS_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include "options.h"

struct rec_options {
	uint64_t rate;
	uint32_t max_frames;
	uint64_t ring_size, live_size;	/* 0 until rec_options__finish */
	uint32_t unwind;		/* enum pa_unwind */
	uint32_t stack_bytes;
	bool stack_bytes_given;
	size_t max_stacks;		/* (stack, size) pairs kept; past it
					   samples fold (heap.h) */
	bool max_stacks_given;		/* else at --rate 1 at least as many
					   as the agent's sites */
};

enum {
	OPT_REC_MAX_FRAMES = 0x200, OPT_REC_RING, OPT_REC_LIVE,
	OPT_REC_UNWIND, OPT_REC_STACK_BYTES, OPT_REC_MAX_STACKS,
};

/* The options, for a command's table (OPT_INCLUDE); -r is --rate. */
extern const struct opt rec_opts[];

/* The defaults; max_stacks is the command's own (REC_MAX_STACKS_*). */
void rec_options__init(struct rec_options *o, size_t max_stacks);

#define REC_MAX_STACKS_PROFILE	100000u	/* one profile, then exit */
#define REC_MAX_STACKS_SERVE	10000u	/* for days, in a service's host */
/* One option from getopt_long: 1 if it was one of these, 0 if not, or
 * -EINVAL (said on stderr, after prog). */
int rec_options__parse(struct rec_options *o, int opt,
		       const char *arg);
/* After parsing: the sizes that depend on the rate, and a stack copy that
 * fits the ring (a default one is made smaller; one asked for is refused).
 * 0 or -EINVAL (said on stderr). */
int rec_options__finish(struct rec_options *o);

#endif /* PA_TRACER_RECOPTS_H */
