// SPDX-License-Identifier: MIT
/*
 * pprof_splice_write.c - a spliced profile written back (pprof_splice.c
 * read it): the new message, packed by protobuf-c without samples, with
 * the sample bytes where protobuf-c would have put them - after the
 * sample types.  Each member that held only samples is copied compressed,
 * as it was read; samples of other members are gzipped again with the
 * rest, cut between fields as pprof_file__cuts() cuts, in parallel
 * (gzip__compress_pieces()), and the whole is written atomically with one
 * writev (pprof_file__writev()), or, for tests, into one buffer.  The
 * protobuf is the one packing the whole profile would give: the samples'
 * bytes are in the encoding protobuf-c packs (pprof_samples.c), and
 * protobuf-c packs fields by number.
 *
 * The new message needs none of the samples, so it can be packed, and its
 * fields after the samples (mappings, locations, functions, strings: all
 * of it that is new) gzipped, while the samples are still being read
 * (pprof_splice__prepare()): that work then overlaps theirs instead of
 * following it.  Cut and gzipped the same way, they are the same bytes.
 */
#include "pprof_splice_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include "elf/array.h"
#include "gzip.h"

/* A stretch of the output: a member copied, or bytes to gzip. */
struct part {
	const uint8_t *bytes;
	size_t len;
	bool copy;		/* a member as it was read */
	bool ready;		/* gzipped ahead: the splice's tail pieces */
	size_t first, count;	/* !copy && !ready: its pieces */
};

struct parts {
	struct part *parts;
	size_t n, cap;
};

static int add_part(struct parts *ps, const uint8_t *bytes, size_t len,
		    bool copy)
{
	struct part *last = ps->n ? &ps->parts[ps->n - 1] : NULL;
	int err;

	if (!len)
		return 0;
	if (!copy && last && !last->copy && last->bytes + last->len == bytes) {
		last->len += len;	/* the next fields of one member */
		return 0;
	}
	err = array__grow((void **)&ps->parts, &ps->cap, ps->n + 1,
			  sizeof(*ps->parts));
	if (err)
		return err;
	ps->parts[ps->n++] = (struct part){
		.bytes = bytes, .len = len, .copy = copy,
	};
	return 0;
}

/* The output, in order: packed[0..split), the samples, packed[split..). */
static int plan_parts(const struct pprof_splice *s, const uint8_t *packed,
		      size_t packed_len, size_t split, struct parts *ps)
{
	int err = add_part(ps, packed, split, false);

	for (size_t k = 0; k < s->nmembers && !err; k++) {
		const struct member *m = &s->members[k];

		if (!m->other) {	/* samples alone, or nothing */
			err = add_part(ps, m->gz, m->gz_size, true);
			continue;
		}
		for (size_t at = 0; m->kept && at < m->len && !err;) {
			struct pprof_field f;

			pprof_file__top_field(m->kept + at, m->len - at, &f);
			if (f.tag == PPROF_SAMPLE_FIELD)
				err = add_part(ps, m->kept + at, f.size, false);
			at += f.size;
		}
	}
	if (!err)
		err = add_part(ps, packed + split, packed_len - split, false);
	return err;
}

/* Cut bytes[0..len) into pieces (pprof_file__cuts()), added to
 * (*pieces)[*n..), of *cap.  0 or -errno. */
static int cut_pieces(const uint8_t *bytes, size_t len,
		      struct gzip_piece **pieces, size_t *n, size_t *cap)
{
	size_t *cuts = NULL, ncuts = 0;
	int err;

	err = pprof_file__cuts(bytes, len, &cuts, &ncuts);
	if (!err)
		err = array__grow((void **)pieces, cap, *n + ncuts + 1,
				  sizeof(**pieces));
	for (size_t c = 0, at = 0; !err && c <= ncuts; c++) {
		size_t end = c < ncuts ? cuts[c] : len;

		(*pieces)[(*n)++] = (struct gzip_piece){
			.in = bytes + at, .in_len = end - at,
		};
		at = end;
	}
	free(cuts);
	return err;
}

/* Cut each part to gzip into pieces. */
static int plan_pieces(struct parts *ps, struct gzip_piece **pieces,
		       size_t *npieces)
{
	size_t n = 0, cap = 0;
	int err = 0;

	*pieces = NULL;
	for (size_t i = 0; i < ps->n && !err; i++) {
		struct part *p = &ps->parts[i];

		if (p->copy || p->ready)
			continue;
		p->first = n;
		err = cut_pieces(p->bytes, p->len, pieces, &n, &cap);
		p->count = n - p->first;
	}
	*npieces = n;
	return err;
}

/* p packed into a malloc'd *packed; *split: where its fields after the
 * samples start.  0 or -errno. */
static int pack(const pprof_profile *p, uint8_t **packed, size_t *packed_len,
		size_t *split)
{
	size_t len = perftools__profiles__profile__get_packed_size(p);
	int err = 0;

	*packed = malloc(len ? len : 1);
	if (!*packed)
		return -ENOMEM;
	*packed_len = len;
	*split = 0;
	if (perftools__profiles__profile__pack(p, *packed) != len)
		err = -EIO;
	/* protobuf-c packs by field number: samples come after the leading
	 * sample types */
	while (!err && *split < len) {
		struct pprof_field f;

		err = pprof_file__top_field(*packed + *split, len - *split, &f);
		if (err || f.tag > PPROF_SAMPLE_FIELD)
			break;
		*split += f.size;
	}
	if (err) {
		free(*packed);
		*packed = NULL;
	}
	return err;
}

int pprof_splice__prepare(struct pprof_splice *s, const pprof_profile *p)
{
	size_t cap = 0;
	int err;

	if (p->n_sample || s->packed)
		return -EINVAL;
	err = pack(p, &s->packed, &s->packed_len, &s->split);
	if (!err && s->split < s->packed_len)
		err = cut_pieces(s->packed + s->split,
				 s->packed_len - s->split, &s->tail,
				 &s->ntail, &cap);
	if (!err)
		err = gzip__compress_pieces(s->tail, s->ntail);
	if (err) {
		free(s->packed);
		free(s->tail);
		s->packed = NULL;
		s->tail = NULL;
		s->ntail = 0;
	}
	return err;
}

/* What splice_encode() made: the output as iov[0..niov), pointing into
 * the splice's input, into packed and into the pieces. */
struct encoded {
	uint8_t *packed;
	struct gzip_piece *pieces;
	size_t npieces;
	struct iovec *iov;
	size_t niov;
};

static void encoded_free(struct encoded *e)
{
	gzip__free_pieces(e->pieces, e->npieces);
	free(e->pieces);
	free(e->iov);
	free(e->packed);
}

/*
 * p with s's samples, gzipped, into e (see the top): with what
 * pprof_splice__prepare() made of p, if it did.  0 or -errno.
 */
static int splice_encode(const struct pprof_splice *s, const pprof_profile *p,
			 struct encoded *e)
{
	struct parts ps = { 0 };
	const uint8_t *packed = s->packed;
	size_t packed_len = s->packed_len, split = s->split;
	struct part *last;
	int err = 0;

	*e = (struct encoded){ 0 };
	if (p->n_sample || !s->finished)
		return -EINVAL;
	if (!packed) {
		err = pack(p, &e->packed, &packed_len, &split);
		packed = e->packed;
	}
	if (!err)
		err = plan_parts(s, packed, packed_len, split, &ps);
	/* the fields after the samples, gzipped ahead, unless the part they
	 * make starts elsewhere: joined to the sample types (no samples
	 * between), they are cut as one with them */
	last = ps.n ? &ps.parts[ps.n - 1] : NULL;
	if (!err && s->packed && last && !last->copy &&
	    last->bytes == packed + split)
		last->ready = true;
	if (!err)
		err = plan_pieces(&ps, &e->pieces, &e->npieces);
	if (!err)
		err = gzip__compress_pieces(e->pieces, e->npieces);
	if (!err) {
		e->iov = calloc(ps.n + e->npieces + s->ntail + 1,
				sizeof(*e->iov));
		err = e->iov ? 0 : -ENOMEM;
	}
	for (size_t i = 0; !err && i < ps.n; i++) {
		const struct part *part = &ps.parts[i];

		if (part->copy) {
			e->iov[e->niov++] = (struct iovec){
				(void *)part->bytes, part->len };
			continue;
		}
		if (part->ready) {
			for (size_t c = 0; c < s->ntail; c++)
				e->iov[e->niov++] = (struct iovec){
					s->tail[c].out, s->tail[c].out_len };
			continue;
		}
		for (size_t c = part->first; c < part->first + part->count; c++)
			e->iov[e->niov++] = (struct iovec){
				e->pieces[c].out, e->pieces[c].out_len };
	}

	free(ps.parts);
	if (err)
		encoded_free(e);
	return err;
}

int pprof_splice__write(const struct pprof_splice *s, const pprof_profile *p,
			const char *path, bool sync)
{
	struct encoded e;
	int err = splice_encode(s, p, &e);

	if (err)
		return err;
	err = pprof_file__writev_sync(path, e.iov, e.niov, sync);
	encoded_free(&e);
	return err;
}

int pprof_splice__gzip(const struct pprof_splice *s, const pprof_profile *p,
		       uint8_t **out, size_t *out_len)
{
	struct encoded e;
	size_t len = 0;
	uint8_t *all;
	int err = splice_encode(s, p, &e);

	if (err)
		return err;
	for (size_t i = 0; i < e.niov; i++)
		len += e.iov[i].iov_len;
	all = malloc(len ? len : 1);
	if (!all) {
		encoded_free(&e);
		return -ENOMEM;
	}
	*out = all;
	*out_len = len;
	for (size_t i = 0; i < e.niov; i++) {
		memcpy(all, e.iov[i].iov_base, e.iov[i].iov_len);
		all += e.iov[i].iov_len;
	}
	encoded_free(&e);
	return 0;
}
