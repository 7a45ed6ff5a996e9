/* SPDX-License-Identifier: MIT */
/*
 * linetable.c - one compile unit's DWARF line table, decoded without libdw.
 *
 * Finding the line of an address is a large part of symbolizing a big C++
 * library.  libdw decodes a CU's line program into one allocated node per
 * row (beyond the first 2048), then sorts an array of pointers to them
 * with qsort(), and a big C++ library's CUs have tens of thousands of rows
 * each.  Here rows are 16 bytes in one array, decoded in order, and sorted
 * by a natural merge sort, which costs next to nothing on what a line
 * program holds: runs of ascending addresses, one run per sequence.
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
 * One difference is kept on purpose: libdw keeps a table by its offset,
 * so two CUs sharing one DWARF 4 table (their directory 0 being each
 * one's DW_AT_comp_dir) both get names joined to the comp_dir of the CU
 * asked about first; here each CU's are joined to its own, which does not
 * depend on the order CUs are asked about (nor on --jobs).
 *
 * And a table this reader might read differently from libdw is refused
 * (-ENOTSUP), never guessed at: anything malformed (libdw would refuse it
 * too, or read it some way of its own), values that do not fit the
 * fields of libdw 0.188's Dwarf_Line (libdw refuses the table then), an
 * extended opcode whose length byte is not a one-byte ULEB128 (libdw reads
 * one byte), DW_LNE_set_address of another size than the CU's addresses,
 * DW_LNE_define_file and vendors' extended opcodes (libdw reads NVIDIA's
 * its own way), header forms other than strings, string offsets and
 * constants, content codes or forms past 16 bits (libdw truncates them),
 * a DW_AT_stmt_list of a form libdw does not take as a section offset,
 * and files where libdw could take another section than .debug_line
 * (.zdebug_*, group members).  GCC and clang write none of these.
 *
 * The header and file names are read in elf/lineheader.c.  DWARF 5 tables
 * need nothing of their CU, so a set of them (line_tables__read()) can be
 * decoded from the section alone, by a thread that would otherwise wait
 * (elf/symbolize_modules.c), and shared by every thread.
 *
 * The input is not trusted: every read is bounds-checked, and there is
 * room for at most one row per byte of the program, which is all a
 * program can make.
 */
#include "elf/linetable_internal.h"

#include <dwarf.h>
#include <errno.h>
#include <gelf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "elf/array.h"
#include "elf/runsort.h"

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
			default:	/* define_file, vendors' (libdw reads
					 * NVIDIA's its own way): refused */
				return -ENOTSUP;
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

/* Rows into libdw's order: in a table of ascending sequences in
 * ascending order, one run. */
RUNSORT_DEFINE(sort_rows, struct row, row_before)

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
	struct line_table *t;
	struct header h;
	struct reader r;
	int err;

	*table = NULL;
	err = line_header__read(sec, offset, address_size, &r, &h);
	if (err)
		return err;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	err = line_header__names(&r, &h, sec, comp_dir, t);
	if (!err)
		err = run_program(t, &h, address_size);
	if (!err && t->nrows) {
		/* Room was made for a row per byte: give back the rest. */
		struct row *rows = realloc(t->rows, t->nrows * sizeof(*rows));

		if (rows)
			t->rows = rows;
	}
	if (!err)
		err = sort_rows(t->rows, t->nrows);
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

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		/* Where libdw may take another section for one of these
		 * (.zdebug_* first, group members skipped) or has not
		 * decompressed it: leave every table to libdw. */
		if (!strncmp(name, ".zdebug_", 8) ||
		    ((sh.sh_flags & (SHF_GROUP | SHF_COMPRESSED)) &&
		     (!strcmp(name, ".debug_line") ||
		      !strcmp(name, ".debug_line_str") ||
		      !strcmp(name, ".debug_str")))) {
			*sec = (struct line_sections){ 0 };
			return;
		}
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

/* What a CU says of its table: offset, address size, DW_AT_comp_dir. */
static int cu_key(Dwarf_Die *cudie, Dwarf_Word *offset, uint8_t *address_size,
		  const char **comp_dir)
{
	Dwarf_Attribute attr;
	Dwarf_Half version;
	unsigned int form;
	uint8_t unit_type;

	if (!cudie || dwarf_cu_info(cudie->cu, &version, &unit_type, NULL,
				    NULL, NULL, address_size, NULL) ||
	    (unit_type != DW_UT_compile && unit_type != DW_UT_partial &&
	     unit_type != DW_UT_skeleton) ||
	    !dwarf_attr(cudie, DW_AT_stmt_list, &attr))
		return -ENOTSUP;
	/* The forms libdw takes for a section offset (others it refuses,
	 * where dwarf_formudata() would read a constant). */
	form = dwarf_whatform(&attr);
	if (version >= 4 ? form != DW_FORM_sec_offset :
			   form != DW_FORM_data4 && form != DW_FORM_data8)
		return -ENOTSUP;
	if (dwarf_formudata(&attr, offset))
		return -ENOTSUP;
	*comp_dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));
	return 0;
}

struct set_entry {
	uint64_t offset;
	unsigned int address_size;
	struct line_table *table;
};

struct line_tables {
	struct set_entry *entries;	/* by offset */
	size_t n, cap;
	struct line_sections sec;	/* read from */
	unsigned int refs;		/* atomic */
};

/* The most rows a set holds (16 bytes each): past it, the rest of the
 * tables are decoded when asked for. */
#define SET_MAX_ROWS	(32u << 20)

int line_tables__read(const struct line_sections *sec, const int *stop,
		      struct line_tables **set)
{
	struct line_tables *lt;
	uint64_t offset = 0;
	size_t rows = 0;
	int err = 0;

	*set = NULL;
	lt = calloc(1, sizeof(*lt));
	if (!lt)
		return -ENOMEM;
	lt->refs = 1;
	lt->sec = *sec;
	while (sec->line && offset < sec->line_size && rows < SET_MAX_ROWS &&
	       !(stop && __atomic_load_n(stop, __ATOMIC_ACQUIRE))) {
		struct reader r = { .p = sec->line + offset,
				    .end = sec->line + sec->line_size };
		uint64_t length = read_fixed(&r, 4), version, address_size;
		struct line_table *t;
		uint64_t next;

		if (length == 0xffffffff)
			length = read_fixed(&r, 8);
		else if (length >= 0xfffffff0)
			break;
		if (r.bad || length > (uint64_t)(r.end - r.p))
			break;
		next = (uint64_t)(r.p - sec->line) + length;
		version = read_fixed(&r, 2);
		address_size = read_fixed(&r, 1);
		if (!r.bad && version >= 5 &&
		    !line_table__decode(sec, offset, (unsigned int)address_size,
					NULL, &t)) {
			err = array__grow((void **)&lt->entries, &lt->cap,
					  lt->n + 1, sizeof(*lt->entries));
			if (err) {
				line_table__free(t);
				break;
			}
			lt->entries[lt->n++] = (struct set_entry){
				offset, (unsigned int)address_size, t,
			};
			rows += t->nrows;
		}
		offset = next;
	}
	if (err) {
		line_tables__put(lt);
		return err;
	}
	*set = lt;
	return 0;
}

struct line_tables *line_tables__get(struct line_tables *set)
{
	if (set)
		__atomic_add_fetch(&set->refs, 1, __ATOMIC_RELAXED);
	return set;
}

void line_tables__put(struct line_tables *set)
{
	if (!set || __atomic_sub_fetch(&set->refs, 1, __ATOMIC_ACQ_REL))
		return;
	for (size_t i = 0; i < set->n; i++)
		line_table__free(set->entries[i].table);
	free(set->entries);
	free(set);
}

int line_table__for_cu(const struct line_sections *sec,
		       const struct line_tables *set, Dwarf_Die *cudie,
		       const struct line_table **table, bool *owned)
{
	const char *comp_dir;
	struct line_table *t;
	Dwarf_Word offset;
	uint8_t address_size;
	int err;

	*table = NULL;
	*owned = false;
	if (cu_key(cudie, &offset, &address_size, &comp_dir))
		return -ENOTSUP;
	/* Only a set read from the very sections libdw reads (sec, where
	 * line_sections__of() refused nothing). */
	if (set && (!sec->line || memcmp(sec, &set->sec, sizeof(*sec))))
		set = NULL;
	for (size_t lo = 0, hi = set ? set->n : 0; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;
		const struct set_entry *e = &set->entries[mid];

		if (e->offset == offset) {
			if (e->address_size != address_size)
				break;
			*table = e->table;
			return 0;
		}
		if (e->offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	err = line_table__decode(sec, offset, address_size, comp_dir, &t);
	if (!err) {
		*table = t;
		*owned = true;
	}
	return err;
}
