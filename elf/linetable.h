/* SPDX-License-Identifier: MIT */
/*
 * linetable.h - one compile unit's DWARF line table, decoded without
 * libdw, for the common case: answers exactly as dwarf_getsrc_die() and
 * dwarf_linesrc() would, or refuses the table so the caller asks libdw.
 */
#ifndef PA_ELF_LINETABLE_H
#define PA_ELF_LINETABLE_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The sections a line table reads (a missing one: NULL, 0). */
struct line_sections {
	const uint8_t *line, *line_str, *str;
	size_t line_size, line_str_size, str_size;
};

struct line_table;

/*
 * Decode the line program at offset into .debug_line for a CU whose
 * addresses are address_size bytes and whose DW_AT_comp_dir is comp_dir
 * (may be NULL).  0, -ENOMEM, or -ENOTSUP for a table this reader leaves
 * to libdw: anything malformed, or that libdw would read differently or
 * refuse (values too wide for its fields, DW_LNE_define_file, forms it
 * reads through the CU).
 */
int line_table__decode(const struct line_sections *sec, uint64_t offset,
		       unsigned int address_size, const char *comp_dir,
		       struct line_table **table);

/*
 * The line sections of dwarf's file (as libdw reads them: decompressed if
 * it decompressed them); those missing are NULL.
 */
void line_sections__of(Dwarf *dwarf, struct line_sections *sec);

void line_table__free(struct line_table *t);

/*
 * Every DWARF 5 table of a .debug_line section, decoded from the section
 * alone: such a table names its own directory 0 and address size, so it
 * needs nothing of its CU.  Made once, by a thread with time on its hands
 * (while the rest of the DWARF is still being decompressed); read-only
 * after, shared by every thread (reference-counted).
 */
struct line_tables;

/*
 * Decode the DWARF 5 tables of sec->line in order, until the end, a unit
 * that cannot be walked past, 32M rows (512 MB), or *stop turning
 * non-zero (stop may be NULL); those missed are decoded when needed.  0
 * or -ENOMEM.
 */
int line_tables__read(const struct line_sections *sec, const int *stop,
		      struct line_tables **set);
struct line_tables *line_tables__get(struct line_tables *set);
void line_tables__put(struct line_tables *set);

/*
 * The table of the CU whose DIE is cudie: from set if it has it and was
 * read from sec itself (*owned false: it is the set's), else decoded now
 * with line_table__decode() from the CU's DW_AT_stmt_list,
 * DW_AT_comp_dir and address size (*owned true: free it).  set may be
 * NULL.  -ENOTSUP also for a split unit (libdw reads its skeleton's) and
 * a CU without a line table.
 */
int line_table__for_cu(const struct line_sections *sec,
		       const struct line_tables *set, Dwarf_Die *cudie,
		       const struct line_table **table, bool *owned);

/*
 * The row for pc, as dwarf_getsrc_die(): the last row (by address, end of
 * sequence before others at one address, then table order) at or below
 * pc, unless it ends a sequence.  true with its line and file name (as
 * dwarf_linesrc(): NULL for a file index past the table), false if none.
 */
bool line_table__find(const struct line_table *t, uint64_t pc, int *line,
		      const char **file);

/*
 * File index of the table, as dwarf_getsrcfiles() + dwarf_filesrc() name
 * it (DW_AT_call_file, DW_AT_decl_file); NULL past the table.
 */
const char *line_table__file(const struct line_table *t, uint64_t index);

/* Rows in the table (for tests). */
size_t line_table__rows(const struct line_table *t);

#endif /* PA_ELF_LINETABLE_H */
