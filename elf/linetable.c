/* SPDX-License-Identifier: MIT */
/*
 * linetable.c - one compile unit's DWARF line table, decoded without libdw.
 *
 * Finding the line of an address was the largest part of symbolizing a
 * big C++ library: on Ceph's libceph-common, dwarf_getsrc_die() took 0.36 s
 * of 0.8 s of one thread's lookups.  libdw decodes a CU's line program
 * into one allocated node per row (beyond the first 2048), then sorts an
 * array of pointers to them with qsort(); Ceph's CUs have tens of
 * thousands of rows each.  Here rows are 16 bytes in one array, decoded in
 * order, and sorted by a natural merge sort, which costs next to nothing
 * on what a line program holds: runs of ascending addresses, one run per
 * sequence.
 *
 * The answers must be libdw's, byte for byte, since the caller mixes both
 * (tables refused here go to libdw).  So the order and the lookup are
 * libdw's (libdw/dwarf_getsrclines.c, dwarf_getsrc_die.c): rows sorted by
 * address, a row that ends a sequence before other rows at the same
 * address, otherwise in table order; the last row of the table always
 * counts as an end of sequence; a lookup takes the last row at or below
 * the address unless it ends a sequence.  File names are built as libdw
 * builds them: an absolute name as it is, else the directory, '/' and the
 * name, where directory 0 before DWARF 5 is the CU's DW_AT_comp_dir (and
 * the name stays relative without one); file 0 before DWARF 5 is "???".
 *
 * And a table this reader might read differently from libdw is refused
 * (-ENOTSUP), never guessed at: anything malformed (libdw would refuse it
 * too, or read it some way of its own), values that do not fit the
 * fields of libdw 0.188's Dwarf_Line (libdw refuses the table then), an
 * extended opcode whose length byte is not a one-byte ULEB128 (libdw reads
 * one byte), DW_LNE_set_address of another size than the CU's addresses,
 * DW_LNE_define_file, and header forms other than strings, string offsets
 * and constants.  GCC and clang write none of these.
 *
 * The input is not trusted: every read is bounds-checked, and the row
 * array grows by doubling with a check on the count.
 */
#include "elf/linetable.h"

#include <dwarf.h>
#include <errno.h>
#include <gelf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "elf/array.h"

/* In Dwarf_Line's bit fields (libdw 0.188, libdw/libdwP.h). */
#define MAX_COLUMN	0xffffu
#define MAX_ISA		0xffu
#define MAX_DISCRIMINATOR	0xffffffu
#define FILE_END	(1u << 31)	/* row.file_end: ends a sequence */

struct row {
	uint64_t addr;
	int32_t line;
	uint32_t file_end;	/* file index, FILE_END if it ends one */
};

struct line_table {
	struct row *rows;
	size_t nrows;
	const char **files;	/* by index, as dwarf_linesrc() names them */
	size_t nfiles;
	char *names;		/* joined names the files point into */
};

struct reader {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t read_fixed(struct reader *r, unsigned int size)
{
	uint64_t v = 0;

	if (r->p > r->end || (size_t)(r->end - r->p) < size) {
		r->bad = true;
		r->p = r->end;
		return 0;
	}
	/* Little-endian: the only byte order this tool reads. */
	for (unsigned int i = 0; i < size; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += size;
	return v;
}

static uint64_t read_uleb(struct reader *r)
{
	uint64_t v = 0;

	for (unsigned int shift = 0; r->p < r->end; shift += 7) {
		uint8_t b = *r->p++;

		if (shift >= 64 || (shift == 63 && (b & 0x7e)))
			break;		/* too wide: bad */
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

static int64_t read_sleb(struct reader *r)
{
	uint64_t v = 0;

	for (unsigned int shift = 0; r->p < r->end; shift += 7) {
		uint8_t b = *r->p++;

		if (shift >= 63)
			break;		/* wider than libdw's int: refuse */
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			if ((b & 0x40) && shift + 7 < 64)
				v |= ~(uint64_t)0 << (shift + 7);
			return (int64_t)v;
		}
	}
	r->bad = true;
	return 0;
}

/* A NUL-terminated string at p inside [p, end), or NULL. */
static const char *cstring(const uint8_t *p, const uint8_t *end)
{
	return p < end && memchr(p, 0, (size_t)(end - p)) ? (const char *)p :
							    NULL;
}

static const char *read_cstring(struct reader *r)
{
	const char *s = cstring(r->p, r->end);

	if (!s) {
		r->bad = true;
		return NULL;
	}
	r->p += strlen(s) + 1;
	return s;
}

/* The string at offset of a string section, or NULL. */
static const char *section_string(const uint8_t *sec, size_t size,
				  uint64_t offset)
{
	return sec && offset < size ? cstring(sec + offset, sec + size) : NULL;
}

struct header {
	unsigned int version, offset_size;
	uint8_t min_inst_len, max_ops, default_is_stmt, line_range;
	uint8_t opcode_base;
	int8_t line_base;
	const uint8_t *opcode_lengths;	/* [1, opcode_base) */
	const uint8_t *program, *end;
};

/* One directory or file entry of a DWARF 5 table: its path, and its
 * directory index if want_dir.  false: refused. */
static bool read_entry(struct reader *r, const uint64_t (*formats)[2],
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
				return false;
			break;
		case DW_FORM_strp:
			v = read_fixed(r, h->offset_size);
			s = section_string(sec->str, sec->str_size, v);
			if (!s && content == DW_LNCT_path)
				return false;
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
				return false;
			break;
		case DW_FORM_block:
			v = read_uleb(r);
			if (v > (uint64_t)(r->end - r->p))
				return false;
			r->p += v;
			if (content == DW_LNCT_path ||
			    content == DW_LNCT_directory_index)
				return false;
			break;
		default:
			return false;	/* strx and the like: via the CU */
		}
		if (content == DW_LNCT_path) {
			if (!s)
				return false;	/* a number for a path */
			*path = s;
		} else if (content == DW_LNCT_directory_index && want_dir) {
			if (s)
				return false;
			*dir = v;
		}
	}
	return !r->bad && *path && (!want_dir || *dir != UINT64_MAX);
}

/* A DWARF 5 entry format: (content, form) pairs.  false: refused. */
static bool read_formats(struct reader *r, uint64_t (*formats)[2],
			 size_t *n)
{
	*n = read_fixed(r, 1);
	for (size_t i = 0; i < *n; i++) {
		formats[i][0] = read_uleb(r);
		formats[i][1] = read_uleb(r);
	}
	return !r->bad;
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

	if (!read_formats(r, formats, &nformats))
		return -ENOTSUP;
	dir = read_uleb(r);
	if (r->bad || (nformats == 0 && dir) ||
	    (nformats && dir > (uint64_t)(r->end - r->p) / nformats))
		return -ENOTSUP;
	f->dirs = calloc(dir ? dir : 1, sizeof(*f->dirs));
	if (!f->dirs)
		return -ENOMEM;
	for (uint64_t i = 0, n = dir; i < n; i++) {
		if (!read_entry(r, formats, nformats, h, sec, &path, &dir,
				false))
			return -ENOTSUP;
		f->dirs[f->ndirs++] = path;
	}

	if (!read_formats(r, formats, &nformats))
		return -ENOTSUP;
	dir = read_uleb(r);	/* the file count */
	if (r->bad || (nformats == 0 && dir) ||
	    (nformats && dir > (uint64_t)(r->end - r->p) / nformats))
		return -ENOTSUP;
	if (dir == 0)
		return -ENOTSUP;	/* libdw's "???" alone: left to it */
	for (uint64_t i = 0, n = dir; i < n; i++) {
		if (!read_entry(r, formats, nformats, h, sec, &path, &dir,
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

/* The header at offset: fields into h, r left at its file names. */
static int read_header(const struct line_sections *sec, uint64_t offset,
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

struct state {
	uint64_t addr;
	uint64_t op_index;
	uint64_t file;
	int64_t line;
	uint64_t column;
	uint8_t is_stmt;
	uint64_t isa;
};

static void reset(struct state *s, const struct header *h)
{
	*s = (struct state){ .file = 1, .line = 1,
			     .is_stmt = h->default_is_stmt };
}

/* Every row takes at least one byte of the program: cap is its size. */
static int add_row(struct line_table *t, size_t cap, const struct state *s,
		   bool end)
{
	if (s->line < INT_MIN || s->line > INT_MAX || s->file >= FILE_END ||
	    s->column > MAX_COLUMN || s->isa > MAX_ISA || s->op_index > 0xff ||
	    t->nrows == cap)
		return -ENOTSUP;
	t->rows[t->nrows++] = (struct row){
		.addr = s->addr, .line = (int32_t)s->line,
		.file_end = (uint32_t)s->file | (end ? FILE_END : 0),
	};
	return 0;
}

/* libdw's advance: in its types (32-bit), refused where they would wrap. */
static int advance(struct state *s, const struct header *h, uint64_t adv)
{
	uint64_t ops = s->op_index + adv;

	if (adv > UINT_MAX || ops > UINT_MAX ||
	    (uint64_t)h->min_inst_len * (ops / h->max_ops) > UINT_MAX)
		return -ENOTSUP;
	s->addr += h->min_inst_len * (ops / h->max_ops);
	s->op_index = ops % h->max_ops;
	return 0;
}

/* The standard opcode op takes n operands, as libdw checks. */
static bool takes(const struct header *h, unsigned int op, unsigned int n)
{
	return h->opcode_lengths[op] == n;
}

static int run_program(struct line_table *t, const struct header *h,
		       unsigned int address_size)
{
	struct reader r = { h->program, h->end, false };
	size_t cap = (size_t)(h->end - h->program);
	struct state s;
	int err = 0;

	/* Allocated once, for as many rows as the program has bytes: pages
	 * past the rows are never touched, and nothing is copied to grow. */
	if (cap > SIZE_MAX / sizeof(*t->rows))
		return -ENOTSUP;
	t->rows = malloc((cap ? cap : 1) * sizeof(*t->rows));
	if (!t->rows)
		return -ENOMEM;
	reset(&s, h);
	while (r.p < r.end && !err) {
		unsigned int op = *r.p++;

		if (op >= h->opcode_base) {
			unsigned int adj = op - h->opcode_base;

			if (!h->line_range)
				return -ENOTSUP;
			s.line += h->line_base + (int)(adj % h->line_range);
			if (s.line < INT_MIN || s.line > INT_MAX)
				return -ENOTSUP;	/* libdw's int */
			err = advance(&s, h, adj / h->line_range);
			if (!err)
				err = add_row(t, cap, &s, false);
			continue;
		}
		if (op == 0) {
			const uint8_t *start;
			unsigned int len;

			if (r.end - r.p < 2)
				return -ENOTSUP;
			len = *r.p++;
			if (len == 0 || len >= 0x80 ||
			    (size_t)(r.end - r.p) < len)
				return -ENOTSUP;
			start = r.p;
			op = *r.p++;
			switch (op) {
			case DW_LNE_end_sequence:
				err = add_row(t, cap, &s, true);
				reset(&s, h);
				break;
			case DW_LNE_set_address:
				if (len != 1 + address_size ||
				    (address_size != 4 && address_size != 8))
					return -ENOTSUP;
				s.addr = read_fixed(&r, address_size);
				s.op_index = 0;
				break;
			case DW_LNE_set_discriminator:
				if (!takes(h, DW_LNE_set_discriminator, 1) ||
				    read_uleb(&r) > MAX_DISCRIMINATOR)
					return -ENOTSUP;
				break;
			case DW_LNE_define_file:
				return -ENOTSUP;
			default:
				r.p = start + len;
				break;
			}
			if (r.bad || r.p != start + len)
				return -ENOTSUP;
			continue;
		}
		switch (op) {
		case DW_LNS_copy:
			if (!takes(h, op, 0))
				return -ENOTSUP;
			err = add_row(t, cap, &s, false);
			break;
		case DW_LNS_advance_pc:
			if (!takes(h, op, 1))
				return -ENOTSUP;
			err = advance(&s, h, read_uleb(&r));
			break;
		case DW_LNS_advance_line: {
			int64_t d;

			if (!takes(h, op, 1))
				return -ENOTSUP;
			d = read_sleb(&r);
			if (d < INT_MIN || d > INT_MAX)
				return -ENOTSUP;
			s.line += d;
			if (s.line < INT_MIN || s.line > INT_MAX)
				return -ENOTSUP;
			break;
		}
		case DW_LNS_set_file:
			if (!takes(h, op, 1))
				return -ENOTSUP;
			s.file = read_uleb(&r);
			if (s.file > UINT_MAX)
				return -ENOTSUP;
			break;
		case DW_LNS_set_column:
			if (!takes(h, op, 1))
				return -ENOTSUP;
			s.column = read_uleb(&r);
			if (s.column > UINT_MAX)
				return -ENOTSUP;
			break;
		case DW_LNS_negate_stmt:
			if (!takes(h, op, 0))
				return -ENOTSUP;
			s.is_stmt = !s.is_stmt;
			break;
		case DW_LNS_set_basic_block:
		case DW_LNS_set_prologue_end:
		case DW_LNS_set_epilogue_begin:
			if (!takes(h, op, 0))
				return -ENOTSUP;
			break;
		case DW_LNS_const_add_pc:
			if (!takes(h, op, 0) || !h->line_range)
				return -ENOTSUP;
			err = advance(&s, h, (255u - h->opcode_base) /
					     h->line_range);
			break;
		case DW_LNS_fixed_advance_pc:
			if (!takes(h, op, 1))
				return -ENOTSUP;
			s.addr += read_fixed(&r, 2);
			s.op_index = 0;
			break;
		case DW_LNS_set_isa:
			if (!takes(h, op, 1))
				return -ENOTSUP;
			s.isa = read_uleb(&r);
			break;
		default:	/* unknown standard opcode: skip its operands */
			for (unsigned int n = h->opcode_lengths[op]; n; n--)
				read_uleb(&r);
			break;
		}
		/* libdw stops at the end; an operand cut short is bad. */
		if (r.bad)
			return -ENOTSUP;
	}
	return err;
}

/* a before b in libdw's order (a earlier in the table than b). */
static inline bool row_before(const struct row *a, const struct row *b)
{
	if (a->addr != b->addr)
		return a->addr < b->addr;
	return (a->file_end & FILE_END) > (b->file_end & FILE_END);
}

/*
 * Sort rows into libdw's order: a natural merge sort (stable, so equal
 * rows stay in table order), which is linear on the usual table of
 * ascending sequences in ascending order.
 */
static int sort_rows(struct line_table *t)
{
	struct row *a = t->rows, *tmp;
	size_t n = t->nrows, *runs, nruns = 0;

	if (n < 2)
		return 0;
	for (size_t i = 1; i < n; i++)
		nruns += row_before(&a[i], &a[i - 1]);
	if (nruns == 0)
		return 0;	/* one run: sorted */
	runs = malloc((nruns + 2) * sizeof(*runs));
	if (!runs)
		return -ENOMEM;
	nruns = 0;
	for (size_t i = 0; i < n; i++)
		if (i == 0 || row_before(&a[i], &a[i - 1]))
			runs[nruns++] = i;
	runs[nruns] = n;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp) {
		free(runs);
		return -ENOMEM;
	}
	while (nruns > 1) {
		size_t merged = 0;
		struct row *swap;

		for (size_t k = 0; k < nruns; k += 2) {
			size_t lo = runs[k], mid = runs[k + 1], hi, i, j, o;

			runs[merged++] = lo;
			if (k + 1 == nruns) {	/* the odd one out */
				memcpy(tmp + lo, a + lo, (n - lo) * sizeof(*a));
				break;
			}
			hi = runs[k + 2];
			i = lo;
			j = mid;
			o = lo;
			while (i < mid && j < hi)
				tmp[o++] = row_before(&a[j], &a[i]) ? a[j++] :
								      a[i++];
			memcpy(tmp + o, a + i, (mid - i) * sizeof(*a));
			o += mid - i;
			memcpy(tmp + o, a + j, (hi - j) * sizeof(*a));
		}
		runs[merged] = n;
		nruns = merged;
		swap = a;
		a = tmp;
		tmp = swap;
	}
	if (a != t->rows) {
		memcpy(t->rows, a, n * sizeof(*a));
		tmp = a;
	}
	free(tmp);
	free(runs);
	return 0;
}

void line_table__free(struct line_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t->files);
	free(t->names);
	free(t);
}

int line_table__decode(const struct line_sections *sec, uint64_t offset,
		       unsigned int address_size, const char *comp_dir,
		       struct line_table **table)
{
	struct file_names f = { 0 };
	struct line_table *t;
	struct header h;
	struct reader r;
	int err;

	*table = NULL;
	err = read_header(sec, offset, address_size, &r, &h);
	if (err)
		return err;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	err = read_names(&r, &h, sec, comp_dir, &f);
	if (!err && r.p != h.program)
		err = -ENOTSUP;
	if (!err)
		err = name_files(t, &f);
	if (!err)
		err = run_program(t, &h, address_size);
	if (!err)
		err = sort_rows(t);
	free(f.dirs);
	free(f.files);
	if (err) {
		line_table__free(t);
		return err;
	}
	/* libdw: the highest row always ends a sequence. */
	if (t->nrows)
		t->rows[t->nrows - 1].file_end |= FILE_END;
	*table = t;
	return 0;
}

bool line_table__find(const struct line_table *t, uint64_t pc, int *line,
		      const char **file)
{
	size_t lo = 0, hi = t->nrows;
	const struct row *row;
	uint32_t index;

	/* The first row above pc; the one before it is the candidate. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].addr <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	row = &t->rows[lo - 1];
	if (row->file_end & FILE_END)
		return false;
	index = row->file_end & ~FILE_END;
	*line = row->line;
	*file = index < t->nfiles ? t->files[index] : NULL;
	return true;
}

const char *line_table__file(const struct line_table *t, uint64_t index)
{
	return index < t->nfiles ? t->files[index] : NULL;
}

size_t line_table__rows(const struct line_table *t)
{
	return t->nrows;
}

void line_sections__of(Dwarf *dwarf, struct line_sections *sec)
{
	Elf *elf = dwarf ? dwarf_getelf(dwarf) : NULL;
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	*sec = (struct line_sections){ 0 };
	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		const uint8_t **data;
		const char *name;
		Elf_Data *d;
		GElf_Shdr sh;
		size_t *size;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    (sh.sh_flags & SHF_COMPRESSED))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (!strcmp(name, ".debug_line")) {
			data = &sec->line;
			size = &sec->line_size;
		} else if (!strcmp(name, ".debug_line_str")) {
			data = &sec->line_str;
			size = &sec->line_str_size;
		} else if (!strcmp(name, ".debug_str")) {
			data = &sec->str;
			size = &sec->str_size;
		} else {
			continue;
		}
		/* One of a name: which libdw reads is its call. */
		if (*data) {
			*sec = (struct line_sections){ 0 };
			return;
		}
		d = elf_getdata(scn, NULL);
		if (d && d->d_buf && d->d_size) {
			*data = d->d_buf;
			*size = d->d_size;
		}
	}
}

int line_table__of_cu(const struct line_sections *sec, Dwarf_Die *cudie,
		      struct line_table **table)
{
	Dwarf_Attribute attr;
	Dwarf_Word offset;
	Dwarf_Half version;
	uint8_t unit_type, address_size;

	*table = NULL;
	if (!cudie || dwarf_cu_info(cudie->cu, &version, &unit_type, NULL,
				    NULL, NULL, &address_size, NULL) ||
	    (unit_type != DW_UT_compile && unit_type != DW_UT_partial &&
	     unit_type != DW_UT_skeleton) ||
	    !dwarf_attr(cudie, DW_AT_stmt_list, &attr) ||
	    dwarf_formudata(&attr, &offset))
		return -ENOTSUP;
	return line_table__decode(sec, offset, address_size,
				  dwarf_formstring(dwarf_attr(cudie,
							      DW_AT_comp_dir,
							      &attr)),
				  table);
}
