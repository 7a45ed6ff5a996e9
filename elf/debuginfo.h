/* SPDX-License-Identifier: MIT */
/*
 * debuginfo.h - find a module's ELF file and debug information by build ID.
 *
 * Given what a profile recorded about a module (its path and build ID) and,
 * on the live path, an fd on the very file the target mapped, the locator
 * looks, in this order, at: the recorded file (or given fd) if its build ID
 * matches; DIR/.build-id/xx/rest.debug under each debug directory and then
 * /usr/lib/debug; the ELF's .gnu_debuglink; debuginfod.  A file whose build
 * ID differs from the recorded one is never used.  Results are cached by
 * build ID and say where each part came from, or why nothing was found, in
 * words fit for the user.
 */
#ifndef PA_ELF_DEBUGINFO_H
#define PA_ELF_DEBUGINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum debuginfo_source {
	DEBUGINFO_NONE,
	DEBUGINFO_RECORDED,	/* the recorded path (or the target's file) */
	DEBUGINFO_DEBUG_DIR,	/* DIR/.build-id/xx/rest.debug */
	DEBUGINFO_DEBUGLINK,	/* .gnu_debuglink */
	DEBUGINFO_DEBUGINFOD,
};

struct debuginfo_opts {
	const char *const *debug_dirs;	/* searched before /usr/lib/debug */
	size_t ndebug_dirs;
	/* Space-separated server URLs; NULL: $DEBUGINFOD_URLS; "": none. */
	const char *debuginfod_urls;
	unsigned int debuginfod_timeout_s;	/* whole wait per file; 0: 10 */
	const char *default_debug_dir;	/* NULL: /usr/lib/debug; "": none */
	/* The root the recorded paths are under (a container's, for a core
	 * dumped in it); NULL: ours.  Its /usr/lib/debug is searched too. */
	const char *sysroot;
};

/*
 * Where one module's symbols come from.  elf_fd is the file to give the
 * symbolizer (possibly the debug file itself, when no ELF was found);
 * debug_fd a separate file with the DWARF, or -1.  Both are owned by the
 * locator.  why says what was tried and refused, "" if nothing was.
 */
struct debuginfo_found {
	int elf_fd;
	enum debuginfo_source elf_source;
	char *elf_path;
	bool has_debug_info;		/* DWARF in elf_fd or debug_fd */
	bool has_symtab;		/* .symtab in either */
	int debug_fd;
	enum debuginfo_source debug_source;
	char *debug_path;
	char *why;
};

struct debuginfo;

/* NULL with errno set.  opts is copied. */
struct debuginfo *debuginfo__new(const struct debuginfo_opts *opts);
void debuginfo__free(struct debuginfo *d);

/*
 * Locate the module recorded as path with this build ID.  given_fd >= 0 is
 * the file the target mapped (the live path: it is used as the ELF without
 * looking at path).  Without a build ID only given_fd can be used.  The
 * result stays valid until debuginfo__free; NULL with errno set only when
 * out of memory.
 */
const struct debuginfo_found *debuginfo__find(struct debuginfo *d,
					      const char *path, int given_fd,
					      const uint8_t *build_id,
					      size_t build_id_len);

/* "recorded path", "debug dir", ... */
const char *debuginfo__source_name(enum debuginfo_source source);

#endif /* PA_ELF_DEBUGINFO_H */
