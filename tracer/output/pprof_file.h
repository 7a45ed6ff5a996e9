/* SPDX-License-Identifier: MIT */
/*
 * pprof_file.h - pprof files as whole messages: gzip, atomic write, and a
 * reader that checks everything it unpacks.
 */
#ifndef PA_PPROF_FILE_H
#define PA_PPROF_FILE_H

#include <stddef.h>
#include <stdint.h>
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pprof_profile;

struct arena;

/*
 * A profile read from a file.  Everything profile points to lives in arena
 * (elf/arena.h), as does this struct: callers may allocate replacement
 * arrays for the message there too, and pprof_file__free() releases all.
 */
struct pprof_file {
	pprof_profile *profile;
	struct arena *arena;
};

/*
 * Write data to path atomically: a temporary file beside it, fsynced, then
 * renamed over it; mode 0644.  0 or -errno (nothing is left behind).
 */
int pprof_file__write(const char *path, const uint8_t *data, size_t len);

/* Pack, gzip and write p atomically to path.  0 or -errno. */
int pprof_file__write_profile(const pprof_profile *p, const char *path);

/*
 * Read a profile from path (gzipped or not; a regular file, a FIFO, a
 * character device...), unpack it and check that it is one pprof tools
 * accept: string indices in range, ids unique and non-zero, references
 * resolve, one value per sample type.  Decompression stops as soon as the
 * data stops looking like a profile or expands like a decompression bomb,
 * and a profile whose unpacking would take too much memory for its size
 * is refused before it is unpacked (pprof_file.c).  On failure returns
 * -errno (-EBADMSG: not a valid profile; -EFBIG: past a limit) and writes
 * why into why[why_size].  Free the result with pprof_file__free().
 */
int pprof_file__read(const char *path, struct pprof_file **out, char *why,
		     size_t why_size);

/* The same from fd (a pipe, standard input...), read to its end; fd stays
 * open. */
int pprof_file__read_fd(int fd, struct pprof_file **out, char *why,
			size_t why_size);

/*
 * What protobuf-c allocates from the arena to unpack data[0..len) as a
 * Profile (pprof_file.c): exactly, if it unpacks; at least what it takes
 * before it fails, if not.  Nothing is allocated to work it out.
 */
uint64_t pprof_file__unpack_size(const uint8_t *data, size_t len);

/* Check an unpacked profile (as above).  0 or -EBADMSG with why. */
int pprof_file__check(const pprof_profile *p, char *why, size_t why_size);

/* Release the profile and everything in its arena; NULL is fine. */
void pprof_file__free(struct pprof_file *f);

#endif /* PA_PPROF_FILE_H */
