// SPDX-License-Identifier: MIT
/*
 * gzip.h - gzip for pprof files: compressed in parallel members that
 * carry their size, read member after member as a stream, or found by
 * their sizes and inflated one by one (tracer/output/gzip.c).
 */
#ifndef PA_TRACER_GZIP_H
#define PA_TRACER_GZIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

/* Gzip in[0..in_len) into a malloc'd *out: members of 1 MiB (the last may
 * be shorter), each with its size in its header.  0 or -ENOMEM. */
int gzip__compress(const uint8_t *in, size_t in_len, uint8_t **out,
		   size_t *out_len);

/*
 * The same, one member per piece between cuts[0..ncuts) (ascending
 * offsets into in; a member may be empty).  0, -EINVAL (cuts out of
 * order) or -ENOMEM.
 */
int gzip__compress_cut(const uint8_t *in, size_t in_len, const size_t *cuts,
		       size_t ncuts, uint8_t **out, size_t *out_len);

/* One piece of input and the member it became (malloc'd, out_len bytes). */
struct gzip_piece {
	const uint8_t *in;
	size_t in_len;
	uint8_t *out;
	size_t out_len;
};

/*
 * Compress each piece into a member of its own, in parallel.  0, or
 * -ENOMEM with no out left allocated.  Release with gzip__free_pieces().
 */
int gzip__compress_pieces(struct gzip_piece *pieces, size_t npieces);
void gzip__free_pieces(struct gzip_piece *pieces, size_t npieces);

/* A member of a gzip file whose members carry their size (gzip.c). */
struct gzip_member {
	size_t offset, size;	/* in the file, header to trailer */
	uint32_t isize;		/* what its trailer says it inflates to */
};

/* Does in[0..in_len) start with a member that carries its size? */
bool gzip__sized(const uint8_t *in, size_t in_len);

/*
 * The members of in[0..in_len) if every one carries its size in its
 * header (as this file writes them) and they end exactly at in_len:
 * *out (malloc'd) and *nout.  Nothing is inflated or checked beyond the
 * headers.  0, -ENOENT (not such a file: read it as a stream) or -ENOMEM.
 */
int gzip__members(const uint8_t *in, size_t in_len,
		  struct gzip_member **out, size_t *nout);

struct libdeflate_decompressor;

/*
 * Inflate the member at member[0..size) into out[0..isize), with d.  0,
 * or -EBADMSG unless it is a whole, intact member of exactly size bytes
 * that inflates to exactly isize (its CRC and length checked).
 */
int gzip__inflate_member(struct libdeflate_decompressor *d,
			 const uint8_t *member, size_t size, uint8_t *out,
			 size_t isize);

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
