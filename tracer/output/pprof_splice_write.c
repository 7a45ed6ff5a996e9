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
	size_t first, count;	/* !copy: its pieces */
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

/* Cut each part to gzip into pieces (pprof_file__cuts()). */
static int plan_pieces(struct parts *ps, struct gzip_piece **pieces,
		       size_t *npieces)
{
	size_t n = 0, cap = 0;
	int err = 0;

	*pieces = NULL;
	for (size_t i = 0; i < ps->n && !err; i++) {
		struct part *p = &ps->parts[i];
		size_t *cuts = NULL, ncuts = 0;

		if (p->copy)
			continue;
		err = pprof_file__cuts(p->bytes, p->len, &cuts, &ncuts);
		if (!err)
			err = array__grow((void **)pieces, &cap,
					  n + ncuts + 1, sizeof(**pieces));
		if (err) {
			free(cuts);
			break;
		}
		p->first = n;
		p->count = ncuts + 1;
		for (size_t c = 0, at = 0; c <= ncuts; c++) {
			size_t end = c < ncuts ? cuts[c] : p->len;

			(*pieces)[n++] = (struct gzip_piece){
				.in = p->bytes + at, .in_len = end - at,
			};
			at = end;
		}
		free(cuts);
	}
	*npieces = n;
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

/* p with s's samples, gzipped, into e (see the top).  0 or -errno. */
static int splice_encode(const struct pprof_splice *s, const pprof_profile *p,
			 struct encoded *e)
{
	struct parts ps = { 0 };
	size_t packed_len, split = 0;
	int err;

	*e = (struct encoded){ 0 };
	if (p->n_sample || !s->finished)
		return -EINVAL;
	packed_len = perftools__profiles__profile__get_packed_size(p);
	e->packed = malloc(packed_len ? packed_len : 1);
	if (!e->packed)
		return -ENOMEM;
	if (perftools__profiles__profile__pack(p, e->packed) != packed_len) {
		err = -EIO;
		goto out_parts;
	}
	/* protobuf-c packs by field number: samples come after the leading
	 * sample types */
	while (split < packed_len) {
		struct pprof_field f;

		err = pprof_file__top_field(e->packed + split,
					    packed_len - split, &f);
		if (err)
			goto out_parts;
		if (f.tag > PPROF_SAMPLE_FIELD)
			break;
		split += f.size;
	}
	err = plan_parts(s, e->packed, packed_len, split, &ps);
	if (!err)
		err = plan_pieces(&ps, &e->pieces, &e->npieces);
	if (!err)
		err = gzip__compress_pieces(e->pieces, e->npieces);
	if (!err) {
		e->iov = calloc(ps.n + e->npieces + 1, sizeof(*e->iov));
		err = e->iov ? 0 : -ENOMEM;
	}
	for (size_t i = 0; !err && i < ps.n; i++) {
		const struct part *part = &ps.parts[i];

		if (part->copy) {
			e->iov[e->niov++] = (struct iovec){
				(void *)part->bytes, part->len };
			continue;
		}
		for (size_t c = part->first; c < part->first + part->count; c++)
			e->iov[e->niov++] = (struct iovec){
				e->pieces[c].out, e->pieces[c].out_len };
	}
out_parts:
	free(ps.parts);
	if (err)
		encoded_free(e);
	return err;
}

int pprof_splice__write(const struct pprof_splice *s, const pprof_profile *p,
			const char *path)
{
	struct encoded e;
	int err = splice_encode(s, p, &e);

	if (err)
		return err;
	err = pprof_file__writev(path, e.iov, e.niov);
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
