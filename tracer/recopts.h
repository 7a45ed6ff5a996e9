/* SPDX-License-Identifier: MIT */
/*
 * recopts.h - the options that say how the agent records (rate, stack
 * depth, ring and live-table sizes, unwinding), shared by the launch/attach
 * command and `serve`, the way debugopts.h shares the symbol options.
 */
#ifndef PA_TRACER_RECOPTS_H
#define PA_TRACER_RECOPTS_H

#include <getopt.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

struct rec_options {
	uint64_t rate;
	uint32_t max_frames;
	uint64_t ring_size, live_size;	/* 0 until rec_options__finish */
	uint32_t unwind;		/* enum pa_unwind */
	uint32_t stack_bytes;
	bool stack_bytes_given;
	size_t max_stacks;		/* (stack, size) pairs kept; past it
					   samples fold (heap.h) */
};

enum {
	OPT_REC_MAX_FRAMES = 0x200, OPT_REC_RING, OPT_REC_LIVE,
	OPT_REC_UNWIND, OPT_REC_STACK_BYTES, OPT_REC_MAX_STACKS,
};

/* For a getopt_long table; -r is short for --rate ("r:" in optstring). */
#define REC_LONGOPTS							\
	{ "rate", required_argument, NULL, 'r' },			\
	{ "max-frames", required_argument, NULL, OPT_REC_MAX_FRAMES },	\
	{ "ring-size", required_argument, NULL, OPT_REC_RING },		\
	{ "live-size", required_argument, NULL, OPT_REC_LIVE },		\
	{ "unwind", required_argument, NULL, OPT_REC_UNWIND },		\
	{ "stack-bytes", required_argument, NULL, OPT_REC_STACK_BYTES },	\
	{ "max-stacks", required_argument, NULL, OPT_REC_MAX_STACKS }

#define REC_OPTIONS_HELP						\
"  -r, --rate BYTES       mean bytes between samples (default 524288);\n"	\
"                         1 counts every allocation, exactly: nothing lost\n"	\
"      --max-frames N     deepest stack recorded (default 64, at most 256)\n" \
"      --ring-size BYTES  ring buffer size, a power of two, K/M/G allowed\n" \
"                         (default 8M, 32M with --rate 1)\n"		\
"      --live-size N      live-table entries, a power of two\n"		\
"                         (default 65536, 1048576 with --rate 1)\n"	\
"      --unwind MODE      how stacks are walked: fp (frame pointers only),\n" \
"                         dwarf (copy each sample's stack, unwind it here\n" \
"                         with the modules' CFI), or auto (default: the\n" \
"                         agent unwinds with the modules' unwind tables,\n" \
"                         copying only where they give out)\n"		\
"      --stack-bytes N    stack copied per sample for dwarf/auto, a multiple\n" \
"                         of 8 from 256 to 64K (default 16K)\n"		\
"      --max-stacks N     at most N (stack, size) pairs kept, and 32 * N\n" \
"                         frames in them; past that a known stack's new\n" \
"                         sizes count in one size-less bucket of it, new\n" \
"                         stacks in one [other] stack (default 100000;\n" \
"                         serve: 10000)\n"

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
