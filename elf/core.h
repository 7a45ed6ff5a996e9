/* SPDX-License-Identifier: MIT */
/*
 * core.h - read an ELF core dump: its memory, its file mappings, its notes.
 */
#ifndef PA_ELF_CORE_H
#define PA_ELF_CORE_H

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

struct core {
	int fd;
	uint64_t size;			/* of the core file */
	struct core_segment *segs;
	size_t nsegs;
	struct core_file_map *files;
	size_t nfiles;
	int pid;			/* NT_PRSTATUS pr_pid, 0 if none */
	int signal;			/* NT_PRSTATUS pr_cursig */
	char comm[17];			/* NT_PRPSINFO pr_fname */
};

/*
 * Open and index an x86_64 ELF core.  Every offset, size and count in it
 * is checked against the file; a core cut short keeps what it has (reads
 * past its end fail).  0, or -errno with why (why_len bytes) saying what
 * is wrong: not ELF, not a core, another machine, no NT_FILE note...
 */
int core__open(struct core *c, const char *path, char *why, size_t why_len);

/*
 * Copy len bytes of the process's memory at vaddr.  0, or -EFAULT when
 * any byte is not in the core (never dumped, or the core is truncated).
 */
int core__read(const struct core *c, uint64_t vaddr, void *buf, size_t len);

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
