// SPDX-License-Identifier: MIT
/*
 * recopts.c - the recording options of the launch/attach command and of
 * `serve`: parsed and checked in one place, so both take the same values
 * with the same messages.
 */
#include "recopts.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include "args.h"
#include "pprof_alloc_abi.h"
#include "common/log.h"

#define DEFAULT_RATE		524288ull
#define DEFAULT_MAX_FRAMES	64u
#define DEFAULT_RING		(8ull << 20)
#define DEFAULT_RING_ALL	(32ull << 20)	/* --rate 1 */
#define DEFAULT_LIVE		(1ull << 16)
#define DEFAULT_LIVE_ALL	(1ull << 20)	/* --rate 1 */

const struct opt rec_opts[] = {
	{ 'r', "rate", "BYTES",
	  "mean bytes between samples (default 524288); 1 counts every "
	  "allocation, exactly: nothing lost", NULL },
	{ OPT_REC_MAX_FRAMES, "max-frames", "N",
	  "deepest stack recorded (default 64, at most 256)", NULL },
	{ OPT_REC_RING, "ring-size", "BYTES",
	  "ring buffer size, a power of two, K/M/G allowed (default 8M, 32M "
	  "with --rate 1)", NULL },
	{ OPT_REC_LIVE, "live-size", "N",
	  "live-table entries, a power of two (default 65536, 1048576 with "
	  "--rate 1)", NULL },
	{ OPT_REC_UNWIND, "unwind", "MODE",
	  "how stacks are walked: fp (frame pointers only), dwarf (copy each "
	  "sample's stack, unwind it here with the modules' CFI), or auto "
	  "(default: the agent unwinds with the modules' unwind tables, "
	  "copying only where they give out)", NULL },
	{ OPT_REC_STACK_BYTES, "stack-bytes", "N",
	  "stack copied per sample for dwarf/auto, a multiple of 8 from 256 "
	  "to 64K (default 16K)", NULL },
	{ OPT_REC_MAX_STACKS, "max-stacks", "N",
	  "at most N (stack, size) pairs kept, and 32 * N frames in them; "
	  "past that a known stack's new sizes count in one size-less bucket "
	  "of it, new stacks in one [other] stack (default 100000; serve: "
	  "10000; with --rate 1 at least the agent's sites, 524288 for the "
	  "default --live-size)", NULL },
	OPT_END,
};

void rec_options__init(struct rec_options *o, size_t max_stacks)
{
	*o = (struct rec_options){
		.rate = DEFAULT_RATE, .max_frames = DEFAULT_MAX_FRAMES,
		.unwind = PA_UNWIND_AUTO,
		.stack_bytes = PA_STACK_BYTES_DEFAULT,
		.max_stacks = max_stacks,
	};
}

int rec_options__parse(struct rec_options *o, int opt,
		       const char *arg)
{
	uint64_t v;

	switch (opt) {
	case 'r':
		if (parse_size(arg, &v) || !v || v > (1ull << 40))
			return bad_option("--rate", arg, "want bytes from 1 to 1T");
		o->rate = v;
		return 1;
	case OPT_REC_MAX_FRAMES:
		if (parse_size(arg, &v) || !v || v > PA_MAX_FRAMES)
			return bad_option("--max-frames", arg, "want 1 to 256");
		o->max_frames = (uint32_t)v;
		return 1;
	case OPT_REC_RING:
		if (parse_size(arg, &v) || !pa_is_pow2(v) || v < PA_RING_MIN ||
		    v > PA_RING_MAX)
			return bad_option("--ring-size", arg,
				   "want a power of two from 64K to 1G");
		o->ring_size = v;
		return 1;
	case OPT_REC_LIVE:
		if (parse_size(arg, &v) || !pa_is_pow2(v) || v < PA_LIVE_MIN ||
		    v > PA_LIVE_MAX)
			return bad_option("--live-size", arg,
				   "want a power of two from 1024 to 67108864");
		o->live_size = v;
		return 1;
	case OPT_REC_UNWIND:
		if (parse_unwind(arg, &o->unwind))
			return bad_option("--unwind", arg, "want fp, dwarf or auto");
		return 1;
	case OPT_REC_STACK_BYTES:
		if (parse_size(arg, &v) || v < PA_STACK_BYTES_MIN ||
		    v > PA_STACK_BYTES_MAX || (v & 7))
			return bad_option("--stack-bytes", arg,
				   "want a multiple of 8 from 256 to 64K");
		o->stack_bytes = (uint32_t)v;
		o->stack_bytes_given = true;
		return 1;
	case OPT_REC_MAX_STACKS:
		if (parse_size(arg, &v) || !v || v > 100000000)
			return bad_option("--max-stacks", arg,
				   "want a count from 1 to 100000000");
		o->max_stacks = (size_t)v;
		o->max_stacks_given = true;
		return 1;
	default:
		return 0;
	}
}

int rec_options__finish(struct rec_options *o)
{
	if (!o->ring_size)
		o->ring_size = o->rate == 1 ? DEFAULT_RING_ALL : DEFAULT_RING;
	if (!o->live_size)
		o->live_size = o->rate == 1 ? DEFAULT_LIVE_ALL : DEFAULT_LIVE;
	/* every site the agent can count keeps its own stack: a compiler
	 * has 250,000 (stack, size) pairs, far past the sampled default */
	if (o->rate == 1 && !o->max_stacks_given &&
	    o->max_stacks < pa_site_capacity(o->live_size))
		o->max_stacks = (size_t)pa_site_capacity(o->live_size);
	/* a small ring takes a smaller copy, unless one was asked for */
	if (o->unwind != PA_UNWIND_FP && !o->stack_bytes_given &&
	    !pa_stack_bytes_fit(o->stack_bytes, o->ring_size, o->max_frames)) {
		uint64_t room = o->ring_size / 8 -
				pa_alloc_rec_size(o->max_frames, 1, 0);

		o->stack_bytes = room > PA_STACK_BYTES_MAX ? PA_STACK_BYTES_MAX :
				 (uint32_t)room & ~7u;
	}
	if (o->unwind != PA_UNWIND_FP &&
	    !pa_stack_bytes_fit(o->stack_bytes, o->ring_size, o->max_frames)) {
		pr_warn("--stack-bytes %u does not fit a ring of %" PRIu64 " bytes: a sample's record must take at most an eighth of it (raise --ring-size, or lower --stack-bytes)\n",
			o->stack_bytes, o->ring_size);
		return -EINVAL;
	}
	return 0;
}
