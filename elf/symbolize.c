/* SPDX-License-Identifier: MIT */
/*
 * symbolize.c - addresses to functions, files and lines, with libdwfl.
 *
 * One Dwfl holds every registered module.  A module is reported with
 * dwfl_report_elf() on a dup of the caller's fd and add_p_vaddr = true, for
 * which libdwfl's BASE is the load bias (start = bias + first PT_LOAD
 * p_vaddr): exactly what elfinfo__load_bias() computes.  Debug information
 * is found by the standard callback: in the file itself, else by build ID
 * under the debug directories, .gnu_debuglink, or debuginfod when the
 * environment enables it.
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
 * prints it: dwarf_getscopes() lists the DIEs around the address, innermost
 * first; each DW_TAG_inlined_subroutine is one frame named after its
 * abstract origin, and the DW_TAG_subprogram that contains them all is the
 * last.  The leaf frame has the line of the address itself; each outer
 * frame has the DW_AT_call_file/DW_AT_call_line of the inlined call it
 * contains.  Without DWARF there is one frame, named by the ELF symbol
 * table.
 *
 * libdwfl finds the CU of an address by .debug_aranges, which clang and
 * rustc leave out by default; when that fails each module gets, once, an
 * index of its CUs' address ranges (DW_AT_ranges or low/high pc) to search
 * instead, and the line is read from the CU found either way.
 *
 * Results are cached per address (open addressing over a frame pool), up to
 * SYM_FRAMES_MAX frames, and callers get as many as they ask for.  Misses
 * outside every module are not cached, since a later module may cover them.
 * Strings are interned in a set of their own that lives until
 * symbolizer__free(), so returned pointers never dangle and equal names are
 * equal pointers.
 *
 * A symbolizer is not thread-safe (neither is a Dwfl); use one per thread.
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

/* Longest inline chain kept per address. */
#define SYM_FRAMES_MAX	64

/* A CU's address range, in DWARF addresses (before the bias). */
struct cu_range {
	Dwarf_Addr low, high;
	Dwarf_Die cu;
};

/* One registered file; also the Dwfl_Module's userdata. */
struct module {
	uint64_t low, high;	/* libdwfl's range, widened to the mapping */
	uint64_t bias;
	dev_t dev;
	ino_t ino;
	bool cu_index_built;
	struct cu_range *cu_index;	/* sorted by low */
	size_t cu_count;
};

struct cache_slot {
	uint64_t addr;
	uint32_t first;		/* index in frame_pool */
	uint16_t count;
	bool used;
};

struct symbolizer {
	Dwfl *dwfl;
	bool reporting;		/* between report_begin_add, report_end */

	struct module **modules;
	size_t nmodules, modules_cap;

	struct cache_slot *cache;	/* capacity is a power of two */
	size_t cache_cap, cache_used;
	struct sym_frame *frame_pool;
	size_t pool_len, pool_cap;

	char **strings;		/* interned; capacity a power of two */
	size_t strings_cap, strings_used;
};

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* Make room for need elements in *array of *cap, doubling.  0 or -ENOMEM. */
static int reserve(void **array, size_t *cap, size_t need, size_t elem_size)
{
	size_t new_cap = *cap ? *cap : 16;
	void *grown;

	if (need <= *cap)
		return 0;
	while (new_cap < need) {
		if (new_cap > SIZE_MAX / 2)
			return -ENOMEM;
		new_cap *= 2;
	}
	if (new_cap > SIZE_MAX / elem_size)
		return -ENOMEM;
	grown = realloc(*array, new_cap * elem_size);
	if (!grown)
		return -ENOMEM;
	*array = grown;
	*cap = new_cap;
	return 0;
}

static uint64_t hash_addr(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static uint64_t hash_string(const char *str)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *str; str++) {
		h ^= (unsigned char)*str;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* Rehash the string set into new_cap slots.  0 or -ENOMEM. */
static int strings_resize(struct symbolizer *s, size_t new_cap)
{
	char **slots;

	if (new_cap > SIZE_MAX / sizeof(*slots))
		return -ENOMEM;
	slots = calloc(new_cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < s->strings_cap; i++) {
		size_t j;

		if (!s->strings[i])
			continue;
		j = hash_string(s->strings[i]) & (new_cap - 1);
		while (slots[j])
			j = (j + 1) & (new_cap - 1);
		slots[j] = s->strings[i];
	}
	free(s->strings);
	s->strings = slots;
	s->strings_cap = new_cap;
	return 0;
}

/*
 * The interned copy of str (NULL for NULL).  Sets *err to -ENOMEM and
 * returns NULL when out of memory.
 */
static const char *intern(struct symbolizer *s, const char *str, int *err)
{
	size_t i;
	char *copy;

	if (!str)
		return NULL;
	if (s->strings_used + 1 > s->strings_cap / 2) {
		size_t new_cap = s->strings_cap ? s->strings_cap * 2 : 64;

		if (s->strings_cap > SIZE_MAX / 2 ||
		    strings_resize(s, new_cap)) {
			*err = -ENOMEM;
			return NULL;
		}
	}
	i = hash_string(str) & (s->strings_cap - 1);
	for (; s->strings[i]; i = (i + 1) & (s->strings_cap - 1))
		if (strcmp(s->strings[i], str) == 0)
			return s->strings[i];
	copy = strdup(str);
	if (!copy) {
		*err = -ENOMEM;
		return NULL;
	}
	s->strings[i] = copy;
	s->strings_used++;
	return copy;
}

static struct cache_slot *cache_find(struct symbolizer *s, uint64_t addr)
{
	size_t i;

	if (!s->cache_cap)
		return NULL;
	i = hash_addr(addr) & (s->cache_cap - 1);
	for (; s->cache[i].used; i = (i + 1) & (s->cache_cap - 1))
		if (s->cache[i].addr == addr)
			return &s->cache[i];
	return NULL;
}

static int cache_resize(struct symbolizer *s, size_t new_cap)
{
	struct cache_slot *slots;

	if (new_cap > SIZE_MAX / sizeof(*slots))
		return -ENOMEM;
	slots = calloc(new_cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < s->cache_cap; i++) {
		size_t j;

		if (!s->cache[i].used)
			continue;
		j = hash_addr(s->cache[i].addr) & (new_cap - 1);
		while (slots[j].used)
			j = (j + 1) & (new_cap - 1);
		slots[j] = s->cache[i];
	}
	free(s->cache);
	s->cache = slots;
	s->cache_cap = new_cap;
	return 0;
}

/* Remember frames[0..n) for addr.  0 or -ENOMEM. */
static int cache_insert(struct symbolizer *s, uint64_t addr,
			const struct sym_frame *frames, int n)
{
	size_t i;
	int err;

	if (s->cache_used + 1 > s->cache_cap / 2) {
		if (s->cache_cap > SIZE_MAX / 2)
			return -ENOMEM;
		err = cache_resize(s, s->cache_cap ? s->cache_cap * 2 : 1024);
		if (err)
			return err;
	}
	if (s->pool_len + (size_t)n > UINT32_MAX)
		return -ENOMEM;
	err = reserve((void **)&s->frame_pool, &s->pool_cap,
		      s->pool_len + (size_t)n, sizeof(*s->frame_pool));
	if (err)
		return err;

	i = hash_addr(addr) & (s->cache_cap - 1);
	while (s->cache[i].used)
		i = (i + 1) & (s->cache_cap - 1);
	s->cache[i] = (struct cache_slot){
		.addr = addr,
		.first = (uint32_t)s->pool_len,
		.count = (uint16_t)n,
		.used = true,
	};
	if (n)
		memcpy(&s->frame_pool[s->pool_len], frames,
		       (size_t)n * sizeof(*frames));
	s->pool_len += (size_t)n;
	s->cache_used++;
	return 0;
}

struct symbolizer *symbolizer__new(void)
{
	struct symbolizer *s;

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!s->dwfl) {
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
	dwfl_end(s->dwfl);
	for (size_t i = 0; i < s->strings_cap; i++)
		free(s->strings[i]);
	free(s->strings);
	free(s->cache);
	free(s->frame_pool);
	for (size_t i = 0; i < s->nmodules; i++) {
		free(s->modules[i]->cu_index);
		free(s->modules[i]);
	}
	free(s->modules);
	free(s);
}

static bool ranges_overlap(uint64_t a_start, uint64_t a_end,
			   uint64_t b_start, uint64_t b_end)
{
	return a_start < b_end && b_start < a_end;
}

int symbolizer__add_module(struct symbolizer *s, const char *name, int fd,
			   uint64_t start, uint64_t end, uint64_t bias)
{
	struct module *module;
	Dwarf_Addr low, high;
	Dwfl_Module *mod;
	void **userdata;
	struct stat st;
	int dwfl_fd, err;

	if (!s || !name || fd < 0 || start >= end)
		return -EINVAL;
	if (fstat(fd, &st) < 0)
		return -errno;

	for (size_t i = 0; i < s->nmodules; i++) {
		const struct module *m = s->modules[i];

		if (!ranges_overlap(start, end, m->low, m->high))
			continue;
		if (m->bias == bias && m->dev == st.st_dev &&
		    m->ino == st.st_ino)
			return 0;	/* another mapping of a known file */
		fprintf(stderr,
			"pprof-alloc: %s: [%#" PRIx64 ", %#" PRIx64
			") overlaps a different module registered earlier\n",
			name, start, end);
		return -EEXIST;
	}

	err = reserve((void **)&s->modules, &s->modules_cap, s->nmodules + 1,
		      sizeof(*s->modules));
	if (err)
		return err;
	module = calloc(1, sizeof(*module));
	if (!module)
		return -ENOMEM;
	dwfl_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dwfl_fd < 0) {
		err = -errno;
		goto out_free_module;
	}

	if (!s->reporting) {
		dwfl_report_begin_add(s->dwfl);
		s->reporting = true;
	}
	/* add_p_vaddr = true: base is the load bias (see libdwfl.h). */
	mod = dwfl_report_elf(s->dwfl, name, name, dwfl_fd, bias, true);
	if (!mod) {
		fprintf(stderr, "pprof-alloc: %s: cannot use for symbols: %s\n",
			name, dwfl_errmsg(-1));
		err = -ENOEXEC;
		goto out_close;
	}

	dwfl_module_info(mod, &userdata, &low, &high, NULL, NULL, NULL, NULL);
	*userdata = module;
	module->low = low < start ? low : start;
	module->high = high > end ? high : end;
	module->bias = bias;
	module->dev = st.st_dev;
	module->ino = st.st_ino;
	s->modules[s->nmodules++] = module;
	return 0;

out_close:
	/* dwfl_report_elf() takes the fd only on success. */
	close(dwfl_fd);
out_free_module:
	free(module);
	return err;
}

/* DW_AT_name of die, following DW_AT_abstract_origin/DW_AT_specification. */
static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;

	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
}

/* DW_AT_call_file of an inlined_subroutine as a path, or NULL. */
static const char *call_file(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Files *files;
	Dwarf_Word index;
	Dwarf_Die cu;
	size_t nfiles;

	if (!dwarf_attr(die, DW_AT_call_file, &attr) ||
	    dwarf_formudata(&attr, &index) != 0)
		return NULL;
	if (!dwarf_diecu(die, &cu, NULL, NULL) ||
	    dwarf_getsrcfiles(&cu, &files, &nfiles) != 0 || index >= nfiles)
		return NULL;
	return dwarf_filesrc(files, index, NULL, NULL);
}

static int call_line(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Word line;

	if (!dwarf_attr(die, DW_AT_call_line, &attr) ||
	    dwarf_formudata(&attr, &line) != 0 || line > INT_MAX)
		return 0;
	return (int)line;
}

/*
 * Walk the scopes around addr (innermost first) into frames, starting with
 * frames[0], whose file and line are already set.  Returns the number of
 * frames (0 if no function scope was found).
 */
static int inline_chain(Dwarf_Die *scopes, int nscopes,
			struct sym_frame *frames, const char *symbol)
{
	int n = 0;

	for (int i = 0; i < nscopes; i++) {
		Dwarf_Die *scope = &scopes[i];

		switch (dwarf_tag(scope)) {
		case DW_TAG_inlined_subroutine:
			frames[n].function = die_name(scope);
			if (n + 1 == SYM_FRAMES_MAX)
				return n + 1;
			n++;
			frames[n] = (struct sym_frame){
				.file = call_file(scope),
				.line = call_line(scope),
			};
			break;
		case DW_TAG_subprogram:
			frames[n].function = die_name(scope);
			if (!frames[n].function)
				frames[n].function = symbol;
			return n + 1;
		default:
			break;	/* lexical blocks and the CU */
		}
	}
	/* Inlined frames but no enclosing subprogram: name it by symbol. */
	if (n > 0) {
		frames[n].function = symbol;
		return n + 1;
	}
	return 0;
}

static int cu_range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->low < y->low ? -1 : x->low > y->low;
}

/*
 * Index every CU of mod by its address ranges.  libdw 0.188 finds CUs by
 * .debug_aranges only, which clang and rustc do not emit by default; this
 * is the fallback for them.  0 or -ENOMEM.
 */
static int build_cu_index(Dwfl_Module *mod, struct module *module)
{
	Dwarf_Addr dwbias, base, low, high;
	Dwarf_Die *cu = NULL;
	size_t cap = 0;
	ptrdiff_t off;
	int err;

	module->cu_index_built = true;
	while ((cu = dwfl_module_nextcu(mod, cu, &dwbias))) {
		off = 0;
		while ((off = dwarf_ranges(cu, off, &base, &low, &high)) > 0) {
			struct cu_range *range;

			if (low >= high)
				continue;
			err = reserve((void **)&module->cu_index, &cap,
				      module->cu_count + 1,
				      sizeof(*module->cu_index));
			if (err)
				return err;
			range = &module->cu_index[module->cu_count++];
			*range = (struct cu_range){
				.low = low, .high = high, .cu = *cu,
			};
		}
	}
	if (module->cu_count)
		qsort(module->cu_index, module->cu_count,
		      sizeof(*module->cu_index), cu_range_cmp);
	return 0;
}

/* The CU DIE holding pc (a DWARF address) by the CU index, or NULL. */
static Dwarf_Die *cu_index_find(struct module *module, Dwarf_Addr pc)
{
	size_t lo = 0, hi = module->cu_count;

	/* The last range starting at or below pc. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (module->cu_index[mid].low <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || pc >= module->cu_index[lo - 1].high)
		return NULL;
	return &module->cu_index[lo - 1].cu;
}

/*
 * The CU DIE holding addr, and the bias of its DWARF addresses: by
 * .debug_aranges through libdwfl, else by our own index.  NULL if none (no
 * DWARF, or addr is outside every CU).  *err is set on allocation failure.
 */
static Dwarf_Die *find_cu(Dwfl_Module *mod, uint64_t addr,
			  Dwarf_Addr *dwbias, int *err)
{
	struct module *module;
	void **userdata;
	Dwarf_Die *cudie;

	cudie = dwfl_module_addrdie(mod, addr, dwbias);
	if (cudie)
		return cudie;
	dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	module = *userdata;
	if (!module || !dwfl_module_getdwarf(mod, dwbias))
		return NULL;
	if (!module->cu_index_built) {
		*err = build_cu_index(mod, module);
		if (*err)
			return NULL;
	}
	return cu_index_find(module, addr - *dwbias);
}

/*
 * Resolve addr in mod into frames (SYM_FRAMES_MAX).  Returns the frame
 * count or -ENOMEM.
 */
static int resolve(Dwfl_Module *mod, uint64_t addr, struct sym_frame *frames)
{
	const char *symbol, *file = NULL;
	Dwarf_Die *cudie, *scopes = NULL;
	Dwarf_Addr dwbias;
	GElf_Off sym_offset;
	Dwarf_Line *line;
	GElf_Sym sym;
	int lineno = 0, nscopes, n = 0, err = 0;

	symbol = dwfl_module_addrinfo(mod, addr, &sym_offset, &sym, NULL, NULL,
				      NULL);
	cudie = find_cu(mod, addr, &dwbias, &err);
	if (err)
		return err;
	if (cudie) {
		/* dwfl_module_getsrc() would need .debug_aranges too. */
		line = dwarf_getsrc_die(cudie, addr - dwbias);
		if (line && dwarf_lineno(line, &lineno) == 0)
			file = dwarf_linesrc(line, NULL, NULL);
		if (!file)
			lineno = 0;
		frames[0] = (struct sym_frame){ .file = file, .line = lineno };
		nscopes = dwarf_getscopes(cudie, addr - dwbias, &scopes);
		if (nscopes > 0)
			n = inline_chain(scopes, nscopes, frames, symbol);
		free(scopes);
	}
	if (n == 0 && (symbol || file)) {
		frames[0] = (struct sym_frame){
			.function = symbol, .file = file, .line = lineno,
		};
		n = 1;
	}
	return n;
}

int symbolizer__lookup(struct symbolizer *s, uint64_t addr,
		       struct sym_frame *frames, int max)
{
	struct sym_frame resolved[SYM_FRAMES_MAX];
	const struct cache_slot *slot;
	Dwfl_Module *mod;
	int n, err = 0;

	if (!s || !frames || max <= 0)
		return -EINVAL;

	slot = cache_find(s, addr);
	if (slot) {
		n = slot->count < max ? slot->count : max;
		memcpy(frames, &s->frame_pool[slot->first],
		       (size_t)n * sizeof(*frames));
		return n;
	}

	if (s->reporting) {
		/* Fails only if a `removed' callback does; we pass none. */
		if (dwfl_report_end(s->dwfl, NULL, NULL) != 0)
			return -EIO;
		s->reporting = false;
	}
	mod = dwfl_addrmodule(s->dwfl, addr);
	if (!mod)
		return 0;

	n = resolve(mod, addr, resolved);
	if (n < 0)
		return n;
	for (int i = 0; i < n && !err; i++) {
		resolved[i].function = intern(s, resolved[i].function, &err);
		resolved[i].file = intern(s, resolved[i].file, &err);
	}
	if (!err)
		err = cache_insert(s, addr, resolved, n);
	if (err)
		return err;

	if (n > max)
		n = max;
	memcpy(frames, resolved, (size_t)n * sizeof(*frames));
	return n;
}
