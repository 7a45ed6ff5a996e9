/* SPDX-License-Identifier: MIT */
/*
 * symtab.h - look a dynamic symbol up in an ELF file (for injection: the
 * address of dlopen in the target's libc, of the agent's entry points).
 */
#ifndef PA_ELF_SYMTAB_H
#define PA_ELF_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

/*
 * The value (file-relative address) of the defined function name in fd's
 * .dynsym, taking the default version when there are several (dlopen has
 * GLIBC_2.34 and a GLIBC_2.2.5 compatibility entry).  0, -ENOENT (not
 * there), -ENOEXEC (not ELF or corrupt).
 */
int elfsym__find(int fd, const char *name, uint64_t *value);

/* The same in .symtab (functions not exported; absent when stripped). */
int elfsym__find_symtab(int fd, const char *name, uint64_t *value);

/* The data object name in .dynsym, with its size. */
int elfsym__find_object(int fd, const char *name, uint64_t *value,
			uint64_t *size);

/* The function name in .symtab, else .dynsym, with its size (the
 * program's own functions for entry patching). */
int elfsym__find_sized(int fd, const char *name, uint64_t *value,
		       uint64_t *size);

/* Whether any of names[0..n) is a function in .symtab or .dynsym (as
 * elfsym__find_sized finds them), the file read once: 0, -ENOENT or
 * -ENOEXEC. */
int elfsym__find_any(int fd, const char *const *names, size_t n);

#endif /* PA_ELF_SYMTAB_H */
