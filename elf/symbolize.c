/* SPDX-License-Identifier: MIT */
/*
 * symbolize.c - addresses to functions, files and lines, with libdwfl.
 *
 * One Dwfl holds every registered module.  A module is reported with
 * dwfl_report_elf() on a dup of the caller's fd and add_p_vaddr = true, for
 * which libdwfl's BASE is the load bias (start = bias + first PT_LOAD
 * p_vaddr): exactly what elfinfo__load_bias() computes.  Where its debug
 * information is, the caller has decided (elf/debuginfo.c, by build ID):
 * libdwfl reads DWARF from the file itself, else our find_debuginfo
 * callback hands it the caller's separate debug file, and never goes
 * looking on its own.
 *
 * libdwfl wants reporting bracketed by dwfl_report_begin_add() and
 * dwfl_report_end(), and lookups only after the end.  `reporting` tracks
 * which side we are on, so modules may be added after lookups (a library
 * dlopen'ed late) without disturbing the ones already there.  Each
 * registered module is remembered with its address range, bias and file
 * identity, so registering the same file again (say, once per mapping) is
 * a no-op, and a different file over the same addresses is refused with
 * -EEXIST rather than silently confused with the old one.
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
 * to SYM_FRAMES_MAX frames, and callers get as many as they ask for.  Misses outside every module are not cached, since a later
 * module may cover them.  symbolizer__resolve() skips the cache, for
 * callers that ask about each address once.  Strings are interned
 * (elf/names.c) until symbolizer__free(), so returned pointers never
 * dangle and equal names are equal pointers.
 *
 * A symbolizer is not thread-safe (neither is a Dwfl); use one per thread:
 * symbolizer__clone() registers the same modules in a new one (each keeps
 * dups of the fds and the registration to make that possible).  Where the
 * caller asks for it (symbolizer__inflate(): a batch about to be cloned),
 * a module whose DWARF is compressed is registered with a decompressed
 * copy (elf/inflate.c), made once when it is added, so clones share it
 * instead of each libdw decompressing it again.  Not by default: libdw
 * decompresses a module's DWARF only when it is first needed, which is
 * better for the live paths, which register every module of a process
 * and may look up a few.
 *
 * A batch caller can say which addresses it will ask about
 * (symbolizer__plan()); scope indexes built meanwhile then cover only the
 * functions around them, and are dropped with the plan, or as soon as an
 * address off the plan is asked about, so no answer depends on a plan.
 */
#include "elf/symbolize.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "elf/array.h"
#include "elf/cuspans.h"
#include "elf/framecache.h"
#include "elf/inflate.h"
#include "elf/names.h"
#include "elf/scopes.h"
#include "elf/symindex.h"

/* Longest inline chain kept per address. */
#define SYM_FRAMES_MAX	64

/* Source paths remembered per module (a power of two). */
#define PATH_MEMO	256

/* A CU's scope index, found by the CU's DIE offset. */
struct cu_entry {
	Dwarf_Off offset;
	struct cu_scopes *scopes;	/* NULL: could not be built */
	bool partial;			/* built for the plan only */
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
	struct cu_spans aranges;	/* CUs by .debug_aranges */
	struct cu_spans unit_spans;	/* CUs by their own ranges */
	struct cu_entry *cus;	/* sorted by offset */
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

	struct frame_cache cache;

	struct names *names;

	/* symbolizer__inflate(): threads to decompress DWARF with, 0: off */
	unsigned int inflate_threads;

	/* symbolizer__plan(): the addresses asked next, ascending. */
	const uint64_t *plan;
	size_t nplan;
};

/*
 * libdwfl asks for separate debug information only when the file itself
 * has none; the answer is the file the caller located, or nothing.
 */
static int find_debuginfo(Dwfl_Module *mod, void **userdata,
			  const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	const struct module *module = *userdata;
	int fd;

	(void)mod;
	(void)modname;
	(void)base;
	(void)file_name;
	(void)debuglink_file;
	(void)debuglink_crc;
	if (!module || module->debug_fd < 0)
		return -1;
	fd = fcntl(module->debug_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	*debuginfo_file_name = module->debug_name ?
		strdup(module->debug_name) : NULL;
	return fd;
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

struct symbolizer *symbolizer__new(void)
{
	struct symbolizer *s;

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->names = names__new();
	s->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!s->dwfl || !s->names) {
		names__free(s->names);
		if (s->dwfl)
			dwfl_end(s->dwfl);
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

static void module_free(struct module *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->ncus; i++)
		cu_scopes__free(m->cus[i].scopes);
	free(m->cus);
	cu_spans__fini(&m->aranges);
	cu_spans__fini(&m->unit_spans);
	sym_index__free(m->symbols);
	if (m->debug_fd >= 0)
		close(m->debug_fd);
	if (m->elf_fd >= 0)
		close(m->elf_fd);
	free(m->debug_name);
	free(m->name);
	free(m);
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
	dwfl_end(s->dwfl);
	names__free(s->names);
	frame_cache__fini(&s->cache);
	for (size_t i = 0; i < s->nmodules; i++)
		module_free(s->modules[i]);
	free(s->modules);
	free(s);
}

/*
 * Where the file holding the module's DWARF has it compressed, use one
 * decompressed copy instead (elf/inflate.c): libdw would decompress it
 * again in every clone.  Clones are registered with the copy and find
 * nothing left to do.  If the copy cannot be made, libdw gets the file
 * as it is and decompresses (or reports it broken) by itself.
 */
static void use_inflated_copy(struct module *module, unsigned int threads)
{
	const char *file = module->name;
	int copy, err, *fd = &module->elf_fd;

	err = elf_inflate__copy(*fd, threads, &copy, NULL);
	if (err == -ENODATA && module->debug_fd >= 0) {
		fd = &module->debug_fd;
		file = module->debug_name;
		err = elf_inflate__copy(*fd, threads, &copy, NULL);
	}
	if (!err && copy >= 0) {
		close(*fd);
		*fd = copy;
	} else if (err == -EILSEQ || err == -EFBIG) {
		fprintf(stderr, "pprof-alloc: %s: a compressed DWARF section "
			"is damaged: lines and inlined calls may be missing\n",
			file);
	}
}

static bool ranges_overlap(uint64_t a_start, uint64_t a_end,
			   uint64_t b_start, uint64_t b_end)
{
	return a_start < b_end && b_start < a_end;
}

/* inflate: make the decompressed copy (not for clones: they are given
 * the copy, or were told of a damaged file already). */
static int add_module(struct symbolizer *s, const struct sym_module *m,
		      bool inflate)
{
	struct module *module;
	Dwarf_Addr low, high;
	Dwfl_Module *mod;
	void **userdata;
	struct stat st;
	int dwfl_fd, err;

	if (!s || !m || !m->name || m->elf_fd < 0 || m->start >= m->end)
		return -EINVAL;
	if (fstat(m->elf_fd, &st) < 0)
		return -errno;

	for (size_t i = 0; i < s->nmodules; i++) {
		const struct module *known = s->modules[i];

		if (!ranges_overlap(m->start, m->end, known->low, known->high))
			continue;
		if (known->bias == m->bias && known->dev == st.st_dev &&
		    known->ino == st.st_ino)
			return 0;	/* another mapping of a known file */
		fprintf(stderr,
			"pprof-alloc: %s: [%#" PRIx64 ", %#" PRIx64
			") overlaps a different module registered earlier\n",
			m->name, m->start, m->end);
		return -EEXIST;
	}

	err = array__grow((void **)&s->modules, &s->modules_cap, s->nmodules + 1,
		      sizeof(*s->modules));
	if (err)
		return err;
	module = calloc(1, sizeof(*module));
	if (!module)
		return -ENOMEM;
	module->debug_fd = -1;
	module->elf_fd = fcntl(m->elf_fd, F_DUPFD_CLOEXEC, 0);
	module->name = strdup(m->name);
	if (module->elf_fd < 0 || !module->name) {
		err = module->elf_fd < 0 ? -errno : -ENOMEM;
		goto out_free_module;
	}
	module->start = m->start;
	module->end = m->end;
	if (m->debug_fd >= 0 && m->debug_fd != m->elf_fd) {
		module->debug_fd = fcntl(m->debug_fd, F_DUPFD_CLOEXEC, 0);
		module->debug_name = strdup(m->debug_name ? m->debug_name :
							    m->name);
		if (module->debug_fd < 0 || !module->debug_name) {
			err = module->debug_fd < 0 ? -errno : -ENOMEM;
			goto out_free_module;
		}
	}
	if (inflate && s->inflate_threads)
		use_inflated_copy(module, s->inflate_threads);
	dwfl_fd = fcntl(module->elf_fd, F_DUPFD_CLOEXEC, 0);
	if (dwfl_fd < 0) {
		err = -errno;
		goto out_free_module;
	}

	if (!s->reporting) {
		dwfl_report_begin_add(s->dwfl);
		s->reporting = true;
	}
	/* add_p_vaddr = true: base is the load bias (see libdwfl.h). */
	mod = dwfl_report_elf(s->dwfl, m->name, m->name, dwfl_fd, m->bias,
			      true);
	if (!mod) {
		fprintf(stderr, "pprof-alloc: %s: cannot use for symbols: %s\n",
			m->name, dwfl_errmsg(-1));
		err = -ENOEXEC;
		goto out_close;
	}

	dwfl_module_info(mod, &userdata, &low, &high, NULL, NULL, NULL, NULL);
	*userdata = module;
	module->low = low < m->start ? low : m->start;
	module->high = high > m->end ? high : m->end;
	module->bias = m->bias;
	module->dev = st.st_dev;
	module->ino = st.st_ino;
	s->modules[s->nmodules++] = module;
	return 0;

out_close:
	/* dwfl_report_elf() takes the fd only on success. */
	close(dwfl_fd);
out_free_module:
	module_free(module);
	return err;
}

int symbolizer__add(struct symbolizer *s, const struct sym_module *m)
{
	return add_module(s, m, true);
}

void symbolizer__inflate(struct symbolizer *s, unsigned int threads)
{
	if (s)
		s->inflate_threads = threads;
}

int symbolizer__add_module(struct symbolizer *s, const char *name, int fd,
			   uint64_t start, uint64_t end, uint64_t bias)
{
	const struct sym_module m = {
		.name = name, .elf_fd = fd, .debug_fd = -1,
		.start = start, .end = end, .bias = bias,
	};

	return symbolizer__add(s, &m);
}

struct symbolizer *symbolizer__clone(const struct symbolizer *s)
{
	struct symbolizer *copy = symbolizer__new();
	int err = 0;

	if (!copy)
		return NULL;
	for (size_t i = 0; i < s->nmodules && !err; i++) {
		const struct module *m = s->modules[i];
		const struct sym_module sm = {
			.name = m->name, .elf_fd = m->elf_fd,
			.debug_fd = m->debug_fd >= 0 ? m->debug_fd : -1,
			.debug_name = m->debug_name,
			.start = m->start, .end = m->end, .bias = m->bias,
		};

		err = add_module(copy, &sm, false);
		/* What the original has worked out about CUs is plain data. */
		if (!err && copy->nmodules == i + 1)
			err = cu_spans__copy(&copy->modules[i]->aranges,
					     &m->aranges);
		if (!err && copy->nmodules == i + 1)
			err = cu_spans__copy(&copy->modules[i]->unit_spans,
					     &m->unit_spans);
	}
	if (err) {
		symbolizer__free(copy);
		errno = -err;
		return NULL;
	}
	return copy;
}

/*
 * The CU holding addr (its DIE offset into *cu) and the bias of its DWARF
 * addresses: by .debug_aranges, else by the CUs' own ranges (each table
 * built the first time it is needed).  1 found, 0 none (no DWARF, or addr
 * is outside every CU), or -ENOMEM.
 */
static int find_cu(Dwfl_Module *mod, struct module *module, uint64_t addr,
		   Dwarf_Addr *dwbias, Dwarf_Off *cu)
{
	Dwarf *dwarf = dwfl_module_getdwarf(mod, dwbias);
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
		err = cu_spans__from_units(&module->unit_spans, mod,
					   &module->aranges);
		if (err)
			return err;
	}
	return cu_spans__find(&module->unit_spans, addr - *dwbias, cu);
}

/* The scope index of cudie, built the first time.  NULL if it cannot be
 * (*err set when out of memory). */
static struct cu_scopes *scopes_of(struct symbolizer *s, struct module *module,
				   Dwarf_Die *cudie, Dwarf_Addr dwbias,
				   int *err)
{
	const struct scope_want want = {
		.addrs = s->plan, .n = s->nplan, .bias = dwbias,
	};
	Dwarf_Off offset = dwarf_dieoffset(cudie);
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
		return module->cus[lo].scopes;

	*err = array__grow((void **)&module->cus, &module->cus_cap,
		       module->ncus + 1, sizeof(*module->cus));
	if (*err)
		return NULL;
	e = &module->cus[lo];
	memmove(e + 1, e, (module->ncus - lo) * sizeof(*e));
	module->ncus++;
	*e = (struct cu_entry){ .offset = offset, .partial = s->plan != NULL };
	e->scopes = cu_scopes__build(cudie, s->plan ? &want : NULL);
	if (!e->scopes)
		*err = -ENOMEM;
	return e->scopes;
}

/* The ELF symbol naming addr, or NULL; the index is built the first time. */
static const char *symbol_of(Dwfl_Module *mod, struct module *module,
			     uint64_t addr)
{
	if (!module->symbols_built) {
		module->symbols_built = true;
		module->symbols = sym_index__build(mod);
	}
	return module->symbols ? sym_index__find(module->symbols, addr) : NULL;
}

/*
 * Frames for the scope chain from node (innermost) outwards.  frames[0]
 * already has the address's file and line.  Returns the frame count, or
 * -ENOMEM.
 */
static int scope_chain(struct symbolizer *s, struct cu_scopes *cs,
		       int32_t node, struct sym_frame *frames, bool *linkage)
{
	int n = 0;

	while (node >= 0) {
		const struct scope_node *sn;

		sn = cu_scopes__node(cs, node, s->names);
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
		module->have_last_cu = dwarf_offdie(dwfl_module_getdwarf(mod,
								   &dwbias),
						    cu, &module->last_cudie);
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
		size_t kept = 0;

		for (size_t k = 0; k < m->ncus; k++) {
			if (m->cus[k].partial)
				cu_scopes__free(m->cus[k].scopes);
			else
				m->cus[kept++] = m->cus[k];
		}
		m->ncus = kept;
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
	size_t lo = 0, hi = s->nplan;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->plan[mid] < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->nplan && s->plan[lo] == addr;
}

/*
 * Resolve addr in mod into frames (SYM_FRAMES_MAX).  Returns the frame
 * count or -ENOMEM.
 */
static int resolve(struct symbolizer *s, Dwfl_Module *mod, uint64_t addr,
		   struct sym_frame *frames)
{
	const char *file = NULL, *symbol;
	struct module *module;
	struct cu_scopes *cs;
	Dwarf_Die cu_mem, *cudie = NULL;
	Dwarf_Addr dwbias;
	Dwarf_Off cu_offset;
	Dwarf_Line *line;
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
		line = dwarf_getsrc_die(cudie, addr - dwbias);
		if (line && dwarf_lineno(line, &lineno) == 0)
			file = source_path(s, module, cudie, cu_offset,
					   dwarf_linesrc(line, NULL, NULL));
		if (!file)
			lineno = 0;
		frames[0] = (struct sym_frame){ .file = file, .line = lineno };
		cs = scopes_of(s, module, cudie, dwbias, &err);
		if (err)
			return err;
		node = cs ? cu_scopes__find(cs, addr - dwbias) : -1;
		if (node >= 0)
			n = scope_chain(s, cs, node, frames, &linkage);
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

int symbolizer__units(struct symbolizer *s, const uint64_t *addrs, size_t n,
		      uint64_t *units)
{
	Dwfl_Module *mod = NULL;
	Dwarf_Addr low = 0, high = 0, dwbias;
	uint64_t tag = 0;
	int err = 0;

	for (size_t i = 0; i < n; i++) {
		void **userdata;
		Dwarf_Off cu;

		units[i] = SYM_NO_UNIT;
		if (!mod || addrs[i] < low || addrs[i] >= high) {
			mod = module_of(s, addrs[i], &err);
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
		err = find_cu(mod, *userdata, addrs[i], &dwbias, &cu);
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
