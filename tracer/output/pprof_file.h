/* SPDX-License-Identifier: MIT */
/*
 * pprof_file.h - pprof files as whole messages: gzip, atomic write, and a
 * reader that checks everything it unpacks.
 */
#ifndef PA_PPROF_FILE_H
#define PA_PPROF_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pprof_profile;

struct arena;

/* The reader's limits (pprof_file.c says why). */
#define PPROF_MAX_PROFILE	(2ull << 30)	/* protobuf bytes read at most */
#define PPROF_BOMB_FLOOR	(32ull << 20)	/* gunzipped at any ratio */
#define PPROF_BOMB_RATIO	100	/* past it: per compressed byte */

#define PPROF_SAMPLE_FIELD	2	/* Profile.sample */
#define PPROF_MEMBER		(256u << 10)	/* a gzip member, about */

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
 * Write data to path atomically: a temporary file beside it, fsynced if
 * path exists (a file it replaces), then renamed over it; mode 0644.  0 or
 * -errno (nothing is left behind).
 */
int pprof_file__write(const char *path, const uint8_t *data, size_t len);
/* The same, fsynced even as a new file: for a writer that deletes older
 * copies once it is written (serve's --keep). */
int pprof_file__write_durable(const char *path, const uint8_t *data,
			      size_t len);
/* The same for the n pieces of iov, end to end. */
int pprof_file__writev(const char *path, const struct iovec *iov, size_t n);
/* The same, fsynced before replacing a file only if sync: false for
 * output that can be made again from a file left alone (pprof_file.c
 * says more). */
int pprof_file__writev_sync(const char *path, const struct iovec *iov,
			    size_t n, bool sync);

/* Pack, gzip (pprof_file__gzip()) and write p atomically to path.  0 or
 * -errno. */
int pprof_file__write_profile(const pprof_profile *p, const char *path);
/* The same, fsynced only if sync (pprof_file__writev_sync()). */
int pprof_file__write_profile_sync(const pprof_profile *p, const char *path,
				   bool sync);

/*
 * Gzip a packed Profile into a malloc'd *out, one member per piece that
 * pprof_file__cuts() gives (each member carries its size: gzip.c).  0 or
 * -ENOMEM.
 */
int pprof_file__gzip(const uint8_t *packed, size_t len, uint8_t **out,
		     size_t *out_len);

/*
 * Where a packed Profile's gzip members start (*cuts, malloc'd, ascending,
 * 0 and len left out): between whole top-level fields only, wherever
 * samples start or end, and else once a member holds PPROF_MEMBER bytes -
 * so that samples, most of a profile, fill members of their own, which
 * `symbolize` copies as they are (pprof_splice.c).  0, -EBADMSG (not whole
 * fields of a Profile) or -ENOMEM.
 */
int pprof_file__cuts(const uint8_t *data, size_t len, size_t **cuts,
		     size_t *ncuts);

/* One field of a protobuf message as protobuf-c's scan reads it. */
struct pprof_field {
	uint32_t tag;		/* the field number */
	unsigned int wire_type;
	size_t size;		/* the whole field, tag included */
	const uint8_t *payload;	/* wire type 2: after the length */
	size_t payload_len;
	size_t len;		/* what follows the tag (protobuf-c's len) */
};

/*
 * The top-level field of a Profile at p (rem bytes left), as both this
 * reader's walk and protobuf-c take it: a tag of at most 5 bytes, not
 * field 0, a wire type that profile.proto gives the field (any but groups
 * for unknown ones), a varint of at most 10 bytes or a length of at most
 * INT_MAX that fits.  0 or -EBADMSG.
 */
int pprof_file__top_field(const uint8_t *p, size_t rem,
			  struct pprof_field *f);

/*
 * What protobuf-c allocates to unpack one Sample with nloc location ids
 * and nval values, each packed in one field (or absent), and nlabels
 * labels without unknown fields.
 */
uint64_t pprof_file__sample_unpack_size(uint64_t nloc, uint64_t nval,
					uint64_t nlabels);

/*
 * The unpacking limit (pprof_file.c) for a total_len protobuf made of the
 * top-level fields rest[0..rest_len) and nsamples samples that take
 * sample_cost to unpack (pprof_file__sample_unpack_size()): 0 if it fits,
 * else -EFBIG.
 */
int pprof_file__check_spliced_cost(const uint8_t *rest, size_t rest_len,
				   uint64_t nsamples, uint64_t sample_cost,
				   size_t total_len);

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

/* The same for the bytes head[0..head_len), already read from fd, then
 * the rest of fd; with fd -1, head holds them all. */
int pprof_file__read_from(int fd, const uint8_t *head, size_t head_len,
			  struct pprof_file **out, char *why, size_t why_size);

/*
 * What protobuf-c allocates from the arena to unpack data[0..len) as a
 * Profile (pprof_file.c): exactly, if it unpacks; at least what it takes
 * before it fails, if not.  Nothing is allocated to work it out.
 */
uint64_t pprof_file__unpack_size(const uint8_t *data, size_t len);

/*
 * Unpack data[0..len) with protobuf-c and check it (as above), without
 * the limit on what unpacking takes: the caller has seen to it.  0 or
 * -errno with why.
 */
int pprof_file__unpack(const uint8_t *data, size_t len,
		       struct pprof_file **out, char *why, size_t why_size);

/* Check an unpacked profile (as above).  0 or -EBADMSG with why. */
int pprof_file__check(const pprof_profile *p, char *why, size_t why_size);

/* Release the profile and everything in its arena; NULL is fine. */
void pprof_file__free(struct pprof_file *f);

#endif /* PA_PPROF_FILE_H */
