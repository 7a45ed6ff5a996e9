// SPDX-License-Identifier: MIT
/*
 * core_modules.c - the ELF modules a core's process had loaded, and where,
 * from the core alone.
 *
 * Two sources, in this order:
 *
 *  1. NT_FILE, the file mappings the kernel notes (gdb's gcore writes one
 *     too).  Each file mapped from its offset 0 whose first page is in the
 *     core with an ELF header is a module there.
 *  2. The dynamic loader's list.  NT_AUXV's AT_PHDR locates the
 *     executable's program headers (so its ELF header, a page down), its
 *     PT_DYNAMIC holds DT_DEBUG = &_r_debug, whose r_map heads the
 *     link_map list (l_addr, l_name, l_ld, l_next, l_prev - the public part
 *     of glibc's and musl's).  Each entry names a module and its load bias;
 *     its ELF header is at l_addr (shared objects link at 0) and is taken
 *     only when its PT_DYNAMIC lands on the entry's l_ld.  The executable
 *     (no name in the list) is named by NT_FILE, else AT_EXECFN, else the
 *     first word of pr_psargs; the loader by the list, else AT_BASE and the
 *     executable's PT_INTERP.  A module NT_FILE named already is not added
 *     twice: the list fills in what a missing, cut or corrupt note lacks.
 *
 * Either way the module's own headers, in the core, give its load bias,
 * its executable PT_LOADs (the segments it had mapped: gcore does not dump
 * them, so the core's own PT_LOADs cannot say which were executable) and
 * its GNU build ID, by which the symbolizer later matches a file.  The
 * kernel dumps the first page of every ELF file mapping by default
 * (coredump_filter bit 4); gcore dumps read-only mappings whole.
 *
 * The core is untrusted: every pointer is read through core__read (a read
 * outside what the core holds fails), strings are capped at PATH_CAP, the
 * list at MAX_LINK_MAPS entries, an entry seen twice or whose l_prev is not
 * the entry before ends the walk, and each segment is checked for overflow
 * and for lying in user space.  A walk that ends early keeps what it found
 * and says why in loader_why.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "core_modules.h"

#define PAGE		4096ull
#define MAX_SEG_BYTES	(1ull << 34)
#define MAX_LINK_MAPS	4096u
#define MAX_DYN		4096u		/* entries of the dynamic section */
#define PATH_CAP	4096u

struct link_map64 {		/* <link.h>'s public part, 64-bit */
	uint64_t l_addr, l_name, l_ld, l_next, l_prev;
};

struct r_debug64 {
	int32_t r_version;
	uint32_t pad;
	uint64_t r_map;
};

struct finder {
	const struct core *c;
	struct core_modules *m;
	size_t cap;
};

static bool overlaps(const struct core_modules *m, uint64_t start,
		     uint64_t end)
{
	size_t i;

	for (i = 0; i < m->nsegs; i++)
		if (start < m->segs[i].end && m->segs[i].start < end)
			return true;
	return false;
}

/*
 * The executable PT_LOADs of img, as mapped, into m - unless one of them
 * overlaps a module already there.  1 when added, 0 when not (none,
 * already known, or implausible), -ENOMEM.
 */
static int add_image(struct finder *f, const struct core_image *img,
		     const char *path, enum core_module_source source)
{
	struct core_modules *m = f->m;
	size_t first = m->nsegs, i;
	unsigned int k;
	bool exe = false;

	for (k = 0; k < img->phnum; k++) {
		const Elf64_Phdr *ph = &img->ph[k];
		uint64_t from, to;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		from = img->bias + ph->p_vaddr;
		if (!ph->p_memsz || from < img->bias ||
		    ph->p_memsz > MAX_SEG_BYTES || from >= f->c->user_end ||
		    ph->p_memsz > f->c->user_end - from)
			goto out_drop;
		to = (from + ph->p_memsz + PAGE - 1) & ~(PAGE - 1);
		from &= ~(PAGE - 1);
		if (overlaps(m, from, to))
			goto out_drop;
		if (array__grow((void **)&m->segs, &f->cap, m->nsegs + 1,
				sizeof(*m->segs)))
			goto out_nomem;
		m->segs[m->nsegs] = (struct core_module_seg){
			.start = from, .end = to,
			.offset = ph->p_offset & ~(PAGE - 1),
			.bias = img->bias, .source = source,
			.build_id_len = img->build_id_len,
		};
		memcpy(m->segs[m->nsegs].build_id, img->build_id,
		       img->build_id_len);
		m->segs[m->nsegs].path = strdup(path);
		if (!m->segs[m->nsegs].path)
			goto out_nomem;
		m->nsegs++;
		if (f->c->has_auxv && f->c->auxv.entry >= from &&
		    f->c->auxv.entry < to)
			exe = true;
	}
	if (m->nsegs == first)
		return 0;
	for (i = first; i < m->nsegs; i++)
		m->segs[i].is_exe = exe;
	if (exe && !m->exe) {
		m->exe = strdup(path);
		if (!m->exe)
			return -ENOMEM;
	}
	if (source == CORE_MOD_NT_FILE)
		m->from_nt_file++;
	else
		m->from_loader++;
	return 1;
out_nomem:
	for (i = first; i < m->nsegs; i++)
		free(m->segs[i].path);
	m->nsegs = first;
	return -ENOMEM;
out_drop:
	for (i = first; i < m->nsegs; i++)
		free(m->segs[i].path);
	m->nsegs = first;
	return 0;
}

static int from_nt_file(struct finder *f)
{
	const struct core *c = f->c;
	struct core_modules *m = f->m;
	unsigned int undumped = 0;
	struct core_image img;
	uint8_t magic[4];
	size_t i;
	int err;

	if (c->file_note == CORE_FILE_NOTE_NONE) {
		snprintf(m->nt_file_why, sizeof(m->nt_file_why),
			 "no NT_FILE note: the kernel writes one, gcore and crash handlers may not");
		return 0;
	}
	if (c->file_note == CORE_FILE_NOTE_BAD) {
		snprintf(m->nt_file_why, sizeof(m->nt_file_why),
			 "an NT_FILE note cut short or corrupt");
		return 0;
	}
	for (i = 0; i < c->nfiles; i++) {
		const struct core_file_map *fm = &c->files[i];

		if (fm->path[0] != '/' || fm->offset)
			continue;
		if (core__read(c, fm->start, magic, sizeof(magic))) {
			undumped++;
			continue;
		}
		if (!core__image(c, fm->start, &img))
			continue;
		err = add_image(f, &img, fm->path, CORE_MOD_NT_FILE);
		if (err < 0)
			return err;
	}
	if (undumped)
		snprintf(m->nt_file_why, sizeof(m->nt_file_why),
			 "%u file%s NT_FILE names without %s first page in the core (coredump_filter without bit 4?)",
			 undumped, undumped == 1 ? "" : "s",
			 undumped == 1 ? "its" : "their");
	return 0;
}

/* The executable's image, from AT_PHDR: its ELF header is normally the
 * page the program headers are in; else PT_PHDR gives the bias. */
static bool exe_image(const struct core *c, struct core_image *img)
{
	Elf64_Phdr ph[CORE_PHDR_MAX];
	uint64_t base = c->auxv.phdr & ~(PAGE - 1), bias = 0;
	bool have_bias = false;
	unsigned int i, n = (unsigned int)c->auxv.phnum;

	if (core__image(c, base, img) && base + img->phoff == c->auxv.phdr)
		return true;
	if (core__read(c, c->auxv.phdr, ph, n * sizeof(ph[0])))
		return false;
	for (i = 0; i < n && !have_bias; i++)
		if (ph[i].p_type == PT_PHDR) {
			bias = c->auxv.phdr - ph[i].p_vaddr;
			have_bias = true;
		}
	for (i = 0; i < n && have_bias; i++)
		if (ph[i].p_type == PT_LOAD)
			return core__image(c, bias + ph[i].p_vaddr -
					   ph[i].p_offset, img) &&
			       img->bias == bias;
	return false;
}

static const Elf64_Phdr *find_phdr(const struct core_image *img,
				   uint32_t type)
{
	unsigned int i;

	for (i = 0; i < img->phnum; i++)
		if (img->ph[i].p_type == type)
			return &img->ph[i];
	return NULL;
}

/* The executable's path: NT_FILE's entry at its header, else AT_EXECFN,
 * else the first word of pr_psargs (if not cut at its 80 bytes).  NULL
 * with why filled when none is absolute. */
static char *exe_path(const struct core *c, const struct core_image *img,
		      char *why, size_t why_len)
{
	char path[PATH_CAP];
	size_t i, n;

	for (i = 0; i < c->nfiles; i++)
		if (c->files[i].start == img->base && !c->files[i].offset &&
		    c->files[i].path[0] == '/')
			return strdup(c->files[i].path);
	path[0] = 0;
	if (c->auxv.execfn &&
	    !core__read_string(c, c->auxv.execfn, path, sizeof(path)) &&
	    path[0] == '/')
		return strdup(path);
	n = strcspn(c->psargs, " ");
	if (c->psargs[0] == '/' && n < sizeof(c->psargs) - 1)
		return strndup(c->psargs, n);
	if (path[0] || c->psargs[0])
		snprintf(why, why_len,
			 "the executable's path in the core is relative (%.*s)",
			 64, path[0] ? path : c->psargs);
	else
		snprintf(why, why_len,
			 "the executable's path is not in the core (no AT_EXECFN string, no pr_psargs)");
	return NULL;
}

/* DT_DEBUG of the executable's dynamic section: &_r_debug, 0 if the
 * loader left it 0, or -1 with why. */
static int64_t dt_debug(const struct core *c, const struct core_image *img,
			const Elf64_Phdr *dyn, char *why, size_t why_len)
{
	Elf64_Dyn d[64];
	uint64_t at = img->bias + dyn->p_vaddr, n = dyn->p_memsz / sizeof(d[0]);
	uint64_t i = 0, j, take;

	if (n > MAX_DYN)
		n = MAX_DYN;
	while (i < n) {
		take = n - i < 64 ? n - i : 64;
		if (core__read(c, at + i * sizeof(d[0]), d, take * sizeof(d[0]))) {
			snprintf(why, why_len,
				 "the executable's dynamic section (0x%" PRIx64 ") is not in the core",
				 at);
			return -1;
		}
		for (j = 0; j < take; j++) {
			if (d[j].d_tag == DT_NULL)
				goto out_none;
			if (d[j].d_tag == DT_DEBUG) {
				if (d[j].d_un.d_ptr >= c->user_end) {
					snprintf(why, why_len,
						 "the executable's DT_DEBUG is no address (0x%" PRIx64 ")",
						 (uint64_t)d[j].d_un.d_ptr);
					return -1;
				}
				return (int64_t)d[j].d_un.d_ptr;
			}
		}
		i += take;
	}
out_none:
	snprintf(why, why_len, "the executable's dynamic section has no DT_DEBUG entry");
	return -1;
}

struct walk_counts {
	unsigned int no_name, no_header, not_theirs;
};

/* One entry of the loader's list: its module, if the core has its
 * headers and they are the ones the entry describes. */
static int walk_entry(struct finder *f, const struct link_map64 *lm,
		      uint64_t exe_dyn, struct walk_counts *n)
{
	struct core_image img;
	const Elf64_Phdr *dyn;
	char name[PATH_CAP];

	if (lm->l_ld == exe_dyn)
		return 0;		/* the executable, named on its own */
	if (!lm->l_name ||
	    core__read_string(f->c, lm->l_name, name, sizeof(name))) {
		n->no_name++;
		return 0;
	}
	if (name[0] != '/')
		return 0;		/* the vDSO; a relative dlopen */
	if (!core__image(f->c, lm->l_addr, &img)) {
		n->no_header++;
		return 0;
	}
	dyn = find_phdr(&img, PT_DYNAMIC);
	if (img.bias != lm->l_addr ||
	    (dyn && img.bias + dyn->p_vaddr != lm->l_ld)) {
		n->not_theirs++;
		return 0;
	}
	return add_image(f, &img, name, CORE_MOD_LOADER);
}

static int walk_list(struct finder *f, uint64_t r_debug, uint64_t exe_dyn)
{
	struct core_modules *m = f->m;
	char *why = m->loader_why;
	size_t why_len = sizeof(m->loader_why);
	struct walk_counts n = { 0 };
	struct r_debug64 rd;
	struct link_map64 lm;
	uint64_t *seen, at, prev = 0;
	size_t nseen = 0, i;
	int err = 0;

	if (core__read(f->c, r_debug, &rd, sizeof(rd))) {
		snprintf(why, why_len, "r_debug (0x%" PRIx64 ") is not in the core",
			 r_debug);
		return 0;
	}
	if (rd.r_version < 1 || rd.r_version > 2) {
		snprintf(why, why_len, "r_debug at 0x%" PRIx64 " has version %d, not 1 or 2",
			 r_debug, rd.r_version);
		return 0;
	}
	seen = malloc(MAX_LINK_MAPS * sizeof(*seen));
	if (!seen)
		return -ENOMEM;
	for (at = rd.r_map; at; prev = at, at = lm.l_next) {
		for (i = 0; i < nseen && seen[i] != at; i++)
			;
		if (i < nseen) {
			snprintf(why, why_len, "the loader's list loops (at 0x%" PRIx64 ")", at);
			break;
		}
		if (nseen == MAX_LINK_MAPS) {
			snprintf(why, why_len, "the loader's list runs past %u entries",
				 MAX_LINK_MAPS);
			break;
		}
		seen[nseen++] = at;
		if (core__read(f->c, at, &lm, sizeof(lm))) {
			snprintf(why, why_len, "an entry of the loader's list (0x%" PRIx64 ") is not in the core",
				 at);
			break;
		}
		if (lm.l_prev != prev) {
			snprintf(why, why_len, "the loader's list is inconsistent at 0x%" PRIx64 " (l_prev)",
				 at);
			break;
		}
		err = walk_entry(f, &lm, exe_dyn, &n);
		if (err < 0)
			break;
	}
	free(seen);
	if (err < 0)
		return err;
	if (!why[0] && (n.no_name || n.no_header || n.not_theirs))
		snprintf(why, why_len,
			 "of the loader's list, %u entr%s without a name in the core, %u without an ELF header there, %u whose headers do not match",
			 n.no_name, n.no_name == 1 ? "y" : "ies", n.no_header,
			 n.not_theirs);
	return 0;
}

/* The loader itself, from AT_BASE, if the list did not name it. */
static int add_interp(struct finder *f, const struct core_image *exe)
{
	const Elf64_Phdr *interp = find_phdr(exe, PT_INTERP);
	struct core_image img;
	char path[PATH_CAP];
	size_t len;

	if (!f->c->auxv.base || !interp || !interp->p_filesz ||
	    !core__image(f->c, f->c->auxv.base, &img))
		return 0;
	len = interp->p_filesz < sizeof(path) ? interp->p_filesz : sizeof(path);
	if (core__read_string(f->c, exe->bias + interp->p_vaddr, path, len) ||
	    path[0] != '/')
		return 0;
	return add_image(f, &img, path, CORE_MOD_LOADER);
}

static int from_loader(struct finder *f)
{
	const struct core *c = f->c;
	struct core_modules *m = f->m;
	char *why = m->loader_why, exe_why[160] = "";
	size_t why_len = sizeof(m->loader_why);
	const Elf64_Phdr *dyn;
	struct core_image exe;
	int64_t r_debug;
	char *path;
	int err;

	if (!c->has_auxv) {
		snprintf(why, why_len, "no NT_AUXV note to find the executable by");
		return 0;
	}
	if (!c->auxv.phdr || !c->auxv.phnum || c->auxv.phnum > CORE_PHDR_MAX) {
		snprintf(why, why_len, "NT_AUXV has no usable AT_PHDR, AT_PHNUM");
		return 0;
	}
	if (!exe_image(c, &exe)) {
		snprintf(why, why_len,
			 "the executable's ELF header (AT_PHDR 0x%" PRIx64 ") is not in the core",
			 c->auxv.phdr);
		return 0;
	}
	path = m->exe ? strdup(m->exe) : exe_path(c, &exe, exe_why, sizeof(exe_why));
	if (path) {
		err = add_image(f, &exe, path, CORE_MOD_LOADER);
		free(path);
		if (err < 0)
			return err;
	} else if (m->exe || !exe_why[0]) {
		return -ENOMEM;
	}
	dyn = find_phdr(&exe, PT_DYNAMIC);
	if (!dyn) {
		snprintf(why, why_len, "%s%sa static executable (no loader's list)",
			 exe_why, exe_why[0] ? "; " : "");
		return 0;
	}
	r_debug = dt_debug(c, &exe, dyn, why, why_len);
	if (!r_debug)
		snprintf(why, why_len, "the executable's DT_DEBUG is 0 (no r_debug: the loader did not fill it in, or it was cleared)");
	if (r_debug > 0) {
		err = walk_list(f, (uint64_t)r_debug, exe.bias + dyn->p_vaddr);
		if (err < 0)
			return err;
	}
	err = add_interp(f, &exe);
	if (err < 0)
		return err;
	if (exe_why[0]) {
		/* the executable's name matters most: it goes first */
		char rest[sizeof(m->loader_why)];
		int n;

		memcpy(rest, why, sizeof(rest));
		n = snprintf(why, why_len, "%s", exe_why);
		if (rest[0] && n > 0 && (size_t)n < why_len)
			snprintf(why + n, why_len - (size_t)n, "; %s", rest);
	}
	return 0;
}

int core_modules__find(const struct core *c, struct core_modules *m)
{
	struct finder f = { .c = c, .m = m };
	int err;

	memset(m, 0, sizeof(*m));
	err = from_nt_file(&f);
	if (!err)
		err = from_loader(&f);
	return err;
}

void core_modules__free(struct core_modules *m)
{
	size_t i;

	for (i = 0; i < m->nsegs; i++)
		free(m->segs[i].path);
	free(m->segs);
	free(m->exe);
	memset(m, 0, sizeof(*m));
}
