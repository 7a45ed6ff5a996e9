// SPDX-License-Identifier: MIT
/*
 * pprof_file.c - pprof files as whole messages.
 *
 * Writing: the packed Profile is gzipped (tracer/output/gzip.c: libdeflate,
 * level 1, as Go's runtime/pprof does: profiles are written while the
 * user waits), in members cut between whole top-level fields, the samples
 * in members of their own (pprof_file__cuts()), each member carrying its
 * size - so that `symbolize` finds the members without inflating, reads
 * them in parallel and writes those of samples out as they were
 * (pprof_splice.c) - and
 * written to "<path>.tmp.XXXXXX" next to path and renamed over path, so a
 * reader sees the old file or the whole new one.  It is fsynced before the
 * rename when it replaces a file: else a power cut could leave an empty
 * file where the old one was.  A new file replaces nothing, and is not
 * fsynced: a power cut within the kernel's writeback delay may leave it
 * empty, but loses nothing that was there (perf and Go's runtime/pprof
 * never fsync their output), and the fsync was 0.5 ms of each launch's
 * fixed cost.  The directory is not fsynced: the rename is atomic for
 * readers, but after a power cut the old file may come back.  A caller
 * whose output can be made again from a file it leaves alone may skip the
 * fsync even then (pprof_file__writev_sync(): `symbolize` writing beside
 * its input); one that deletes older copies once the new one is written
 * fsyncs a new file too (pprof_file__write_durable(): `serve --out-dir`,
 * which keeps only the newest --keep).
 *
 * Reading: a profile may come from anywhere, so nothing in it is trusted,
 * and it may come from a pipe.  It is read as a stream, in READ_CHUNK
 * pieces, gunzipped on the fly if it starts with the gzip magic
 * (tracer/output/gzip.c), into one buffer for protobuf-c, which unpacks whole
 * messages only.  What a gzip file says about its own size is no help: the
 * ISIZE trailer is the last member's only, modulo 2^32, and may lie.  So
 * the limits are on what actually comes out, checked at least every
 * INFLATE_STEP bytes, and a decompression bomb is refused within a few tens
 * of MB instead of after all of it:
 *
 *  - the bytes must look like a Profile message as they arrive: the top
 *    level is walked field by field (field number not 0, wire types
 *    protobuf-c reads and profile.proto gives the known fields, lengths
 *    within the limit).  Zeros, text and most junk fail at the first byte;
 *  - past BOMB_FLOOR gunzipped bytes, at most BOMB_RATIO of them per
 *    compressed byte read.  Deflate can reach 1032:1, and runs of one
 *    byte compress hundreds of times even at level 1; a profile's ids,
 *    addresses, values and names compress tens of times at most.  A junk
 *    field behind a valid tag (a string of zeros) gets this far and no
 *    further.  Only
 *    samples repeated unmerged, one after another, can pass the ratio
 *    legitimately: the message says to gunzip such a file, and raw input
 *    has no ratio;
 *  - at most MAX_PROFILE bytes of protobuf in all, raw or gunzipped.
 *
 * Unpacking costs memory too: protobuf-c gives every sub-message a struct
 * of its own, so few bytes can ask for many (an empty sample, 2 bytes,
 * takes 120), raw or gunzipped, and under every limit above.  So before
 * protobuf-c sees the bytes, unpack_cost() works out from them, without
 * allocating, what it will ask the arena for, and more than UNPACK_RATIO
 * times the protobuf + UNPACK_FLOOR is refused, naming the field that
 * takes most.  A sample that has a value and a location takes 8 bytes at
 * the least and about 20 times that unpacked, a location with an address
 * about 10 times; only messages all but empty go past 32 times.
 *
 * protobuf-c then unpacks the message, checking the wire format, and
 * pprof_file__check() checks what the wire format cannot: every string
 * index inside the string table (whose first entry must be ""), ids
 * non-zero and unique, every reference pointing at something that
 * exists, and one value per sample type - so that code walking the profile
 * afterwards may index without checking.  protobuf-c allocates every
 * sub-message, array and string separately; it is given an arena
 * (elf/arena.c) instead of malloc, so unpacking is pointer bumps and
 * freeing the profile is one release.  The caller may put its own
 * replacement arrays into the message from the same arena.
 */
#include "pprof_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "elf/arena.h"
#include "elf/array.h"
#include "gzip.h"
#include "elf/u64map.h"

/* Reading: see the comment at the top. */
#define MAX_PROFILE	PPROF_MAX_PROFILE	/* protobuf bytes, raw or gunzipped */
#define BOMB_FLOOR	PPROF_BOMB_FLOOR	/* gunzipped bytes read at any ratio */
#define BOMB_RATIO	PPROF_BOMB_RATIO	/* past it: most per compressed byte */
#define READ_CHUNK	(256u << 10)
#define INFLATE_STEP	(1u << 20)	/* gunzipped bytes between checks */
#define UNPACK_RATIO	32		/* unpacked bytes per protobuf byte, */
#define UNPACK_FLOOR	(128ull << 20)	/* + these */

static int write_all(int fd, const struct iovec *iov, size_t n)
{
	struct iovec batch[64];
	size_t i = 0, done = 0;	/* iov[i] is written up to done */

	for (;;) {
		size_t k, left;
		ssize_t w;

		while (i < n && iov[i].iov_len == done) {
			i++;
			done = 0;
		}
		if (i == n)
			return 0;
		k = n - i < 64 ? n - i : 64;
		memcpy(batch, iov + i, k * sizeof(*batch));
		batch[0].iov_base = (char *)batch[0].iov_base + done;
		batch[0].iov_len -= done;
		w = writev(fd, batch, (int)k);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (left = (size_t)w; left && i < n;) {
			size_t rem = iov[i].iov_len - done;

			if (left < rem) {
				done += left;
				break;
			}
			left -= rem;
			i++;
			done = 0;
		}
	}
}

/*
 * sync: fsync before the rename if path exists (the comment at the top).
 * The mode is set before the fsync so that it is as durable as the data;
 * mkstemp() creates 0600 and the profile is meant to be shared like any
 * output file.
 */
enum sync_how { SYNC_NEVER, SYNC_REPLACING, SYNC_ALWAYS };

static int write_atomic(const char *path, const struct iovec *iov, size_t n,
			enum sync_how how)
{
	struct stat st;
	char *tmp_path;
	bool sync = how != SYNC_NEVER;
	int fd, err;

	/* only a file it replaces makes the fsync worth its wait */
	if (how == SYNC_REPLACING && lstat(path, &st) < 0 && errno == ENOENT)
		sync = false;
	if (asprintf(&tmp_path, "%s.tmp.XXXXXX", path) < 0)
		return -ENOMEM;
	fd = mkostemp(tmp_path, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto out_tmp_path;
	}
	err = write_all(fd, iov, n);
	if (!err && fchmod(fd, 0644) < 0)
		err = -errno;
	if (!err && sync && fsync(fd) < 0)
		err = -errno;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp_path, path) < 0)
		err = -errno;
	if (err)
		unlink(tmp_path);
out_tmp_path:
	free(tmp_path);
	return err;
}

int pprof_file__writev_sync(const char *path, const struct iovec *iov,
			    size_t n, bool sync)
{
	return write_atomic(path, iov, n, sync ? SYNC_REPLACING : SYNC_NEVER);
}

int pprof_file__write_durable(const char *path, const uint8_t *data,
			      size_t len)
{
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };

	return write_atomic(path, &iov, 1, SYNC_ALWAYS);
}

int pprof_file__writev(const char *path, const struct iovec *iov, size_t n)
{
	return pprof_file__writev_sync(path, iov, n, true);
}

int pprof_file__write(const char *path, const uint8_t *data, size_t len)
{
	const struct iovec iov = { (void *)data, len };

	return pprof_file__writev(path, &iov, 1);
}

int pprof_file__cuts(const uint8_t *data, size_t len, size_t **cuts,
		     size_t *ncuts)
{
	size_t n = 0, cap = 0, at = 0, member_start = 0;
	size_t *found = NULL;
	bool was_sample = false;
	int err;

	*cuts = NULL;
	*ncuts = 0;
	while (at < len) {
		struct pprof_field f;
		bool sample;

		err = pprof_file__top_field(data + at, len - at, &f);
		if (err)
			goto out_free;
		sample = f.tag == PPROF_SAMPLE_FIELD;
		if (at > member_start &&
		    (sample != was_sample || at - member_start >= PPROF_MEMBER)) {
			err = array__grow((void **)&found, &cap, n + 1,
					  sizeof(*found));
			if (err)
				goto out_free;
			found[n++] = at;
			member_start = at;
		}
		was_sample = sample;
		at += f.size;
	}
	*cuts = found;
	*ncuts = n;
	return 0;
out_free:
	free(found);
	return err;
}

int pprof_file__gzip(const uint8_t *packed, size_t len, uint8_t **out,
		     size_t *out_len)
{
	size_t *cuts, ncuts;
	int err;

	err = pprof_file__cuts(packed, len, &cuts, &ncuts);
	if (err == -EBADMSG)	/* not a Profile: cut by size */
		return gzip__compress(packed, len, out, out_len);
	if (err)
		return err;
	err = gzip__compress_cut(packed, len, cuts, ncuts, out, out_len);
	free(cuts);
	return err;
}

int pprof_file__write_profile(const pprof_profile *p, const char *path)
{
	return pprof_file__write_profile_sync(p, path, true);
}

int pprof_file__write_profile_sync(const pprof_profile *p, const char *path,
				   bool sync)
{
	struct iovec iov;

	uint8_t *packed, *gz;
	size_t packed_len, gz_len;
	int err;

	packed_len = perftools__profiles__profile__get_packed_size(p);
	packed = malloc(packed_len ? packed_len : 1);
	if (!packed)
		return -ENOMEM;
	if (perftools__profiles__profile__pack(p, packed) != packed_len) {
		err = -EIO;
		goto out_packed;
	}
	err = pprof_file__gzip(packed, packed_len, &gz, &gz_len);
	if (err)
		goto out_packed;
	iov = (struct iovec){ gz, gz_len };
	err = pprof_file__writev_sync(path, &iov, 1, sync);
	free(gz);
out_packed:
	free(packed);
	return err;
}

/* ---- reading --------------------------------------------------------- */

/*
 * The top level of a Profile message, checked as it arrives: each field's
 * tag (field number not 0, a wire type protobuf-c reads, and for the
 * fields profile.proto knows, the type it gives them), its varint or its
 * length, and that a length-delimited field ends within MAX_PROFILE.  What
 * is inside sub-messages and strings is skipped: protobuf-c checks it once
 * everything is there.
 */
enum pb_state { PB_TAG, PB_VARINT, PB_LENGTH, PB_SKIP };

struct pb_walk {
	enum pb_state state;
	uint64_t pos;		/* bytes seen */
	uint64_t field_at;	/* where the current field's tag began */
	uint64_t value;		/* the varint being read */
	unsigned int nbytes;	/* its bytes so far */
	uint32_t field;		/* the current field's number */
	uint64_t skip_to;	/* PB_SKIP: where the payload ends */
};

#define WIRE(t)		(1u << (t))
#define WIRE_ANY	(WIRE(0) | WIRE(1) | WIRE(2) | WIRE(5))	/* no groups */

/* Profile's fields in profile.proto: the wire types each may have. */
static const uint8_t profile_wire[] = {
	[1] = WIRE(2), [2] = WIRE(2), [3] = WIRE(2), [4] = WIRE(2),
	[5] = WIRE(2), [6] = WIRE(2), [7] = WIRE(0), [8] = WIRE(0),
	[9] = WIRE(0), [10] = WIRE(0), [11] = WIRE(2), [12] = WIRE(0),
	[13] = WIRE(0) | WIRE(2),	/* repeated int64: packed or not */
	[14] = WIRE(0),
};

static int pb_bad(struct pb_walk *w, char *why, size_t why_size,
		  const char *what)
{
	snprintf(why, why_size, "not a pprof profile: %s at byte %llu", what,
		 (unsigned long long)w->field_at);
	return -EBADMSG;
}

/* A complete tag, varint or length in w->value. */
static int pb_walk_value(struct pb_walk *w, char *why, size_t why_size)
{
	uint64_t value = w->value;
	unsigned int type;
	char what[96];

	w->value = 0;
	w->nbytes = 0;
	switch (w->state) {
	case PB_TAG:
		w->field = (uint32_t)(value >> 3);
		type = value & 7;
		if (!w->field)
			return pb_bad(w, why, why_size, "field number 0");
		if (!(WIRE_ANY & WIRE(type)) ||
		    (w->field < sizeof(profile_wire) &&
		     !(profile_wire[w->field] & WIRE(type)))) {
			snprintf(what, sizeof(what),
				 "field %u with wire type %u", w->field, type);
			return pb_bad(w, why, why_size, what);
		}
		w->state = type == 0 ? PB_VARINT : type == 2 ? PB_LENGTH :
			   PB_SKIP;
		w->skip_to = w->pos + (type == 1 ? 8 : 4);
		return 0;
	case PB_LENGTH:
		if (value >> 32) {
			snprintf(what, sizeof(what),
				 "field %u of %llu bytes", w->field,
				 (unsigned long long)value);
			return pb_bad(w, why, why_size, what);
		}
		if (w->pos + value > MAX_PROFILE) {
			snprintf(why, why_size,
				 "field %u at byte %llu runs past %llu MiB, the most read",
				 w->field, (unsigned long long)w->field_at,
				 MAX_PROFILE >> 20);
			return -EFBIG;
		}
		w->skip_to = w->pos + value;
		w->state = value ? PB_SKIP : PB_TAG;
		return 0;
	default:
		w->state = PB_TAG;
		return 0;
	}
}

/* Walk the next n bytes of the message. */
static int pb_walk__feed(struct pb_walk *w, const uint8_t *p, size_t n,
			 char *why, size_t why_size)
{
	size_t i = 0;
	int err;

	while (i < n) {
		uint8_t byte;

		if (w->state == PB_SKIP) {
			uint64_t left = w->skip_to - w->pos;
			size_t take = left < n - i ? (size_t)left : n - i;

			i += take;
			w->pos += take;
			if (w->pos == w->skip_to)
				w->state = PB_TAG;
			continue;
		}
		if (w->state == PB_TAG && !w->nbytes)
			w->field_at = w->pos;
		byte = p[i++];
		w->pos++;
		w->value |= (uint64_t)(byte & 0x7f) << (7 * w->nbytes);
		w->nbytes++;
		if (byte & 0x80) {
			/* protobuf-c reads tags and lengths of 5 bytes at
			 * most, varints of 10. */
			if (w->nbytes == (w->state == PB_VARINT ? 10u : 5u))
				return pb_bad(w, why, why_size,
					      "a varint too long");
			continue;
		}
		err = pb_walk_value(w, why, why_size);
		if (err)
			return err;
	}
	return 0;
}

/* The message ended: between two fields? */
static int pb_walk__end(const struct pb_walk *w, char *why, size_t why_size)
{
	if (w->state == PB_TAG && !w->nbytes)
		return 0;
	snprintf(why, why_size,
		 "not a pprof profile: truncated (field %u at byte %llu is cut short)",
		 w->field, (unsigned long long)w->field_at);
	return -EBADMSG;
}

/* A profile's bytes being read from a file or a pipe, after head[] (bytes
 * the caller read from it already; fd -1: they are all). */
struct reader {
	int fd;
	const uint8_t *head;
	size_t head_len, head_off;
	bool gzipped;
	uint8_t *chunk;		/* READ_CHUNK bytes as read */
	size_t chunk_len, chunk_off;
	bool eof;		/* read() said so: what is left is in chunk */
	uint8_t *buf;		/* the protobuf, raw or gunzipped */
	size_t len, cap;
	struct pb_walk walk;
	char *why;
	size_t why_size;
};

/* Read more into the chunk (after what is there).  0 or -errno. */
static int reader_fill(struct reader *r)
{
	if (r->chunk_off == r->chunk_len)
		r->chunk_off = r->chunk_len = 0;
	if (r->head_off < r->head_len || r->fd < 0) {
		size_t n = r->head_len - r->head_off;

		if (n > READ_CHUNK - r->chunk_len)
			n = READ_CHUNK - r->chunk_len;
		memcpy(r->chunk + r->chunk_len, r->head + r->head_off, n);
		r->head_off += n;
		r->chunk_len += n;
		r->eof = n == 0;
		return 0;
	}
	for (;;) {
		ssize_t n = read(r->fd, r->chunk + r->chunk_len,
				 READ_CHUNK - r->chunk_len);
		struct pollfd pfd = { .fd = r->fd, .events = POLLIN };

		if (n >= 0) {
			r->chunk_len += (size_t)n;
			r->eof = n == 0;
			return 0;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)	/* a descriptor left non-blocking */
			return -errno;
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			return -errno;
	}
}

/*
 * Room for at least one more byte in buf (up to MAX_PROFILE + 1), by
 * doubling - but gunzipped data stops once just past BOMB_FLOOR, where a
 * bomb is refused, and gets there in one step from at least a quarter of
 * it: a bomb never gets the doubling after, nor a copy of nearly all of
 * it (realloc() copies where it cannot remap).
 */
static int reader_room(struct reader *r)
{
	size_t cap = r->cap * 2, stop = BOMB_FLOOR + INFLATE_STEP;
	uint8_t *grown;

	if (r->len < r->cap)
		return 0;
	if (r->gzipped && r->cap < stop && cap * 2 > stop)
		cap = stop;
	if (cap > MAX_PROFILE + 1)
		cap = MAX_PROFILE + 1;
	grown = realloc(r->buf, cap);
	if (!grown)
		return -ENOMEM;
	r->buf = grown;
	r->cap = cap;
	return 0;
}

/*
 * n more bytes are at buf + len, from in_used bytes of input so far:
 * they must look like a Profile, and the total stay within the limits.
 */
static int reader_took(struct reader *r, size_t n, uint64_t in_used)
{
	int err = pb_walk__feed(&r->walk, r->buf + r->len, n, r->why,
				r->why_size);

	r->len += n;
	if (err)
		return err;
	if (r->len > MAX_PROFILE) {
		snprintf(r->why, r->why_size,
			 "more than %llu MiB of profile: too big",
			 MAX_PROFILE >> 20);
		return -EFBIG;
	}
	if (r->gzipped && r->len > BOMB_FLOOR &&
	    r->len > BOMB_RATIO * in_used) {
		snprintf(r->why, r->why_size,
			 "gzip data expands more than %d times (%zu MiB from %llu KiB so far): refused as a decompression bomb; gunzip it first if it is a profile",
			 BOMB_RATIO, r->len >> 20,
			 (unsigned long long)(in_used >> 10));
		return -EFBIG;
	}
	return 0;
}

static int reader_raw(struct reader *r)
{
	int err = 0;

	while (!err) {
		size_t n = r->chunk_len - r->chunk_off;

		while (n && !err) {
			size_t take;

			err = reader_room(r);
			if (err)
				break;
			take = r->cap - r->len < n ? r->cap - r->len : n;
			memcpy(r->buf + r->len, r->chunk + r->chunk_off, take);
			r->chunk_off += take;
			n -= take;
			err = reader_took(r, take, 0);
		}
		if (err || r->eof)
			break;
		err = reader_fill(r);
	}
	return err;
}

static int reader_gunzip(struct reader *r)
{
	struct gunzip gz;
	int err;

	err = gunzip__init(&gz);
	while (!err) {
		size_t used, made, room;

		if (r->chunk_off == r->chunk_len && !r->eof) {
			err = reader_fill(r);
			if (err)
				break;
		}
		err = reader_room(r);
		if (err)
			break;
		room = r->cap - r->len;
		if (room > INFLATE_STEP)
			room = INFLATE_STEP;
		err = gunzip__step(&gz, r->chunk + r->chunk_off,
				   r->chunk_len - r->chunk_off, r->eof, &used,
				   r->buf + r->len, room, &made, r->why,
				   r->why_size);
		r->chunk_off += used;
		if (err < 0)
			break;
		if (made || err == 1) {
			int took = reader_took(r, made, gz.in_used);

			err = took ? took : err;
		}
	}
	gunzip__fini(&gz);
	return err == 1 ? 0 : err;
}

/*
 * Read the protobuf from fd (a file, a pipe...), gunzipped if it starts
 * with the gzip magic, checked against the limits as it comes.  0 or
 * -errno with why.
 */
static int read_profile(int fd, const uint8_t *head, size_t head_len,
			const struct stat *st, uint8_t **out, size_t *len,
			char *why, size_t why_size)
{
	struct reader r = {
		.fd = fd, .head = head, .head_len = head_len,
		.why = why, .why_size = why_size,
	};
	uint64_t hint = 1u << 20;
	int err;

	r.chunk = malloc(READ_CHUNK);
	if (!r.chunk) {
		err = -ENOMEM;
		goto out_chunk;
	}
	err = reader_fill(&r);
	while (!err && !r.eof && r.chunk_len < 2)
		err = reader_fill(&r);
	if (err)
		goto out_chunk;
	if (!r.chunk_len) {
		snprintf(why, why_size, S_ISREG(st->st_mode) ? "empty file" :
			 "empty input: nothing was read");
		err = -EBADMSG;
		goto out_chunk;
	}
	r.gzipped = r.chunk_len >= 2 && r.chunk[0] == 0x1f &&
		    r.chunk[1] == 0x8b;
	/* A guess for a file; buf grows by doubling past it. */
	if (S_ISREG(st->st_mode) && st->st_size > 0)
		hint = (uint64_t)st->st_size * (r.gzipped ? 4 : 1) + 4096;
	r.cap = hint < (64u << 10) ? 64u << 10 :
		hint > (256u << 20) ? 256u << 20 : (size_t)hint;
	r.buf = malloc(r.cap);
	if (!r.buf) {
		err = -ENOMEM;
		goto out_buf;
	}
	err = r.gzipped ? reader_gunzip(&r) : reader_raw(&r);
	if (!err)
		err = pb_walk__end(&r.walk, why, why_size);
	if (err)
		goto out_buf;
	*out = r.buf;
	*len = r.len;
	r.buf = NULL;
out_buf:
	free(r.buf);
out_chunk:
	free(r.chunk);
	if (err && !*why)
		snprintf(why, why_size, "%s", strerror(-err));
	return err;
}

/* ---- what unpacking takes -------------------------------------------- */

/*
 * protobuf-c (1.4, 1.5) unpacks a message in two passes.  The scan records
 * every field it meets in a ScannedMember - the first 16 on the stack,
 * then in slabs of 32, 64, 128... members - and counts the elements of
 * each repeated field (of a packed one, its varints).  Then each repeated
 * field gets one array (8 bytes an element for pointers and 64-bit
 * numbers), unknown fields one array of ProtobufCMessageUnknownField, and
 * the parse allocates every sub-message (its struct, then its own fields
 * the same way, recursively), every string (its length + 1) and a copy of
 * every unknown field's bytes.  A singular message field given again is
 * unpacked again and merged (Profile's, period_type, has no repeated
 * field: merging allocates nothing).  The arena rounds each allocation up
 * to UNPACK_ALIGN and frees nothing, so slabs and replaced messages stay.
 *
 * unpack_cost() walks the bytes the same way without allocating and adds
 * those sizes up: for a message protobuf-c unpacks, exactly what it asks
 * of the arena; for one it gives up on, at least what it asked for before
 * giving up.  An empty sample, 2 bytes, costs 120: its struct (80), its
 * pointer (8) and its ScannedMember (32).
 */
#define UNPACK_ALIGN	_Alignof(max_align_t)	/* elf/arena.c's */
#define UNPACK_FIELDS	16	/* counted apart (profile.proto: 14 at most) */

/* protobuf-c's ScannedMember, for its size. */
struct scanned_member {
	uint32_t tag;
	uint8_t wire_type;
	uint8_t length_prefix_len;
	const ProtobufCFieldDescriptor *field;
	size_t len;
	const uint8_t *data;
};

/* Per field of the top level, by its index in the descriptor; unknown
 * fields last. */
struct unpack_tally {
	uint64_t count[UNPACK_FIELDS + 1];
	uint64_t bytes[UNPACK_FIELDS + 1];	/* on the wire */
	uint64_t cost[UNPACK_FIELDS + 1];
};

static uint64_t unpack_rounded(uint64_t size)
{
	if (!size)
		return UNPACK_ALIGN;	/* a pointer of its own all the same */
	return (size + UNPACK_ALIGN - 1) & ~(uint64_t)(UNPACK_ALIGN - 1);
}

/*
 * The field at p (rem bytes left), as protobuf-c's scan takes it: a tag of
 * at most 5 bytes whose first byte is past 7, then a varint of at most 10
 * bytes, 8 or 4 bytes, or a length of at most 5 bytes and INT_MAX.  0, or
 * -EBADMSG where the scan gives up.
 */
static int unpack_field(const uint8_t *p, size_t rem, struct pprof_field *f)
{
	size_t i, n = rem < 5 ? rem : 5, max;
	uint64_t value = 0;

	f->payload = NULL;
	f->payload_len = 0;
	if (!rem || !(p[0] & 0xf8))
		return -EBADMSG;
	f->wire_type = p[0] & 7;
	f->tag = (p[0] & 0x7f) >> 3;
	for (i = 1; p[i - 1] & 0x80; i++) {
		if (i == n)
			return -EBADMSG;
		f->tag |= (uint32_t)(p[i] & 0x7f) << (4 + 7 * (i - 1));
	}
	p += i;
	rem -= i;
	f->size = i;
	switch (f->wire_type) {
	case 0:
		max = rem < 10 ? rem : 10;
		for (i = 0; i < max && (p[i] & 0x80); i++)
			;
		if (i == max)
			return -EBADMSG;
		f->len = i + 1;
		break;
	case 1:
	case 5:
		f->len = f->wire_type == 1 ? 8 : 4;
		if (rem < f->len)
			return -EBADMSG;
		break;
	case 2:
		max = rem < 5 ? rem : 5;
		for (i = 0; i < max; i++) {
			value |= (uint64_t)(p[i] & 0x7f) << (7 * i);
			if (!(p[i] & 0x80))
				break;
		}
		if (i == max || value > INT_MAX || i + 1 + value > rem)
			return -EBADMSG;
		f->payload = p + i + 1;
		f->payload_len = (size_t)value;
		f->len = i + 1 + (size_t)value;
		break;
	default:
		return -EBADMSG;
	}
	f->size += f->len;
	return 0;
}

/* How many elements a packed field holds, as protobuf-c counts them; 0 or
 * -EBADMSG. */
static int unpack_packed(ProtobufCType type, const struct pprof_field *f,
			 uint64_t *n)
{
	size_t i;

	switch (type) {
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE: {
		size_t size = type == PROTOBUF_C_TYPE_SFIXED32 ||
			      type == PROTOBUF_C_TYPE_FIXED32 ||
			      type == PROTOBUF_C_TYPE_FLOAT ? 4 : 8;

		if (f->payload_len % size)
			return -EBADMSG;
		*n = f->payload_len / size;
		return 0;
	}
	case PROTOBUF_C_TYPE_BOOL:
		*n = f->payload_len;
		return 0;
	default:
		*n = 0;
		for (i = 0; i < f->payload_len; i++)
			*n += !(f->payload[i] & 0x80);
		return 0;
	}
}

/* protobuf-c's sizeof_elt_in_repeated_array(). */
static size_t unpack_element_size(ProtobufCType type)
{
	switch (type) {
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_ENUM:
		return 4;
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	default:
		return 8;
	}
}

/* The ScannedMember slabs for n fields: the 16 on the stack are free. */
static uint64_t unpack_slabs(uint64_t n)
{
	uint64_t bytes = 0, held = 16, slab = 32;

	for (; n > held; held += slab, slab *= 2)
		bytes += slab * sizeof(struct scanned_member);
	return bytes;
}

static uint64_t unpack_cost(const ProtobufCMessageDescriptor *desc,
			    const uint8_t *p, size_t len,
			    struct unpack_tally *tally);

/*
 * What the parse allocates for one occurrence of field (NULL: unknown)
 * beyond its element of a repeated array: a string, a sub-message or an
 * unknown field's copy.
 */
static uint64_t unpack_value_cost(const ProtobufCFieldDescriptor *field,
				  const struct pprof_field *f)
{
	if (!field)
		return unpack_rounded(f->len);
	if (f->wire_type != 2)
		return 0;
	switch (field->type) {
	case PROTOBUF_C_TYPE_STRING:
		return unpack_rounded(f->payload_len + 1);
	case PROTOBUF_C_TYPE_BYTES:
		return f->payload_len ? unpack_rounded(f->payload_len) : 0;
	case PROTOBUF_C_TYPE_MESSAGE:
		return unpack_cost(field->descriptor, f->payload,
				   f->payload_len, NULL);
	default:
		return 0;
	}
}

/*
 * What protobuf-c allocates to unpack p[0..len) as a desc (see above),
 * each field of it counted into tally if not NULL.
 */
static uint64_t unpack_cost(const ProtobufCMessageDescriptor *desc,
			    const uint8_t *p, size_t len,
			    struct unpack_tally *tally)
{
	unsigned int i, n_fields = desc->n_fields < UNPACK_FIELDS ?
				   desc->n_fields : UNPACK_FIELDS;
	uint64_t elements[UNPACK_FIELDS], members = 0, unknown = 0;
	uint64_t cost = unpack_rounded(desc->sizeof_message);
	const ProtobufCFieldDescriptor *field;
	struct pprof_field f;
	size_t at = 0;

	for (i = 0; i < n_fields; i++)
		elements[i] = 0;
	for (; at < len && !unpack_field(p + at, len - at, &f); at += f.size) {
		uint64_t n = 1, value;

		/* Fields are sorted by number, profile.proto's from 1 on. */
		i = f.tag - 1;
		if (i < desc->n_fields && desc->fields[i].id == f.tag) {
			field = &desc->fields[i];
		} else {
			field = protobuf_c_message_descriptor_get_field(desc,
									f.tag);
			i = field ? (unsigned int)(field - desc->fields) :
				    UNPACK_FIELDS;
		}
		if (i > UNPACK_FIELDS)
			i = UNPACK_FIELDS;	/* none in profile.proto */
		members++;
		if (!field)
			unknown++;
		if (field && field->label == PROTOBUF_C_LABEL_REPEATED) {
			if (f.wire_type == 2 &&
			    ((field->flags & PROTOBUF_C_FIELD_FLAG_PACKED) ||
			     (field->type != PROTOBUF_C_TYPE_STRING &&
			      field->type != PROTOBUF_C_TYPE_BYTES &&
			      field->type != PROTOBUF_C_TYPE_MESSAGE)) &&
			    unpack_packed(field->type, &f, &n))
				break;
			if (i < UNPACK_FIELDS)
				elements[i] += n;
			else	/* rounded apart: more, not less */
				cost += unpack_rounded(n *
					unpack_element_size(field->type));
		}
		value = unpack_value_cost(field, &f);
		cost += value;
		if (tally) {
			tally->count[i]++;
			tally->bytes[i] += f.size;
			tally->cost[i] += value + sizeof(struct scanned_member);
			if (field && field->label == PROTOBUF_C_LABEL_REPEATED)
				tally->cost[i] +=
					n * unpack_element_size(field->type);
		}
	}
	cost += unpack_slabs(members);
	for (i = 0; i < n_fields; i++)
		if (elements[i])
			cost += unpack_rounded(elements[i] *
				unpack_element_size(desc->fields[i].type));
	if (unknown)
		cost += unpack_rounded(unknown *
				       sizeof(ProtobufCMessageUnknownField));
	return cost;
}

uint64_t pprof_file__unpack_size(const uint8_t *data, size_t len)
{
	return unpack_cost(&perftools__profiles__profile__descriptor, data,
			   len, NULL);
}

#define MIB(n)	((unsigned long long)(((uint64_t)(n) + (1u << 19)) >> 20))

/* Profile's repeated fields, by number, in the plural. */
static const char *const profile_plural[] = {
	[1] = "sample types", [2] = "samples", [3] = "mappings",
	[4] = "locations", [5] = "functions", [6] = "strings",
	[13] = "comments",
};

/*
 * Would unpacking data[0..len) take more than UNPACK_RATIO times len +
 * UNPACK_FLOOR?  Then -EFBIG with why, naming the field that takes most.
 */
static int check_unpack_cost(const uint8_t *data, size_t len, char *why,
			     size_t why_size)
{
	const ProtobufCMessageDescriptor *desc =
		&perftools__profiles__profile__descriptor;
	struct unpack_tally t = { 0 };
	uint64_t cost = unpack_cost(desc, data, len, &t);
	unsigned int i, top = 0;
	char what[64];

	if (cost <= (uint64_t)UNPACK_RATIO * len + UNPACK_FLOOR)
		return 0;
	for (i = 1; i <= UNPACK_FIELDS; i++)
		if (t.cost[i] > t.cost[top])
			top = i;
	if (top == UNPACK_FIELDS || top >= desc->n_fields)
		snprintf(what, sizeof(what), "unknown fields");
	else if (desc->fields[top].id < sizeof(profile_plural) /
					 sizeof(*profile_plural) &&
		 profile_plural[desc->fields[top].id])
		snprintf(what, sizeof(what), "%s",
			 profile_plural[desc->fields[top].id]);
	else
		snprintf(what, sizeof(what), "'%s' fields",
			 desc->fields[top].name);
	snprintf(why, why_size,
		 "would take %llu MiB to unpack (%llu %s of %llu bytes each take %llu MiB), more than %d times its %llu MiB of protobuf + %llu MiB: not a profile pprof-alloc reads",
		 MIB(cost), (unsigned long long)t.count[top], what,
		 (unsigned long long)(t.count[top] ?
				      t.bytes[top] / t.count[top] : 0),
		 MIB(t.cost[top]), UNPACK_RATIO, MIB(len), MIB(UNPACK_FLOOR));
	return -EFBIG;
}

/* protobuf-c's Sample and Label, for their sizes. */
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Label pb_label;

uint64_t pprof_file__sample_unpack_size(uint64_t nloc, uint64_t nval,
					uint64_t nlabels)
{
	uint64_t members = (nloc > 0) + (nval > 0) + nlabels;
	uint64_t cost = unpack_rounded(sizeof(pb_sample)) +
			unpack_slabs(members);

	if (nloc)
		cost += unpack_rounded(nloc * sizeof(uint64_t));
	if (nval)
		cost += unpack_rounded(nval * sizeof(int64_t));
	if (nlabels)	/* each Label: its struct, 4 fields at most */
		cost += unpack_rounded(nlabels * sizeof(void *)) +
			nlabels * unpack_rounded(sizeof(pb_label));
	return cost;
}

int pprof_file__check_spliced_cost(const uint8_t *rest, size_t rest_len,
				   uint64_t nsamples, uint64_t sample_cost,
				   size_t total_len)
{
	struct unpack_tally t = { 0 };
	uint64_t cost, members = 0;

	cost = unpack_cost(&perftools__profiles__profile__descriptor, rest,
			   rest_len, &t);
	for (unsigned int i = 0; i <= UNPACK_FIELDS; i++)
		members += t.count[i];
	/* The samples' ScannedMembers share the slabs; their pointers make
	 * one array. */
	cost += unpack_slabs(members + nsamples) - unpack_slabs(members) +
		sample_cost;
	if (nsamples)
		cost += unpack_rounded(nsamples * sizeof(void *));
	return cost <= (uint64_t)UNPACK_RATIO * total_len + UNPACK_FLOOR ?
	       0 : -EFBIG;
}

int pprof_file__top_field(const uint8_t *p, size_t rem,
			  struct pprof_field *f)
{
	if (unpack_field(p, rem, f) || !f->tag ||
	    (f->tag < sizeof(profile_wire) &&
	     !(profile_wire[f->tag] & WIRE(f->wire_type))))
		return -EBADMSG;
	return 0;
}

/* protobuf-c's allocator on an arena: frees are no-ops, the arena goes
 * whole. */
static void *arena_alloc(void *arena, size_t size)
{
	return arena__alloc(arena, size);
}

static void arena_keep(void *arena, void *pointer)
{
	(void)arena;
	(void)pointer;
}

/* Read, check the cost, unpack and check (see pprof_file__read_from()). */
static int read_whole(int fd, const uint8_t *head, size_t head_len,
		      const struct stat *st, struct pprof_file **out,
		      char *why, size_t why_size)
{
	uint8_t *data = NULL;
	size_t len = 0;
	int err;

	err = read_profile(fd, head, head_len, st, &data, &len, why,
			   why_size);
	if (err)
		return err;
	err = check_unpack_cost(data, len, why, why_size);
	if (err) {
		free(data);
		return err;
	}
	err = pprof_file__unpack(data, len, out, why, why_size);
	free(data);
	return err;
}

int pprof_file__unpack(const uint8_t *data, size_t len,
		       struct pprof_file **out, char *why, size_t why_size)
{
	struct pprof_file *f;
	struct arena *arena;
	int err;

	arena = arena__new();
	f = arena ? arena__alloc(arena, sizeof(*f)) : NULL;
	if (!f) {
		snprintf(why, why_size, "out of memory");
		err = -ENOMEM;
		goto out_arena;
	}
	f->arena = arena;
	f->profile = perftools__profiles__profile__unpack(
		&(ProtobufCAllocator){ arena_alloc, arena_keep, arena },
		len, data);
	if (!f->profile) {
		snprintf(why, why_size, "not a pprof profile (protobuf decoding failed)");
		err = -EBADMSG;
		goto out_arena;
	}
	err = pprof_file__check(f->profile, why, why_size);
	if (err)
		goto out_arena;
	*out = f;
	arena = NULL;
out_arena:
	arena__free(arena);
	return err;
}

int pprof_file__read_from(int fd, const uint8_t *head, size_t head_len,
			  struct pprof_file **out, char *why, size_t why_size)
{
	struct stat st = { .st_mode = S_IFREG, .st_size = (off_t)head_len };
	int err;

	*why = '\0';
	if (fd >= 0 && fstat(fd, &st) < 0) {
		err = -errno;
		snprintf(why, why_size, "%s", strerror(-err));
		return err;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(why, why_size, "%s", strerror(EISDIR));
		return -EISDIR;
	}
	return read_whole(fd, head, head_len, &st, out, why, why_size);
}

int pprof_file__read_fd(int fd, struct pprof_file **out, char *why,
			size_t why_size)
{
	return pprof_file__read_from(fd, NULL, 0, out, why, why_size);
}

int pprof_file__read(const char *path, struct pprof_file **out, char *why,
		     size_t why_size)
{
	int fd, err;

	/* Blocking: a FIFO is read once a writer has opened it. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		err = -errno;
		snprintf(why, why_size, "%s", strerror(-err));
		return err;
	}
	err = pprof_file__read_fd(fd, out, why, why_size);
	close(fd);
	return err;
}

void pprof_file__free(struct pprof_file *f)
{
	if (f)
		arena__free(f->arena);
}

/* ---- checks ---------------------------------------------------------- */

/*
 * A set of ids.  Profiles number their mappings, functions and locations
 * 1, 2, 3...: then a bitmap answers without hashing and stays in cache;
 * ids spread further apart go in a hash set.
 */
struct id_set {
	uint64_t *bits;		/* dense: bit id set; NULL when sparse */
	uint64_t limit;		/* dense: ids below this fit */
	struct u64map map;	/* sparse */
};

static int id_set__init(struct id_set *set, uint64_t max_id, size_t n)
{
	memset(set, 0, sizeof(*set));
	u64map__init(&set->map);
	if (max_id / 64 > n + 1024)
		return 0;
	set->limit = max_id + 1;
	set->bits = calloc(max_id / 64 + 1, sizeof(*set->bits));
	return set->bits ? 0 : -ENOMEM;
}

static void id_set__fini(struct id_set *set)
{
	free(set->bits);
	u64map__fini(&set->map);
}

static bool id_set__has(const struct id_set *set, uint64_t id)
{
	if (set->bits)
		return id < set->limit &&
		       (set->bits[id / 64] >> (id % 64) & 1);
	return u64map__find(&set->map, id) != NULL;
}

/* Add id; 0, or -ENOMEM.  Ids must be below the max given to init. */
static int id_set__add(struct id_set *set, uint64_t id)
{
	if (set->bits) {
		set->bits[id / 64] |= 1ull << (id % 64);
		return 0;
	}
	return u64map__put(&set->map, id, 0) ? -ENOMEM : 0;
}

struct checker {
	const pprof_profile *p;
	char *why;
	size_t why_size;
	struct id_set mappings, functions, locations;
};

static int bad(struct checker *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int bad(struct checker *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why, c->why_size, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

static bool str_ok(const struct checker *c, int64_t index)
{
	return index >= 0 && (uint64_t)index < c->p->n_string_table;
}

/* Record ids in a set; 0 or a reason. */
static int unique_id(struct checker *c, struct id_set *set, uint64_t id,
		     const char *what, size_t i)
{
	if (id == 0)
		return bad(c, "%s %zu has id 0", what, i);
	if (id_set__has(set, id))
		return bad(c, "%s id %llu is used twice", what,
			   (unsigned long long)id);
	return id_set__add(set, id);
}

static int check_strings(struct checker *c)
{
	const pprof_profile *p = c->p;

	if (p->n_string_table == 0 || !p->string_table[0] ||
	    p->string_table[0][0] != '\0')
		return bad(c, "the string table must start with \"\"");
	for (size_t i = 0; i < p->n_sample_type; i++)
		if (!str_ok(c, p->sample_type[i]->type) ||
		    !str_ok(c, p->sample_type[i]->unit))
			return bad(c, "sample type %zu: string index out of range", i);
	if (p->period_type && (!str_ok(c, p->period_type->type) ||
			       !str_ok(c, p->period_type->unit)))
		return bad(c, "period type: string index out of range");
	for (size_t i = 0; i < p->n_comment; i++)
		if (!str_ok(c, p->comment[i]))
			return bad(c, "comment %zu: string index out of range", i);
	if (!str_ok(c, p->drop_frames) || !str_ok(c, p->keep_frames) ||
	    !str_ok(c, p->default_sample_type))
		return bad(c, "string index out of range in the profile's fields");
	return 0;
}

static int check_mappings_functions(struct checker *c)
{
	const pprof_profile *p = c->p;
	int err;

	for (size_t i = 0; i < p->n_mapping; i++) {
		const Perftools__Profiles__Mapping *m = p->mapping[i];

		err = unique_id(c, &c->mappings, m->id, "mapping", i);
		if (err)
			return err;
		if (!str_ok(c, m->filename) || !str_ok(c, m->build_id))
			return bad(c, "mapping %llu: string index out of range",
				   (unsigned long long)m->id);
		if (m->memory_start > m->memory_limit)
			return bad(c, "mapping %llu: start after limit",
				   (unsigned long long)m->id);
	}
	for (size_t i = 0; i < p->n_function; i++) {
		const Perftools__Profiles__Function *f = p->function[i];

		err = unique_id(c, &c->functions, f->id, "function", i);
		if (err)
			return err;
		if (!str_ok(c, f->name) || !str_ok(c, f->system_name) ||
		    !str_ok(c, f->filename))
			return bad(c, "function %llu: string index out of range",
				   (unsigned long long)f->id);
	}
	return 0;
}

static int check_locations(struct checker *c)
{
	const pprof_profile *p = c->p;
	int err;

	for (size_t i = 0; i < p->n_location; i++) {
		const Perftools__Profiles__Location *l = p->location[i];

		err = unique_id(c, &c->locations, l->id, "location", i);
		if (err)
			return err;
		if (l->mapping_id && !id_set__has(&c->mappings, l->mapping_id))
			return bad(c, "location %llu: no mapping %llu",
				   (unsigned long long)l->id,
				   (unsigned long long)l->mapping_id);
		for (size_t j = 0; j < l->n_line; j++)
			if (!id_set__has(&c->functions,
					 l->line[j]->function_id))
				return bad(c, "location %llu: no function %llu",
					   (unsigned long long)l->id,
					   (unsigned long long)l->line[j]->function_id);
	}
	return 0;
}

static int check_samples(struct checker *c)
{
	const pprof_profile *p = c->p;

	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];

		if (s->n_value != p->n_sample_type)
			return bad(c, "sample %zu has %zu values for %zu sample types",
				   i, s->n_value, p->n_sample_type);
		for (size_t j = 0; j < s->n_location_id; j++)
			if (!id_set__has(&c->locations, s->location_id[j]))
				return bad(c, "sample %zu: no location %llu", i,
					   (unsigned long long)s->location_id[j]);
		for (size_t j = 0; j < s->n_label; j++) {
			const Perftools__Profiles__Label *l = s->label[j];

			if (!str_ok(c, l->key) || !str_ok(c, l->str) ||
			    !str_ok(c, l->num_unit))
				return bad(c, "sample %zu: label string index out of range",
					   i);
		}
	}
	return 0;
}

int pprof_file__check(const pprof_profile *p, char *why, size_t why_size)
{
	struct checker c = { .p = p, .why = why, .why_size = why_size };
	uint64_t max_mapping = 0, max_function = 0, max_location = 0;
	int err;

	for (size_t i = 0; i < p->n_mapping; i++)
		if (p->mapping[i]->id > max_mapping)
			max_mapping = p->mapping[i]->id;
	for (size_t i = 0; i < p->n_function; i++)
		if (p->function[i]->id > max_function)
			max_function = p->function[i]->id;
	for (size_t i = 0; i < p->n_location; i++)
		if (p->location[i]->id > max_location)
			max_location = p->location[i]->id;
	err = id_set__init(&c.mappings, max_mapping, p->n_mapping);
	if (!err)
		err = id_set__init(&c.functions, max_function, p->n_function);
	if (!err)
		err = id_set__init(&c.locations, max_location, p->n_location);
	if (!err)
		err = check_strings(&c);
	if (!err)
		err = check_mappings_functions(&c);
	if (!err)
		err = check_locations(&c);
	if (!err)
		err = check_samples(&c);
	if (err == -ENOMEM)
		snprintf(why, why_size, "out of memory");
	id_set__fini(&c.locations);
	id_set__fini(&c.functions);
	id_set__fini(&c.mappings);
	return err;
}
