/* SPDX-License-Identifier: MIT */
/*
 * elfinfo.c - ELF type, GNU build ID and load bias of one file, with libelf.
 *
 * The fd is the very file the target mapped (usually opened through
 * /proc/PID/map_files), so nothing here looks at paths.  libelf reads it
 * with mmap where it can and read() otherwise; the fd's file offset is not
 * used or moved.  Every libelf failure (not ELF, truncated or corrupt
 * headers) becomes -ENOEXEC at this boundary; callers print what they were
 * looking at.
 *
 * Sections: whether there is DWARF (.debug_info, or GNU's compressed
 * .zdebug_info, with contents: a stripped file keeps neither, and a
 * --only-keep-debug file keeps .debug_info but has SHT_NOBITS code), a
 * symbol table, and the .gnu_debuglink name and CRC.  A section header
 * table that libelf cannot read is -ENOEXEC, as a truncated file is.
 *
 * Build ID: the NT_GNU_BUILD_ID note is looked for in the PT_NOTE segments
 * first (what the loader maps, present even in stripped files), then in
 * SHT_NOTE sections (for files whose program headers do not cover it).
 *
 * Load bias: the dynamic loader maps every PT_LOAD segment from its file
 * offset rounded down to a page, at its p_vaddr rounded down to a page,
 * plus one bias for the whole file.  A mapping that starts at map_start
 * with file offset map_offset therefore belongs to the segment whose
 * page-rounded file range holds map_offset, and
 *
 *	bias = map_start - (page(p_vaddr) + (map_offset - page(p_offset)))
 *
 * (p_vaddr and p_offset are congruent modulo the page size, so this is the
 * same as map_start - (p_vaddr + map_offset - p_offset)).  With old
 * layouts two segments can share a file page; the one whose rounded start
 * is closest below map_offset is the one the kernel mapped there.
 * Arithmetic is modulo 2^64 on purpose: a prelinked library loaded below
 * its link address has a "negative" bias that still adds up right.
 *
 * libelf is initialised once (pthread_once); after that the functions
 * share no state and are thread-safe.  None is async-signal-safe.
 */
#include "elf/elfinfo.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pthread_once_t libelf_once = PTHREAD_ONCE_INIT;
static bool libelf_ok;

static void libelf_init(void)
{
	libelf_ok = elf_version(EV_CURRENT) != EV_NONE;
}

/* An ELF handle on fd, or NULL with *err set. */
static Elf *open_elf(int fd, int *err)
{
	struct stat st;
	Elf *elf;

	pthread_once(&libelf_once, libelf_init);
	if (!libelf_ok) {
		*err = -ENOSYS;
		return NULL;
	}
	if (fstat(fd, &st) < 0) {
		*err = -errno;
		return NULL;
	}
	/* libelf's fallback for what cannot be mapped (pipes) is read(). */
	elf = elf_begin(fd, S_ISREG(st.st_mode) ? ELF_C_READ_MMAP : ELF_C_READ,
			NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		*err = -ENOEXEC;
		return NULL;
	}
	return elf;
}

/*
 * Look for NT_GNU_BUILD_ID in one block of notes.  Returns true and fills
 * info when found.
 */
static bool find_build_id(Elf_Data *data, struct elfinfo *info)
{
	size_t offset = 0, next, name_off, desc_off;
	GElf_Nhdr nhdr;

	while (offset < data->d_size &&
	       (next = gelf_getnote(data, offset, &nhdr, &name_off,
				    &desc_off)) > 0) {
		const char *name = (const char *)data->d_buf + name_off;

		offset = next;
		if (nhdr.n_type != NT_GNU_BUILD_ID || nhdr.n_namesz != 4 ||
		    memcmp(name, "GNU", 4) != 0)
			continue;
		if (nhdr.n_descsz == 0 ||
		    nhdr.n_descsz > ELFINFO_BUILD_ID_MAX)
			continue;
		memcpy(info->build_id, (const char *)data->d_buf + desc_off,
		       nhdr.n_descsz);
		info->build_id_len = nhdr.n_descsz;
		return true;
	}
	return false;
}

static int build_id_from_phdrs(Elf *elf, struct elfinfo *info, bool *found)
{
	size_t phnum;

	if (elf_getphdrnum(elf, &phnum) != 0)
		return -ENOEXEC;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr phdr;
		Elf_Data *data;

		if (!gelf_getphdr(elf, (int)i, &phdr))
			return -ENOEXEC;
		if (phdr.p_type != PT_NOTE || phdr.p_filesz == 0)
			continue;
		data = elf_getdata_rawchunk(elf, (int64_t)phdr.p_offset,
					    phdr.p_filesz,
					    phdr.p_align == 8 ? ELF_T_NHDR8 :
								ELF_T_NHDR);
		/* A note segment past the end of the file: not this one. */
		if (!data)
			continue;
		if (find_build_id(data, info)) {
			*found = true;
			return 0;
		}
	}
	return 0;
}

static int build_id_from_sections(Elf *elf, struct elfinfo *info)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &shdr))
			return -ENOEXEC;
		if (shdr.sh_type != SHT_NOTE ||
		    (shdr.sh_flags & SHF_COMPRESSED))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		if (find_build_id(data, info))
			return 0;
	}
	return 0;
}

/* .gnu_debuglink: a NUL-terminated name, padding to 4, a CRC-32. */
static void read_debuglink(Elf_Scn *scn, const GElf_Shdr *shdr,
			   struct elfinfo *info)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	const char *name;
	size_t len, crc_off;
	uint32_t crc;

	if (!data || !data->d_buf || shdr->sh_type == SHT_NOBITS)
		return;
	name = data->d_buf;
	len = strnlen(name, data->d_size);
	if (len == 0 || len >= sizeof(info->debuglink) || len == data->d_size)
		return;
	crc_off = (len + 4) & ~(size_t)3;
	if (crc_off > data->d_size || data->d_size - crc_off < 4)
		return;
	memcpy(&crc, (const char *)data->d_buf + crc_off, 4);
	/* Neither a path nor "." nor "..": a file name next to the ELF. */
	if (strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return;
	memcpy(info->debuglink, name, len + 1);
	info->debuglink_crc = crc;
}

static int read_sections(Elf *elf, struct elfinfo *info)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		const char *name;

		if (!gelf_getshdr(scn, &shdr))
			return -ENOEXEC;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!name)
			return -ENOEXEC;
		if (shdr.sh_type == SHT_NOBITS || shdr.sh_size == 0)
			continue;
		if (!strcmp(name, ".debug_info") ||
		    !strcmp(name, ".zdebug_info"))
			info->has_debug_info = true;
		else if (shdr.sh_type == SHT_SYMTAB &&
			 shdr.sh_entsize && shdr.sh_size / shdr.sh_entsize > 1)
			info->has_symtab = true;
		else if (!strcmp(name, ".gnu_debuglink"))
			read_debuglink(scn, &shdr, info);
	}
	return 0;
}

int elfinfo__read(int fd, struct elfinfo *info)
{
	GElf_Ehdr ehdr;
	bool found = false;
	Elf *elf;
	int err;

	if (!info)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	elf = open_elf(fd, &err);
	if (!elf)
		return err;
	if (!gelf_getehdr(elf, &ehdr)) {
		err = -ENOEXEC;
		goto out_end;
	}
	info->type = ehdr.e_type;
	info->machine = ehdr.e_machine;

	err = build_id_from_phdrs(elf, info, &found);
	if (!err && !found)
		err = build_id_from_sections(elf, info);
	if (!err)
		err = read_sections(elf, info);

out_end:
	elf_end(elf);
	return err;
}

/*
 * Does the segment, mapped from seg_start (p_offset rounded down to a
 * page), cover file offset off?  [seg_start, p_offset + p_filesz), without
 * computing a sum that could overflow.
 */
static bool segment_covers(const GElf_Phdr *phdr, uint64_t seg_start,
			   uint64_t off)
{
	if (off < seg_start)
		return false;
	if (off < phdr->p_offset)
		return true;
	return off - phdr->p_offset < phdr->p_filesz;
}

/*
 * A separate debug file keeps the program headers but none of the loaded
 * bytes (p_filesz is 0 and p_offset means nothing), so the mapping's file
 * offset cannot pick the segment.  What profiles record are executable
 * mappings, so take the first executable PT_LOAD and assume the mapping
 * starts where it does (the usual layout: one code segment, mapped whole).
 * Fills *best as if p_offset were map_offset.
 */
static bool exec_segment(Elf *elf, size_t phnum, GElf_Phdr *best,
			 uint64_t *best_start, uint64_t map_offset,
			 uint64_t page_mask)
{
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr phdr;

		if (!gelf_getphdr(elf, (int)i, &phdr))
			return false;
		if (phdr.p_type != PT_LOAD || !(phdr.p_flags & PF_X) ||
		    phdr.p_memsz == 0)
			continue;
		if (phdr.p_filesz)
			return false;	/* code is there: not a debug file */
		*best = phdr;
		best->p_offset = map_offset + (phdr.p_vaddr & ~page_mask);
		*best_start = map_offset;
		return true;
	}
	return false;
}

int elfinfo__load_bias(int fd, uint64_t map_start, uint64_t map_offset,
		       uint64_t *bias)
{
	uint64_t page_mask, best_start = 0;
	GElf_Phdr best = { 0 };
	bool found = false;
	GElf_Ehdr ehdr;
	size_t phnum;
	long page;
	Elf *elf;
	int err = 0;

	if (!bias)
		return -EINVAL;
	elf = open_elf(fd, &err);
	if (!elf)
		return err;
	if (!gelf_getehdr(elf, &ehdr) || elf_getphdrnum(elf, &phnum) != 0) {
		err = -ENOEXEC;
		goto out_end;
	}
	/* The page size the kernel mapped with (4096 on x86-64). */
	page = sysconf(_SC_PAGESIZE);
	page_mask = ~((uint64_t)(page > 0 ? page : 4096) - 1);

	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr phdr;
		uint64_t seg_start;

		if (!gelf_getphdr(elf, (int)i, &phdr)) {
			err = -ENOEXEC;
			goto out_end;
		}
		if (phdr.p_type != PT_LOAD || phdr.p_filesz == 0)
			continue;
		seg_start = phdr.p_offset & page_mask;
		if (!segment_covers(&phdr, seg_start, map_offset))
			continue;
		if (!found || seg_start >= best_start) {
			best = phdr;
			best_start = seg_start;
			found = true;
		}
	}
	if (!found)
		found = exec_segment(elf, phnum, &best, &best_start,
				     map_offset, page_mask);
	if (!found) {
		err = -ENOENT;
		goto out_end;
	}
	/* An ET_EXEC runs at its link addresses, wherever it says it is;
	 * a mapping of its pages elsewhere is a copy (V8 remaps part of
	 * node's text), biased like a library's. */
	if (ehdr.e_type == ET_EXEC &&
	    map_start >= (best.p_vaddr & page_mask) &&
	    map_start < best.p_vaddr + best.p_memsz)
		*bias = 0;
	else
		*bias = map_start - ((best.p_vaddr & page_mask) +
				     (map_offset - best_start));

out_end:
	elf_end(elf);
	return err;
}

bool elfinfo__same_build_id(const uint8_t *a, size_t a_len, const uint8_t *b,
			    size_t b_len)
{
	return a_len && a_len == b_len && !memcmp(a, b, a_len);
}

char *elfinfo__build_id_hex(const uint8_t *id, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 0xf];
	}
	out[2 * len] = '\0';
	return out;
}
