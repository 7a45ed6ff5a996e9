/* SPDX-License-Identifier: MIT */
/*
 * symindex.h - a module's ELF function symbols sorted by address, for
 * naming addresses that DWARF does not cover (or files without DWARF).
 */
#ifndef PA_ELF_SYMINDEX_H
#define PA_ELF_SYMINDEX_H

#include <elfutils/libdwfl.h>

struct sym_index;

/* Index mod's symbol table (.symtab, else .dynsym).  NULL with errno.
 * The index does not depend on mod once built. */
struct sym_index *sym_index__build(Dwfl_Module *mod);
/* Another reference to si (NULL is fine), for another thread's
 * symbolizer: lookups only read it. */
struct sym_index *sym_index__get(struct sym_index *si);
/* Drop a reference; the last frees it.  NULL is fine. */
void sym_index__put(struct sym_index *si);

/* The raw name of the function holding addr (a run-time address), read
 * through mod (a module of the file si was built from, in any Dwfl; the
 * name is its), or NULL. */
const char *sym_index__find(const struct sym_index *si, Dwfl_Module *mod,
			    GElf_Addr addr);

#endif /* PA_ELF_SYMINDEX_H */
