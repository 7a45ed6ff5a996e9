/* SPDX-License-Identifier: MIT */
/*
 * symbols.c - feed a symbolizer with modules located by build ID.
 *
 * For each executable mapping: locate the module's ELF and debug files
 * (elf/debuginfo.c caches this per build ID, so a module mapped several
 * times is looked up once), work out the load bias from the mapping's
 * start and file offset (from the ELF, or from the debug file's program
 * headers when it stands in for a missing ELF), and register the range.
 * A mapping whose own bias is not its module's is a copy of some of the
 * module's pages (elf/symbolize_modules.c looks its addresses up in the
 * first mapping's module).
 * A module without any usable file is simply left out: its addresses stay
 * unsymbolized, and symbols__describe() says why.
 */
#include "symbols.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "elf/elfinfo.h"

struct symbols {
	struct debuginfo *locator;
	struct symbolizer *sym;
};

struct symbols *symbols__new(const struct debuginfo_opts *opts)
{
	struct symbols *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->locator = debuginfo__new(opts);
	s->sym = symbolizer__new();
	if (!s->locator || !s->sym) {
		symbols__free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

void symbols__free(struct symbols *s)
{
	if (!s)
		return;
	symbolizer__free(s->sym);
	debuginfo__free(s->locator);
	free(s);
}

struct symbolizer *symbols__symbolizer(struct symbols *s)
{
	return s->sym;
}

int symbols__add(struct symbols *s, const struct symbols_module *m,
		 const struct debuginfo_found **found_out, bool *registered)
{
	const struct debuginfo_found *f;
	struct sym_module sm;
	uint64_t bias = m->bias, own_bias;
	int err;

	*registered = false;
	f = debuginfo__find(s->locator, m->path, m->fd, m->build_id,
			    m->build_id_len);
	if (found_out)
		*found_out = f;
	if (!f)
		return -errno;
	if (f->elf_fd < 0 || m->start >= m->end)
		return 0;
	if (!m->has_bias || f->elf_source != DEBUGINFO_RECORDED) {
		err = elfinfo__load_bias(f->elf_fd, m->start, m->offset, &bias);
		if (err)
			return 0;
	} else if (!elfinfo__load_bias(f->elf_fd, m->start, m->offset,
				       &own_bias) && own_bias != bias) {
		/* a second mapping of the file elsewhere (V8 remaps part
		 * of node's text): its own bias, which the symbolizer
		 * takes for a copy of the first mapping's pages */
		bias = own_bias;
	}
	sm = (struct sym_module){
		.name = f->elf_path,
		.elf_fd = f->elf_fd,
		.debug_fd = f->debug_fd,
		.debug_name = f->debug_path,
		.start = m->start,
		.end = m->end,
		.bias = bias,
		.lookups = m->lookups,
	};
	err = symbolizer__add(s->sym, &sm);
	if (err == -ENOMEM)
		return err;
	*registered = err == 0;
	return 0;
}

char *symbols__describe(const struct debuginfo_found *f, bool registered,
			char *buf, size_t size)
{
	const char *why = f && *f->why ? f->why : "nothing found";

	if (!f || f->elf_fd < 0) {
		snprintf(buf, size, "no symbols: %s", why);
	} else if (!registered) {
		snprintf(buf, size, "no symbols: %s (%s) could not be used%s%s",
			 f->elf_path, debuginfo__source_name(f->elf_source),
			 *f->why ? "; " : "", f->why);
	} else if (f->has_debug_info && f->debug_fd >= 0 &&
		   f->debug_fd != f->elf_fd) {
		snprintf(buf, size, "symbols from %s (%s)", f->debug_path,
			 debuginfo__source_name(f->debug_source));
	} else if (f->has_debug_info) {
		snprintf(buf, size, "symbols from %s (%s)", f->elf_path,
			 debuginfo__source_name(f->elf_source));
	} else {
		snprintf(buf, size,
			 "ELF symbols only, from %s (%s); no debug info: %s",
			 f->elf_path, debuginfo__source_name(f->elf_source),
			 why);
	}
	return buf;
}
