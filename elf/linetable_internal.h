/* SPDX-License-Identifier: MIT */
/*
 * linetable_internal.h - what the two halves of the line table reader
 * share: the header and file names (elf/lineheader.c), and the program,
 * its rows and lookups (elf/linetable.c).  Bounds-checked readers of
 * DWARF's encodings, little-endian.  Not for other callers:
 * elf/linetable.h is the interface.
 */
#ifndef PA_ELF_LINETABLE_INTERNAL_H
#define PA_ELF_LINETABLE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "elf/linetable.h"

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

static inline uint64_t read_fixed(struct reader *r, unsigned int size)
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

static inline uint64_t read_uleb(struct reader *r)
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

static inline int64_t read_sleb(struct reader *r)
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
static inline const char *cstring(const uint8_t *p, const uint8_t *end)
{
	return p < end && memchr(p, 0, (size_t)(end - p)) ? (const char *)p :
							    NULL;
}

static inline const char *read_cstring(struct reader *r)
{
	const char *s = cstring(r->p, r->end);

	if (!s) {
		r->bad = true;
		return NULL;
	}
	r->p += strlen(s) + 1;
	return s;
}

struct header {
	unsigned int version, offset_size;
	uint8_t min_inst_len, max_ops, default_is_stmt, line_range;
	uint8_t opcode_base;
	int8_t line_base;
	const uint8_t *opcode_lengths;	/* [1, opcode_base) */
	const uint8_t *program, *end;
};

/* The header at offset: fields into h, r left at its file names.  0 or
 * -ENOTSUP. */
int line_header__read(const struct line_sections *sec, uint64_t offset,
		      unsigned int address_size, struct reader *r,
		      struct header *h);

/*
 * The directories and files after the header (r, from
 * line_header__read()), named as libdw names them, into t->files and
 * t->names.  0, -ENOMEM or -ENOTSUP.
 */
int line_header__names(struct reader *r, const struct header *h,
		       const struct line_sections *sec, const char *comp_dir,
		       struct line_table *t);

#endif /* PA_ELF_LINETABLE_INTERNAL_H */
