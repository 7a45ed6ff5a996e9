/* SPDX-License-Identifier: MIT */
/*
 * scopes.h - per compile unit, an index of the code ranges of its
 * functions and inlined calls, to find the chain of scopes around an
 * address with one binary search instead of a walk of the CU's DIE tree.
 */
#ifndef PA_ELF_SCOPES_H
#define PA_ELF_SCOPES_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stdint.h>

/* A DW_TAG_subprogram or DW_TAG_inlined_subroutine that has code. */
struct scope_node {
	Dwarf_Die die;
	int32_t parent;		/* enclosing node, -1 at the top */
	bool inlined;		/* DW_TAG_inlined_subroutine */
	bool resolved;		/* the fields below are filled in */
	const char *name;	/* interned; see scopes__resolve() */
	const char *system_name;
	bool has_linkage_name;	/* system_name is DWARF's linkage name */
	const char *call_file;	/* inlined: where it was called from */
	int call_line;
};

struct cu_scopes;
struct names;

/*
 * The addresses an index must answer for, when not every one: ascending,
 * as loaded (a DWARF address plus bias).
 */
struct scope_want {
	const uint64_t *addrs;
	size_t n;
	uint64_t bias;
};

/*
 * Index the CU whose DIE is cudie: every function and inlined call with
 * code, or, given want, only those whose ranges hold one of its addresses
 * (the index then answers for those alone).  NULL with errno set (ENOMEM).
 */
struct cu_scopes *cu_scopes__build(Dwarf_Die *cudie,
				   const struct scope_want *want);
void cu_scopes__free(struct cu_scopes *cs);

/* The innermost node whose ranges hold pc (a DWARF address), or -1. */
int32_t cu_scopes__find(const struct cu_scopes *cs, Dwarf_Addr pc);

struct line_table;

/*
 * Node i with its names read from DWARF and interned in names (function
 * name demangled, the raw linkage name as system_name).  The file of an
 * inlined call is named from lines, the CU's line table (elf/linetable.c),
 * or if NULL, by libdw.  NULL when out of memory.
 */
const struct scope_node *cu_scopes__node(struct cu_scopes *cs, int32_t i,
					 struct names *names,
					 const struct line_table *lines);

/*
 * file as an interned path: relative paths (DWARF 5 line tables name files
 * relative to the compile directory) are joined to the CU's DW_AT_comp_dir,
 * as eu-addr2line prints them.  NULL for NULL, or when out of memory.
 */
const char *scopes__source_path(struct names *names, Dwarf_Die *cudie,
				const char *file);

#endif /* PA_ELF_SCOPES_H */
