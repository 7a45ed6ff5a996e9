/* SPDX-License-Identifier: MIT */
/*
 * symbolize.c - addresses to functions, files and lines, with libdwfl.
 *
 * An address resolves to a chain of frames, leaf first, as eu-addr2line -i
 * prints it: the innermost DW_TAG_inlined_subroutine or DW_TAG_subprogram
 * around the address (found in the CU's scope index, elf/scopes.c, rather
 * than by dwarf_getscopes()' walk of the whole CU each time), then each
 * enclosing one up to the subprogram.  Each inlined call is one frame named
 * after its abstract origin; the leaf frame has the line of the address
 * itself, each outer frame the DW_AT_call_file/DW_AT_call_line of the call
 * it contains.  Names are demangled, with the raw linkage name kept as
 * system_name.  Without DWARF there is one frame, named by the ELF symbol
 * table (elf/symindex.c).
 *
 * The CU of an address is found in the module's CU spans (elf/cuspans.c):
 * .debug_aranges read the way libdwfl's dwfl_module_addrdie() reads them,
 * and, for addresses they miss, the CUs' own DW_AT_ranges or low/high pc
 * (clang and rustc write no .debug_aranges by default), each table built
 * once per module; the CU's DIE comes from its offset.  The line is read
 * from the CU found either way.  Spans are plain data, so
 * symbolizer__clone() copies them instead of making the clone read the
 * aranges or walk the CUs again, and symbolizer__units() keys addresses by
 * CU with them (callers split work among threads by CU).
 *
 * symbolizer__lookup() caches results per address (elf/framecache.c), up
 * to SYM_FRAMES_MAX frames, and callers get as many as they ask for.
 * Misses outside every module are not cached, since a later module may
 * cover them.  symbolizer__resolve() skips the cache, for
 * callers that ask about each address once.  Strings are interned
 * (elf/names.c) until symbolizer__free(), so returned pointers never
 * dangle and equal names are equal pointers.
 *
 * A symbolizer is not thread-safe (neither is a Dwfl); use one per thread
 * (symbolizer__clone(), elf/symbolize_modules.c).  Its modules, their
 * registration and the struct behind it are in elf/symbolize_modules.c
 * and elf/symbolize_internal.h.
 *
 * A batch caller can say which addresses it will ask about
 * (symbolizer__plan()); scope indexes built meanwhile then cover only the
 * functions around them, and are dropped with the plan, or as soon as an
 * address off the plan is asked about, so no answer depends on a plan.
 */
#include "elf/symbolize_internal.h"

#include <dwarf.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "elf/array.h"
#include "elf/names.h"
#include "elf/scopes.h"
#include "elf/symindex.h"

/* Longest inline chain kept per address. */
#define SYM_FRAMES_MAX	64

/*
 * The CU holding addr (its DIE offset into *cu) and the bias of its DWARF
 * addresses: by .debug_aranges, else by the CUs' own ranges (each table
 * built the first time it is needed).  1 found, 0 none (no DWARF, or addr
 * is outside every CU), or -ENOMEM.
 */
static int find_cu(Dwfl_Module *mod, struct module *module, uint64_t addr,
		   Dwarf_Addr *dwbias, Dwarf_Off *cu)
{
	Dwarf *dwarf = symbolize__module_dwarf(mod, module, dwbias);
	int err;

	if (!dwarf)
		return 0;
	if (!module->aranges.built) {
		err = cu_spans__from_aranges(&module->aranges, dwarf);
		if (err)
			return err;
	}
	if (cu_spans__find(&module->aranges, addr - *dwbias, cu))
		return 1;
	if (!module->unit_spans.built) {
		err = cu_spans__from_units(&module->unit_spans, dwarf,
					   &module->aranges);
		if (err)
			return err;
	}
	return cu_spans__find(&module->unit_spans, addr - *dwbias, cu);
}

/* The entry of the CU at offset, added the first time.  NULL when out of
 * memory. */
static struct cu_entry *cu_entry_of(struct module *module, Dwarf_Off offset)
{
	size_t lo = 0, hi = module->ncus;
	struct cu_entry *e;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (module->cus[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < module->ncus && module->cus[lo].offset == offset)
		return &module->cus[lo];
	if (array__grow((void **)&module->cus, &module->cus_cap,
			module->ncus + 1, sizeof(*module->cus)))
		return NULL;
	e = &module->cus[lo];
	memmove(e + 1, e, (module->ncus - lo) * sizeof(*e));
	module->ncus++;
	*e = (struct cu_entry){ .offset = offset };
	return e;
}

/* The scope index of the CU of e, built the first time.  NULL if it
 * cannot be (*err set when out of memory). */
static struct cu_scopes *scopes_of(struct symbolizer *s, struct cu_entry *e,
				   Dwarf_Die *cudie, Dwarf_Addr dwbias,
				   int *err)
{
	const struct scope_want want = {
		.addrs = s->plan, .n = s->nplan, .bias = dwbias,
	};

	if (e->scopes_built)
		return e->scopes;
	e->scopes_built = true;
	e->partial = s->plan != NULL;
	e->scopes = cu_scopes__build(cudie, s->plan ? &want : NULL);
	if (!e->scopes)
		*err = -ENOMEM;
	return e->scopes;
}

/*
 * The line of pc (a DWARF address) in the CU of e, and its file name as
 * dwarf_linesrc() has it: from the CU's line table read by
 * elf/linetable.c, or by libdw where that leaves the table to it.  false
 * if there is none.
 */
static bool find_line(struct module *module, struct cu_entry *e,
		      Dwarf_Die *cudie, Dwarf_Addr pc, int *lineno,
		      const char **file)
{
	Dwarf_Line *line;
	bool owned;

	if (!e->lines_read) {
		e->lines_read = true;
		if (!module->line_secs_read) {
			module->line_secs_read = true;
			line_sections__of(dwarf_cu_getdwarf(cudie->cu),
					  &module->line_secs);
		}
		/* Refused or out of memory: libdw reads it. */
		if (!line_table__for_cu(&module->line_secs, module->line_set,
					cudie, &e->lines, &owned) && owned)
			e->own_lines = (struct line_table *)e->lines;
	}
	if (e->lines)
		return line_table__find(e->lines, pc, lineno, file);
	line = dwarf_getsrc_die(cudie, pc);
	if (!line || dwarf_lineno(line, lineno) != 0)
		return false;
	*file = dwarf_linesrc(line, NULL, NULL);
	return true;
}

/* The ELF symbol naming addr, or NULL; the index is built the first time. */
static const char *symbol_of(Dwfl_Module *mod, struct module *module,
			     uint64_t addr)
{
	if (!module->symbols_built) {
		module->symbols_built = true;
		module->symbols = sym_index__build(mod);
	}
	return module->symbols ? sym_index__find(module->symbols, mod, addr) :
				 NULL;
}

/*
 * Frames for the scope chain from node (innermost) outwards.  frames[0]
 * already has the address's file and line.  Returns the frame count, or
 * -ENOMEM.
 */
static int scope_chain(struct symbolizer *s, struct cu_scopes *cs,
		       const struct line_table *lines, int32_t node,
		       struct sym_frame *frames, bool *linkage)
{
	int n = 0;

	while (node >= 0) {
		const struct scope_node *sn;

		sn = cu_scopes__node(cs, node, s->names, lines);
		if (!sn)
			return -ENOMEM;
		frames[n].function = sn->name;
		frames[n].system_name = sn->system_name;
		if (!sn->inlined || n + 1 == SYM_FRAMES_MAX) {
			*linkage = sn->has_linkage_name;
			return n + 1;
		}
		n++;
		frames[n] = (struct sym_frame){
			.file = sn->call_file, .line = sn->call_line,
		};
		node = sn->parent;
	}
	/* Inlined frames but no enclosing subprogram: unnamed outer frame. */
	*linkage = false;
	return n + 1;
}

/* The DIE of the CU at offset cu, remembered from the last call; NULL if
 * libdw cannot read it. */
static Dwarf_Die *cu_die(Dwfl_Module *mod, struct module *module,
			 Dwarf_Off cu)
{
	Dwarf_Addr dwbias;

	if (!module->have_last_cu || module->last_cu != cu) {
		module->have_last_cu = dwarf_offdie(
			symbolize__module_dwarf(mod, module, &dwbias), cu,
			&module->last_cudie);
		module->last_cu = cu;
	}
	return module->have_last_cu ? &module->last_cudie : NULL;
}

/* scopes__source_path() of a line-table file name of cu, memoized. */
static const char *source_path(struct symbolizer *s, struct module *module,
			       Dwarf_Die *cudie, Dwarf_Off cu, const char *file)
{
	struct path_memo *memo;
	const char *path;

	if (!file)
		return NULL;
	memo = &module->paths[((uintptr_t)file >> 3 ^ cu) & (PATH_MEMO - 1)];
	if (memo->file == file && memo->cu == cu)
		return memo->path;
	path = scopes__source_path(s->names, cudie, file);
	if (path)
		*memo = (struct path_memo){ .file = file, .cu = cu,
					    .path = path };
	return path;
}

/* Forget the scope indexes built for a plan: they answer for it alone. */
static void drop_partial(struct symbolizer *s)
{
	for (size_t i = 0; i < s->nmodules; i++) {
		struct module *m = s->modules[i];

		for (size_t k = 0; k < m->ncus; k++) {
			struct cu_entry *e = &m->cus[k];

			if (e->partial) {
				cu_scopes__free(e->scopes);
				e->scopes = NULL;
				e->scopes_built = false;
				e->partial = false;
			}
		}
	}
}

int symbolizer__plan(struct symbolizer *s, const uint64_t *addrs, size_t n)
{
	if (!s || (n && !addrs))
		return -EINVAL;
	for (size_t i = 1; i < n; i++)
		if (addrs[i - 1] > addrs[i])
			return -EINVAL;
	drop_partial(s);
	s->plan = n ? addrs : NULL;
	s->nplan = n;
	return 0;
}

static bool planned(const struct symbolizer *s, uint64_t addr)
{
	size_t i = array__lower_bound_u64(s->plan, s->nplan, addr);

	return i < s->nplan && s->plan[i] == addr;
}

/*
 * Resolve addr in mod into frames (SYM_FRAMES_MAX).  Returns the frame
 * count or -ENOMEM.
 */
static int resolve(struct symbolizer *s, Dwfl_Module *mod, uint64_t addr,
		   struct sym_frame *frames)
{
	const char *file = NULL, *name = NULL, *symbol;
	struct module *module;
	struct cu_entry *e;
	struct cu_scopes *cs;
	Dwarf_Die cu_mem, *cudie = NULL;
	Dwarf_Addr dwbias;
	Dwarf_Off cu_offset;
	void **userdata;
	int lineno = 0, n = 0, err = 0;
	bool linkage = false;
	int32_t node;

	dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	module = *userdata;
	if (!module)
		return 0;
	/* Off the plan: indexes built for it would not know this address. */
	if (s->plan && !planned(s, addr))
		symbolizer__plan(s, NULL, 0);
	err = find_cu(mod, module, addr, &dwbias, &cu_offset);
	if (err < 0)
		return err;
	if (err > 0) {
		cudie = cu_die(mod, module, cu_offset);
		if (cudie) {
			cu_mem = *cudie;
			cudie = &cu_mem;
		}
	}
	err = 0;
	if (cudie) {
		e = cu_entry_of(module, cu_offset);
		if (!e)
			return -ENOMEM;
		if (find_line(module, e, cudie, addr - dwbias, &lineno, &name))
			file = source_path(s, module, cudie, cu_offset, name);
		if (!file)
			lineno = 0;
		frames[0] = (struct sym_frame){ .file = file, .line = lineno };
		cs = scopes_of(s, e, cudie, dwbias, &err);
		if (err)
			return err;
		node = cs ? cu_scopes__find(cs, addr - dwbias) : -1;
		if (node >= 0)
			n = scope_chain(s, cs, e->lines, node, frames,
					&linkage);
		if (n < 0)
			return n;
	}
	/*
	 * The symbol table names what DWARF does not: frames without DWARF
	 * or without a name, and the outer function when DWARF gave only its
	 * short DW_AT_name (GCC leaves DW_AT_linkage_name off some C++
	 * constructors, destructors and template instances).  A C function's
	 * symbol is its DWARF name again.
	 */
	if (n == 0 || !frames[n - 1].function || !linkage) {
		symbol = names__intern(s->names, symbol_of(mod, module, addr));
		if (n == 0 && (symbol || file)) {
			frames[0] = (struct sym_frame){
				.file = file, .line = lineno,
			};
			n = 1;
		}
		if (n > 0 && symbol && (!frames[n - 1].function ||
					(symbol[0] == '_' && symbol[1] == 'Z'))) {
			frames[n - 1].system_name = symbol;
			frames[n - 1].function =
				names__demangled(s->names, symbol);
		}
	}
	return n;
}

/* The module of addr, reporting ended first; NULL if none (or -EIO). */
static Dwfl_Module *module_of(struct symbolizer *s, uint64_t addr, int *err)
{
	if (s->reporting) {
		/* Fails only if a `removed' callback does; we pass none. */
		if (dwfl_report_end(s->dwfl, NULL, NULL) != 0) {
			*err = -EIO;
			return NULL;
		}
		s->reporting = false;
	}
	return dwfl_addrmodule(s->dwfl, addr);
}

int symbolizer__lookup(struct symbolizer *s, uint64_t addr,
		       struct sym_frame *frames, int max)
{
	struct sym_frame resolved[SYM_FRAMES_MAX];
	const struct sym_frame *cached;
	Dwfl_Module *mod;
	int n, err = 0;

	if (!s || !frames || max <= 0)
		return -EINVAL;
	addr = symbolize__unalias(s, addr);

	if (frame_cache__find(&s->cache, addr, &cached, &n)) {
		if (n > max)
			n = max;
		memcpy(frames, cached, (size_t)n * sizeof(*frames));
		return n;
	}

	mod = module_of(s, addr, &err);
	if (!mod)
		return err;

	n = resolve(s, mod, addr, resolved);
	if (n < 0)
		return n;
	err = frame_cache__insert(&s->cache, addr, resolved, n);
	if (err)
		return err;

	if (n > max)
		n = max;
	memcpy(frames, resolved, (size_t)n * sizeof(*frames));
	return n;
}

/* The index of mod's module in s->modules (registration order). */
static size_t module_index(const struct symbolizer *s, Dwfl_Module *mod)
{
	void **userdata;

	dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	for (size_t i = 0; i < s->nmodules; i++)
		if (s->modules[i] == *userdata)
			return i;
	return s->nmodules;
}

int symbolizer__index_symbols(struct symbolizer *s, const uint64_t *addrs,
			      size_t n)
{
	Dwfl_Module *mod = NULL;
	Dwarf_Addr low = 0, high = 0;
	int err = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t addr = symbolize__unalias(s, addrs[i]);
		void **userdata;

		if (mod && addr >= low && addr < high)
			continue;
		mod = module_of(s, addr, &err);
		if (err)
			return err;
		if (!mod)
			continue;
		dwfl_module_info(mod, &userdata, &low, &high, NULL, NULL, NULL,
				 NULL);
		if (*userdata)
			symbol_of(mod, *userdata, addr);
	}
	return 0;
}

int symbolizer__units(struct symbolizer *s, const uint64_t *addrs, size_t n,
		      uint64_t *units)
{
	Dwfl_Module *mod = NULL;
	Dwarf_Addr low = 0, high = 0, dwbias;
	uint64_t tag = 0;
	int err = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t addr = symbolize__unalias(s, addrs[i]);
		void **userdata;
		Dwarf_Off cu;

		units[i] = SYM_NO_UNIT;
		if (!mod || addr < low || addr >= high) {
			mod = module_of(s, addr, &err);
			if (err)
				return err;
			if (!mod)
				continue;
			dwfl_module_info(mod, NULL, &low, &high, NULL, NULL,
					 NULL, NULL);
			tag = (uint64_t)module_index(s, mod) << 48;
		}
		dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL,
				 NULL);
		if (!*userdata)
			continue;
		err = find_cu(mod, *userdata, addr, &dwbias, &cu);
		if (err < 0)
			return err;
		if (err > 0 && cu < (1ull << 48))
			units[i] = tag | cu;
		err = 0;
	}
	return 0;
}

int symbolizer__resolve(struct symbolizer *s, uint64_t addr,
			struct sym_frame *frames, int max)
{
	struct sym_frame resolved[SYM_FRAMES_MAX];
	Dwfl_Module *mod;
	int n, err = 0;

	if (!s || !frames || max <= 0)
		return -EINVAL;
	addr = symbolize__unalias(s, addr);
	mod = module_of(s, addr, &err);
	if (!mod)
		return err;
	if (max >= SYM_FRAMES_MAX)
		return resolve(s, mod, addr, frames);
	n = resolve(s, mod, addr, resolved);
	if (n > max)
		n = max;
	if (n > 0)
		memcpy(frames, resolved, (size_t)n * sizeof(*frames));
	return n;
}
