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
#include <gelf.h>
#include <string.h>
#include "symtab.h"

#define VERSYM_HIDDEN 0x8000

static int find_in(int fd, const char *name, uint64_t *value,
		   uint64_t *size, uint32_t type, unsigned int sym_type)
{
	Elf_Data *syms = NULL, *vers = NULL;
	Elf_Scn *scn = NULL;
	size_t strndx = 0, n, i;
	int err = -ENOENT;
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	if (elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out_end;
	}
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
		goto out_end;
	n = syms->d_size / sizeof(Elf64_Sym);
	for (i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *s;

		if (!gelf_getsym(syms, (int)i, &sym) ||
		    sym.st_shndx == SHN_UNDEF ||
		    GELF_ST_TYPE(sym.st_info) != sym_type)
			continue;
		s = elf_strptr(elf, strndx, sym.st_name);
		if (!s || strcmp(s, name))
			continue;
		if (vers && (i + 1) * sizeof(uint16_t) <= vers->d_size &&
		    (((const uint16_t *)vers->d_buf)[i] & VERSYM_HIDDEN))
			continue;
		*value = sym.st_value;
		if (size)
			*size = sym.st_size;
		err = 0;
		break;
	}
out_end:
	elf_end(elf);
	return err;
}

int elfsym__find(int fd, const char *name, uint64_t *value)
{
	return find_in(fd, name, value, NULL, SHT_DYNSYM, STT_FUNC);
}

int elfsym__find_symtab(int fd, const char *name, uint64_t *value)
{
	return find_in(fd, name, value, NULL, SHT_SYMTAB, STT_FUNC);
}

int elfsym__find_object(int fd, const char *name, uint64_t *value,
			uint64_t *size)
{
	return find_in(fd, name, value, size, SHT_DYNSYM, STT_OBJECT);
}

int elfsym__find_sized(int fd, const char *name, uint64_t *value,
		       uint64_t *size)
{
	int err = find_in(fd, name, value, size, SHT_SYMTAB, STT_FUNC);

	if (err == -ENOENT)
		err = find_in(fd, name, value, size, SHT_DYNSYM, STT_FUNC);
	return err;
}
