/* SPDX-License-Identifier: MIT */
/*
 * dynsym.h - symbols looked up in the loaded modules, as the loader would,
 * without libdl; and the pthread functions found that way.
 */
#ifndef PA_DYNSYM_H
#define PA_DYNSYM_H

#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* A loaded module, as dl_iterate_phdr lists it. */
struct dynsym_module {
	uintptr_t bias;		/* its load bias (l_addr) */
	const void *id;		/* its program headers: one per module */
	const char *name;	/* the loader's name; "" for the program */
};

/* The first definition of name (a function, the default version) in the
 * loader's list, program first: what the loader binds a reference to.
 * NULL if no module defines it.  Allocates nothing. */
void *dynsym__global(const char *name);
/* The same, in the modules after the one that contains self (the
 * lookup dlsym(RTLD_NEXT) makes for a preloaded library). */
void *dynsym__next(const char *name, const void *self);
/* The module whose loadable segments hold addr: true and *m filled. */
bool dynsym__module_of(const void *addr, struct dynsym_module *m);
/* Both addresses are in the same loaded module. */
bool dynsym__same_module(const void *a, const void *b);
/* Whether addr lies in one of the loadable segments of info's module
 * (a dl_iterate_phdr callback's). */
static inline bool dynsym__holds(const struct dl_phdr_info *info,
				 uintptr_t addr)
{
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && addr >= lo &&
		    addr - lo < ph->p_memsz)
			return true;
	}
	return false;
}

/*
 * The pthread functions the agent calls, from the one module that defines
 * pthread_create (libc.so.6 from glibc 2.34, libpthread.so.0 before), or
 * all NULL: an old glibc's program that never loaded libpthread.  Filled
 * by dynsym__find_threads; read through dynsym__threads, which returns
 * NULL until they were found.
 */
struct dynsym_threads {
	int (*create)(pthread_t *, const pthread_attr_t *,
		      void *(*)(void *), void *);
	int (*attr_init)(pthread_attr_t *);
	int (*attr_destroy)(pthread_attr_t *);
	int (*attr_setstacksize)(pthread_attr_t *, size_t);
	int (*attr_setdetachstate)(pthread_attr_t *, int);
	int (*attr_setstack)(pthread_attr_t *, void *, size_t);
	int (*tryjoin)(pthread_t, void **);	/* pthread_tryjoin_np */
	int (*key_create)(pthread_key_t *, void (*)(void *));
	int (*key_delete)(pthread_key_t);
	int (*setspecific)(pthread_key_t, const void *);
};

/* Look them up (again, if an earlier call found none): 0, or -ENOENT.
 * From a context that may take the loader's list lock: a constructor,
 * the first malloc's resolution, a thread the tracer borrowed. */
int dynsym__find_threads(void);
const struct dynsym_threads *dynsym__threads(void);

#endif /* PA_DYNSYM_H */
