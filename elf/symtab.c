// SPDX-License-Identifier: MIT
/*
 * symtab.c - find a dynamic symbol's value with libelf.
 *
 * Reads .dynsym and, when present, .gnu.version: a symbol whose version
 * index has the hidden bit (VERSYM_HIDDEN) is a non-default version
 * (name@VER rather than name@@VER) and is skipped, so that the tracer calls
 * what a program linking against this file today would call.  Only defined
 * functions count.  The file is the target's (opened through
 * /proc/PID/map_files): every index is checked against the section sizes
 * libelf reports, and libelf errors become -ENOEXEC here.
 * elfsym__find_symtab looks in .symtab instead (a program's own functions,
 * which it does not export), unversioned.
 */
#include <errno.h>
#include <stdbool.h>
#include <gelf.h>
#include <string.h>
#include "symtab.h"

#define VERSYM_HIDDEN 0x8000

/* fd's ELF, or NULL (not ELF, or libelf failed). */
static Elf *open_elf(int fd)
{
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		return NULL;
	}
	return elf;
}

/*
 * The first symbol of section type (SHT_SYMTAB or SHT_DYNSYM) that is a
 * defined sym_type, of a default version, and whose name is one of
 * names[0..n): its symbol to *sym.  0 or -ENOENT.
 */
static int scan(Elf *elf, uint32_t type, unsigned int sym_type,
		const char *const *names, size_t n, GElf_Sym *sym)
{
	Elf_Data *syms = NULL, *vers = NULL;
	Elf_Scn *scn = NULL;
	size_t strndx = 0, count, i, j;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == type) {
			syms = elf_getdata(scn, NULL);
			strndx = sh.sh_link;
		} else if (sh.sh_type == SHT_GNU_versym && type == SHT_DYNSYM) {
			vers = elf_getdata(scn, NULL);
		}
	}
	if (!syms || !syms->d_size)
		return -ENOENT;
	count = syms->d_size / sizeof(Elf64_Sym);
	for (i = 0; i < count; i++) {
		const char *s;

		if (!gelf_getsym(syms, (int)i, sym) ||
		    sym->st_shndx == SHN_UNDEF ||
		    GELF_ST_TYPE(sym->st_info) != sym_type)
			continue;
		s = elf_strptr(elf, strndx, sym->st_name);
		if (!s)
			continue;
		for (j = 0; j < n; j++)
			if (s[0] == names[j][0] && !strcmp(s, names[j]))
				break;
		if (j == n)
			continue;
		if (vers && (i + 1) * sizeof(uint16_t) <= vers->d_size &&
		    (((const uint16_t *)vers->d_buf)[i] & VERSYM_HIDDEN))
			continue;
		return 0;
	}
	return -ENOENT;
}

/*
 * The first of names[0..n) that scan finds in fd's section type, then, if
 * then_dynsym, in its .dynsym: the file read once.  Its value and size to
 * *value and *size (either may be NULL).  0, -ENOENT or -ENOEXEC.
 */
static int find_in(int fd, const char *const *names, size_t n,
		   uint32_t type, unsigned int sym_type, bool then_dynsym,
		   uint64_t *value, uint64_t *size)
{
	Elf *elf = open_elf(fd);
	GElf_Sym sym;
	int err;

	if (!elf)
		return -ENOEXEC;
	err = scan(elf, type, sym_type, names, n, &sym);
	if (err == -ENOENT && then_dynsym)
		err = scan(elf, SHT_DYNSYM, sym_type, names, n, &sym);
	if (!err && value)
		*value = sym.st_value;
	if (!err && size)
		*size = sym.st_size;
	elf_end(elf);
	return err;
}

int elfsym__find_any(int fd, const char *const *names, size_t n)
{
	return find_in(fd, names, n, SHT_SYMTAB, STT_FUNC, true, NULL, NULL);
}

int elfsym__find(int fd, const char *name, uint64_t *value)
{
	return find_in(fd, &name, 1, SHT_DYNSYM, STT_FUNC, false, value, NULL);
}

int elfsym__find_symtab(int fd, const char *name, uint64_t *value)
{
	return find_in(fd, &name, 1, SHT_SYMTAB, STT_FUNC, false, value, NULL);
}

int elfsym__find_object(int fd, const char *name, uint64_t *value,
			uint64_t *size)
{
	return find_in(fd, &name, 1, SHT_DYNSYM, STT_OBJECT, false, value,
		       size);
}

int elfsym__find_sized(int fd, const char *name, uint64_t *value,
		       uint64_t *size)
{
	return find_in(fd, &name, 1, SHT_SYMTAB, STT_FUNC, true, value, size);
}
