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

#include <stddef.h>
#include <stdint.h>

#define ELFINFO_BUILD_ID_MAX 64

struct elfinfo {
	int type;			/* ET_EXEC, ET_DYN, ... */
	uint8_t build_id[ELFINFO_BUILD_ID_MAX];
	size_t build_id_len;		/* 0: none */
};

/* Read the ELF header and build ID note from fd.  0 or -errno. */
int elfinfo__read(int fd, struct elfinfo *info);

/*
 * Load bias of a file mapped at map_start from file offset map_offset: the
 * value to add to the file's p_vaddr to get run-time addresses.  0 for
 * ET_EXEC.  -ENOENT if no PT_LOAD segment covers map_offset.
 */
int elfinfo__load_bias(int fd, uint64_t map_start, uint64_t map_offset,
		       uint64_t *bias);

/* Lower-case hex of the build ID into out (2*len+1 bytes).  Returns out. */
char *elfinfo__build_id_hex(const uint8_t *id, size_t len, char *out);

#endif /* PA_ELF_ELFINFO_H */
