// SPDX-License-Identifier: MIT
/*
 * test-inflate.c - elf/inflate.c: an image of an ELF file with its
 * compressed DWARF decompressed.  The subject is this test's own binary
 * (built with -g), compressed by binutils' objcopy:
 *
 *  - the image of the compressed file has every .debug_* section the
 *    symbolizer reads byte for byte as in the uncompressed original, none
 *    marked compressed, the same build ID note, and is the same with 1 or
 *    4 threads; location lists and macros are SHT_NOBITS;
 *  - the image is read-only (a write kills a child with SIGSEGV), and
 *    stays until its last reference is dropped;
 *  - idle work runs once, and sees the sections it needs whole;
 *  - other compressed sections (.debug_frame) are dropped, so that libdw
 *    can open the image; .zdebug_* files are not copied;
 *  - an uncompressed file needs no image; a file without .debug_info says
 *    -ENODATA;
 *  - a damaged compressed stream, or a compression header that claims more
 *    than deflate can produce, gives an error and no image;
 *  - so do two sections of one DWARF name, and a compressed section laid
 *    over another section, as a crafted file could have them.
 */
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stddef.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"
#include "elf/inflate.h"

static char dir[256];

static void run(const char *cmd)
{
	int rc = system(cmd);

	if (rc != 0)
		fprintf(stderr, "test-inflate: `%s' exited %d\n", cmd, rc);
	CHECK(rc == 0);
}

/* The section called name, with its header in *sh, or NULL. */
static Elf_Scn *find_section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	CHECK(elf_getshdrstrndx(elf, &shstrndx) == 0);
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		CHECK(gelf_getshdr(scn, sh));
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/* The section called name: its header and, unless NOBITS, its bytes. */
static void *section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = find_section(elf, name, sh);
	Elf_Data *d = scn ? elf_rawdata(scn, NULL) : NULL;

	return d ? d->d_buf : NULL;
}

/* Section name of a and b hold the same bytes, b's uncompressed. */
static void same_section(Elf *a, Elf *b, const char *name)
{
	GElf_Shdr sa, sb;
	void *da = section(a, name, &sa), *db = section(b, name, &sb);

	if (!da) {
		CHECK(!db);
		return;
	}
	CHECK(db);
	CHECK(!(sb.sh_flags & SHF_COMPRESSED));
	CHECK_EQ_INT(sb.sh_size, sa.sh_size);
	CHECK(memcmp(da, db, sa.sh_size) == 0);
}

static int open_image(const char *path, unsigned int threads,
		      struct elf_image **image, uint64_t *bytes)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	CHECK(fd >= 0);
	err = elf_inflate__image(fd, threads, NULL, image, bytes);
	close(fd);
	return err;
}

/* The image's bytes, as libelf sees them. */
static const char *image_bytes(Elf *elf, size_t *size)
{
	const char *raw = elf_rawfile(elf, size);

	CHECK(raw);
	return raw;
}

/* What the idle work saw. */
struct idle_seen {
	int runs;
	size_t line_size;
	void *line;		/* a copy of .debug_line as it was */
};

static void idle_run(struct elf_image *image, const int *stop, void *arg)
{
	struct idle_seen *seen = arg;
	const void *line;
	size_t size;

	(void)stop;
	seen->runs++;
	line = elf_image__section(image, ".debug_line", &size);
	if (line) {
		seen->line = malloc(size);
		CHECK(seen->line);
		memcpy(seen->line, line, size);
		seen->line_size = size;
	}
}

/*
 * The idle work runs once, with 1 thread or 4, and .debug_line is whole
 * when it runs: the same bytes as the uncompressed original's.
 */
static void test_idle(const char *packed, Elf *orig)
{
	static const char *const needs[] = { ".debug_line", NULL };
	GElf_Shdr sh;
	void *want = section(orig, ".debug_line", &sh);

	CHECK(want);
	for (unsigned int threads = 1; threads <= 4; threads += 3) {
		struct idle_seen seen = { 0 };
		const struct inflate_idle idle = { needs, idle_run, &seen };
		struct elf_image *image = NULL;
		int fd = open(packed, O_RDONLY | O_CLOEXEC);

		CHECK(fd >= 0);
		CHECK_EQ_INT(elf_inflate__image(fd, threads, &idle, &image,
						NULL), 0);
		close(fd);
		CHECK(image);
		CHECK_EQ_INT(seen.runs, 1);
		CHECK_EQ_INT(seen.line_size, sh.sh_size);
		CHECK(seen.line && memcmp(seen.line, want, sh.sh_size) == 0);
		free(seen.line);
		elf_image__put(image);
	}
}

/*
 * Compressed sections the symbolizer does not read (.debug_frame, from
 * -fno-asynchronous-unwind-tables) are dropped, not left compressed:
 * libdw would decompress them in place, writing into the read-only image
 * (it crashed).  No section of the image is compressed, and libdw opens
 * it and reads its units.  GNU's older .zdebug_* compression is left to
 * libdw (-EINVAL).
 */
static void test_other_sections(void)
{
	char src[300], bin[300], cmd[1200];
	struct elf_image *image = NULL;
	Elf_Scn *scn = NULL;
	Dwarf_Off off = 0, next;
	size_t header_size, units = 0;
	GElf_Shdr sh;
	Dwarf *dwarf;
	Elf *elf;
	FILE *f;
	int fd;

	snprintf(src, sizeof(src), "%s/frame.c", dir);
	snprintf(bin, sizeof(bin), "%s/frame", dir);
	f = fopen(src, "w");
	CHECK(f && fputs("int f(int x) { return x * 3; }\n"
			 "int main(int c, char **v) { (void)v; return f(c); }\n",
			 f) >= 0 && fclose(f) == 0);
	snprintf(cmd, sizeof(cmd),
		 "gcc -g -O2 -fno-asynchronous-unwind-tables -fno-unwind-tables "
		 "-o %s %s && "
		 "objcopy --compress-debug-sections=zlib %s", bin, src, bin);
	run(cmd);
	fd = open(bin, O_RDONLY);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	CHECK(elf && section(elf, ".debug_frame", &sh));
	CHECK(sh.sh_flags & SHF_COMPRESSED);
	elf_end(elf);
	close(fd);

	CHECK_EQ_INT(open_image(bin, 2, &image, NULL), 0);
	CHECK(image);
	elf = elf_image__open(image);
	CHECK(elf);
	while ((scn = elf_nextscn(elf, scn))) {
		CHECK(gelf_getshdr(scn, &sh));
		CHECK(!(sh.sh_flags & SHF_COMPRESSED));
	}
	CHECK(find_section(elf, ".debug_frame", &sh));
	CHECK_EQ_INT(sh.sh_type, SHT_NOBITS);
	dwarf = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	CHECK(dwarf);
	while (dwarf && dwarf_next_unit(dwarf, off, &next, &header_size, NULL,
				       NULL, NULL, NULL, NULL, NULL) == 0) {
		units++;
		off = next;
	}
	CHECK(units >= 1);
	dwarf_end(dwarf);
	elf_end(elf);
	elf_image__put(image);

	snprintf(cmd, sizeof(cmd),
		 "gcc -g -O2 -o %s %s && "
		 "objcopy --compress-debug-sections=zlib-gnu %s", bin, src, bin);
	run(cmd);
	image = (struct elf_image *)1;
	CHECK_EQ_INT(open_image(bin, 2, &image, NULL), -EINVAL);
	CHECK(!image);
}

/* Writing into the image kills the writer. */
static void test_read_only(Elf *elf)
{
	size_t size;
	volatile char *raw = (volatile char *)image_bytes(elf, &size);
	int status = 0;
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		/* Sanitizers turn the fault into exit(1): not here. */
		struct sigaction dfl = { .sa_handler = SIG_DFL };

		sigaction(SIGSEGV, &dfl, NULL);
		raw[size / 2] ^= 1;
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
}

/* Overwrite len bytes in the middle of path's compressed section name,
 * or its compression header's size (header = 1). */
static void damage(const char *path, const char *name, int header)
{
	int fd = open(path, O_RDWR);
	GElf_Shdr sh;
	Elf *elf;

	CHECK(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	CHECK(elf);
	CHECK(section(elf, name, &sh));
	CHECK(sh.sh_flags & SHF_COMPRESSED);
	if (header) {
		uint64_t huge = sh.sh_size * 2000;

		CHECK(pwrite(fd, &huge, sizeof(huge),
			     (off_t)sh.sh_offset + 8) == sizeof(huge));
	} else {
		unsigned char junk[64];

		memset(junk, 0x5a, sizeof(junk));
		CHECK(sh.sh_size > 2 * sizeof(junk));
		CHECK(pwrite(fd, junk, sizeof(junk), (off_t)(sh.sh_offset +
			     sh.sh_size / 2)) == sizeof(junk));
	}
	elf_end(elf);
	close(fd);
}

/* Section name's index and header in the file at path. */
static size_t section_index(const char *path, const char *name,
			    GElf_Shdr *sh, uint64_t *shoff)
{
	int fd = open(path, O_RDONLY);
	size_t index = 0;
	Elf_Scn *scn;
	GElf_Ehdr eh;
	Elf *elf;

	CHECK(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	CHECK(elf && gelf_getehdr(elf, &eh));
	*shoff = eh.e_shoff;
	scn = find_section(elf, name, sh);
	if (scn)
		index = elf_ndxscn(scn);
	elf_end(elf);
	close(fd);
	CHECK(index > 0);
	return index;
}

/* Overwrite a field (at field bytes into Elf64_Shdr) of a section. */
static void patch_shdr(const char *path, const char *name, size_t field,
		       const void *value, size_t size)
{
	uint64_t shoff;
	GElf_Shdr sh;
	size_t index = section_index(path, name, &sh, &shoff);
	int fd = open(path, O_RDWR);

	CHECK(fd >= 0);
	CHECK(pwrite(fd, value, size, (off_t)(shoff + index *
		     sizeof(Elf64_Shdr) + field)) == (ssize_t)size);
	close(fd);
}

/*
 * Layouts that are not copied (-EINVAL), so that a crafted file cannot
 * have one stream inflated twice or zero bytes still in use: two
 * sections named .debug_info; a compressed section over another one.
 */
static void test_refused_layouts(const char *plain, const char *packed)
{
	char cmd[1024];
	GElf_Shdr info, abbrev;
	uint64_t shoff;
	struct elf_image *image;
	uint64_t bytes;

	snprintf(cmd, sizeof(cmd),
		 "objcopy --compress-debug-sections=zlib %s %s", plain, packed);
	run(cmd);
	section_index(packed, ".debug_info", &info, &shoff);
	section_index(packed, ".debug_abbrev", &abbrev, &shoff);
	CHECK(abbrev.sh_flags & SHF_COMPRESSED);
	/* .debug_abbrev renamed .debug_info */
	patch_shdr(packed, ".debug_abbrev", offsetof(Elf64_Shdr, sh_name),
		   &(Elf64_Word){ info.sh_name }, sizeof(Elf64_Word));
	CHECK_EQ_INT(open_image(packed, 2, &image, &bytes), -EINVAL);
	CHECK(!image);

	/* .debug_abbrev's header on .debug_info's stream */
	run(cmd);
	patch_shdr(packed, ".debug_abbrev", offsetof(Elf64_Shdr, sh_offset),
		   &info.sh_offset, sizeof(info.sh_offset));
	patch_shdr(packed, ".debug_abbrev", offsetof(Elf64_Shdr, sh_size),
		   &info.sh_size, sizeof(info.sh_size));
	CHECK_EQ_INT(open_image(packed, 2, &image, &bytes), -EINVAL);
	CHECK(!image);

	/* the symbol table laid over .debug_abbrev's stream */
	run(cmd);
	patch_shdr(packed, ".symtab", offsetof(Elf64_Shdr, sh_offset),
		   &abbrev.sh_offset, sizeof(abbrev.sh_offset));
	CHECK_EQ_INT(open_image(packed, 2, &image, &bytes), -EINVAL);
	CHECK(!image);
}

int main(void)
{
	static const char *const kept[] = {
		".debug_info", ".debug_abbrev", ".debug_line", ".debug_str",
		".debug_line_str", ".debug_aranges", ".debug_rnglists",
		".debug_ranges", ".debug_str_offsets", ".debug_addr",
		".note.gnu.build-id", ".symtab", ".strtab",
	};
	char cmd[2048], plain[300], packed[300], bare[300], again[300];
	struct elf_image *image, *image1;
	uint64_t bytes, bytes1;
	Elf *orig, *inflated, *inflated1;
	const char *raw;
	size_t size;
	int orig_fd, fd, err;
	GElf_Shdr sh;

	elf_version(EV_CURRENT);
	snprintf(dir, sizeof(dir), "%s/test-inflate.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	CHECK(mkdtemp(dir));
	snprintf(plain, sizeof(plain), "%s/plain", dir);
	snprintf(packed, sizeof(packed), "%s/packed", dir);
	snprintf(bare, sizeof(bare), "%s/bare", dir);
	snprintf(again, sizeof(again), "%s/again", dir);
	snprintf(cmd, sizeof(cmd),
		 "cp /proc/%d/exe %s && "
		 "objcopy --decompress-debug-sections %s && "
		 "objcopy --compress-debug-sections=zlib %s %s && "
		 "objcopy --strip-debug %s %s",
		 (int)getpid(), plain, plain, plain, packed, plain, bare);
	run(cmd);

	/* Nothing to do for the uncompressed file or a stripped one. */
	image = (struct elf_image *)1;
	err = open_image(plain, 2, &image, &bytes);
	CHECK_EQ_INT(err, 0);
	CHECK(!image);
	CHECK_EQ_INT(bytes, 0);
	CHECK_EQ_INT(open_image(bare, 2, &image, &bytes), -ENODATA);
	CHECK(!image);

	/* The compressed one: an image with the original bytes. */
	err = open_image(packed, 4, &image, &bytes);
	CHECK_EQ_INT(err, 0);
	CHECK(image);
	CHECK(bytes > 0);
	orig_fd = open(plain, O_RDONLY);
	CHECK(orig_fd >= 0);
	orig = elf_begin(orig_fd, ELF_C_READ, NULL);
	inflated = elf_image__open(image);
	CHECK(orig && inflated);
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		same_section(orig, inflated, kept[i]);
	CHECK(section(orig, ".debug_info", &sh));	/* -g, really */
	if (section(orig, ".debug_loclists", &sh)) {
		CHECK(!section(inflated, ".debug_loclists", &sh));
		CHECK_EQ_INT(sh.sh_type, SHT_NOBITS);
	}
	test_read_only(inflated);
	test_idle(packed, orig);
	test_other_sections();
	/* Not ELF; and the image itself has nothing left to inflate. */
	CHECK_EQ_INT(open_image("/dev/null", 1, &image1, &bytes1), -ENOEXEC);
	raw = image_bytes(inflated, &size);
	CHECK_EQ_INT(size, elf_image__size(image));
	fd = open(again, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && write(fd, raw, size) == (ssize_t)size);
	close(fd);
	err = open_image(again, 1, &image1, &bytes1);
	CHECK_EQ_INT(err, 0);
	CHECK(!image1);			/* nothing left compressed */

	/* One thread makes the same image. */
	err = open_image(packed, 1, &image1, &bytes1);
	CHECK_EQ_INT(err, 0);
	CHECK(image1);
	CHECK_EQ_INT(bytes1, bytes);
	CHECK_EQ_INT(elf_image__size(image1), elf_image__size(image));
	inflated1 = elf_image__open(image1);
	CHECK(inflated1);
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		same_section(inflated, inflated1, kept[i]);
	elf_end(inflated1);
	elf_image__put(image1);

	/* A second reference keeps it: still readable after one put. */
	CHECK(elf_image__get(image) == image);
	elf_image__put(image);
	same_section(orig, inflated, ".debug_info");
	elf_end(inflated);
	elf_image__put(image);
	elf_end(orig);
	close(orig_fd);

	/* A damaged stream: an error, no image. */
	damage(packed, ".debug_info", 0);
	image = (struct elf_image *)1;
	err = open_image(packed, 2, &image, &bytes);
	CHECK(err < 0);
	CHECK(!image);
	/* A header that claims 2000 times its compressed size. */
	snprintf(cmd, sizeof(cmd),
		 "objcopy --compress-debug-sections=zlib %s %s", plain, packed);
	run(cmd);
	damage(packed, ".debug_info", 1);
	CHECK_EQ_INT(open_image(packed, 2, &image, &bytes), -EFBIG);
	CHECK(!image);

	test_refused_layouts(plain, packed);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	run(cmd);
	CHECK_SUMMARY("test-inflate");
	return 0;
}
