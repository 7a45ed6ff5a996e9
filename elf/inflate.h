/* SPDX-License-Identifier: MIT */
/*
 * inflate.h - an uncompressed image, in memory, of an ELF file whose DWARF
 * sections are compressed (SHF_COMPRESSED), made once and shared by every
 * symbolizer thread instead of each libdw decompressing its own.
 */
#ifndef PA_ELF_INFLATE_H
#define PA_ELF_INFLATE_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

/* A read-only ELF file in memory, reference-counted. */
struct elf_image;

/*
 * Work for a thread that would otherwise wait while the biggest section
 * is still being inflated: run at most once, on one of the threads, as
 * soon as no section is left to start and those named in needs
 * (NULL-terminated) are done.  It may read those, and sections that were
 * not compressed, from the image (elf_image__section()), nothing else.
 * It should return soon after *stop (read atomically) turns non-zero:
 * every section is then done (or one failed), and the image is waiting
 * for it; *stop may be set when it starts (one thread, or needs naming
 * the last section done).  It does not run when nothing is inflated or
 * after a failure.
 */
struct inflate_idle {
	const char *const *needs;
	void (*run)(struct elf_image *image, const int *stop, void *arg);
	void *arg;
};

/*
 * If fd is a 64-bit native-endian ELF file with zlib-compressed .debug_*
 * sections, make an image of it with the ones the symbolizer reads
 * decompressed (with up to `threads` threads) and return it in *image
 * (one reference); those it never reads (location lists, macros, name
 * indexes) become SHT_NOBITS instead.  idle (may be NULL) is run on the
 * way, as described above.  *image is NULL when there is
 * nothing to decompress.  Returns 0, -ENODATA if the file has no
 * .debug_info at all (its DWARF is elsewhere), -EILSEQ for a damaged
 * compressed stream, -EFBIG for sizes past the file or the budget,
 * -EINVAL for a file not copied (duplicate or overlapping sections,
 * .zdebug_* or zstd sections, compressed section names), or
 * another negative errno: the caller can still hand the original to
 * libdw, which decompresses by itself.
 */
int elf_inflate__image(int fd, unsigned int threads,
		       const struct inflate_idle *idle,
		       struct elf_image **image, uint64_t *inflated_bytes);

/* The bytes and size of the image's first section called name, or NULL
 * (none, SHT_NOBITS, still compressed).  libdw's rules for which of two
 * sections of one name it reads are its own (elf/linetable.c checks). */
const void *elf_image__section(const struct elf_image *image,
			       const char *name, size_t *size);

/* A new libelf handle on the image, for one thread (elf_end() it before
 * the last elf_image__put()).  NULL if libelf cannot make one. */
Elf *elf_image__open(struct elf_image *image);

/* The size of the ELF file the image holds. */
size_t elf_image__size(const struct elf_image *image);

/* Take another reference (thread-safe); returns image.  NULL is fine. */
struct elf_image *elf_image__get(struct elf_image *image);

/* Drop a reference (thread-safe); the last one frees it.  NULL is fine. */
void elf_image__put(struct elf_image *image);

#endif /* PA_ELF_INFLATE_H */
