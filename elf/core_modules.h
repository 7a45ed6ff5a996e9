/* SPDX-License-Identifier: MIT */
/*
 * core_modules.h - the ELF modules a core's process had loaded, and
 * where, from the core alone: its NT_FILE note, else the dynamic loader's
 * list in its memory.
 */
#ifndef PA_ELF_CORE_MODULES_H
#define PA_ELF_CORE_MODULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core.h"

enum core_module_source {
	CORE_MOD_NT_FILE,		/* named by the NT_FILE note */
	CORE_MOD_LOADER,		/* named by r_debug's link_map list,
					   or the auxiliary vector */
};

/* One executable segment of a module, as it was mapped. */
struct core_module_seg {
	uint64_t start, end;		/* page-aligned */
	uint64_t offset;		/* of start in the file */
	uint64_t bias;			/* the module's load bias */
	char *path;			/* as the core names it */
	uint8_t build_id[CORE_BUILD_ID_MAX];
	size_t build_id_len;
	enum core_module_source source;
	bool is_exe;
};

struct core_modules {
	struct core_module_seg *segs;
	size_t nsegs;
	unsigned int from_nt_file;	/* modules each source named */
	unsigned int from_loader;
	char *exe;			/* the executable's path, or NULL */
	/* why a source named nothing, or not everything: "" if it did */
	char nt_file_why[160];
	char loader_why[200];
};

/*
 * Find the modules of the process in core c: every ELF image an NT_FILE
 * entry maps from its start, then those of the loader's list (r_debug,
 * found through NT_AUXV and the executable's DT_DEBUG) that NT_FILE did
 * not name, and the executable itself.  Each module's load bias, build ID
 * and executable segments are read from its ELF headers in the core.
 * Every pointer and string is read from the core with bounds: a list
 * that loops, runs on, or leaves the core ends the walk with a reason in
 * loader_why.  0 or -ENOMEM; m is to be freed with core_modules__free
 * either way.
 */
int core_modules__find(const struct core *c, struct core_modules *m);

void core_modules__free(struct core_modules *m);

#endif /* PA_ELF_CORE_MODULES_H */
