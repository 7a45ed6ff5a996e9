/* SPDX-License-Identifier: MIT */
/*
 * symbolize_internal.h - what the two halves of the symbolizer share:
 * registering modules (elf/symbolize_modules.c) and looking addresses up
 * in them (elf/symbolize.c).  Not for other callers: elf/symbolize.h is
 * the interface.
 */
#ifndef PA_ELF_SYMBOLIZE_INTERNAL_H
#define PA_ELF_SYMBOLIZE_INTERNAL_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "elf/cuspans.h"
#include "elf/framecache.h"
#include "elf/inflate.h"
#include "elf/linetable.h"
#include "elf/symbolize.h"

/* Source paths remembered per module (a power of two). */
#define PATH_MEMO	256

/* What is known of a CU, found by the CU's DIE offset. */
struct cu_entry {
	Dwarf_Off offset;
	struct cu_scopes *scopes;	/* NULL: not built, or could not be */
	bool scopes_built;
	bool partial;			/* scopes built for the plan only */
	const struct line_table *lines;	/* NULL: not read, or left to libdw */
	struct line_table *own_lines;	/* lines, if not the module's set's */
	bool lines_read;
};

/*
 * The path a line-table file name of a CU resolved to.  libdw hands out
 * the same name pointer for every line of one file of one CU, so the
 * pointer and the CU are the key: joining the CU's DW_AT_comp_dir and
 * interning the result is then done once per file, not per address.
 */
struct path_memo {
	const char *file;	/* libdw's, NULL: empty slot */
	Dwarf_Off cu;
	const char *path;	/* interned */
};

/* One registered file; also the Dwfl_Module's userdata. */
struct module {
	uint64_t low, high;	/* libdwfl's range, widened to the mapping */
	uint64_t bias;
	dev_t dev;
	ino_t ino;
	/* As registered, for symbolizer__clone(). */
	char *name;
	int elf_fd;
	uint64_t start, end;
	int debug_fd;		/* separate DWARF, or -1 */
	char *debug_name;
	bool debug_given;	/* to libdwfl (find_debuginfo) */
	/*
	 * Decompressed DWARF (elf/inflate.c), shared with clones, or NULL:
	 * then libdwfl reads the DWARF.  Else libdwfl still reads the files
	 * above for symbols, and this module's own handles, opened the
	 * first time, read the DWARF from the image.
	 */
	struct elf_image *image;
	struct line_tables *line_set;	/* its line tables, or NULL */
	Elf *image_elf;
	Dwarf *image_dwarf;
	bool image_opened;
	struct cu_spans aranges;	/* CUs by .debug_aranges */
	struct cu_spans unit_spans;	/* CUs by their own ranges */
	struct cu_entry *cus;	/* sorted by offset */
	struct line_sections line_secs;	/* for elf/linetable.c */
	bool line_secs_read;
	size_t ncus, cus_cap;
	bool symbols_built;
	struct sym_index *symbols;
	/* The last CU looked up: addresses come sorted, runs share a CU. */
	bool have_last_cu;
	Dwarf_Off last_cu;
	Dwarf_Die last_cudie;
	struct path_memo paths[PATH_MEMO];
};

struct symbolizer {
	Dwfl *dwfl;
	bool reporting;		/* between report_begin_add, report_end */

	struct module **modules;
	size_t nmodules, modules_cap;

	/* Second mappings of a registered file at another bias (V8 remaps
	 * part of node's text): an address in [start, end) is looked up
	 * as address + delta, in the first mapping's module. */
	struct sym_alias {
		uint64_t start, end, delta;
	} *aliases;
	size_t naliases, aliases_cap;

	struct frame_cache cache;

	struct names *names;

	/* symbolizer__inflate(): threads to decompress DWARF with, 0: off */
	unsigned int inflate_threads;

	/* symbolizer__plan(): the addresses asked next, ascending. */
	const uint64_t *plan;
	size_t nplan;
};

/* addr, or where a second mapping's address is in its file's module. */
uint64_t symbolize__unalias(const struct symbolizer *s, uint64_t addr);

/* Free a module and what it holds (NULL is fine). */
void symbolize__module_free(struct module *m);

/*
 * The module's DWARF and the bias of its addresses (as
 * dwfl_module_getdwarf()): from its decompressed image if it has one,
 * else from libdwfl.  NULL if it has none.
 */
Dwarf *symbolize__module_dwarf(Dwfl_Module *mod, struct module *module,
			       Dwarf_Addr *bias);

#endif /* PA_ELF_SYMBOLIZE_INTERNAL_H */
