// SPDX-License-Identifier: MIT
/*
 * gzip.c - pprof files' gzip, both ways.
 *
 * Compressing: level 1 (as Go's runtime/pprof: profiles are written while
 * the user waits, and the last few percent are not worth it), with
 * libdeflate, about twice as fast as zlib at the same level and a little
 * smaller.  Past GZIP_MEMBER bytes the input is cut into members of
 * GZIP_MEMBER bytes, compressed by several threads and put end to end: a
 * gzip file may hold several members (RFC 1952 2.2), which every reader
 * (Go's, zlib's gzip tools, gzip__decompress()) reads as one stream.
 * Members are cut by size alone, so the bytes written do not depend on the
 * machine's CPUs.
 *
 * Decompressing: the input is not trusted, and may be a pipe.  zlib,
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

/* Input bytes per gzip member (the last may be shorter). */
#define GZIP_MEMBER	(1u << 20)
#define GZIP_THREADS	8

enum { GUNZIP_MEMBER, GUNZIP_BETWEEN, GUNZIP_END };

struct gzip_run {
	const uint8_t *in;
	size_t in_len, members;
	uint8_t *out;		/* member k at k * bound */
	size_t bound;		/* per member */
	size_t *lens;		/* 0: failed */
	size_t next;		/* next member, under lock */
	pthread_mutex_t lock;
};

static void *gzip_worker(void *arg)
{
	struct gzip_run *run = arg;
	struct libdeflate_compressor *c = libdeflate_alloc_compressor(1);

	while (c) {	/* without a compressor, others do the work */
		size_t k, len;

		pthread_mutex_lock(&run->lock);
		k = run->next++;
		pthread_mutex_unlock(&run->lock);
		if (k >= run->members)
			break;
		len = run->in_len - k * GZIP_MEMBER < GZIP_MEMBER ?
		      run->in_len - k * GZIP_MEMBER : GZIP_MEMBER;
		/* 0 only when the bound was too small, which it is not. */
		run->lens[k] = libdeflate_gzip_compress(c,
			run->in + k * GZIP_MEMBER, len,
			run->out + k * run->bound, run->bound);
	}
	if (c)
		libdeflate_free_compressor(c);
	return NULL;
}

int gzip__compress(const uint8_t *in, size_t in_len, uint8_t **out,
		   size_t *out_len)
{
	struct gzip_run run = {
		.in = in, .in_len = in_len,
		.lock = PTHREAD_MUTEX_INITIALIZER,
	};
	pthread_t threads[GZIP_THREADS];
	unsigned int nthreads = 0, want;
	size_t len = 0;
	long cpus;
	int err = 0;

	run.members = in_len / GZIP_MEMBER + (in_len % GZIP_MEMBER || !in_len);
	/* NULL: a bound for any compressor (libdeflate.h). */
	run.bound = libdeflate_gzip_compress_bound(NULL,
			in_len < GZIP_MEMBER ? in_len : GZIP_MEMBER);
	if (run.bound > SIZE_MAX / run.members)
		return -ENOMEM;
	run.out = malloc(run.bound * run.members);
	run.lens = calloc(run.members, sizeof(*run.lens));
	if (!run.out || !run.lens) {
		err = -ENOMEM;
		goto out_free;
	}
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	want = cpus < 1 ? 1 : cpus > GZIP_THREADS ? GZIP_THREADS :
	       (unsigned int)cpus;
	if (want > run.members)
		want = (unsigned int)run.members;
	/* This thread is one of them. */
	while (nthreads + 1 < want &&
	       pthread_create(&threads[nthreads], NULL, gzip_worker, &run) == 0)
		nthreads++;
	gzip_worker(&run);
	for (unsigned int i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	for (size_t k = 0; k < run.members; k++) {
		if (!run.lens[k]) {	/* no thread had a compressor */
			err = -ENOMEM;
			goto out_free;
		}
		memmove(run.out + len, run.out + k * run.bound, run.lens[k]);
		len += run.lens[k];
	}
	*out = run.out;
	*out_len = len;
	run.out = NULL;
out_free:
	free(run.out);
	free(run.lens);
	return err;
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
