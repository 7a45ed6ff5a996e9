/* SPDX-License-Identifier: MIT */
/*
 * cuspans.c - a module's compile units by address, as sorted spans.
 *
 * Two sources, as the symbolizer uses them: .debug_aranges, read once by
 * libdw (GCC emits it; an address it does not cover is usually in no CU
 * at all), and, as a fallback for DWARF without it (clang and rustc leave
 * it out by default, and libdw 0.188 finds CUs by it only), a walk of every
 * CU's DW_AT_ranges or low/high pc.  Either way the result is a sorted
 * array of [low, high) -> CU DIE offset, found by binary search: the last
 * span starting at or below the address, if it ends above it.  Spans
 * should not overlap; if broken DWARF makes them, some CU holding the
 * address is found.
 *
 * Aranges are read the way libdwfl's dwfl_module_addrdie() reads them
 * (libdwfl/cu.c), so that both give the same answers: an address in a gap
 * between two aranges (alignment padding between functions) belongs to the
 * CU of the arange before it, and past the last one only up to its end,
 * inclusive.  So padding gets the preceding CU's line, as libdwfl gives.
 *
 * A table is plain data (offsets, not libdw handles), so the symbolizer
 * copies it into clones for other threads (symbolizer__clone()) instead of
 * each reading the aranges or walking the CUs again.  Not thread-safe to
 * build; a built table is only read.
 */
#include "elf/cuspans.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "elf/array.h"

static int span_cmp(const void *a, const void *b)
{
	const struct cu_span *x = a, *y = b;

	if (x->low != y->low)
		return x->low < y->low ? -1 : 1;
	return x->high < y->high ? -1 : x->high > y->high;
}

static int add(struct cu_spans *t, size_t *cap, Dwarf_Addr low,
	       Dwarf_Addr high, Dwarf_Off cu)
{
	int err;

	if (low >= high)
		return 0;
	err = array__grow((void **)&t->spans, cap, t->n + 1, sizeof(*t->spans));
	if (err)
		return err;
	t->spans[t->n++] = (struct cu_span){ .low = low, .high = high, .cu = cu };
	return 0;
}

int cu_spans__from_aranges(struct cu_spans *t, Dwarf *dwarf)
{
	Dwarf_Aranges *aranges;
	size_t naranges, cap = 0;
	int err;

	t->built = true;
	t->gaps_to_previous = true;
	if (!dwarf || dwarf_getaranges(dwarf, &aranges, &naranges) != 0)
		return 0;
	for (size_t i = 0; i < naranges; i++) {
		Dwarf_Arange *a = dwarf_onearange(aranges, i);
		Dwarf_Addr low;
		Dwarf_Word len;
		Dwarf_Off cu;

		if (!a || dwarf_getarangeinfo(a, &low, &len, &cu) != 0 ||
		    low + len < low)
			continue;
		err = add(t, &cap, low, low + len, cu);
		if (err)
			return err;
	}
	/* libdw sorts them already; keep the order whatever it does. */
	if (t->n)
		qsort(t->spans, t->n, sizeof(*t->spans), span_cmp);
	return 0;
}

static int offset_cmp(const void *a, const void *b)
{
	Dwarf_Off x = *(const Dwarf_Off *)a, y = *(const Dwarf_Off *)b;

	return x < y ? -1 : x > y;
}

/* The distinct CU offsets of listed, sorted, into *out (malloc'd). */
static int listed_units(const struct cu_spans *listed, Dwarf_Off **out,
			size_t *n)
{
	Dwarf_Off *offsets;
	size_t kept = 0;

	*out = NULL;
	*n = 0;
	if (!listed || !listed->n)
		return 0;
	offsets = malloc(listed->n * sizeof(*offsets));
	if (!offsets)
		return -ENOMEM;
	for (size_t i = 0; i < listed->n; i++)
		offsets[i] = listed->spans[i].cu;
	qsort(offsets, listed->n, sizeof(*offsets), offset_cmp);
	for (size_t i = 0; i < listed->n; i++)
		if (!kept || offsets[kept - 1] != offsets[i])
			offsets[kept++] = offsets[i];
	*out = offsets;
	*n = kept;
	return 0;
}

static bool is_listed(const Dwarf_Off *offsets, size_t n, Dwarf_Off cu)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (offsets[mid] < cu)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && offsets[lo] == cu;
}

int cu_spans__from_units(struct cu_spans *t, Dwarf *dwarf,
			 const struct cu_spans *listed)
{
	Dwarf_Addr base, low, high;
	Dwarf_Off unit, next, *skip;
	size_t cap = 0, nskip, header_size;
	ptrdiff_t off;
	int err;

	t->built = true;
	if (!dwarf)
		return 0;
	err = listed_units(listed, &skip, &nskip);
	if (err)
		return err;
	/*
	 * dwarf_next_unit() reads only unit headers; a CU's DIE is opened
	 * (and its abbreviations read) only when its ranges are wanted.
	 */
	for (unit = 0; dwarf_next_unit(dwarf, unit, &next, &header_size, NULL,
				      NULL, NULL, NULL, NULL, NULL) == 0;
	     unit = next) {
		Dwarf_Die cu;
		Dwarf_Off offset = unit + header_size;

		if (is_listed(skip, nskip, offset) ||
		    !dwarf_offdie(dwarf, offset, &cu))
			continue;
		off = 0;
		while ((off = dwarf_ranges(&cu, off, &base, &low, &high)) > 0) {
			err = add(t, &cap, low, high, offset);
			if (err)
				goto out_free;
		}
	}
	if (t->n)
		qsort(t->spans, t->n, sizeof(*t->spans), span_cmp);
out_free:
	free(skip);
	return err;
}

int cu_spans__copy(struct cu_spans *dst, const struct cu_spans *src)
{
	*dst = (struct cu_spans){
		.built = src->built, .gaps_to_previous = src->gaps_to_previous,
	};
	if (!src->n)
		return 0;
	dst->spans = malloc(src->n * sizeof(*dst->spans));
	if (!dst->spans)
		return -ENOMEM;
	memcpy(dst->spans, src->spans, src->n * sizeof(*dst->spans));
	dst->n = src->n;
	return 0;
}

bool cu_spans__find(const struct cu_spans *t, Dwarf_Addr pc, Dwarf_Off *cu)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->spans[mid].low <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	if (t->gaps_to_previous ? lo == t->n && pc > t->spans[lo - 1].high :
				  pc >= t->spans[lo - 1].high)
		return false;
	*cu = t->spans[lo - 1].cu;
	return true;
}

void cu_spans__fini(struct cu_spans *t)
{
	free(t->spans);
	*t = (struct cu_spans){ 0 };
}
