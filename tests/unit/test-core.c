// SPDX-License-Identifier: MIT
/*
 * test-core.c - the modules of a core from the dynamic loader's list
 * (elf/core_modules.c), on small cores made here: one PT_LOAD holding an
 * executable's headers and dynamic section, r_debug, a link_map chain and
 * three libraries' headers, and NT_AUXV, NT_PRPSINFO but no NT_FILE.
 * Each case damages one thing - a loop, a broken l_prev, a name outside
 * the core or without its end, a chain past the cap, DT_DEBUG 0, another
 * r_debug version, a header that is not the entry's - and checks what is
 * kept and what loader_why says.
 *
 *   test-core            run the cases
 *   test-core FILE       write the intact core, its memory cut to 52 KiB,
 *                        to FILE: the fuzzer's seed tests/fuzz/core/rdebug
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <elf.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "check.h"
#include "elf/core_modules.h"

#define V		0x10000000ull	/* the process's memory in the core */
#define MEM		0x40000u
#define EXE_DYN		0x800u
#define R_DEBUG		0x900u
#define LIB(i)		(0x1000u * (unsigned int)((i) + 1))
#define LM(k)		(0x8000u + 64u * (unsigned int)(k))
#define NAME(k)		(0xa000u + 256u * (unsigned int)(k))
#define EXECFN		0xc000u
#define CHAIN		0x10000u	/* a long chain: 40 bytes an entry */
#define NLIBS		3

static uint8_t mem[MEM];

static void put64(uint32_t at, uint64_t v)
{
	memcpy(mem + at, &v, 8);
}

/* An ELF header and program headers at off: PT_PHDR (with phdr), one
 * PF_X PT_LOAD of a page, PT_DYNAMIC at EXE_DYN. */
static void image(uint32_t off, bool phdr)
{
	Elf64_Ehdr eh = { .e_type = ET_DYN, .e_machine = EM_X86_64,
			  .e_phoff = sizeof(Elf64_Ehdr),
			  .e_phentsize = sizeof(Elf64_Phdr),
			  .e_phnum = phdr ? 3 : 2 };
	Elf64_Phdr ph[3], *p = ph;

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	memset(ph, 0, sizeof(ph));
	if (phdr)
		*p++ = (Elf64_Phdr){ .p_type = PT_PHDR,
				     .p_vaddr = sizeof(Elf64_Ehdr),
				     .p_memsz = 3 * sizeof(Elf64_Phdr) };
	*p++ = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X,
			     .p_filesz = 0x1000, .p_memsz = 0x1000 };
	*p++ = (Elf64_Phdr){ .p_type = PT_DYNAMIC, .p_vaddr = EXE_DYN,
			     .p_memsz = 4 * sizeof(Elf64_Dyn) };
	memcpy(mem + off, &eh, sizeof(eh));
	memcpy(mem + off + sizeof(eh), ph,
	       (size_t)(p - ph) * sizeof(Elf64_Phdr));
}

static void link_map(unsigned int k, uint64_t addr, uint32_t name,
		     uint64_t ld, uint32_t next, uint32_t prev)
{
	put64(LM(k), addr);
	put64(LM(k) + 8, name ? V + name : 0);
	put64(LM(k) + 16, ld);
	put64(LM(k) + 24, next ? V + next : 0);
	put64(LM(k) + 32, prev ? V + prev : 0);
}

/* The intact process: the executable, r_debug, the exe's entry and
 * three libraries in the list. */
static void process(void)
{
	unsigned int i;

	memset(mem, 0, sizeof(mem));
	image(0, true);
	put64(EXE_DYN, DT_DEBUG);
	put64(EXE_DYN + 8, V + R_DEBUG);
	put64(R_DEBUG, 1);			/* r_version */
	put64(R_DEBUG + 8, V + LM(0));		/* r_map */
	strcpy((char *)mem + EXECFN, "/bin/exe");
	link_map(0, V, NAME(0), V + EXE_DYN, LM(1), 0);
	for (i = 0; i < NLIBS; i++) {
		image(LIB(i), false);
		snprintf((char *)mem + NAME(i + 1), 256, "/lib/lib%u.so", i);
		link_map(i + 1, V + LIB(i), NAME(i + 1),
			 V + LIB(i) + EXE_DYN, i + 1 < NLIBS ? LM(i + 2) : 0,
			 LM(i));
	}
}

static void note(uint8_t **at, uint32_t type, const void *desc, uint32_t len)
{
	uint32_t h[3] = { 5, len, type };

	memcpy(*at, h, 12);
	memcpy(*at + 12, "CORE\0\0\0", 8);
	memcpy(*at + 20, desc, len);
	*at += 20 + ((len + 3) & ~3u);
}

/* mem's first size bytes as a core's memory, with NT_AUXV and
 * NT_PRPSINFO, into fd. */
static void write_core(int fd, uint32_t size)
{
	static uint8_t file[4096 + MEM];
	uint64_t auxv[] = { AT_PHDR, V + sizeof(Elf64_Ehdr), AT_PHNUM, 3,
			    AT_ENTRY, V + 0x100, AT_EXECFN, V + EXECFN,
			    AT_NULL, 0 };
	uint8_t prpsinfo[136] = { 0 }, *at;
	Elf64_Ehdr eh = { .e_type = ET_CORE, .e_machine = EM_X86_64,
			  .e_phoff = sizeof(Elf64_Ehdr),
			  .e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 2 };
	Elf64_Phdr ph[2];

	memset(file, 0, sizeof(file));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_version = EV_CURRENT;
	at = file + 512;
	note(&at, NT_AUXV, auxv, sizeof(auxv));
	memcpy(prpsinfo + 40, "exe", 3);
	note(&at, NT_PRPSINFO, prpsinfo, sizeof(prpsinfo));
	ph[0] = (Elf64_Phdr){ .p_type = PT_NOTE, .p_offset = 512,
			      .p_filesz = (uint64_t)(at - file - 512) };
	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_W,
			      .p_offset = 4096, .p_vaddr = V,
			      .p_filesz = size, .p_memsz = size };
	memcpy(file, &eh, sizeof(eh));
	memcpy(file + sizeof(eh), ph, sizeof(ph));
	memcpy(file + 4096, mem, size);
	CHECK(write(fd, file, 4096 + size) == (ssize_t)(4096 + size));
}

/* mem as a core's memory; opened in c. */
static void open_core(struct core *c)
{
	char path[64], why[256];
	int fd = memfd_create("test-core", MFD_CLOEXEC);

	CHECK(fd >= 0);
	write_core(fd, MEM);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (core__open(c, path, why, sizeof(why))) {
		fprintf(stderr, "core__open: %s\n", why);
		CHECK(!"the core opens");
	}
	close(fd);
}

/* The modules of mem's core; *m to be freed. */
static void find(struct core_modules *m)
{
	struct core c;

	open_core(&c);
	CHECK_EQ_INT(core_modules__find(&c, m), 0);
	core__close(&c);
}

static void test_intact(void)
{
	struct core_modules m;
	unsigned int i;

	process();
	find(&m);
	CHECK_EQ_INT(m.from_nt_file, 0);
	CHECK_EQ_INT(m.from_loader, 1 + NLIBS);
	CHECK(strstr(m.nt_file_why, "no NT_FILE note"));
	CHECK_EQ_STR(m.loader_why, "");
	CHECK_EQ_STR(m.exe, "/bin/exe");
	CHECK_EQ_INT(m.nsegs, 1 + NLIBS);
	CHECK(m.segs[0].is_exe && m.segs[0].start == V);
	for (i = 0; i < NLIBS; i++) {
		char want[32];

		snprintf(want, sizeof(want), "/lib/lib%u.so", i);
		CHECK_EQ_STR(m.segs[i + 1].path, want);
		CHECK(!m.segs[i + 1].is_exe);
		CHECK(m.segs[i + 1].start == V + LIB(i));
		CHECK(m.segs[i + 1].end == V + LIB(i) + 0x1000);
		CHECK(m.segs[i + 1].bias == V + LIB(i));
	}
	core_modules__free(&m);
}

/* Damage one thing; the modules then kept and a word of loader_why. */
static void damaged(const char *what, void (*damage)(void),
		    unsigned int want, const char *why)
{
	struct core_modules m;

	process();
	damage();
	find(&m);
	if (m.from_loader != want || !strstr(m.loader_why, why)) {
		fprintf(stderr, "%s: %u modules (want %u), why \"%s\" (want \"%s\")\n",
			what, m.from_loader, want, m.loader_why, why);
		CHECK(!"damage handled");
	}
	check_count++;
	core_modules__free(&m);
}

static void loop(void) { put64(LM(NLIBS) + 24, V + LM(1)); }
static void self_loop(void) { put64(LM(1) + 24, V + LM(1)); }
static void prev(void) { put64(LM(2) + 32, 0); }
static void name_out(void) { put64(LM(2) + 8, 0x7fff00000000ull); }
static void name_unended(void)
{
	/* runs to the core's end */
	memset(mem + MEM - 100, 'a', 100);
	put64(LM(2) + 8, V + MEM - 100);
}
static void next_out(void) { put64(LM(2) + 24, 0x7fff00000000ull); }
static void dt_debug_0(void) { put64(EXE_DYN + 8, 0); }
static void no_dt_debug(void) { put64(EXE_DYN, DT_NULL); }
static void version(void) { put64(R_DEBUG, 7); }
static void not_theirs(void) { put64(LM(2) + 16, V + LIB(1) + 0x900); }
static void no_execfn(void) { mem[EXECFN] = 'x'; }
static void runaway(void)
{
	unsigned int k, n = 4500;

	/* the list goes on past the cap, each entry a vDSO-like name */
	strcpy((char *)mem + NAME(9), "linux-vdso.so.1");
	put64(LM(NLIBS) + 24, V + CHAIN);
	for (k = 0; k < n; k++) {
		uint32_t at = CHAIN + 40 * k;

		put64(at + 8, V + NAME(9));
		put64(at + 24, k + 1 < n ? V + at + 40 : 0);
		put64(at + 32, k ? V + at - 40 : V + LM(NLIBS));
	}
}

int main(int argc, char **argv)
{
	if (argc == 2) {
		FILE *f = fopen(argv[1], "wb");

		CHECK(f);
		process();
		write_core(fileno(f), 0xd000);
		CHECK(!fclose(f));
		return 0;
	}
	test_intact();
	damaged("loop", loop, 1 + NLIBS, "loops");
	damaged("self-loop", self_loop, 2, "loops");
	damaged("l_prev", prev, 2, "inconsistent");
	damaged("name outside", name_out, NLIBS, "1 entry without a name");
	damaged("name without end", name_unended, NLIBS, "1 entry without a name");
	damaged("next outside", next_out, 3, "not in the core");
	damaged("DT_DEBUG 0", dt_debug_0, 1, "DT_DEBUG is 0");
	damaged("no DT_DEBUG", no_dt_debug, 1, "no DT_DEBUG");
	damaged("r_version", version, 1, "version 7");
	damaged("not the entry's", not_theirs, NLIBS, "1 whose headers do not match");
	damaged("relative execfn", no_execfn, NLIBS, "relative");
	damaged("runaway", runaway, 1 + NLIBS, "runs past 4096");
	CHECK_SUMMARY("test-core");
	return 0;
}
