// SPDX-License-Identifier: MIT
/*
 * dynsym.c - the loader's symbol lookups, done by the agent itself.
 *
 * The agent needs nothing in the target but libc.so.6 and the dynamic
 * loader: a container image built from what `ldd` lists for its program
 * has no libdl.so.2, libpthread.so.0 or libm.so.6, where glibc before 2.34
 * keeps dlsym, dladdr, pthread_create and log.  So what dlsym and dladdr
 * would answer is read here from the loaded modules themselves, and the
 * pthread functions are found in whichever module defines them.
 *
 * Modules come from dl_iterate_phdr (libc.so.6 on every glibc), whose
 * first namespace is the loader's list (_r_debug.r_map): the program,
 * the preloads, the needed libraries breadth first, then what was
 * dlopened.  A name is looked up in each module's own dynamic symbol
 * table through its hash table (GNU or SysV), as the loader does:
 * defined (not SHN_UNDEF: a program built without PIE that takes a
 * function's address carries an undefined symbol whose value is its own
 * PLT stub), a function, not a hidden version.  Never through dlopen,
 * even RTLD_NOLOAD: it runs the initializers still due, ours among them.
 *
 * The loader relocates a module's dynamic-section pointers in place when
 * the module is off its link address and its PT_DYNAMIC is writable
 * (glibc's rule; the vDSO's are not), and every table read is checked to
 * lie in the module's loadable segments: a library loaded below its link
 * address once wrapped a "below the load address" test and crashed its
 * target.
 *
 * Nothing here allocates; dl_iterate_phdr takes the loader's list lock
 * (recursive), so callers are contexts that may wait for a dlopen in
 * another thread: the first malloc's resolution, a constructor, a thread
 * a tracer borrowed, the stats thread - never a hook's slow path.
 */
#include <errno.h>
#include <link.h>
#include <string.h>
#include "dynsym.h"

struct module_view {
	uintptr_t addr;			/* dlpi_addr: l_addr */
	const ElfW(Phdr) *phdr;
	int phnum;
	const ElfW(Dyn) *dyn;		/* l_ld */
	bool relocated;
};

static uint32_t gnu_hash(const char *name)
{
	uint32_t h = 5381;

	for (; *name; name++)
		h = h * 33 + (unsigned char)*name;
	return h;
}

static uint32_t sysv_hash(const char *name)
{
	uint32_t h = 0, g;

	for (; *name; name++) {
		h = (h << 4) + (unsigned char)*name;
		g = h & 0xf0000000u;
		h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

static bool module_view(const struct dl_phdr_info *info,
			struct module_view *v)
{
	int i;

	v->addr = info->dlpi_addr;
	v->phdr = info->dlpi_phdr;
	v->phnum = info->dlpi_phnum;
	v->dyn = NULL;
	v->relocated = false;
	for (i = 0; v->phdr && i < v->phnum; i++) {
		if (v->phdr[i].p_type != PT_DYNAMIC)
			continue;
		v->dyn = (const void *)(v->addr + v->phdr[i].p_vaddr);
		v->relocated = v->addr != 0 && (v->phdr[i].p_flags & PF_W);
	}
	return v->dyn != NULL;
}

/* [p, p + len) lies in one of the module's loadable segments. */
static bool in_module(const struct module_view *v, uintptr_t p, size_t len)
{
	int i;

	for (i = 0; i < v->phnum; i++) {
		const ElfW(Phdr) *ph = &v->phdr[i];
		uintptr_t lo = v->addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && p >= lo && len <= ph->p_memsz &&
		    p - lo <= ph->p_memsz - len)
			return true;
	}
	return false;
}

static uintptr_t dyn_ptr(const struct module_view *v, ElfW(Addr) ptr)
{
	return v->relocated ? ptr : v->addr + ptr;
}

/* Whether the symbol table entry i is name's default definition. */
static bool sym_matches(const struct module_view *v, const ElfW(Sym) *symtab,
			const char *strtab, const ElfW(Half) *versym,
			uint32_t i, const char *name)
{
	if (!in_module(v, (uintptr_t)&symtab[i], sizeof(symtab[i])) ||
	    !in_module(v, (uintptr_t)(strtab + symtab[i].st_name), 1) ||
	    strcmp(strtab + symtab[i].st_name, name))
		return false;
	return !(versym && in_module(v, (uintptr_t)&versym[i], 2) &&
		 (versym[i] & 0x8000));
}

/* The definition of name in this one module, or NULL. */
static void *module_definition(const struct module_view *v, const char *name)
{
	const ElfW(Sym) *symtab = NULL, *sym = NULL;
	const ElfW(Half) *versym = NULL;
	const uint32_t *gnu = NULL, *sysv = NULL;
	const char *strtab = NULL;
	const ElfW(Dyn) *d;
	uint32_t i, guard;

#define INSIDE(p, len) in_module(v, (uintptr_t)(p), (len))
	for (d = v->dyn; INSIDE(d, sizeof(*d)) && d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB:
			symtab = (const void *)dyn_ptr(v, d->d_un.d_ptr);
			break;
		case DT_STRTAB:
			strtab = (const void *)dyn_ptr(v, d->d_un.d_ptr);
			break;
		case DT_GNU_HASH:
			gnu = (const void *)dyn_ptr(v, d->d_un.d_ptr);
			break;
		case DT_HASH:
			sysv = (const void *)dyn_ptr(v, d->d_un.d_ptr);
			break;
		case DT_VERSYM:
			versym = (const void *)dyn_ptr(v, d->d_un.d_ptr);
			break;
		}
	}
	if (!symtab || !strtab || !INSIDE(symtab, sizeof(*symtab)) ||
	    !INSIDE(strtab, 1))
		return NULL;
	if (gnu && INSIDE(gnu, 16)) {
		uint32_t nbuckets = gnu[0], symoffset = gnu[1];
		uint32_t bloom_words = gnu[2], h = gnu_hash(name);
		const uint32_t *buckets = gnu + 4 +
			(size_t)bloom_words * (sizeof(ElfW(Addr)) / 4);
		const uint32_t *chain = buckets + nbuckets;

		if (!nbuckets || !INSIDE(buckets, (size_t)nbuckets * 4))
			return NULL;
		i = buckets[h % nbuckets];
		for (guard = 0; i >= symoffset && i && guard < (1u << 24);
		     i++, guard++) {
			uint32_t ch;

			if (!INSIDE(&chain[i - symoffset], 4))
				return NULL;
			ch = chain[i - symoffset];
			if ((ch | 1) == (h | 1) &&
			    sym_matches(v, symtab, strtab, versym, i, name)) {
				sym = &symtab[i];
				break;
			}
			if (ch & 1)
				break;
		}
	} else if (sysv && INSIDE(sysv, 8)) {
		uint32_t nbucket = sysv[0], nchain = sysv[1];
		const uint32_t *bucket = sysv + 2, *chain = bucket + nbucket;

		if (!nbucket || !INSIDE(bucket, ((size_t)nbucket + nchain) * 4))
			return NULL;
		for (i = bucket[sysv_hash(name) % nbucket], guard = 0;
		     i && i < nchain && guard < nchain; i = chain[i], guard++)
			if (sym_matches(v, symtab, strtab, versym, i, name)) {
				sym = &symtab[i];
				break;
			}
	}
#undef INSIDE
	if (!sym || sym->st_shndx == SHN_UNDEF || !sym->st_value ||
	    ELF64_ST_TYPE(sym->st_info) != STT_FUNC)
		return NULL;
	return (void *)(v->addr + sym->st_value);
}

struct lookup {
	const char *name;
	uintptr_t after;	/* only modules after the one holding this */
	const void *only;	/* only this module (its id) */
	void *found;
};

static int lookup_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct lookup *l = arg;
	struct module_view v;

	(void)size;
	if (l->after) {
		if (dynsym__holds(info, l->after))
			l->after = 0;
		return 0;
	}
	if (l->only && info->dlpi_phdr != l->only)
		return 0;
	if (module_view(info, &v))
		l->found = module_definition(&v, l->name);
	return l->found != NULL || l->only != NULL;
}

void *dynsym__global(const char *name)
{
	struct lookup l = { .name = name };

	dl_iterate_phdr(lookup_one, &l);
	return l.found;
}

void *dynsym__next(const char *name, const void *self)
{
	struct lookup l = { .name = name, .after = (uintptr_t)self };

	dl_iterate_phdr(lookup_one, &l);
	return l.found;
}

struct which {
	uintptr_t addr;
	struct dynsym_module *m;
	bool found;
};

static int which_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct which *w = arg;

	(void)size;
	if (!dynsym__holds(info, w->addr))
		return 0;
	w->m->bias = info->dlpi_addr;
	w->m->id = info->dlpi_phdr;
	w->m->name = info->dlpi_name ? info->dlpi_name : "";
	w->found = true;
	return 1;
}

bool dynsym__module_of(const void *addr, struct dynsym_module *m)
{
	struct which w = { .addr = (uintptr_t)addr, .m = m };

	dl_iterate_phdr(which_one, &w);
	return w.found;
}

bool dynsym__same_module(const void *a, const void *b)
{
	struct dynsym_module ma, mb;

	return dynsym__module_of(a, &ma) && dynsym__module_of(b, &mb) &&
	       ma.id == mb.id;
}

/* ---- the pthread functions ------------------------------------------ */

static struct dynsym_threads threads;
static int threads_found;

int dynsym__find_threads(void)
{
	struct dynsym_threads t;
	struct dynsym_module m;
	void *create;

	if (__atomic_load_n(&threads_found, __ATOMIC_ACQUIRE))
		return 0;
	create = dynsym__global("pthread_create");
	if (!create || !dynsym__module_of(create, &m))
		return -ENOENT;
	/* the rest from the same module where it has them: libc.so.6
	 * before 2.34 has pthread_attr_init too, in old versions a
	 * forwarder that does nothing until libpthread is loaded; else the
	 * first definition (glibc 2.31's libpthread has no
	 * pthread_attr_init: libc's is the one) */
#define FROM(field, fn) do {						\
	struct lookup l = { .name = #fn, .only = m.id };		\
									\
	dl_iterate_phdr(lookup_one, &l);				\
	if (!l.found)							\
		l.found = dynsym__global(#fn);				\
	if (!l.found)							\
		return -ENOENT;						\
	t.field = (__typeof__(t.field))l.found;				\
} while (0)
	t.create = (__typeof__(t.create))create;
	FROM(attr_init, pthread_attr_init);
	FROM(attr_destroy, pthread_attr_destroy);
	FROM(attr_setstacksize, pthread_attr_setstacksize);
	FROM(attr_setdetachstate, pthread_attr_setdetachstate);
	FROM(attr_setstack, pthread_attr_setstack);
	FROM(tryjoin, pthread_tryjoin_np);
	FROM(key_create, pthread_key_create);
	FROM(key_delete, pthread_key_delete);
	FROM(setspecific, pthread_setspecific);
#undef FROM
	/* two callers at once store the same values */
	__atomic_store_n(&threads.create, t.create, __ATOMIC_RELAXED);
	__atomic_store_n(&threads.attr_init, t.attr_init, __ATOMIC_RELAXED);
	__atomic_store_n(&threads.attr_destroy, t.attr_destroy,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&threads.attr_setstacksize, t.attr_setstacksize,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&threads.attr_setdetachstate, t.attr_setdetachstate,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&threads.attr_setstack, t.attr_setstack,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&threads.tryjoin, t.tryjoin, __ATOMIC_RELAXED);
	__atomic_store_n(&threads.key_create, t.key_create, __ATOMIC_RELAXED);
	__atomic_store_n(&threads.key_delete, t.key_delete, __ATOMIC_RELAXED);
	__atomic_store_n(&threads.setspecific, t.setspecific,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&threads_found, 1, __ATOMIC_RELEASE);
	return 0;
}

const struct dynsym_threads *dynsym__threads(void)
{
	return __atomic_load_n(&threads_found, __ATOMIC_ACQUIRE) ? &threads
								  : NULL;
}
