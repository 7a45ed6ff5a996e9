// SPDX-License-Identifier: MIT
/*
 * got.c - hooking by GOT rewriting, for a process the agent was injected
 * into (docs/design.md, "The agent: paths and rules").
 *
 * Without LD_PRELOAD our malloc is not the one the process resolves, so
 * the agent points each module's GOT slots for the malloc family at its own
 * hooks: JUMP_SLOT entries of .rela.plt and GLOB_DAT entries of .rela.dyn
 * (glibc 2.36 binaries use both), found through each module's PT_DYNAMIC.
 * The agent itself, the dynamic loader and the vDSO are skipped.  Frees are
 * patched before allocations, so every recorded allocation's free is seen
 * (a free of an address never sampled is ignored).  A slot inside the
 * module's PT_GNU_RELRO range is read-only by now: its page is made
 * writable for the store and read-only again.  Each store is one aligned
 * 8-byte write, so a thread calling through the slot sees the old or the
 * new target, never a torn one.
 *
 * What was in a slot is remembered only to know it was patched; the hooks
 * forward to the symbol's global resolution (dlsym RTLD_DEFAULT, looked up
 * by preload.c), not to the old value, which may still be a lazy-binding
 * PLT stub.  Unpatching writes the real function back, and only into slots
 * that still hold our hook, in modules that are loaded when it runs.  The
 * table is not told about dlclose: an entry may be the slot of a module
 * gone since, or of another module mapped at the same place, whose slot
 * there may be another function's - a scan that finds a module's slot in
 * the table makes the entry that module's.
 *
 * A module that another thread is dlopening is already in dl_iterate_phdr's
 * list before the loader has relocated it.  Patching it then would lose our
 * stores to the loader's (and making a RELRO page read-only under the
 * loader's feet crashed the program).  So a module whose PT_GNU_RELRO page
 * is still writable - the loader protects it once relocation is done - is
 * left for a later scan (got__patch says so), and slots found overwritten
 * since we patched them are patched again.
 *
 * Runs with no allocation: the patch table is static, and is touched only
 * in dl_iterate_phdr's callbacks, under the loader's lock (so modules
 * cannot come or go meanwhile, and two threads patching take turns); each
 * call's hooks and pass travel in its own struct patch_run.
 */
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include "agent.h"
#include "got.h"

#define MAX_PATCHES	8192
#define PAGE		4096ul

struct got_patch {
	uint64_t *slot;
	uint64_t hook;
	uint64_t real;
	uint8_t relro;
};

static struct got_patch patches[MAX_PATCHES];
static unsigned int npatches;
static uintptr_t self_lo, self_hi;

/* One got__patch call's own state, handed to the callbacks: two threads
 * may patch at once (a rescan on a borrowed thread, a sampling thread's
 * after a dlopen); dl_iterate_phdr runs their callbacks one at a time. */
struct patch_run {
	const struct got_hook *hooks;
	unsigned int nhooks;
	int pass;		/* 0: frees, 1: the rest */
	bool pending;		/* a module was not ready: scan again */
};

static struct got_patch *patched(uint64_t *slot)
{
	unsigned int i;

	for (i = 0; i < npatches; i++)
		if (patches[i].slot == slot)
			return &patches[i];
	return NULL;
}

static int set_prot(uint64_t *slot, int prot)
{
	uintptr_t page = (uintptr_t)slot & ~(PAGE - 1);

	return mprotect((void *)page, PAGE, prot);
}

static void store_slot(uint64_t *slot, uint64_t value, bool relro)
{
	if (relro && set_prot(slot, PROT_READ | PROT_WRITE))
		return;
	__atomic_store_n(slot, value, __ATOMIC_RELEASE);
	if (relro)
		set_prot(slot, PROT_READ);
}

/* A dynamic-section pointer: glibc relocates them in place when the module
 * is not at its link address and its dynamic section is writable; a
 * read-only one keeps link-time values.  (Not "below the load address":
 * a module loaded below its link address has a load bias that wraps.) */
static uintptr_t dyn_ptr(const struct dl_phdr_info *info, uintptr_t v)
{
	bool relocated = false;
	int i;

	for (i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			relocated = info->dlpi_addr != 0 &&
				    (info->dlpi_phdr[i].p_flags & PF_W);
	return relocated ? v : v + info->dlpi_addr;
}

static bool skip_module(const struct dl_phdr_info *info)
{
	const char *name = info->dlpi_name, *base = strrchr(name, '/');
	uintptr_t addr = info->dlpi_addr;
	int i;

	base = base ? base + 1 : name;
	if (!strncmp(base, "ld-linux", 8) || !strncmp(base, "ld64.so", 7) ||
	    !strncmp(base, "linux-vdso", 10) || !strncmp(base, "linux-gate", 10))
		return true;
	/* ourselves: the module containing this code */
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD &&
		    self_lo >= addr + ph->p_vaddr &&
		    self_lo < addr + ph->p_vaddr + ph->p_memsz)
			return true;
	}
	/* the vDSO has no name on some kernels; it has no relocations to
	 * patch anyway (no DT_JMPREL/DT_RELA), so nothing is lost */
	(void)self_hi;
	return false;
}

static void patch_relocs(const struct patch_run *run,
			 const struct dl_phdr_info *info,
			 const ElfW(Rela) *rel, size_t n, const ElfW(Sym) *symtab,
			 const char *strtab, uintptr_t relro_lo,
			 uintptr_t relro_hi)
{
	size_t i;
	unsigned int h;

	for (i = 0; i < n; i++) {
		unsigned long type = ELF64_R_TYPE(rel[i].r_info);
		const char *name;
		uint64_t *slot;
		struct got_patch *p;
		bool is_free;

		if (type != PA_ARCH_R_JUMP_SLOT && type != PA_ARCH_R_GLOB_DAT)
			continue;
		name = strtab + symtab[ELF64_R_SYM(rel[i].r_info)].st_name;
		for (h = 0; h < run->nhooks; h++)
			if (!strcmp(name, run->hooks[h].name))
				break;
		if (h == run->nhooks)
			continue;
		is_free = run->hooks[h].is_free;
		if (is_free != (run->pass == 0))
			continue;
		slot = (uint64_t *)(info->dlpi_addr + rel[i].r_offset);
		if ((p = patched(slot))) {
			/* the slot of a module dlclosed since, where this one
			 * was mapped: the entry is this module's now */
			p->hook = (uintptr_t)run->hooks[h].hook;
			p->real = (uintptr_t)run->hooks[h].real;
			p->relro = (uintptr_t)slot >= relro_lo &&
				   (uintptr_t)slot < relro_hi;
			/* the loader (lazy binding, relocation) may have
			 * written over it since */
			if (__atomic_load_n(slot, __ATOMIC_ACQUIRE) != p->hook)
				store_slot(slot, p->hook, p->relro);
			continue;
		}
		if (npatches == MAX_PATCHES)
			continue;
		patches[npatches] = (struct got_patch){
			.slot = slot,
			.hook = (uintptr_t)run->hooks[h].hook,
			.real = (uintptr_t)run->hooks[h].real,
			.relro = (uintptr_t)slot >= relro_lo &&
				 (uintptr_t)slot < relro_hi,
		};
		store_slot(slot, patches[npatches].hook, patches[npatches].relro);
		npatches++;
	}
}

static int patch_module(struct dl_phdr_info *info, size_t size, void *data)
{
	struct patch_run *run = data;
	const ElfW(Dyn) *dyn = NULL;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Rela) *jmprel = NULL, *rela = NULL;
	size_t pltrelsz = 0, relasz = 0;
	uintptr_t relro_lo = 0, relro_hi = 0;
	int i;

	(void)size;
	if (skip_module(info))
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
		else if (ph->p_type == PT_GNU_RELRO) {
			relro_lo = info->dlpi_addr + ph->p_vaddr;
			relro_hi = relro_lo + ph->p_memsz;
		}
	}
	if (!dyn)
		return 0;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB:
			symtab = (const void *)dyn_ptr(info, dyn->d_un.d_ptr);
			break;
		case DT_STRTAB:
			strtab = (const void *)dyn_ptr(info, dyn->d_un.d_ptr);
			break;
		case DT_JMPREL:
			jmprel = (const void *)dyn_ptr(info, dyn->d_un.d_ptr);
			break;
		case DT_PLTRELSZ:
			pltrelsz = dyn->d_un.d_val;
			break;
		case DT_RELA:
			rela = (const void *)dyn_ptr(info, dyn->d_un.d_ptr);
			break;
		case DT_RELASZ:
			relasz = dyn->d_un.d_val;
			break;
		}
	}
	if (!symtab || !strtab)
		return 0;
	if (relro_lo < relro_hi) {
		uintptr_t lo, hi;
		bool writable;

		if (agent__mapping_of(relro_lo, &lo, &hi, &writable) ||
		    writable) {
			run->pending = true;	/* still being relocated */
			return 0;
		}
	}
	if (jmprel)
		patch_relocs(run, info, jmprel, pltrelsz / sizeof(ElfW(Rela)), symtab,
			     strtab, relro_lo, relro_hi);
	if (rela)
		patch_relocs(run, info, rela, relasz / sizeof(ElfW(Rela)), symtab,
			     strtab, relro_lo, relro_hi);
	return 0;
}

bool got__patch(const struct got_hook *hooks, unsigned int nhooks)
{
	struct patch_run run = { .hooks = hooks, .nhooks = nhooks };

	self_lo = (uintptr_t)&got__patch;
	for (run.pass = 0; run.pass < 2; run.pass++)
		dl_iterate_phdr(patch_module, &run);
	return run.pending;
}

/* Whether addr lies in one of the module's segments of type PT_TYPE. */
static bool in_segment(const struct dl_phdr_info *info, uint32_t type,
		       uintptr_t addr)
{
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == type && addr >= lo && addr < lo + ph->p_memsz)
			return true;
	}
	return false;
}

/* Put back the slots that lie in this module, a module loaded now. */
static int unpatch_module(struct dl_phdr_info *info, size_t size, void *data)
{
	unsigned int *restored = data, i;

	(void)size;
	for (i = 0; i < npatches; i++) {
		struct got_patch *p = &patches[i];

		if (!in_segment(info, PT_LOAD, (uintptr_t)p->slot) ||
		    __atomic_load_n(p->slot, __ATOMIC_ACQUIRE) != p->hook)
			continue;	/* not here, or rebound: leave it */
		store_slot(p->slot, p->real,
			   in_segment(info, PT_GNU_RELRO, (uintptr_t)p->slot));
		(*restored)++;
	}
	return 0;
}

/*
 * Only slots of modules loaded now, looked at under the loader's lock: the
 * table still has the slots of modules dlclosed since they were patched,
 * whose pages are unmapped or someone else's by now (reading them crashed
 * a dlopen/dlclose storm at detach).
 */
unsigned int got__unpatch(void)
{
	unsigned int restored = 0;

	dl_iterate_phdr(unpatch_module, &restored);
	npatches = 0;
	return restored;
}

