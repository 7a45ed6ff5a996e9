/* SPDX-License-Identifier: MIT */
/*
 * symindex.h - a module's ELF function symbols sorted by address, for
 * naming addresses that DWARF does not cover (or files without DWARF).
 */
#ifndef PA_ELF_SYMINDEX_H
#define PA_ELF_SYMINDEX_H

#include <elfutils/libdwfl.h>

struct sym_index;

/* Index mod's symbol table (.symtab, else .dynsym).  NULL with errno. */
struct sym_index *sym_index__build(Dwfl_Module *mod);
void sym_index__free(struct sym_index *si);

/* The raw name of the function holding addr (a run-time address), owned
 * by libdwfl, or NULL. */
const char *sym_index__find(const struct sym_index *si, GElf_Addr addr);

#endif /* PA_ELF_SYMINDEX_H */
