/* SPDX-License-Identifier: MIT */
/*
 * cuspans.h - which compile unit holds an address: a module's CUs' address
 * spans, sorted, each naming its CU by DIE offset.
 *
 * Offsets, not Dwarf_Die handles, so that a table built with one Dwarf can
 * be copied to a symbolizer that has its own (another thread's).
 */
#ifndef PA_ELF_CUSPANS_H
#define PA_ELF_CUSPANS_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stddef.h>

struct cu_span {
	Dwarf_Addr low, high;	/* DWARF addresses, [low, high) */
	Dwarf_Off cu;		/* the CU DIE's offset */
};

struct cu_spans {
	struct cu_span *spans;	/* sorted by low */
	size_t n;
	bool built;
	bool gaps_to_previous;	/* libdwfl's reading of .debug_aranges */
};

/* From .debug_aranges (none there: an empty table).  0 or -ENOMEM. */
int cu_spans__from_aranges(struct cu_spans *t, Dwarf *dwarf);

/*
 * From the DW_AT_ranges or low/high pc of every CU that listed (may be
 * NULL) does not name: for DWARF without .debug_aranges (clang, rustc), or
 * the CUs it leaves out.  0 or -ENOMEM.
 */
int cu_spans__from_units(struct cu_spans *t, Dwarf *dwarf,
			 const struct cu_spans *listed);

/* dst becomes a copy of src (built or not).  0 or -ENOMEM. */
int cu_spans__copy(struct cu_spans *dst, const struct cu_spans *src);

/* The CU holding pc (a DWARF address) into *cu; false if none. */
bool cu_spans__find(const struct cu_spans *t, Dwarf_Addr pc, Dwarf_Off *cu);

void cu_spans__fini(struct cu_spans *t);

#endif /* PA_ELF_CUSPANS_H */
