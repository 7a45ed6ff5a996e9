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
 * Decompressing: the input is not trusted.  zlib, member after member,
 * into a buffer grown by doubling up to the caller's cap (which also stops
 * decompression bombs); bytes after the last member that do not start
 * another are ignored, a member cut short is an error.
 */
#include "tracer/gzip.h"

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

int gzip__decompress(const uint8_t *in, size_t in_len, size_t max_out,
		     uint8_t **out, size_t *out_len, char *why, size_t why_size)
{
	z_stream zs = { 0 };
	size_t cap = in_len * 4 + 4096, in_done = 0, base = 0;
	uint8_t *buf, *grown;
	int zerr, err = 0;

	if (!max_out)
		return -EINVAL;
	if (inflateInit2(&zs, 15 + 32) != Z_OK)
		return -ENOMEM;
	if (cap > max_out)
		cap = max_out;
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto out_inflate;
	}
	do {
		size_t in_now = in_len - in_done, room;

		if (base + zs.total_out == cap) {
			if (cap >= max_out) {
				snprintf(why, why_size,
					 "more than %llu bytes uncompressed",
					 (unsigned long long)max_out);
				err = -EFBIG;
				goto out_buf;
			}
			cap = cap * 2 > max_out ? max_out : cap * 2;
			grown = realloc(buf, cap);
			if (!grown) {
				err = -ENOMEM;
				goto out_buf;
			}
			buf = grown;
		}
		if (in_now > (1u << 30))
			in_now = 1u << 30;
		room = cap - (base + zs.total_out);
		zs.next_in = (Bytef *)(in + in_done);
		zs.avail_in = (uInt)in_now;
		zs.next_out = buf + base + zs.total_out;
		zs.avail_out = (uInt)(room > (1u << 30) ? (1u << 30) : room);
		zerr = inflate(&zs, Z_NO_FLUSH);
		in_done += in_now - zs.avail_in;
		if (zerr == Z_BUF_ERROR && in_done == in_len &&
		    zs.avail_out) {
			snprintf(why, why_size, "truncated gzip data");
			err = -EBADMSG;
			goto out_buf;
		}
		if (zerr != Z_OK && zerr != Z_STREAM_END &&
		    zerr != Z_BUF_ERROR) {
			snprintf(why, why_size, "corrupt gzip data: %s",
				 zs.msg ? zs.msg : "inflate failed");
			err = zerr == Z_MEM_ERROR ? -ENOMEM : -EBADMSG;
			goto out_buf;
		}
		/* Another member after this one?  (A lone first byte of
		 * the magic is one cut short.) */
		if (zerr == Z_STREAM_END && in_len - in_done == 1 &&
		    in[in_done] == 0x1f) {
			snprintf(why, why_size, "truncated gzip data");
			err = -EBADMSG;
			goto out_buf;
		}
		if (zerr == Z_STREAM_END && in_len - in_done >= 2 &&
		    in[in_done] == 0x1f && in[in_done + 1] == 0x8b) {
			base += zs.total_out;	/* which the reset zeroes */
			if (inflateReset(&zs) != Z_OK) {
				err = -ENOMEM;
				goto out_buf;
			}
			zerr = Z_OK;
		}
	} while (zerr != Z_STREAM_END);
	*out = buf;
	*out_len = base + zs.total_out;
	buf = NULL;
out_buf:
	free(buf);
out_inflate:
	inflateEnd(&zs);
	return err;
}
