/* SPDX-License-Identifier: MIT */
/*
 * symbols.h - one symbolizer fed with modules located by build ID.
 *
 * The live path (a mapping_set with fds on the target's files) and the
 * offline `symbolize` command (a profile's mappings) both describe modules
 * the same way - path, build ID, maybe an fd, a run-time range - and both
 * want the same lookup (elf/debuginfo.c) and the same report of where each
 * module's symbols came from.
 */
#ifndef PA_TRACER_SYMBOLS_H
#define PA_TRACER_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "elf/debuginfo.h"
#include "elf/symbolize.h"

struct symbols;

struct symbols_module {
	const char *path;		/* as recorded */
	int fd;				/* the target's own file, or -1 */
	const uint8_t *build_id;
	size_t build_id_len;
	uint64_t start, end, offset;	/* one executable mapping */
	bool has_bias;			/* bias already known (live path) */
	uint64_t bias;
	size_t lookups;			/* addresses to be asked, about */
};

/* NULL with errno set. */
struct symbols *symbols__new(const struct debuginfo_opts *opts);
void symbols__free(struct symbols *s);

/*
 * Locate the module's files (once per build ID) and register the mapping
 * with the symbolizer.  *found (may be NULL) is set to what was located;
 * *registered says whether addresses in the mapping can be looked up.
 * 0, or -errno when out of memory (a module without symbols is not an
 * error: it is described by symbols__describe()).
 */
int symbols__add(struct symbols *s, const struct symbols_module *m,
		 const struct debuginfo_found **found, bool *registered);

struct symbolizer *symbols__symbolizer(struct symbols *s);

/*
 * One line (no newline) saying where a module's symbols came from or why
 * there are none, into buf.  Returns buf.
 */
char *symbols__describe(const struct debuginfo_found *f, bool registered,
			char *buf, size_t size);

#endif /* PA_TRACER_SYMBOLS_H */
