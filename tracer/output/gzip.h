// SPDX-License-Identifier: MIT
/*
 * gzip.h - gzip for pprof files: compressed in parallel members, read
 * member after member as a stream (tracer/output/gzip.c).
 */
#ifndef PA_TRACER_GZIP_H
#define PA_TRACER_GZIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

/* Gzip in[0..in_len) into a malloc'd *out (several members past 1 MiB).
 * 0 or -ENOMEM. */
int gzip__compress(const uint8_t *in, size_t in_len, uint8_t **out,
		   size_t *out_len);

/*
 * Gunzip as a stream: the input is handed over piece by piece as it is
 * read, the output goes wherever the caller has room, so the caller
 * decides after every piece whether to go on.  One or more members; what
 * follows the last member and does not start another is ignored.
 */
struct gunzip {
	z_stream zs;
	int state;		/* GUNZIP_* in gzip.c */
	bool held;		/* a 0x1f read between members, not yet fed */
	uint64_t in_used;	/* compressed bytes consumed, every member */
	uint64_t out_made;	/* bytes written, every member */
};

/* 0 or -ENOMEM. */
int gunzip__init(struct gunzip *g);
void gunzip__fini(struct gunzip *g);

/*
 * Inflate what it can of in[0..in_len) into out[0..out_len); *used and
 * *made say how many bytes were consumed and written.  last: no input
 * follows in[0..in_len).  Returns 1 when the last member has ended, 0 when
 * it wants more input (all of it was used) or more room (out is full),
 * -EBADMSG (corrupt, or truncated when last) or -ENOMEM, with why filled.
 */
int gunzip__step(struct gunzip *g, const uint8_t *in, size_t in_len,
		 bool last, size_t *used, uint8_t *out, size_t out_len,
		 size_t *made, char *why, size_t why_size);

#endif /* PA_TRACER_GZIP_H */
