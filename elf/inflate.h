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
 * sections, write a copy with them decompressed (with up to `threads`
 * threads) into a new memfd and return it in *copy_fd; what the
 * symbolizer never reads (.debug_loclists, .debug_loc, .debug_macro,
 * .debug_macinfo) becomes SHT_NOBITS instead.  *copy_fd is -1 when there
 * is nothing to decompress.  Returns 0, -ENODATA if the file has no
 * .debug_info at all (its DWARF is elsewhere), or another negative errno
 * (corrupt compressed data, out of memory): the caller can still hand the
 * original to libdw, which decompresses by itself.
 */
int elf_inflate__copy(int fd, unsigned int threads, int *copy_fd,
		      uint64_t *inflated_bytes);

#endif /* PA_ELF_INFLATE_H */
