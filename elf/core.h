/* SPDX-License-Identifier: MIT */
/*
 * core.h - read an ELF core dump: its memory, its file mappings, its notes,
 * and the ELF images its process had loaded (core_modules.h lists them).
 */
#ifndef PA_ELF_CORE_H
#define PA_ELF_CORE_H

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct core_segment {
	uint64_t vaddr, memsz;		/* the process's memory */
	uint64_t offset, filesz;	/* what the core holds of it */
	bool exec;			/* PF_X */
};

struct core_file_map {			/* one NT_FILE entry */
	uint64_t start, end;
	uint64_t offset;		/* in the file, bytes */
	char *path;
};

enum core_file_note {
	CORE_FILE_NOTE_NONE,		/* no NT_FILE note */
	CORE_FILE_NOTE_OK,
	CORE_FILE_NOTE_BAD,		/* one that does not parse: cut short
					   or corrupt; files is empty */
};

struct core_auxv {			/* from NT_AUXV; 0 when absent */
	uint64_t phdr, phnum;		/* the executable's program headers */
	uint64_t base;			/* the dynamic loader's load address */
	uint64_t entry;			/* the executable's entry point */
	uint64_t execfn;		/* address of the path execve was given */
};

struct core {
	int fd;
	uint64_t size;			/* of the core file */
	struct core_segment *segs;
	size_t nsegs;
	struct core_file_map *files;
	size_t nfiles;
	enum core_file_note file_note;
	bool has_auxv;
	struct core_auxv auxv;
	int pid;			/* NT_PRSTATUS pr_pid, 0 if none */
	int signal;			/* NT_PRSTATUS pr_cursig */
	char comm[17];			/* NT_PRPSINFO pr_fname */
	char psargs[81];		/* NT_PRPSINFO pr_psargs */
	int machine;			/* EM_X86_64 or EM_AARCH64 */
	uint64_t user_end;		/* above the user address space */
};

/*
 * Open and index an x86_64 or aarch64 ELF core.  Every offset, size and count in it
 * is checked against the file; a core cut short keeps what it has (reads
 * past its end fail).  0, or -errno with why (why_len bytes) saying what
 * is wrong: not ELF, not a core, another machine, notes cut short...  A
 * core without an NT_FILE note, or with one that does not parse, opens:
 * file_note says which.
 */
int core__open(struct core *c, const char *path, char *why, size_t why_len);

/*
 * Copy len bytes of the process's memory at vaddr.  0, or -EFAULT when
 * any byte is not in the core (never dumped, or the core is truncated).
 */
int core__read(const struct core *c, uint64_t vaddr, void *buf, size_t len);

/*
 * Copy the NUL-terminated string at vaddr into buf (at most len bytes with
 * the NUL).  0, -EFAULT when a byte of it is not in the core, -ENAMETOOLONG
 * when it does not end within len bytes.
 */
int core__read_string(const struct core *c, uint64_t vaddr, char *buf,
		      size_t len);

#define CORE_PHDR_MAX		64
#define CORE_BUILD_ID_MAX	64

/* An ELF file's image in a core's memory: its headers and identity. */
struct core_image {
	uint64_t base;			/* where its ELF header is */
	uint64_t bias;			/* load bias: base - first PT_LOAD's
					   (p_vaddr - p_offset) */
	uint64_t phoff;			/* e_phoff */
	Elf64_Phdr ph[CORE_PHDR_MAX];
	unsigned int phnum;
	uint8_t build_id[CORE_BUILD_ID_MAX];
	size_t build_id_len;		/* 0: no GNU build ID note found */
};

/*
 * Read the ELF image whose header the process had at base: header,
 * program headers (at most CORE_PHDR_MAX, within 64 KiB of base), load
 * bias and GNU build ID.  false when the header is not in the core, is not
 * a 64-bit ELF header, or has no PT_LOAD.
 */
bool core__image(const struct core *c, uint64_t base, struct core_image *img);

/*
 * The load bias and GNU build ID of the ELF file whose first page the
 * process had mapped at base, read from the core (the kernel dumps the
 * ELF header page of file mappings by default).  false when the page is
 * not in the core or not ELF; *id_len 0 when there is no build ID.
 */
bool core__module_identity(const struct core *c, uint64_t base,
			   uint64_t *bias, uint8_t *id, size_t id_max,
			   size_t *id_len);

void core__close(struct core *c);

#endif /* PA_ELF_CORE_H */
