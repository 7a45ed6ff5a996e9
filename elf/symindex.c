/* SPDX-License-Identifier: MIT */
/*
 * symindex.c - a module's function symbols sorted by address.
 *
 * dwfl_module_addrinfo() scans the whole symbol table for every address;
 * with tens of thousands of symbols and of addresses that is quadratic.
 * This index is built once per module from dwfl_module_getsym_info() (so
 * addresses already carry the load bias and libdwfl has chosen .symtab or
 * .dynsym): defined STT_FUNC and STT_GNU_IFUNC symbols, one per address -
 * global over weak over local, as libdwfl prefers - sorted.  A lookup is
 * the last symbol starting at or below the address, if the address is
 * inside its st_size (or, for a symbol without a size, before the next
 * symbol).  Names point into libdwfl's copy of the string table, valid
 * while the Dwfl lives.
 */
#include "elf/symindex.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

struct sym_entry {
	GElf_Addr addr;
	GElf_Xword size;
	const char *name;
	int rank;		/* binding preference, higher wins */
};

struct sym_index {
	struct sym_entry *entries;
	size_t n;
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

static int entry_cmp(const void *a, const void *b)
{
	const struct sym_entry *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return y->rank - x->rank;	/* preferred first */
}

struct sym_index *sym_index__build(Dwfl_Module *mod)
{
	struct sym_index *si;
	int nsyms, kept = 0;

	si = calloc(1, sizeof(*si));
	if (!si)
		return NULL;
	nsyms = dwfl_module_getsymtab(mod);
	if (nsyms <= 0)
		return si;
	si->entries = calloc((size_t)nsyms, sizeof(*si->entries));
	if (!si->entries) {
		free(si);
		errno = ENOMEM;
		return NULL;
	}
	for (int i = 1; i < nsyms; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name;
		int type;

		name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx,
					       NULL, NULL);
		if (!name || !*name || sym.st_shndx == SHN_UNDEF || !addr)
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		si->entries[kept++] = (struct sym_entry){
			.addr = addr, .size = sym.st_size, .name = name,
			.rank = rank_of(GELF_ST_BIND(sym.st_info)),
		};
	}
	qsort(si->entries, (size_t)kept, sizeof(*si->entries), entry_cmp);
	/* One per address: the first (preferred) of each run. */
	si->n = 0;
	for (int i = 0; i < kept; i++)
		if (!si->n || si->entries[si->n - 1].addr != si->entries[i].addr)
			si->entries[si->n++] = si->entries[i];
	return si;
}

void sym_index__free(struct sym_index *si)
{
	if (!si)
		return;
	free(si->entries);
	free(si);
}

const char *sym_index__find(const struct sym_index *si, GElf_Addr addr)
{
	size_t lo = 0, hi = si->n;
	const struct sym_entry *e;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (si->entries[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	e = &si->entries[lo - 1];
	if (e->size)
		return addr - e->addr < e->size ? e->name : NULL;
	if (lo < si->n && addr >= si->entries[lo].addr)
		return NULL;
	return e->name;
}
