/* SPDX-License-Identifier: MIT */
/*
 * symbolize_modules.c - the modules a symbolizer knows: registering them
 * with libdwfl, and cloning a symbolizer for another thread.
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
 * A symbolizer is not thread-safe (neither is a Dwfl); use one per thread:
 * symbolizer__clone() registers the same modules in a new one (each keeps
 * dups of the fds and the registration to make that possible), sharing
 * what the original has built that does not depend on its Dwfl: the
 * decompressed DWARF and its line tables, and the symbol indexes
 * (symbolizer__index_symbols() builds them ahead for a batch).
 *
 * Where the caller asks for it (symbolizer__inflate(): a batch about to be
 * cloned), a module whose DWARF is compressed gets a decompressed image
 * (elf/inflate.c), made once when it is added and shared by its clones,
 * instead of each libdw decompressing it again.  libdwfl keeps the files
 * as they are, for the symbol table (which is not compressed); the
 * module's DWARF comes from its own libdw handle on the image
 * (symbolize__module_dwarf()), and libdwfl is never asked for it.  That
 * handle's addresses are biased like the file's, which holds where the
 * image's first loadable segment is the main file's (libdwfl's debug
 * bias is then the load bias); a file whose segments moved (prelink), or
 * whose dwz file (.gnu_debugaltlink) is named by a relative path, is left
 * to libdwfl.  Not by default: libdw decompresses a module's DWARF only when
 * it is first needed, which is better for the live paths, which register
 * every module of a process and may look up a few.
 */
#include "elf/symbolize_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "elf/array.h"
#include "elf/inflate.h"
#include "elf/names.h"
#include "elf/scopes.h"
#include "elf/symindex.h"
#include "common/log.h"

/*
 * libdwfl asks for separate debug information only when the file itself
 * has none; the answer is the file the caller located, or nothing.  It
 * asks once (it keeps what it opened); a second question, through the
 * same callback, is for the file dwz moved shared DWARF into
 * (.gnu_debugaltlink), which the caller's file is not: answered with
 * nothing, libdw looks for it itself (by the link's path, and by its
 * build ID under /usr/lib/debug).  Answering with the debug file again
 * had names and types meant for the shared file read from the debug file
 * at the same offsets: wrong function names, silently.
 */
static int find_debuginfo(Dwfl_Module *mod, void **userdata,
			  const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	struct module *module = *userdata;
	int fd;

	(void)mod;
	(void)modname;
	(void)base;
	(void)file_name;
	(void)debuglink_file;
	(void)debuglink_crc;
	if (!module || module->debug_fd < 0 || module->debug_given)
		return -1;
	fd = fcntl(module->debug_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	module->debug_given = true;
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

void symbolize__module_free(struct module *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->ncus; i++) {
		cu_scopes__free(m->cus[i].scopes);
		line_table__free(m->cus[i].own_lines);
	}
	free(m->cus);
	cu_spans__fini(&m->aranges);
	cu_spans__fini(&m->unit_spans);
	sym_index__put(m->symbols);
	if (m->image_dwarf)
		dwarf_end(m->image_dwarf);
	if (m->image_elf)
		elf_end(m->image_elf);
	line_tables__put(m->line_set);	/* may point into the image */
	elf_image__put(m->image);
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
		symbolize__module_free(s->modules[i]);
	free(s->modules);
	free(s->aliases);
	free(s);
}

uint64_t symbolize__unalias(const struct symbolizer *s, uint64_t addr)
{
	for (size_t i = 0; i < s->naliases; i++)
		if (addr >= s->aliases[i].start && addr < s->aliases[i].end)
			return addr + s->aliases[i].delta;
	return addr;
}

static int add_alias(struct symbolizer *s, uint64_t start, uint64_t end,
		     uint64_t delta)
{
	int err;

	for (size_t i = 0; i < s->naliases; i++)
		if (s->aliases[i].start == start && s->aliases[i].end == end &&
		    s->aliases[i].delta == delta)
			return 0;
	err = array__grow((void **)&s->aliases, &s->aliases_cap,
			  s->naliases + 1, sizeof(*s->aliases));
	if (err)
		return err;
	s->aliases[s->naliases++] = (struct sym_alias){ start, end, delta };
	return 0;
}

/* The first PT_LOAD's start (page-aligned, as libdwfl takes it) and
 * end.  false if there is none. */
static bool first_load(Elf *elf, uint64_t *vaddr, uint64_t *end)
{
	size_t phnum;

	if (!elf || elf_getphdrnum(elf, &phnum))
		return false;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		*vaddr = ph.p_vaddr & -(ph.p_align ? ph.p_align : 1);
		*end = ph.p_vaddr + ph.p_memsz;
		return true;
	}
	return false;
}

/*
 * Can libdw, reading the image, find the second file dwz moved shared
 * DWARF into (.gnu_debugaltlink), if elf names one?  It looks under
 * /usr/lib/debug/.build-id, then at the name as given: the image has no
 * directory a relative name could be taken from (the file libdwfl opens
 * has), so only an absolute one (as Debian's are) will do.
 */
static bool altlink_found(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;	/* cannot tell: leave it to libdwfl */
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		Elf_Data *d;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			return false;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".gnu_debugaltlink"))
			continue;
		d = sh.sh_type == SHT_NOBITS ? NULL : elf_getdata(scn, NULL);
		return d && d->d_size > 1 && ((const char *)d->d_buf)[0] == '/' &&
		       memchr(d->d_buf, 0, d->d_size);
	}
	return true;	/* none needed */
}

/*
 * Can the image's DWARF addresses take the main file's load bias, the way
 * libdwfl would bias them?  Its first loadable segment must be the main
 * file's, and libdw must be able to find its dwz file, if it has one.
 */
static bool image_fits(int elf_fd, struct elf_image *image)
{
	Elf *main_elf = elf_begin(elf_fd, ELF_C_READ_MMAP, NULL);
	Elf *elf = elf_image__open(image);
	uint64_t a_vaddr, a_end, b_vaddr, b_end;
	bool fits;

	fits = first_load(main_elf, &a_vaddr, &a_end) &&
	       first_load(elf, &b_vaddr, &b_end) &&
	       a_vaddr == b_vaddr && a_end == b_end && altlink_found(elf);
	elf_end(elf);
	elf_end(main_elf);
	return fits;
}

static const char *const line_section_names[] = {
	".debug_line", ".debug_line_str", ".debug_str", NULL,
};

/*
 * Idle work while the image is made (elf/inflate.c): a thread done with
 * its sections decodes line tables (elf/linetable.c) while another still
 * inflates .debug_info, the biggest, so lookups find them made.  Stops when the image is done; the rest are decoded when
 * needed.
 */
static void read_line_tables(struct elf_image *image, const int *stop,
			     void *arg)
{
	struct line_tables **set = arg;
	struct line_sections sec = { 0 };

	sec.line = elf_image__section(image, ".debug_line", &sec.line_size);
	sec.line_str = elf_image__section(image, ".debug_line_str",
					  &sec.line_str_size);
	sec.str = elf_image__section(image, ".debug_str", &sec.str_size);
	if (sec.line)
		line_tables__read(&sec, stop, set);	/* else: on demand */
}

/*
 * Where the file holding the module's DWARF has it compressed, decompress
 * it once into an image the module and its clones read (see the top).  If
 * that cannot be done, libdwfl gets the files as they are and libdw
 * decompresses (or reports it broken) by itself.  The line tables are
 * decoded ahead only for a module asked about many addresses
 * (LINES_AHEAD): all of glibc's compile units, for the few dozen
 * addresses a program's profile has in malloc and its callers, would keep
 * a thread from work that is not idle (pprof_splice.c reads samples
 * meanwhile).
 */
#define LINES_AHEAD	1024
static void use_inflated_image(struct module *module, unsigned int threads,
			       size_t lookups)
{
	struct line_tables *set = NULL;
	const struct inflate_idle lines_ahead = {
		.needs = line_section_names, .run = read_line_tables,
		.arg = &set,
	};
	const struct inflate_idle *idle = lookups >= LINES_AHEAD ?
					  &lines_ahead : NULL;
	struct elf_image *image = NULL;
	const char *file = module->name;
	int err;

	err = elf_inflate__image(module->elf_fd, threads, idle, &image, NULL);
	if (err == -ENODATA && module->debug_fd >= 0) {
		file = module->debug_name;
		err = elf_inflate__image(module->debug_fd, threads, idle,
					 &image, NULL);
	}
	if (!err && image && image_fits(module->elf_fd, image)) {
		module->image = image;
		module->line_set = set;
		return;
	}
	line_tables__put(set);
	elf_image__put(image);
	if (err == -EILSEQ || err == -EFBIG)
		pr_warn("%s: a compressed DWARF section "
			"is damaged: lines and inlined calls may be missing\n",
			file);
}

Dwarf *symbolize__module_dwarf(Dwfl_Module *mod, struct module *module,
			       Dwarf_Addr *bias)
{
	if (!module->image)
		return dwfl_module_getdwarf(mod, bias);
	if (!module->image_opened) {
		module->image_opened = true;
		module->image_elf = elf_image__open(module->image);
		if (module->image_elf)
			module->image_dwarf = dwarf_begin_elf(module->image_elf,
							      DWARF_C_READ,
							      NULL);
	}
	*bias = module->bias;
	return module->image_dwarf;
}

static bool ranges_overlap(uint64_t a_start, uint64_t a_end,
			   uint64_t b_start, uint64_t b_end)
{
	return a_start < b_end && b_start < a_end;
}

/* from: the original of a clone's module, whose image and line tables it
 * shares; else inflate: make them (not for clones: they were told of a
 * damaged file already). */
static int add_module(struct symbolizer *s, const struct sym_module *m,
		      const struct module *from, bool inflate)
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

	/* the same file again at another bias: a copy of some of its
	 * pages (V8's remapped text), whose addresses are the first
	 * mapping's moved by the difference of the biases */
	for (size_t i = 0; i < s->nmodules; i++) {
		const struct module *known = s->modules[i];
		uint64_t delta = known->bias - m->bias;

		if (known->dev == st.st_dev && known->ino == st.st_ino &&
		    known->bias != m->bias &&
		    m->start + delta >= known->low &&
		    m->end + delta <= known->high)
			return add_alias(s, m->start, m->end, delta);
	}

	for (size_t i = 0; i < s->nmodules; i++) {
		const struct module *known = s->modules[i];

		if (!ranges_overlap(m->start, m->end, known->low, known->high))
			continue;
		if (known->bias == m->bias && known->dev == st.st_dev &&
		    known->ino == st.st_ino)
			return 0;	/* another mapping of a known file */
		pr_warn(
			"%s: [%#" PRIx64 ", %#" PRIx64
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
	if (from) {
		module->image = elf_image__get(from->image);
		module->line_set = line_tables__get(from->line_set);
		module->symbols = sym_index__get(from->symbols);
		module->symbols_built = from->symbols != NULL;
	} else if (inflate && s->inflate_threads) {
		use_inflated_image(module, s->inflate_threads, m->lookups);
	}
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
		pr_warn("%s: cannot use for symbols: %s\n",
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
	symbolize__module_free(module);
	return err;
}

int symbolizer__add(struct symbolizer *s, const struct sym_module *m)
{
	return add_module(s, m, NULL, true);
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

		err = add_module(copy, &sm, m, false);
		/* What the original has worked out about CUs is plain data. */
		if (!err && copy->nmodules == i + 1)
			err = cu_spans__copy(&copy->modules[i]->aranges,
					     &m->aranges);
		if (!err && copy->nmodules == i + 1)
			err = cu_spans__copy(&copy->modules[i]->unit_spans,
					     &m->unit_spans);
	}
	for (size_t i = 0; i < s->naliases && !err; i++)
		err = add_alias(copy, s->aliases[i].start, s->aliases[i].end,
				s->aliases[i].delta);
	if (err) {
		symbolizer__free(copy);
		errno = -err;
		return NULL;
	}
	return copy;
}
