/* SPDX-License-Identifier: MIT */
/*
 * names.h - an interned set of symbol names and file paths, with each
 * name's demangled form computed at most once.
 *
 * Equal strings intern to the same pointer, valid until names__free(), so
 * callers may compare and hash names by pointer.  Strings of two different
 * sets (say, one per thread) are compared by content; names__hash() gives
 * each string's content hash without reading it.
 */
#ifndef PA_ELF_NAMES_H
#define PA_ELF_NAMES_H

#include <stddef.h>
#include <stdint.h>

struct names;

/* NULL with errno set. */
struct names *names__new(void);
void names__free(struct names *n);

/* The interned copy of str; NULL for NULL, and NULL with errno = ENOMEM. */
const char *names__intern(struct names *n, const char *str);

/* The same for the len bytes at str (no NUL needed; none may be inside). */
const char *names__intern_len(struct names *n, const char *str, size_t len);

/*
 * The content hash of an interned string (of any set: equal strings have
 * equal hashes in every set).
 */
uint64_t names__hash(const char *interned);

/* The same hash of a string that is not interned. */
uint64_t names__hash_str(const char *str);

/*
 * The human-readable form of an interned name, itself interned: the C++
 * (Itanium ABI) demangling of a mangled name, or the name itself when it is
 * not mangled or does not demangle.  Never NULL for a non-NULL name (out of
 * memory, the raw name is returned).
 */
const char *names__demangled(struct names *n, const char *interned);

#endif /* PA_ELF_NAMES_H */
