// SPDX-License-Identifier: MIT
/*
 * fuzz-splice.c - libFuzzer target for the reader that keeps a profile's
 * samples as bytes (tracer/output/pprof_splice.c, pprof_samples.c: gzip
 * members found by their sizes, inflated in parallel, samples checked on
 * the wire, some of them in the background).  The input is a file's bytes;
 * the seeds are files whose gzip members carry their sizes, as
 * pprof-alloc writes them.  It is read spliced with one thread and with
 * four, and whole (pprof_file__read()): each must give the same error and
 * message, or the same profile, which written back spliced
 * (pprof_splice__gzip()) must inflate to the protobuf that packing the
 * whole profile gives.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>
#include "tracer/output/pprof_file.h"
#include "tracer/output/pprof_splice.h"

/* Every member of gz inflated (at most max bytes): 0, or -1. */
static int gunzip_all(const uint8_t *gz, size_t len, uint8_t *out,
		      size_t max, size_t *out_len)
{
	*out_len = 0;
	while (len) {
		z_stream zs = { 0 };
		int zerr;

		if (inflateInit2(&zs, 15 + 16) != Z_OK)
			return -1;
		zs.next_in = (Bytef *)gz;
		zs.avail_in = (uInt)len;
		zs.next_out = out + *out_len;
		zs.avail_out = (uInt)(max - *out_len);
		zerr = inflate(&zs, Z_FINISH);
		*out_len += zs.total_out;
		gz += zs.total_in;
		len -= zs.total_in;
		inflateEnd(&zs);
		if (zerr != Z_STREAM_END)
			return -1;
	}
	return 0;
}

/* Read path spliced with threads and compare with the whole read. */
static void check(const char *path, unsigned int threads,
		  const struct pprof_file *whole, int whole_err,
		  const char *whole_why)
{
	struct pprof_file *file = NULL;
	struct pprof_splice *s = NULL;
	uint8_t *gz, *a, *b;
	size_t gz_len, a_len, b_len;
	char why[256];
	int err;

	err = pprof_splice__read(path, threads, &file, &s, why, sizeof(why));
	if (!err && s) {
		err = pprof_splice__finish(s);
		if (err == -EBADMSG) {
			pprof_file__free(file);
			file = NULL;
			err = pprof_splice__read_plain(s, &file, why,
						       sizeof(why));
			pprof_splice__free(s);
			s = NULL;
		}
	}
	if (err != whole_err || (err && strcmp(why, whole_why)))
		abort();	/* not what the whole read says */
	if (err)
		return;
	a_len = perftools__profiles__profile__get_packed_size(whole->profile);
	a = malloc(a_len + 1);
	b = malloc(a_len + 1);
	if (!a || !b)
		abort();
	perftools__profiles__profile__pack(whole->profile, a);
	if (s) {
		if (file->profile->n_sample ||
		    pprof_splice__gzip(s, file->profile, &gz, &gz_len))
			abort();
		if (gunzip_all(gz, gz_len, b, a_len + 1, &b_len))
			abort();
		free(gz);
	} else {
		b_len = perftools__profiles__profile__get_packed_size(
			file->profile);
		if (b_len != a_len)
			abort();
		perftools__profiles__profile__pack(file->profile, b);
	}
	if (b_len != a_len || memcmp(a, b, a_len))
		abort();	/* not the protobuf of the whole */
	free(a);
	free(b);
	pprof_splice__free(s);
	pprof_file__free(file);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pprof_file *whole = NULL;
	char path[64], why[256];
	int fd = memfd_create("fuzz-splice", MFD_CLOEXEC), err;

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	err = pprof_file__read(path, &whole, why, sizeof(why));
	check(path, 1, whole, err, why);
	check(path, 4, whole, err, why);
	pprof_file__free(whole);
	close(fd);
	return 0;
}
