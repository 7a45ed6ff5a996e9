/* SPDX-License-Identifier: MIT */
/*
 * names.c - interned symbol names and file paths, demangled lazily.
 *
 * Symbolizing a profile meets the same few thousand function and file
 * names over and over; interning gives one copy of each and lets every
 * later table compare and hash them by pointer.  Each string lives in a
 * `struct name` that also remembers its demangled form, so a mangled name
 * is demangled once however many addresses resolve to it.
 *
 * The set is open addressing with linear probing over pointers to the
 * records, kept at most half full.  Strings are never removed.
 *
 * Demangling is libstdc++'s __cxa_demangle (the Itanium C++ ABI demangler
 * that gdb and eu-addr2line -C also use); only names that start with "_Z"
 * are tried, so C names never pay for it.  libstdc++ is dlopen'ed the first
 * time a mangled name is met, so that C-only runs do not load it; where it
 * is missing, names stay mangled.  Not thread-safe.
 */
#include "elf/names.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* libstdc++'s demangler (cxxabi.h is C++ only). */
typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len,
			     int *status);

struct name {
	const char *demangled;	/* NULL until asked for */
	char str[];
};

struct names {
	struct name **slots;	/* capacity is a power of two */
	size_t cap, used;
	bool demangler_tried;
	void *libstdcxx;
	demangle_fn demangle;
};

static uint64_t hash_string(const char *str)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *str; str++) {
		h ^= (unsigned char)*str;
		h *= 0x100000001b3ULL;
	}
	return h;
}

struct names *names__new(void)
{
	return calloc(1, sizeof(struct names));
}

void names__free(struct names *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->cap; i++) {
		struct name *rec = n->slots[i];

		if (!rec)
			continue;
		if (rec->demangled != rec->str)
			free((char *)rec->demangled);
		free(rec);
	}
	free(n->slots);
	if (n->libstdcxx)
		dlclose(n->libstdcxx);
	free(n);
}

static int resize(struct names *n, size_t new_cap)
{
	struct name **slots;

	if (new_cap > SIZE_MAX / sizeof(*slots))
		return -ENOMEM;
	slots = calloc(new_cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < n->cap; i++) {
		size_t j;

		if (!n->slots[i])
			continue;
		j = hash_string(n->slots[i]->str) & (new_cap - 1);
		while (slots[j])
			j = (j + 1) & (new_cap - 1);
		slots[j] = n->slots[i];
	}
	free(n->slots);
	n->slots = slots;
	n->cap = new_cap;
	return 0;
}

const char *names__intern(struct names *n, const char *str)
{
	struct name *rec;
	size_t i, len;

	if (!str)
		return NULL;
	if (n->used + 1 > n->cap / 2) {
		if (n->cap > SIZE_MAX / 4 ||
		    resize(n, n->cap ? n->cap * 2 : 256)) {
			errno = ENOMEM;
			return NULL;
		}
	}
	i = hash_string(str) & (n->cap - 1);
	for (; n->slots[i]; i = (i + 1) & (n->cap - 1))
		if (strcmp(n->slots[i]->str, str) == 0)
			return n->slots[i]->str;
	len = strlen(str);
	rec = malloc(sizeof(*rec) + len + 1);
	if (!rec) {
		errno = ENOMEM;
		return NULL;
	}
	rec->demangled = NULL;
	memcpy(rec->str, str, len + 1);
	n->slots[i] = rec;
	n->used++;
	return rec->str;
}

const char *names__demangled(struct names *n, const char *interned)
{
	struct name *rec;
	char *out;
	int status;

	if (!interned)
		return NULL;
	rec = (struct name *)(interned - offsetof(struct name, str));
	if (rec->demangled)
		return rec->demangled;
	rec->demangled = rec->str;
	if (interned[0] != '_' || interned[1] != 'Z')
		return rec->demangled;
	if (!n->demangler_tried) {
		n->demangler_tried = true;
		n->libstdcxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
		if (n->libstdcxx)
			n->demangle = (demangle_fn)dlsym(n->libstdcxx,
							 "__cxa_demangle");
	}
	if (n->demangle) {
		out = n->demangle(interned, NULL, NULL, &status);
		if (out && status == 0)
			rec->demangled = out;
		else
			free(out);
	}
	return rec->demangled;
}
