// SPDX-License-Identifier: MIT
/*
 * gzip.c - pprof files' gzip, both ways.
 *
 * Compressing: level 1 (as Go's runtime/pprof: profiles are written while
 * the user waits, and the last few percent are not worth it), with
 * libdeflate, about twice as fast as zlib at the same level and a little
 * smaller.  The input is cut into pieces, each compressed by one of several
 * threads into a gzip member of its own and put end to end: a gzip file
 * may hold several members (RFC 1952 2.2), which every reader (Go's,
 * zlib's gzip tools, gzip__decompress()) reads as one stream.  Where the
 * cuts go is the caller's (gzip__compress_cut(): pprof_file.c cuts
 * between whole protobuf fields); gzip__compress() cuts every GZIP_MEMBER
 * bytes.  Either way they depend on the data alone, so the bytes written
 * do not depend on the machine's CPUs.
 *
 * Every member written carries its own compressed size in its header: an
 * extra field (FEXTRA, RFC 1952 2.3.1.1) with one subfield, 'P' 'a', of 4
 * bytes, the whole member's size, little-endian - the way BGZF (SAMtools'
 * blocked gzip) indexes its blocks.  Readers that do not know it skip it.
 * gzip__members() finds every member of such a file from the headers alone,
 * so they can be inflated in parallel (gzip__inflate_member(), libdeflate)
 * and copied as they are into another file (pprof_splice.c).  It claims
 * nothing it does not check: a member whose size is wrong fails to inflate
 * to exactly its bytes.
 *
 * Decompressing as a stream: the input is not trusted, and may be a pipe.
 * zlib,
 * member after member, as a stream: input is handed over in whatever
 * pieces the caller read, output goes into whatever room the caller has,
 * and after every step the caller sees how much came in and out - so it,
 * knowing what the data should be, stops a decompression bomb as soon as
 * the output stops looking like it (tracer/output/pprof_file.c), instead of this
 * file inflating everything first.  A member's magic may be split between
 * two pieces: a trailing 0x1f is held until the next byte.  Bytes after
 * the last member that do not start another are ignored (as gzip -d
 * does); a member cut short, or a lone 0x1f at the very end, is an error.
 */
#include "gzip.h"

#include <errno.h>
#include <libdeflate.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "elf/array.h"

/* Input bytes per gzip member for gzip__compress() (the last may be
 * shorter). */
#define GZIP_MEMBER	(1u << 20)
#define GZIP_THREADS	8

/* The indexed member's header: magic, deflate, FEXTRA, mtime 0, XFL
 * "fastest" (level 1), OS unknown; XLEN 8: subfield 'P' 'a' of 4 bytes. */
#define GZIP_HEADER	20
#define GZIP_TRAILER	8
static const uint8_t gzip_header[GZIP_HEADER - 4] = {
	0x1f, 0x8b, 8, 0x04, 0, 0, 0, 0, 4, 0xff, 8, 0, 'P', 'a', 4, 0,
};

enum { GUNZIP_MEMBER, GUNZIP_BETWEEN, GUNZIP_END };

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

struct gzip_run {
	struct gzip_piece *pieces;
	size_t npieces;
	size_t next;		/* next piece, under lock */
	pthread_mutex_t lock;
};

/* One indexed member of piece->in into piece->out (bound bytes).  0, or
 * -EFBIG when it does not fit (it always does with gzip_bound()). */
static int compress_piece(struct libdeflate_compressor *c,
			  struct gzip_piece *piece, size_t bound)
{
	size_t deflated;

	deflated = libdeflate_deflate_compress(c, piece->in, piece->in_len,
			piece->out + GZIP_HEADER,
			bound - GZIP_HEADER - GZIP_TRAILER);
	if (!deflated ||
	    deflated > UINT32_MAX - GZIP_HEADER - GZIP_TRAILER)
		return -EFBIG;
	piece->out_len = GZIP_HEADER + deflated + GZIP_TRAILER;
	memcpy(piece->out, gzip_header, sizeof(gzip_header));
	put_le32(piece->out + GZIP_HEADER - 4, (uint32_t)piece->out_len);
	put_le32(piece->out + GZIP_HEADER + deflated,
		 libdeflate_crc32(0, piece->in, piece->in_len));
	put_le32(piece->out + GZIP_HEADER + deflated + 4,
		 (uint32_t)piece->in_len);
	return 0;
}

/* What a member of in_len bytes may take, or 0 past what a member's size
 * field holds. */
static size_t gzip_bound(size_t in_len)
{
	/* NULL: a bound for any compressor (libdeflate.h). */
	size_t bound = libdeflate_deflate_compress_bound(NULL, in_len);

	if (bound > UINT32_MAX - GZIP_HEADER - GZIP_TRAILER)
		return 0;
	return bound + GZIP_HEADER + GZIP_TRAILER;
}

static void *gzip_worker(void *arg)
{
	struct gzip_run *run = arg;
	struct libdeflate_compressor *c = libdeflate_alloc_compressor(1);

	while (c) {	/* without a compressor, others do the work */
		struct gzip_piece *piece;
		size_t k, bound;

		pthread_mutex_lock(&run->lock);
		k = run->next++;
		pthread_mutex_unlock(&run->lock);
		if (k >= run->npieces)
			break;
		piece = &run->pieces[k];
		bound = gzip_bound(piece->in_len);
		piece->out = bound ? malloc(bound) : NULL;
		piece->out_len = 0;	/* 0: failed */
		if (piece->out && compress_piece(c, piece, bound)) {
			free(piece->out);
			piece->out = NULL;
		}
	}
	if (c)
		libdeflate_free_compressor(c);
	return NULL;
}

int gzip__compress_pieces(struct gzip_piece *pieces, size_t npieces)
{
	struct gzip_run run = {
		.pieces = pieces, .npieces = npieces,
		.lock = PTHREAD_MUTEX_INITIALIZER,
	};
	pthread_t threads[GZIP_THREADS];
	unsigned int nthreads = 0, want;
	long cpus;

	for (size_t k = 0; k < npieces; k++)
		pieces[k].out = NULL;
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	want = cpus < 1 ? 1 : cpus > GZIP_THREADS ? GZIP_THREADS :
	       (unsigned int)cpus;
	if (want > npieces)
		want = npieces ? (unsigned int)npieces : 1;
	/* This thread is one of them. */
	while (nthreads + 1 < want &&
	       pthread_create(&threads[nthreads], NULL, gzip_worker, &run) == 0)
		nthreads++;
	gzip_worker(&run);
	for (unsigned int i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	for (size_t k = 0; k < npieces; k++) {
		if (!pieces[k].out) {	/* no memory, or no compressor */
			gzip__free_pieces(pieces, npieces);
			return -ENOMEM;
		}
	}
	return 0;
}

void gzip__free_pieces(struct gzip_piece *pieces, size_t npieces)
{
	for (size_t k = 0; k < npieces; k++) {
		free(pieces[k].out);
		pieces[k].out = NULL;
	}
}

int gzip__compress_cut(const uint8_t *in, size_t in_len, const size_t *cuts,
		       size_t ncuts, uint8_t **out, size_t *out_len)
{
	struct gzip_piece *pieces;
	size_t npieces = ncuts + 1, len = 0;
	uint8_t *all;
	int err;

	if (npieces > SIZE_MAX / sizeof(*pieces))
		return -ENOMEM;
	pieces = calloc(npieces, sizeof(*pieces));
	if (!pieces)
		return -ENOMEM;
	for (size_t k = 0, at = 0; k < npieces; k++) {
		size_t end = k < ncuts ? cuts[k] : in_len;

		if (end < at || end > in_len) {
			free(pieces);
			return -EINVAL;
		}
		pieces[k] = (struct gzip_piece){
			.in = in + at, .in_len = end - at,
		};
		at = end;
	}
	err = gzip__compress_pieces(pieces, npieces);
	if (err)
		goto out_pieces;
	for (size_t k = 0; k < npieces; k++)
		len += pieces[k].out_len;
	all = malloc(len ? len : 1);
	if (!all) {
		err = -ENOMEM;
		goto out_compressed;
	}
	len = 0;
	for (size_t k = 0; k < npieces; k++) {
		memcpy(all + len, pieces[k].out, pieces[k].out_len);
		len += pieces[k].out_len;
	}
	*out = all;
	*out_len = len;
out_compressed:
	gzip__free_pieces(pieces, npieces);
out_pieces:
	free(pieces);
	return err;
}

int gzip__compress(const uint8_t *in, size_t in_len, uint8_t **out,
		   size_t *out_len)
{
	size_t ncuts = in_len ? (in_len - 1) / GZIP_MEMBER : 0, *cuts;
	int err;

	cuts = malloc((ncuts + 1) * sizeof(*cuts));
	if (!cuts)
		return -ENOMEM;
	for (size_t k = 0; k < ncuts; k++)
		cuts[k] = (k + 1) * (size_t)GZIP_MEMBER;
	err = gzip__compress_cut(in, in_len, cuts, ncuts, out, out_len);
	free(cuts);
	return err;
}

/* ---- indexed members ------------------------------------------------- */

bool gzip__sized(const uint8_t *in, size_t in_len)
{
	return in_len >= GZIP_HEADER && !memcmp(in, gzip_header, 4) &&
	       !memcmp(in + 10, gzip_header + 10, 6);
}

int gzip__members(const uint8_t *in, size_t in_len,
		  struct gzip_member **out, size_t *nout)
{
	struct gzip_member *members = NULL;
	size_t n = 0, cap = 0, at = 0;
	int err;

	*out = NULL;
	*nout = 0;
	if (in_len < GZIP_HEADER + GZIP_TRAILER)
		return -ENOENT;
	while (at < in_len) {
		const uint8_t *m = in + at;
		size_t size;

		if (in_len - at < GZIP_HEADER + GZIP_TRAILER ||
		    !gzip__sized(m, in_len - at)) {
			err = -ENOENT;
			goto out_free;
		}
		size = get_le32(m + GZIP_HEADER - 4);
		if (size < GZIP_HEADER + GZIP_TRAILER || size > in_len - at) {
			err = -ENOENT;
			goto out_free;
		}
		err = array__grow((void **)&members, &cap, n + 1,
				  sizeof(*members));
		if (err)
			goto out_free;
		members[n++] = (struct gzip_member){
			.offset = at, .size = size,
			.isize = get_le32(m + size - 4),
		};
		at += size;
	}
	*out = members;
	*nout = n;
	return 0;
out_free:
	free(members);
	return err;
}

int gzip__inflate_member(struct libdeflate_decompressor *d,
			 const uint8_t *member, size_t size, uint8_t *out,
			 size_t isize)
{
	size_t in_used = 0, made = 0;
	enum libdeflate_result r;

	r = libdeflate_gzip_decompress_ex(d, member, size, out, isize,
					  &in_used, &made);
	return r == LIBDEFLATE_SUCCESS && in_used == size && made == isize ?
	       0 : -EBADMSG;
}

int gunzip__init(struct gunzip *g)
{
	memset(g, 0, sizeof(*g));
	g->state = GUNZIP_MEMBER;
	/* 16: gzip only (the caller has seen the magic). */
	return inflateInit2(&g->zs, 15 + 16) == Z_OK ? 0 : -ENOMEM;
}

void gunzip__fini(struct gunzip *g)
{
	inflateEnd(&g->zs);
}

/*
 * Between members: another one starts with the magic, 1f 8b; anything
 * else ends the stream.  A 0x1f at the end of a piece is held until the
 * next byte says which.  0: go on (or wait for input when all was used),
 * 1: the stream ended, -EBADMSG: cut short after the first magic byte.
 */
static int gunzip_between(struct gunzip *g, const uint8_t *in, size_t in_len,
			  bool last, size_t *in_done, char *why,
			  size_t why_size)
{
	if (*in_done == in_len) {
		if (!last)
			return 0;
		if (!g->held)
			return 1;
		snprintf(why, why_size, "truncated gzip data");
		return -EBADMSG;
	}
	if (!g->held) {
		if (in[*in_done] != 0x1f)
			return 1;
		g->held = true;
		++*in_done;
		g->in_used++;
		return 0;
	}
	if (in[*in_done] != 0x8b)
		return 1;
	if (inflateReset(&g->zs) != Z_OK) {
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	g->state = GUNZIP_MEMBER;	/* the held 0x1f goes in first */
	return 0;
}

int gunzip__step(struct gunzip *g, const uint8_t *in, size_t in_len,
		 bool last, size_t *used, uint8_t *out, size_t out_len,
		 size_t *made, char *why, size_t why_size)
{
	static const uint8_t magic0 = 0x1f;
	size_t in_done = 0, out_done = 0;
	int err = 0;

	while (!err) {
		size_t avail, room, took;
		int zerr;

		if (g->state == GUNZIP_END) {
			err = 1;
			break;
		}
		if (g->state == GUNZIP_BETWEEN) {
			size_t before = in_done;

			err = gunzip_between(g, in, in_len, last, &in_done, why,
					     why_size);
			if (err == 1)
				g->state = GUNZIP_END;
			else if (!err && g->state == GUNZIP_BETWEEN &&
				 in_done == before)
				break;		/* waiting for input */
			continue;
		}
		if (g->held) {
			g->zs.next_in = (Bytef *)&magic0;
			avail = 1;
		} else {
			avail = in_len - in_done;
			if (avail > (1u << 30))
				avail = 1u << 30;
			g->zs.next_in = avail ? (Bytef *)(in + in_done) : NULL;
		}
		room = out_len - out_done;
		if (room > (1u << 30))
			room = 1u << 30;
		g->zs.avail_in = (uInt)avail;
		g->zs.next_out = out + out_done;
		g->zs.avail_out = (uInt)room;
		zerr = inflate(&g->zs, Z_NO_FLUSH);
		took = avail - g->zs.avail_in;
		out_done += room - g->zs.avail_out;
		if (g->held) {
			g->held = !took;	/* counted when it was read */
		} else {
			in_done += took;
			g->in_used += took;
		}
		if (zerr == Z_STREAM_END) {
			g->state = GUNZIP_BETWEEN;
			continue;
		}
		if (zerr == Z_MEM_ERROR) {
			snprintf(why, why_size, "out of memory");
			err = -ENOMEM;
		} else if (zerr != Z_OK && zerr != Z_BUF_ERROR) {
			snprintf(why, why_size, "corrupt gzip data: %s",
				 g->zs.msg ? g->zs.msg : "inflate failed");
			err = -EBADMSG;
		} else if (out_done == out_len) {
			break;			/* wants room */
		} else if (!g->held && in_done == in_len) {
			if (last) {	/* room left, no input, not ended */
				snprintf(why, why_size, "truncated gzip data");
				err = -EBADMSG;
			}
			break;			/* wants input */
		} else if (zerr == Z_BUF_ERROR) {
			/* Input and room, yet no progress: cannot happen. */
			snprintf(why, why_size, "corrupt gzip data: stuck");
			err = -EBADMSG;
		}
	}
	*used = in_done;
	*made = out_done;
	g->out_made += out_done;
	return err;
}
