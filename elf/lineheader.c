/* SPDX-License-Identifier: MIT */
/*
 * lineheader.c - the header of a DWARF line table, and its directories and
 * files named as libdw names them (see elf/linetable.c for why, and for
 * what is refused rather than read).
 *
 * Before DWARF 5, directory 0 is the CU's DW_AT_comp_dir and file 0 is
 * libdw's "???"; the lists are NUL-terminated strings.  DWARF 5 describes
 * each entry with (content, form) pairs: paths as inline strings or
 * offsets into .debug_line_str or .debug_str, directory indexes as
 * constants; an MD5 (data16) or other content is skipped.  Forms that
 * need the CU (strx, via DW_AT_str_offsets_base) are refused.  A name is
 * its path when absolute, else its directory, '/' and its path (left
 * relative when the directory is unknown).
 */
#include "elf/linetable_internal.h"

#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include "elf/array.h"

/* The string at offset of a string section, or NULL. */
static const char *section_string(const uint8_t *sec, size_t size,
				  uint64_t offset)
{
	return sec && offset < size ? cstring(sec + offset, sec + size) : NULL;
}

/* One directory or file entry of a DWARF 5 table: its path, and its
 * directory index if want_dir.  0 or -ENOTSUP. */
static int read_entry(struct reader *r, const uint64_t (*formats)[2],
		       size_t nformats, const struct header *h,
		       const struct line_sections *sec, const char **path,
		       uint64_t *dir, bool want_dir)
{
	*path = NULL;
	*dir = UINT64_MAX;
	for (size_t i = 0; i < nformats && !r->bad; i++) {
		uint64_t content = formats[i][0], form = formats[i][1], v = 0;
		const char *s = NULL;

		switch (form) {
		case DW_FORM_string:
			s = read_cstring(r);
			break;
		case DW_FORM_line_strp:
			v = read_fixed(r, h->offset_size);
			s = section_string(sec->line_str, sec->line_str_size, v);
			if (!s && content == DW_LNCT_path)
				return -ENOTSUP;
			break;
		case DW_FORM_strp:
			v = read_fixed(r, h->offset_size);
			s = section_string(sec->str, sec->str_size, v);
			if (!s && content == DW_LNCT_path)
				return -ENOTSUP;
			break;
		case DW_FORM_udata:
			v = read_uleb(r);
			break;
		case DW_FORM_data1:
			v = read_fixed(r, 1);
			break;
		case DW_FORM_data2:
			v = read_fixed(r, 2);
			break;
		case DW_FORM_data4:
			v = read_fixed(r, 4);
			break;
		case DW_FORM_data8:
			v = read_fixed(r, 8);
			break;
		case DW_FORM_data16:
			read_fixed(r, 8);
			read_fixed(r, 8);
			if (content == DW_LNCT_path ||
			    content == DW_LNCT_directory_index)
				return -ENOTSUP;
			break;
		case DW_FORM_block:
			v = read_uleb(r);
			if (v > (uint64_t)(r->end - r->p))
				return -ENOTSUP;
			r->p += v;
			if (content == DW_LNCT_path ||
			    content == DW_LNCT_directory_index)
				return -ENOTSUP;
			break;
		default:
			return -ENOTSUP;	/* strx and the like: via the CU */
		}
		if (content == DW_LNCT_path) {
			if (!s)
				return -ENOTSUP;	/* a number for a path */
			*path = s;
		} else if (content == DW_LNCT_directory_index && want_dir) {
			if (s)
				return -ENOTSUP;
			*dir = v;
		}
	}
	return !r->bad && *path && (!want_dir || *dir != UINT64_MAX) ? 0 :
									-ENOTSUP;
}

/* A DWARF 5 entry format: (content, form) pairs.  0 or -ENOTSUP. */
static int read_formats(struct reader *r, uint64_t (*formats)[2],
			 size_t *n)
{
	*n = read_fixed(r, 1);
	for (size_t i = 0; i < *n; i++) {
		formats[i][0] = read_uleb(r);
		formats[i][1] = read_uleb(r);
		/* libdw keeps them in 16 bits: wider ones it reads as others */
		if (formats[i][0] > 0xffff || formats[i][1] > 0xffff)
			return -ENOTSUP;
	}
	return r->bad ? -ENOTSUP : 0;
}

/* libdw's name of file 0 before DWARF 5 (not joined to a directory). */
static const char no_file[] = "???";

struct file_entry {
	const char *path;	/* in a section, or no_file */
	uint64_t dir;		/* index into dirs */
};

struct file_names {
	const char **dirs;
	size_t ndirs;
	struct file_entry *files;
	size_t nfiles, cap;
};

static int add_file(struct file_names *f, const char *path, uint64_t dir)
{
	int err;

	if (dir >= f->ndirs)
		return -ENOTSUP;
	err = array__grow((void **)&f->files, &f->cap, f->nfiles + 1,
			  sizeof(*f->files));
	if (err)
		return err;
	f->files[f->nfiles++] = (struct file_entry){ path, dir };
	return 0;
}

/* The directories and files of the header at r (which ends at h->program).
 * 0, -ENOMEM or -ENOTSUP. */
static int read_names(struct reader *r, const struct header *h,
		      const struct line_sections *sec, const char *comp_dir,
		      struct file_names *f)
{
	uint64_t formats[256][2], dir;
	const char *path;
	size_t nformats;
	int err;

	if (h->version < 5) {
		/* Directory 0 is the CU's; file 0 is "???". */
		size_t n = 1;

		for (struct reader c = *r; !c.bad && c.p < c.end && *c.p;
		     read_cstring(&c))
			n++;
		f->dirs = calloc(n, sizeof(*f->dirs));
		if (!f->dirs)
			return -ENOMEM;
		f->dirs[f->ndirs++] = comp_dir;
		while (r->p < r->end && *r->p && !r->bad)
			f->dirs[f->ndirs++] = read_cstring(r);
		if (r->bad || r->p >= r->end || f->ndirs != n)
			return -ENOTSUP;
		r->p++;
		err = add_file(f, no_file, 0);
		while (!err && r->p < r->end && *r->p) {
			path = read_cstring(r);
			dir = read_uleb(r);
			read_uleb(r);	/* mtime */
			read_uleb(r);	/* length */
			if (r->bad)
				return -ENOTSUP;
			err = add_file(f, path, dir);
		}
		if (err)
			return err;
		if (r->p >= r->end)
			return -ENOTSUP;
		r->p++;
		return 0;
	}

	if (read_formats(r, formats, &nformats))
		return -ENOTSUP;
	dir = read_uleb(r);
	if (r->bad || (nformats == 0 && dir) ||
	    (nformats && dir > (uint64_t)(r->end - r->p) / nformats))
		return -ENOTSUP;
	f->dirs = calloc(dir ? dir : 1, sizeof(*f->dirs));
	if (!f->dirs)
		return -ENOMEM;
	for (uint64_t i = 0, n = dir; i < n; i++) {
		if (read_entry(r, formats, nformats, h, sec, &path, &dir,
			       false))
			return -ENOTSUP;
		f->dirs[f->ndirs++] = path;
	}

	if (read_formats(r, formats, &nformats))
		return -ENOTSUP;
	dir = read_uleb(r);	/* the file count */
	if (r->bad || (nformats == 0 && dir) ||
	    (nformats && dir > (uint64_t)(r->end - r->p) / nformats))
		return -ENOTSUP;
	if (dir == 0)
		return -ENOTSUP;	/* libdw's "???" alone: left to it */
	for (uint64_t i = 0, n = dir; i < n; i++) {
		if (read_entry(r, formats, nformats, h, sec, &path, &dir,
			       true))
			return -ENOTSUP;
		err = add_file(f, path, dir);
		if (err)
			return err;
	}
	return 0;
}

/* A file's name as libdw builds it: NULL if it is its path as it is. */
static const char *file_dir(const struct file_names *f, size_t i)
{
	const struct file_entry *e = &f->files[i];

	if (e->path == no_file || e->path[0] == '/')
		return NULL;
	return f->dirs[e->dir];
}

/* Join each file's directory and name as libdw does, into t. */
static int name_files(struct line_table *t, const struct file_names *f)
{
	size_t size = 1, at = 0;

	for (size_t i = 0; i < f->nfiles; i++) {
		const char *dir = file_dir(f, i);

		if (dir)
			size += strlen(dir) + 1 + strlen(f->files[i].path) + 1;
	}
	t->files = calloc(f->nfiles ? f->nfiles : 1, sizeof(*t->files));
	t->names = malloc(size);
	if (!t->files || !t->names)
		return -ENOMEM;
	t->nfiles = f->nfiles;
	for (size_t i = 0; i < f->nfiles; i++) {
		const char *dir = file_dir(f, i);
		size_t len;

		if (!dir) {
			t->files[i] = f->files[i].path;
			continue;
		}
		t->files[i] = t->names + at;
		len = strlen(dir);
		memcpy(t->names + at, dir, len);
		at += len;
		t->names[at++] = '/';
		len = strlen(f->files[i].path) + 1;
		memcpy(t->names + at, f->files[i].path, len);
		at += len;
	}
	return 0;
}

int line_header__read(const struct line_sections *sec, uint64_t offset,
		       unsigned int address_size, struct reader *r,
		       struct header *h)
{
	uint64_t length, header_length;
	const uint8_t *unit;

	if (!sec->line || offset >= sec->line_size)
		return -ENOTSUP;
	*r = (struct reader){ .p = sec->line + offset,
			     .end = sec->line + sec->line_size };
	*h = (struct header){ .offset_size = 4 };
	length = read_fixed(r, 4);
	if (length == 0xffffffff) {
		h->offset_size = 8;
		length = read_fixed(r, 8);
	} else if (length >= 0xfffffff0) {
		return -ENOTSUP;
	}
	if (r->bad || length > (uint64_t)(r->end - r->p))
		return -ENOTSUP;
	unit = r->p;
	h->end = unit + length;
	r->end = h->end;
	h->version = read_fixed(r, 2);
	if (r->bad || h->version < 2 || h->version > 5)
		return -ENOTSUP;
	if (h->version >= 5 &&
	    (read_fixed(r, 1) != address_size || read_fixed(r, 1) != 0))
		return -ENOTSUP;
	header_length = read_fixed(r, h->offset_size);
	if (r->bad || header_length > (uint64_t)(r->end - r->p))
		return -ENOTSUP;
	h->program = r->p + header_length;
	h->min_inst_len = read_fixed(r, 1);
	h->max_ops = h->version >= 4 ? read_fixed(r, 1) : 1;
	h->default_is_stmt = read_fixed(r, 1);
	h->line_base = (int8_t)read_fixed(r, 1);
	h->line_range = read_fixed(r, 1);
	h->opcode_base = read_fixed(r, 1);
	/* Opcodes up to DW_LNS_set_isa are standard and checked below;
	 * libdw also reads the set_discriminator check from slot 4. */
	if (r->bad || r->p > h->program || h->max_ops == 0 ||
	    h->default_is_stmt > 1 || h->opcode_base <= DW_LNS_set_isa ||
	    (size_t)(h->program - r->p) < (size_t)h->opcode_base - 1)
		return -ENOTSUP;
	h->opcode_lengths = r->p - 1;
	r->p += h->opcode_base - 1;
	r->end = h->program;	/* the names end where the program starts */
	return 0;
}

int line_header__names(struct reader *r, const struct header *h,
		       const struct line_sections *sec, const char *comp_dir,
		       struct line_table *t)
{
	struct file_names f = { 0 };
	int err;

	err = read_names(r, h, sec, comp_dir, &f);
	if (!err && r->p != h->program)
		err = -ENOTSUP;
	if (!err)
		err = name_files(t, &f);
	free(f.dirs);
	free(f.files);
	return err;
}
