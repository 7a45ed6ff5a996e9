// SPDX-License-Identifier: MIT
/*
 * pprof_samples.c - a Profile's samples checked as they are on the wire,
 * without unpacking them.
 *
 * pprof_splice.c copies samples from the profile `symbolize` reads to the
 * one it writes as the bytes they were, and what it writes must be what
 * packing the profile with protobuf-c gives; so a sample is taken only in
 * the one encoding that protobuf-c packs: location_id (field 1) and value
 * (2) packed, each once or not at all (an empty one is left out), then its
 * labels (3), each with key, str, num and num_unit in that order, those
 * that are 0 left out; no varint or length longer than its value needs,
 * and none past 10 bytes or 64 bits.  Anything else is refused, and
 * pprof_splice.c reads the file the usual way, with protobuf-c, which
 * takes it or says what is wrong with it.
 *
 * What the checks of pprof_file__check() need from the rest of the
 * profile (how many values a sample has, which locations and strings
 * exist) is kept in a tally, compared at the end (pprof_samples__fit()):
 * the number of values, the largest location id and label string index,
 * and what protobuf-c would allocate to unpack them
 * (pprof_file__sample_unpack_size()), for its limit.
 *
 * Location ids are most of the bytes, so they are checked 16 bytes at a
 * time with SSE2, without a branch per id (scan_ids()).  Pure functions:
 * any thread.
 */
#include "pprof_samples.h"

#include <errno.h>
#include <limits.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include "pprof_file.h"

void pprof_samples__init(struct pprof_sample_tally *t)
{
	*t = (struct pprof_sample_tally){ .values_min = UINT64_MAX };
}

void pprof_samples__add(struct pprof_sample_tally *to,
			const struct pprof_sample_tally *t)
{
	to->samples += t->samples;
	to->cost += t->cost;
	if (t->values_min < to->values_min)
		to->values_min = t->values_min;
	if (t->values_max > to->values_max)
		to->values_max = t->values_max;
	to->locations += t->locations;
	if (t->loc_max > to->loc_max)
		to->loc_max = t->loc_max;
	if (t->string_max > to->string_max)
		to->string_max = t->string_max;
}

/*
 * The varint at p (before end) if it is as protobuf-c writes one: at most
 * 10 bytes, the last of them holding bit 63 alone, and no byte more than
 * its value needs.  The byte after it, or NULL.
 */
static inline const uint8_t *varint(const uint8_t *p, const uint8_t *end,
				    uint64_t *v)
{
	uint64_t x = 0;
	unsigned int shift = 0;

	if (p < end && *p < 0x80) {	/* most are one byte */
		*v = *p;
		return p + 1;
	}
	while (p < end) {
		uint8_t b = *p++;

		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			if ((shift && !b) || (shift == 63 && b > 1))
				return NULL;
			*v = x;
			return p;
		}
		shift += 7;
		if (shift > 63)
			return NULL;
	}
	return NULL;
}

/* The payload [*start, returned) of the length-delimited field whose
 * length is at p, or NULL if it does not fit before end. */
static inline const uint8_t *payload(const uint8_t *p, const uint8_t *end,
				     const uint8_t **start)
{
	uint64_t len;

	p = varint(p, end, &len);
	if (!p || len > (uint64_t)(end - p))
		return NULL;
	*start = p;
	return p + len;
}

/*
 * What the location ids of a member's samples are so far.  Most ids of a
 * profile are below 16384, one or two bytes, and the bytes are taken 16 at
 * a time (SSE2) without a branch on which: the bytes that end an id are
 * those below 0x80, and each gives a key that orders ids as their values
 * do - the byte itself for an id of one byte, (byte << 8 | low 7 bits of
 * the byte before) for an id of two - whose largest is the largest id.
 * The largest key and whether some byte was 0 (an id 0, or a byte too
 * many: refused either way) are kept as vectors for the member, and
 * reduced once at its end (ids_end()).
 */
struct id_scan {
#ifdef __SSE2__
	__m128i keys, zeros;
#endif
	uint64_t exact_max;	/* of the ids of 3 bytes or more */
};

static void ids_start(struct id_scan *ids)
{
#ifdef __SSE2__
	ids->keys = _mm_setzero_si128();
	ids->zeros = _mm_setzero_si128();
#endif
	ids->exact_max = 0;
}

/* Into t, the largest id of the member; false if one was 0. */
static bool ids_end(struct id_scan *ids, struct pprof_sample_tally *t)
{
	uint64_t v = ids->exact_max;
#ifdef __SSE2__
	__m128i keys = ids->keys;
	unsigned int key;

	keys = _mm_max_epi16(keys, _mm_srli_si128(keys, 8));
	keys = _mm_max_epi16(keys, _mm_srli_si128(keys, 4));
	keys = _mm_max_epi16(keys, _mm_srli_si128(keys, 2));
	key = (unsigned int)_mm_cvtsi128_si32(keys) & 0xffff;
	key = (key >> 8) << 7 | (key & 0x7f);	/* the id */
	v = key > v ? key : v;
	if (_mm_movemask_epi8(ids->zeros))
		return false;
#endif
	t->loc_max = v > t->loc_max ? v : t->loc_max;
	return true;
}

/*
 * Packed location ids p[0..n), n > 0, each a varint as protobuf-c writes
 * it: their count into *count, their largest and any 0 into ids (or, for
 * ids of 3 bytes or more, by the exact loop).  p[-1] must be readable
 * (the payload's length), and PPROF_SAMPLES_PAD bytes past p + n.
 */
static bool scan_ids(const uint8_t *p, size_t n, struct id_scan *ids,
		     uint64_t *count)
{
	const uint8_t *end = p + n;
	uint64_t v;

	if (p[n - 1] >= 0x80)	/* the last id goes on past the end */
		return false;
#ifdef __SSE2__
	const __m128i low7 = _mm_set1_epi8(0x7f), none = _mm_setzero_si128();
	const __m128i iota = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
					   11, 12, 13, 14, 15);
	/* the byte before the first is none: no id goes on from it */
	__m128i first = _mm_insert_epi16(_mm_set1_epi8(-1), 0xff00, 0);
	__m128i keys = ids->keys, zeros = ids->zeros, longs = none, ends = none;

	for (size_t i = 0; i < n; i += 16) {
		__m128i b = _mm_loadu_si128((const __m128i *)(p + i));
		__m128i before = _mm_and_si128(first,
			_mm_loadu_si128((const __m128i *)(p + i - 1)));
		__m128i valid = _mm_cmpgt_epi8(_mm_set1_epi8(
			(char)(n - i < 16 ? n - i : 16)), iota);
		/* signed: the bytes past 0x7f are negative */
		__m128i two = _mm_cmplt_epi8(before, none);
		__m128i last = _mm_and_si128(valid,
			_mm_cmpgt_epi8(b, _mm_set1_epi8(-1)));
		__m128i hi8, lo8;

		first = _mm_set1_epi8(-1);
		zeros = _mm_or_si128(zeros, _mm_and_si128(valid,
			_mm_cmpeq_epi8(b, none)));
		longs = _mm_or_si128(longs, _mm_and_si128(valid,
			_mm_andnot_si128(last, two)));
		ends = _mm_add_epi64(ends, _mm_sad_epu8(_mm_and_si128(last,
			_mm_set1_epi8(1)), none));
		hi8 = _mm_and_si128(_mm_and_si128(b, two), last);
		lo8 = _mm_and_si128(_mm_or_si128(_mm_and_si128(
			_mm_and_si128(before, low7), two),
			_mm_andnot_si128(two, b)), last);
		keys = _mm_max_epi16(keys, _mm_unpacklo_epi8(lo8, hi8));
		keys = _mm_max_epi16(keys, _mm_unpackhi_epi8(lo8, hi8));
	}
	if (!_mm_movemask_epi8(longs)) {	/* no id of 3 bytes or more */
		ids->keys = keys;
		ids->zeros = zeros;
		*count = (uint64_t)_mm_cvtsi128_si64(ends) +
			 (uint64_t)_mm_cvtsi128_si64(_mm_srli_si128(ends, 8));
		return true;
	}
#endif
	for (*count = 0; p < end; ++*count) {
		if (!(p = varint(p, end, &v)) || !v)
			return false;
		ids->exact_max = v > ids->exact_max ? v : ids->exact_max;
	}
	return true;
}

/* Packed values, at least one, each a varint as protobuf-c writes it:
 * their count, or 0. */
static uint64_t count_values(const uint8_t *p, const uint8_t *end)
{
	uint64_t count = 0;
	unsigned int run = 0, bad = 0;	/* run: bytes of this varint so far */

	for (; p < end; p++) {
		uint8_t b = *p;

		if (b & 0x80) {
			run++;
			continue;
		}
		bad |= (run && !b) | (run == 9 && b > 1) | (run > 9);
		run = 0;
		count++;
	}
	return bad || run ? 0 : count;
}

/* A Label: key 1, str 2, num 3, num_unit 4, varints in that order, each
 * left out when 0. */
static bool scan_label(const uint8_t *p, const uint8_t *end,
		       struct pprof_sample_tally *t)
{
	uint64_t v;

	if (p < end && *p == 1 << 3) {
		p = varint(p + 1, end, &v);
		if (!p || !v)
			return false;
		t->string_max = v > t->string_max ? v : t->string_max;
	}
	if (p < end && *p == 2 << 3) {
		p = varint(p + 1, end, &v);
		if (!p || !v)
			return false;
		t->string_max = v > t->string_max ? v : t->string_max;
	}
	if (p < end && *p == 3 << 3) {
		p = varint(p + 1, end, &v);
		if (!p || !v)
			return false;
	}
	if (p < end && *p == 4 << 3) {
		p = varint(p + 1, end, &v);
		if (!p || !v)
			return false;
		t->string_max = v > t->string_max ? v : t->string_max;
	}
	return p == end;
}

/*
 * A Sample's payload p[0..end) as protobuf-c packs one: location_id
 * (field 1) and value (2) packed, each once or not at all, then its
 * labels (3).  Tallied into t; false if it is encoded any other way.
 */
static bool scan_sample(const uint8_t *p, const uint8_t *end,
			struct pprof_sample_tally *t, struct id_scan *ids)
{
	uint64_t nloc = 0, nval = 0, nlabels = 0;
	const uint8_t *start, *stop;

	if (p < end && *p == (1 << 3 | 2)) {
		stop = payload(p + 1, end, &start);
		if (!stop || stop == start ||
		    !scan_ids(start, (size_t)(stop - start), ids, &nloc))
			return false;
		t->locations += nloc;
		p = stop;
	}
	if (p < end && *p == (2 << 3 | 2)) {
		stop = payload(p + 1, end, &start);
		if (!stop || !(nval = count_values(start, stop)))
			return false;
		p = stop;
	}
	while (p < end && *p == (3 << 3 | 2)) {
		stop = payload(p + 1, end, &start);
		if (!stop || !scan_label(start, stop, t))
			return false;
		nlabels++;
		p = stop;
	}
	if (p != end)
		return false;
	t->samples++;
	t->cost += pprof_file__sample_unpack_size(nloc, nval, nlabels);
	if (nval < t->values_min)
		t->values_min = nval;
	if (nval > t->values_max)
		t->values_max = nval;
	return true;
}

int pprof_samples__scan(const uint8_t *data, size_t len,
			struct pprof_sample_tally *t, bool *other)
{
	const uint8_t *end = data + len;
	struct id_scan ids;
	size_t at = 0;

	ids_start(&ids);
	*other = false;
	while (at < len) {
		const uint8_t *start, *stop;
		struct pprof_field f;

		/* A sample, as protobuf-c packs one: its tag in one byte,
		 * its length as short as it goes (varint() checks) and
		 * within what pprof_file__top_field() allows. */
		if (data[at] == (PPROF_SAMPLE_FIELD << 3 | 2)) {
			stop = payload(data + at + 1, end, &start);
			if (!stop || stop - start > INT_MAX ||
			    !scan_sample(start, stop, t, &ids))
				return -EBADMSG;
			at = (size_t)(stop - data);
			continue;
		}
		if (pprof_file__top_field(data + at, len - at, &f) ||
		    f.tag == PPROF_SAMPLE_FIELD)	/* encoded otherwise */
			return -EBADMSG;
		*other = true;
		at += f.size;
	}
	return ids_end(&ids, t) ? 0 : -EBADMSG;
}

bool pprof_samples__fit(const struct pprof_sample_tally *t,
			uint64_t sample_types, uint64_t strings,
			uint64_t locations, bool dense)
{
	if (!t->samples)
		return true;
	if (t->values_min != sample_types || t->values_max != sample_types)
		return false;
	if (t->string_max && t->string_max >= strings)
		return false;
	return !t->locations || (dense && t->loc_max <= locations);
}
