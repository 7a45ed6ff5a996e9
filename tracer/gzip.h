// SPDX-License-Identifier: MIT
/*
 * gzip.h - gzip for pprof files: compressed in parallel members, read
 * member after member (tracer/gzip.c).
 */
#ifndef PA_TRACER_GZIP_H
#define PA_TRACER_GZIP_H

#include <stddef.h>
#include <stdint.h>

/* Gzip in[0..in_len) into a malloc'd *out (several members past 1 MiB).
 * 0 or -ENOMEM. */
int gzip__compress(const uint8_t *in, size_t in_len, uint8_t **out,
		   size_t *out_len);

/*
 * Gunzip in[0..in_len) (one or more members) into a malloc'd *out of at
 * most max_out bytes.  0, or -EFBIG (past max_out), -EBADMSG (corrupt or
 * truncated), -ENOMEM, with why filled.
 */
int gzip__decompress(const uint8_t *in, size_t in_len, size_t max_out,
		     uint8_t **out, size_t *out_len, char *why,
		     size_t why_size);

#endif /* PA_TRACER_GZIP_H */
