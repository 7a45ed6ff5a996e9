/* SPDX-License-Identifier: MIT */
/*
 * names.h - an interned set of symbol names and file paths, with each
 * name's demangled form computed at most once.
 *
 * Equal strings intern to the same pointer, valid until names__free(), so
 * callers may compare and hash names by pointer.
 */
#ifndef PA_ELF_NAMES_H
#define PA_ELF_NAMES_H

struct names;

/* NULL with errno set. */
struct names *names__new(void);
void names__free(struct names *n);

/* The interned copy of str; NULL for NULL, and NULL with errno = ENOMEM. */
const char *names__intern(struct names *n, const char *str);

/*
 * The human-readable form of an interned name: the C++ (Itanium ABI)
 * demangling of a mangled name, or the name itself when it is not mangled
 * or does not demangle.  Never NULL for a non-NULL name (out of memory, the
 * raw name is returned).
 */
const char *names__demangled(struct names *n, const char *interned);

#endif /* PA_ELF_NAMES_H */
