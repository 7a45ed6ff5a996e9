/* SPDX-License-Identifier: MIT */
/*
 * elfinfo.h - what the tracer needs to know about one mapped ELF file:
 * its type, GNU build ID and load bias, read with libelf from an open fd
 * (the tracer opens the target's files through /proc/PID/map_files so it
 * reads the very file the target mapped).  libelf errors are translated to
 * -errno here (-ENOEXEC: not ELF or corrupt).
 */
#ifndef PA_ELF_ELFINFO_H
#define PA_ELF_ELFINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ELFINFO_BUILD_ID_MAX 64

#define ELFINFO_DEBUGLINK_MAX 256

struct elfinfo {
	int type;			/* ET_EXEC, ET_DYN, ... */
	int machine;			/* EM_X86_64, ... */
	uint8_t build_id[ELFINFO_BUILD_ID_MAX];
	size_t build_id_len;		/* 0: none */
	bool has_debug_info;		/* a .debug_info with contents */
	bool has_symtab;		/* a .symtab with symbols */
	char debuglink[ELFINFO_DEBUGLINK_MAX];	/* .gnu_debuglink; "" if none */
	uint32_t debuglink_crc;
};

/*
 * Read the ELF header, build ID note, and which debugging sections there
 * are from fd.  0 or -errno (-ENOEXEC: not ELF, or truncated or corrupt
 * headers).
 */
int elfinfo__read(int fd, struct elfinfo *info);

/*
 * Load bias of a file mapped at map_start from file offset map_offset: the
 * value to add to the file's p_vaddr to get run-time addresses.  0 for
 * ET_EXEC.  Works on a separate debug file too (whose segments have no
 * file contents): the mapping is then taken to start its executable
 * segment.  -ENOENT if no PT_LOAD segment fits.
 */
int elfinfo__load_bias(int fd, uint64_t map_start, uint64_t map_offset,
		       uint64_t *bias);

/* Do two build IDs name the same build (both non-empty and equal)? */
bool elfinfo__same_build_id(const uint8_t *a, size_t a_len, const uint8_t *b,
			    size_t b_len);

/* Lower-case hex of the build ID into out (2*len+1 bytes).  Returns out. */
char *elfinfo__build_id_hex(const uint8_t *id, size_t len, char *out);

#endif /* PA_ELF_ELFINFO_H */
