/* SPDX-License-Identifier: MIT */
/*
 * symbolize.h - addresses to functions, files and lines, with libdwfl.
 *
 * The tracer registers each mapped module (an open fd on its ELF file and,
 * when the DWARF is elsewhere, on the separate debug file - elf/debuginfo.c
 * finds both by build ID - with its run-time address range and load bias)
 * and then asks about addresses.  Inline frames come back as several frames, leaf first,
 * the way eu-addr2line -i prints them: the innermost inlined function with
 * the line of the address, then each caller with the line of the call site.
 * symbolizer__lookup() caches results per address, so each unique address
 * is resolved once; symbolizer__resolve() is for callers that ask about
 * each address once anyway.  A symbolizer is not thread-safe:
 * symbolizer__clone() gives another thread its own, with the same modules.
 */
#ifndef PA_ELF_SYMBOLIZE_H
#define PA_ELF_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

struct symbolizer;

struct sym_frame {
	const char *function;	/* demangled; NULL if unknown; owned by the
				   symbolizer */
	const char *system_name;	/* raw (linkage) name, NULL if unknown */
	const char *file;	/* NULL if unknown */
	int line;		/* 0 if unknown */
};

struct sym_module {
	const char *name;	/* what messages call it */
	int elf_fd;		/* the ELF (or a debug file standing in) */
	int debug_fd;		/* separate DWARF, or -1 */
	const char *debug_name;
	uint64_t start, end;	/* run-time range [start, end) */
	uint64_t bias;		/* load bias */
	size_t lookups;		/* addresses it will be asked about, about */
};

/* NULL with errno set on failure. */
struct symbolizer *symbolizer__new(void);
void symbolizer__free(struct symbolizer *s);

/*
 * Register a module (its fds are dup'ed; the caller keeps its own).
 * Registering the same file over the same range again is a no-op; a
 * different file overlapping a registered one is -EEXIST.  0 or -errno
 * (-ENOEXEC: libdwfl cannot use the file, and says why on stderr).
 */
int symbolizer__add(struct symbolizer *s, const struct sym_module *m);

/*
 * Register the ELF file open on fd (dup'ed; the caller keeps its fd) as
 * loaded over [start, end) with the given load bias.  name is what error
 * messages call it.  0 or -errno.
 */
int symbolizer__add_module(struct symbolizer *s, const char *name, int fd,
			   uint64_t start, uint64_t end, uint64_t bias);

/*
 * Resolve addr (a code address: callers pass return address - 1).  Fills up
 * to max frames, leaf first, valid until symbolizer__free.  Returns the
 * number of frames (0: nothing known about addr) or -errno.
 */
int symbolizer__lookup(struct symbolizer *s, uint64_t addr,
		       struct sym_frame *frames, int max);

/*
 * The same without the cache: nothing is remembered about addr (names and
 * per-CU indexes still are), so a caller that resolves each address once
 * pays nothing for the cache.  Same results and return values.
 */
int symbolizer__resolve(struct symbolizer *s, uint64_t addr,
			struct sym_frame *frames, int max);

/*
 * Modules added from now on whose DWARF is compressed get it decompressed
 * at once, by `threads` threads, into one copy that clones share
 * (elf/inflate.c); 0, the default, leaves it to libdw, which decompresses
 * lazily, per symbolizer.  For batches resolved by several clones.
 */
void symbolizer__inflate(struct symbolizer *s, unsigned int threads);

/*
 * Say which addresses (ascending; the array is borrowed until the plan is
 * dropped) the calls that follow will ask about, so that each compile
 * unit's scope index is built only around them (elf/scopes.c): a batch
 * that asks about a few addresses of a big CU skips most of its functions.
 * Asking about another address drops the plan and what was built for it,
 * so results never depend on it.  n = 0 drops it.  0 or -EINVAL.
 */
int symbolizer__plan(struct symbolizer *s, const uint64_t *addrs, size_t n);

/*
 * Build now the symbol index of each module holding some of addrs[0..n)
 * (sorted, for speed), which lookups otherwise build the first time they
 * need it: clones made afterwards share them instead of each building its
 * own.  0 or -errno.
 */
int symbolizer__index_symbols(struct symbolizer *s, const uint64_t *addrs,
			      size_t n);

/* No compile unit is known to hold the address. */
#define SYM_NO_UNIT	UINT64_MAX

/*
 * For each of addrs[0..n) (sorted, for speed), the compile unit holding it
 * as a key: equal keys mean the same unit of the same module, and a unit
 * is what lookups index and read as a whole (its lines and scopes), so
 * callers splitting work among symbolizers can keep each unit in one.
 * SYM_NO_UNIT where the module has no .debug_aranges entry for it.  Keys
 * are the same in every clone.  0 or -errno.
 */
int symbolizer__units(struct symbolizer *s, const uint64_t *addrs, size_t n,
		      uint64_t *units);

/*
 * A new symbolizer with the same modules registered (nothing resolved yet:
 * each symbolizer reads the DWARF for itself), for another thread.  The
 * two share nothing, and either may be freed first.  NULL with errno set.
 */
struct symbolizer *symbolizer__clone(const struct symbolizer *s);

#endif /* PA_ELF_SYMBOLIZE_H */
