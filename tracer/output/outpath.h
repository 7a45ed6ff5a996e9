/* SPDX-License-Identifier: MIT */
/*
 * outpath.h - the files a run writes: checked before the run, and written
 * somewhere else, said loudly, when their place is gone at the end.
 */
#ifndef PA_TRACER_OUTPATH_H
#define PA_TRACER_OUTPATH_H

#include <stddef.h>

/*
 * Can path be written as an output file?  Its directory must exist and be
 * writable by us (tried: an unnamed file is made in it and dropped), and
 * path must not be a directory or anything but a regular file (it is
 * replaced by a rename).  0, or -errno with the reason in why (without
 * the path: "directory /x: No such file or directory").
 */
int outpath__check(const char *path, char *why, size_t len);

/* Writes the file at path (atomically or not); 0 or -errno. */
typedef int (*outpath_write_fn)(const char *path, void *ctx);

/*
 * Write with write(path, ctx).  If that fails, say so on stderr and try
 * the same name in the current directory, then in $TMPDIR (or /tmp),
 * under a name nothing has there, saying where it went (what: "the
 * profile", ...).  Returns 0 written at path, 1 written at the fallback
 * (its path in written), or the first -errno when written nowhere (said).
 */
int outpath__write(const char *path, outpath_write_fn write, void *ctx,
		   const char *what, char *written, size_t len);

/*
 * The place for a file whose own place failed (path): a free name in the
 * current directory, unless that is path's directory, else in $TMPDIR or
 * /tmp.  skip: fallbacks already tried (0, 1).  0 with the path in out, or
 * -ENOENT when there is none left.
 */
int outpath__fallback(const char *path, int skip, char *out, size_t len);

#endif /* PA_TRACER_OUTPATH_H */
