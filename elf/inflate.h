/* SPDX-License-Identifier: MIT */
/*
 * inflate.h - an uncompressed copy, in a memfd, of an ELF file whose DWARF
 * sections are compressed (SHF_COMPRESSED), made once and shared by every
 * symbolizer thread instead of each libdw decompressing its own.
 */
#ifndef PA_ELF_INFLATE_H
#define PA_ELF_INFLATE_H

#include <stdint.h>

/*
 * If fd is a 64-bit native-endian ELF file with zlib-compressed .debug_*
 * sections, write a copy with the ones the symbolizer reads decompressed
 * (with up to `threads` threads) into a new memfd and return it in
 * *copy_fd; those it never reads (location lists, macros, name indexes)
 * become SHT_NOBITS instead.  *copy_fd is -1 when there is nothing to
 * decompress.  Returns 0, -ENODATA if the file has no .debug_info at all
 * (its DWARF is elsewhere), -EILSEQ for a damaged compressed stream,
 * -EFBIG for sizes past the file or the budget, -EINVAL for a layout not
 * copied (duplicate or overlapping sections), or another negative errno:
 * the caller can still hand the original to libdw, which decompresses by
 * itself.
 */
int elf_inflate__copy(int fd, unsigned int threads, int *copy_fd,
		      uint64_t *inflated_bytes);

#endif /* PA_ELF_INFLATE_H */
