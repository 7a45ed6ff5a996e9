/* SPDX-License-Identifier: MIT */
/*
 * pprof_splice.h - a profile read for rewriting everything but its
 * samples, which are kept as the bytes they were, and written back with
 * the gzip members that held only samples copied as they were read
 * (tracer/output/pprof_splice.c; `pprof-alloc symbolize`).
 */
#ifndef PA_TRACER_PPROF_SPLICE_H
#define PA_TRACER_PPROF_SPLICE_H

#include <stdbool.h>
#include <stddef.h>
#include "pprof_file.h"

struct pprof_splice;

/*
 * Read a profile from fd, as pprof_file__read_fd() does, with the same
 * checks, the same refusals and the same messages.  A profile whose gzip
 * members carry their sizes (as pprof-alloc writes them) and whose samples
 * are encoded as protobuf-c encodes them is read by `threads` threads,
 * without unpacking its samples: then *file holds everything else (no
 * samples) and *splice the samples, for pprof_splice__write().  With more
 * than one thread, the samples are still being read and checked when this
 * returns: pprof_splice__finish() says whether they are as they should
 * be.  Any other input is read by pprof_file__read_from(): *file holds all
 * of it, and *splice is NULL.  0, or -errno with why.
 */
int pprof_splice__read_fd(int fd, unsigned int threads,
			  struct pprof_file **file,
			  struct pprof_splice **splice, char *why,
			  size_t why_size);

/* The same for the file at path (opened as pprof_file__read() does). */
int pprof_splice__read(const char *path, unsigned int threads,
		       struct pprof_file **file, struct pprof_splice **splice,
		       char *why, size_t why_size);

/*
 * Wait for the samples still being read, and check them against the
 * profile as it was read.  0; -EBADMSG when the file has to be read the
 * usual way after all (pprof_splice__read_plain(), which says what is
 * wrong with it, or reads it whole: a file whose members pprof-alloc did
 * not cut); or -ENOMEM.
 */
int pprof_splice__finish(struct pprof_splice *s);

/* Read s's bytes with pprof_file__read_from(). */
int pprof_splice__read_plain(const struct pprof_splice *s,
			     struct pprof_file **file, char *why,
			     size_t why_size);

/*
 * Pack p (see pprof_splice__write()) and gzip its fields after the
 * samples, ahead: no sample is needed for that, so it may be done while
 * they are still being read, before pprof_splice__finish().  Once per s;
 * p must then not change before it is written.  0 or -errno.
 */
int pprof_splice__prepare(struct pprof_splice *s, const pprof_profile *p);

/*
 * Write p (a profile without samples: what the read gave in *file, changed
 * as the caller likes, but for its samples) with s's samples, gzipped and
 * atomically, to path (fsynced if sync: pprof_file__writev_sync()): the
 * same protobuf as packing the whole profile would give.  Only after
 * pprof_splice__finish() said 0.  0 or -errno.
 */
int pprof_splice__write(const struct pprof_splice *s, const pprof_profile *p,
			const char *path, bool sync);

/* The same into a malloc'd buffer (*out, *out_len): for tests. */
int pprof_splice__gzip(const struct pprof_splice *s, const pprof_profile *p,
		       uint8_t **out, size_t *out_len);

/* Stops reading, if it is still going on; NULL is fine. */
void pprof_splice__free(struct pprof_splice *s);

#endif /* PA_TRACER_PPROF_SPLICE_H */
