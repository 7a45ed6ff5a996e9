/* SPDX-License-Identifier: MIT */
/*
 * symindex.c - a module's function symbols sorted by address.
 *
 * dwfl_module_addrinfo() scans the whole symbol table for every address;
 * with tens of thousands of symbols and of addresses that is quadratic.
 * This index is built once per module from dwfl_module_getsym_info() (so
 * addresses already carry the load bias and libdwfl has chosen .symtab or
 * .dynsym): defined STT_FUNC and STT_GNU_IFUNC symbols with a name,
 * sorted by address - global over weak over local, as libdwfl prefers,
 * and in table order among equals.  A lookup is the preferred symbol of
 * the last address at or below the address, if the address is inside its
 * st_size (or, for a symbol without a size, before the next symbol).
 *
 * The index holds symbol numbers, not names: a name is read when a lookup
 * returns it, through the asking symbolizer's own module (the number is
 * the same in every Dwfl that reports the file).  So building it reads no
 * string (a .dynsym's names are scattered over its string table; most
 * are never asked for), and the clones of other threads share one index
 * (sym_index__get()), whichever symbolizer built it.  A symbol whose name
 * turns out to be empty is passed over at lookup, as if it were not in
 * the index.
 *
 * The sort is a radix sort, least significant digit first and so stable:
 * by rank, then by the bytes of the address that differ.  A .dynsym comes
 * in hash order, and qsort(), a call per comparison, took more time than
 * the lookups for a big program named by its symbol table alone.
 */
#include "elf/symindex.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct sym_entry {
	GElf_Addr addr;
	GElf_Xword size;
	uint32_t ndx;		/* in libdwfl's symbol table */
	int rank;		/* binding preference, higher wins */
};

struct sym_index {
	struct sym_entry *entries;
	size_t n;
	unsigned int refs;	/* atomic */
};

static int rank_of(unsigned char bind)
{
	switch (bind) {
	case STB_GLOBAL:	return 3;
	case STB_WEAK:		return 2;
	case STB_LOCAL:		return 1;
	default:		return 0;
	}
}

/*
 * Sort e[0..n) by address, the preferred first among equal addresses, and
 * in their order among equal both; tmp has room for n.  Returns whichever
 * of e and tmp holds the result.
 */
static struct sym_entry *sort_entries(struct sym_entry *e,
				      struct sym_entry *tmp, size_t n)
{
	uint64_t all_or = 0, all_and = UINT64_MAX;
	size_t count[256];

	/* rank, highest first: 3 - rank is its digit */
	memset(count, 0, sizeof(count));
	for (size_t i = 0; i < n; i++) {
		count[3 - e[i].rank]++;
		all_or |= e[i].addr;
		all_and &= e[i].addr;
	}
	for (unsigned int shift = 0, digit_bits = 2; shift < 64 + 8;) {
		size_t pos = 0;
		struct sym_entry *swap;

		for (unsigned int d = 0; d < 1u << digit_bits; d++) {
			size_t c = count[d];

			count[d] = pos;
			pos += c;
		}
		for (size_t i = 0; i < n; i++) {
			unsigned int d = shift == 0 ? 3u - (unsigned int)e[i].rank :
				(unsigned int)(e[i].addr >> (shift - 8) & 0xff);

			tmp[count[d]++] = e[i];
		}
		swap = e;
		e = tmp;
		tmp = swap;
		/* the next address byte that is not the same everywhere */
		digit_bits = 8;
		for (shift += 8; shift < 64 + 8 &&
		     !((all_or ^ all_and) >> (shift - 8) & 0xff); shift += 8)
			;
		if (shift >= 64 + 8)
			break;
		memset(count, 0, sizeof(count));
		for (size_t i = 0; i < n; i++)
			count[e[i].addr >> (shift - 8) & 0xff]++;
	}
	return e;
}

struct sym_index *sym_index__build(Dwfl_Module *mod)
{
	struct sym_entry *tmp, *sorted;
	struct sym_index *si;
	int nsyms, kept = 0;

	si = calloc(1, sizeof(*si));
	if (!si)
		return NULL;
	si->refs = 1;
	nsyms = dwfl_module_getsymtab(mod);
	if (nsyms <= 0)
		return si;
	si->entries = calloc((size_t)nsyms, sizeof(*si->entries));
	if (!si->entries)
		goto out_nomem;
	for (int i = 1; i < nsyms; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name;
		int type;

		/* the name is not read here: see the top */
		name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx,
					       NULL, NULL);
		if (!name || sym.st_shndx == SHN_UNDEF || !addr)
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		si->entries[kept++] = (struct sym_entry){
			.addr = addr, .size = sym.st_size, .ndx = (uint32_t)i,
			.rank = rank_of(GELF_ST_BIND(sym.st_info)),
		};
	}
	tmp = malloc(((size_t)kept + 1) * sizeof(*tmp));
	if (!tmp)
		goto out_nomem;
	sorted = sort_entries(si->entries, tmp, (size_t)kept);
	if (sorted != si->entries)
		memcpy(si->entries, sorted, (size_t)kept * sizeof(*sorted));
	si->n = (size_t)kept;
	free(tmp);
	return si;

out_nomem:
	sym_index__put(si);
	errno = ENOMEM;
	return NULL;
}

struct sym_index *sym_index__get(struct sym_index *si)
{
	if (si)
		__atomic_add_fetch(&si->refs, 1, __ATOMIC_RELAXED);
	return si;
}

void sym_index__put(struct sym_index *si)
{
	if (!si || __atomic_sub_fetch(&si->refs, 1, __ATOMIC_ACQ_REL))
		return;
	free(si->entries);
	free(si);
}

/* The name of e, read through mod, or NULL if it has none. */
static const char *name_of(Dwfl_Module *mod, const struct sym_entry *e)
{
	GElf_Sym sym;
	GElf_Addr addr;
	GElf_Word shndx;
	const char *name = dwfl_module_getsym_info(mod, (int)e->ndx, &sym,
						   &addr, &shndx, NULL, NULL);

	return name && *name ? name : NULL;
}

const char *sym_index__find(const struct sym_index *si, Dwfl_Module *mod,
			    GElf_Addr addr)
{
	size_t lo = 0, hi = si->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (si->entries[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/*
	 * entries[lo - 1] is the last at or below addr: the preferred
	 * symbol of its address is the first of its run that has a name;
	 * if none has one, the address before it is taken.
	 */
	while (lo > 0) {
		size_t first = lo - 1;
		const struct sym_entry *e;
		const char *name = NULL;

		while (first > 0 &&
		       si->entries[first - 1].addr == si->entries[lo - 1].addr)
			first--;
		for (size_t k = first; k < lo && !name; k++) {
			e = &si->entries[k];
			name = name_of(mod, e);
		}
		if (!name) {
			lo = first;
			continue;
		}
		if (e->size)
			return addr - e->addr < e->size ? name : NULL;
		return name;
	}
	return NULL;
}
