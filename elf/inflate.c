/* SPDX-License-Identifier: MIT */
/*
 * inflate.c - decompress a file's DWARF once, in parallel, for every
 * symbolizer thread.
 *
 * Distributions ship debug files with their .debug_* sections compressed
 * (SHF_COMPRESSED, zlib).  libdw decompresses every DWARF section it
 * knows, with zlib, when a Dwarf is opened - and a Dwfl is not thread-safe, so each `symbolize --jobs`
 * thread would open its own and decompress it all again, in CPU time and
 * in memory.
 *
 * So the symbolizer hands libdw an image instead: one anonymous mapping
 * holding the original bytes at their original offsets (headers, notes,
 * symbol tables: build-ID notes found through program headers stay valid)
 * with the compressed sections left as holes, each decompressed section
 * after the end of the original, aligned, and a new section header table
 * after them that points at the decompressed data and no longer says
 * SHF_COMPRESSED.  Only the sections the symbolizer reads through libdw
 * are inflated (inflated_names); every other compressed section (location
 * lists, macros, .debug_frame) becomes
 * SHT_NOBITS, which libdw skips: left compressed, libdw would decompress
 * it in place, writing its section header into the read-only image.  For
 * the same reason a file with GNU's older compression (.zdebug_*), or with
 * a section the symbolizer reads compressed some other way than zlib, is
 * not copied, nor is one whose section names are compressed.  Sections
 * not compressed stay as they are.  Each thread opens its own libelf
 * handle on the image (elf_memory()); once made, the image is read-only
 * (mprotect), so a stray write faults here instead of changing what
 * another thread reads.  The image is reference-counted: clones of a
 * symbolizer in other threads hold it too.
 *
 * The mapping is plain anonymous memory, which each thread's libelf reads
 * in place: a memfd for libdwfl to open by fd would cost a copy and twice
 * the memory.
 * Huge pages (MADV_HUGEPAGE) are not asked for: with the kernel's default
 * defrag setting a fault then waits for compaction, which makes the time
 * to decompress vary widely from run to run.
 *
 * Sections are inflated with libdeflate (faster than zlib at this; the
 * size is known from the compression header), biggest first, by up to
 * `threads` threads that each take the next section, straight into their
 * place in the image.  A thread left without a section while another
 * still inflates (.debug_info, the biggest, goes on after the others) can
 * be given idle work by the caller (struct inflate_idle): the headers are
 * written into the image before any thread starts, and the work runs once
 * the sections it reads are done, and is told to stop when all are.  Each
 * thread first has the kernel map its section's pages in one call
 * (MADV_POPULATE_WRITE, Linux 5.14; older kernels say EINVAL and the pages
 * fault in one by one), instead of one fault per page as libdeflate
 * writes.
 *
 * The file is not trusted (it may come from a debuginfod server).  Every
 * size is checked before anything is allocated: a section must lie inside
 * the file, may not claim more than deflate's largest ratio (1032:1), the
 * whole image is capped at half the machine's memory (and
 * INFLATE_MAX_BYTES), and a section must inflate to exactly the size its
 * header claims.  A file with two sections of one inflated name, or whose
 * compressed sections overlap each other or anything else the image keeps
 * (headers, other sections), is not copied: several headers on one stream
 * would otherwise multiply it, and a hole would zero bytes still in use.
 * In all those cases the caller gives libdw the original, which reads it
 * (or reports the damage) its own way.
 *
 * Only ELFCLASS64 files of the host's byte order are copied (every file
 * this tool symbolizes on x86_64); others, and zstd-compressed sections
 * (which libdw 0.188 cannot read either), are left to libdw as they are.
 */
#include "elf/inflate.h"

#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <libdeflate.h>
#include <libelf.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The largest copy made (beyond it libdw is left to do it). */
#define INFLATE_MAX_BYTES	(16ULL << 30)
/* deflate cannot expand more than this (258 bytes from 2 bits, rounded). */
#define DEFLATE_MAX_RATIO	1032
#define SECTION_ALIGN		64

struct section_job {
	size_t index;			/* section number */
	const unsigned char *in;	/* compressed stream; NULL: no inflating */
	size_t in_size;
	uint64_t out_offset, out_size;
	uint64_t align;
	uint64_t populate_offset, populate_size;	/* map these in first */
	const char *name;		/* the section's */
	bool done;
};

struct inflate_run {
	struct section_job *jobs;
	size_t njobs;
	size_t next;			/* next job, taken under lock */
	pthread_mutex_t lock;
	unsigned char *out;		/* the image */
	int err;			/* first failure */
	size_t ndone;			/* jobs finished */
	int all_done;			/* atomic: idle work stops */
	const struct inflate_idle *idle;
	bool idle_started;
	struct elf_image *image;
};

struct elf_image {
	unsigned char *map;
	size_t map_size;		/* mapped */
	size_t size;			/* the ELF file in it */
	unsigned int refs;		/* atomic */
};

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23	/* Linux 5.14 */
#endif

/* The DWARF sections the symbolizer reads through libdw: inflated. */
static const char *const inflated_names[] = {
	".debug_info", ".debug_abbrev", ".debug_line", ".debug_str",
	".debug_line_str", ".debug_aranges", ".debug_ranges",
	".debug_rnglists", ".debug_str_offsets", ".debug_addr",
	".debug_types",
};

#define NAMES(a)	(sizeof(a) / sizeof((a)[0]))

/* name's index in names[0..n), or -1. */
static int name_index(const char *name, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(name, names[i]))
			return (int)i;
	return -1;
}

/* A byte range of the file: a hole (not copied) or something kept. */
struct span {
	uint64_t start, end;
	bool hole;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * May the holes be left out of the copy?  Not if one overlaps another
 * hole (two headers on one stream would inflate it twice) or anything
 * kept: the ELF header, program headers, section headers or another
 * section's bytes.  Sorts spans.
 */
static bool holes_alone(struct span *spans, size_t n)
{
	uint64_t end = 0;
	bool hole = false;

	qsort(spans, n, sizeof(*spans), span_cmp);
	for (size_t i = 0; i < n; i++) {
		if (spans[i].start == spans[i].end)
			continue;
		if (i && spans[i].start < end && (hole || spans[i].hole))
			return false;
		if (spans[i].end > end) {
			end = spans[i].end;
			hole = spans[i].hole;
		} else {
			hole = hole || spans[i].hole;
		}
	}
	return true;
}

/* At most half the machine's memory, and INFLATE_MAX_BYTES. */
static uint64_t inflate_budget(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	uint64_t half;

	if (pages <= 0 || page <= 0)
		return INFLATE_MAX_BYTES;
	half = (uint64_t)pages / 2 * (uint64_t)page;
	return half < INFLATE_MAX_BYTES ? half : INFLATE_MAX_BYTES;
}

/* Map [p, p + size) in now; failing that, it faults in when written. */
static void populate(unsigned char *p, size_t size)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t start;

	if (page <= 0)
		return;
	start = (uintptr_t)p & ~((uintptr_t)page - 1);

	madvise((void *)start, (uintptr_t)(p + size) - start,
		MADV_POPULATE_WRITE);
}

/* Inflate one section into its place in the image. */
static int inflate_section(struct libdeflate_decompressor *d,
			   unsigned char *out, const struct section_job *job)
{
	enum libdeflate_result r;
	size_t got = 0;

	if (job->populate_size)
		populate(out + job->populate_offset, job->populate_size);
	if (!job->in || !job->out_size)
		return 0;
	r = libdeflate_zlib_decompress(d, job->in, job->in_size,
				       out + job->out_offset, job->out_size,
				       &got);
	return r == LIBDEFLATE_SUCCESS && got == job->out_size ? 0 : -EILSEQ;
}

/* Are the sections the idle work reads inflated?  (Under run->lock.) */
static bool needs_done(const struct inflate_run *run)
{
	for (size_t j = 0; j < run->njobs; j++) {
		const struct section_job *job = &run->jobs[j];

		if (!job->in || job->done)
			continue;
		for (const char *const *n = run->idle->needs; *n; n++)
			if (!strcmp(job->name, *n))
				return false;
	}
	return true;
}

static void *inflate_worker(void *arg)
{
	struct inflate_run *run = arg;
	struct libdeflate_decompressor *d;

	d = libdeflate_alloc_decompressor();
	for (;;) {
		struct section_job *job = NULL;
		bool idle = false;
		int err;

		pthread_mutex_lock(&run->lock);
		if (!d && !run->err) {
			run->err = -ENOMEM;
			__atomic_store_n(&run->all_done, 1, __ATOMIC_RELEASE);
		}
		if (!run->err && run->next < run->njobs)
			job = &run->jobs[run->next++];
		else if (!run->err && run->idle && !run->idle_started &&
			 needs_done(run))
			idle = run->idle_started = true;
		pthread_mutex_unlock(&run->lock);
		if (idle)	/* the sections it reads are done */
			run->idle->run(run->image, &run->all_done,
				       run->idle->arg);
		if (!job)
			break;
		err = inflate_section(d, run->out, job);
		pthread_mutex_lock(&run->lock);
		if (err && !run->err) {
			run->err = err;	/* no more jobs: idle work stops */
			__atomic_store_n(&run->all_done, 1, __ATOMIC_RELEASE);
		}
		job->done = true;
		if (++run->ndone == run->njobs)
			__atomic_store_n(&run->all_done, 1, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&run->lock);
	}
	if (d)
		libdeflate_free_decompressor(d);
	return NULL;
}

/* Inflate every job; 0 or the first failure. */
static int inflate_all(struct inflate_run *run, unsigned int threads)
{
	pthread_t tids[8];
	unsigned int started = 0;

	if (threads > sizeof(tids) / sizeof(tids[0]))
		threads = sizeof(tids) / sizeof(tids[0]);
	if (threads > run->njobs)
		threads = (unsigned int)run->njobs;
	/* This thread is one of them. */
	while (started + 1 < threads &&
	       pthread_create(&tids[started], NULL, inflate_worker, run) == 0)
		started++;
	inflate_worker(run);
	for (unsigned int i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	return run->err;
}

/*
 * Which thread maps which pages in.  Each maps its own section's, except
 * the biggest (.debug_info, the one the others wait for, often most of
 * the image, whose mapping in alone takes a noticeable part of inflating
 * it): with another thread, the one inflating it maps only its first
 * POPULATE_HEAD bytes, and the next job, for the next thread, maps the
 * rest ahead of it.
 */
#define POPULATE_HEAD	(4u << 20)
static void plan_populate(struct inflate_run *run, unsigned int threads)
{
	struct section_job *big = &run->jobs[0];

	for (size_t j = 0; j < run->njobs; j++) {
		run->jobs[j].populate_offset = run->jobs[j].out_offset;
		run->jobs[j].populate_size = run->jobs[j].out_size;
	}
	if (threads < 2 || !run->njobs || big->out_size <= POPULATE_HEAD)
		return;
	memmove(run->jobs + 2, run->jobs + 1,
		(run->njobs - 1) * sizeof(*run->jobs));
	run->jobs[1] = (struct section_job){
		.index = big->index, .name = big->name,
		.populate_offset = big->out_offset + POPULATE_HEAD,
		.populate_size = big->out_size - POPULATE_HEAD,
	};
	big->populate_size = POPULATE_HEAD;
	run->njobs++;
}

static int job_by_size(const void *a, const void *b)
{
	const struct section_job *x = a, *y = b;

	return x->out_size < y->out_size ? 1 : x->out_size > y->out_size ? -1 : 0;
}

static uint64_t align_up(uint64_t v, uint64_t align)
{
	return (v + align - 1) & ~(align - 1);
}

/* Copy the original except its holes (spans sorted, holes alone: the
 * compressed sections, not carried over as they are; the fresh mapping
 * is zeros there). */
static void copy_original(unsigned char *out, const unsigned char *raw,
			  size_t raw_size, const struct span *spans,
			  size_t nspans)
{
	uint64_t at = 0;

	for (size_t i = 0; i <= nspans; i++) {
		uint64_t start = i < nspans ? spans[i].start : raw_size;
		uint64_t end = i < nspans ? spans[i].end : raw_size;

		if (i < nspans && !spans[i].hole)
			continue;
		if (start > at)
			memcpy(out + at, raw + at, start - at);
		if (end > at)
			at = end;
	}
}

int elf_inflate__image(int fd, unsigned int threads,
		       const struct inflate_idle *idle,
		       struct elf_image **image, uint64_t *inflated_bytes)
{
	struct elf_image *im = NULL;
	struct inflate_run run = { .lock = PTHREAD_MUTEX_INITIALIZER };
	Elf64_Shdr *shdrs = NULL;
	struct span *spans = NULL;
	const unsigned char *raw;
	size_t raw_size, shnum, shstrndx, nspans = 0;
	uint64_t out_size, shoff, total = 0, budget = inflate_budget();
	uint32_t seen = 0;	/* inflated_names met, by index */
	bool has_info = false;
	Elf64_Ehdr ehdr;
	Elf *elf;
	int err = 0;

	*image = NULL;
	if (inflated_bytes)
		*inflated_bytes = 0;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	raw = (const unsigned char *)elf_rawfile(elf, &raw_size);
	if (elf_kind(elf) != ELF_K_ELF || !raw ||
	    gelf_getclass(elf) != ELFCLASS64 || raw_size < sizeof(ehdr) ||
	    elf_getshdrnum(elf, &shnum) || elf_getshdrstrndx(elf, &shstrndx)) {
		err = -ENOEXEC;
		goto out_end;
	}
	memcpy(&ehdr, raw, sizeof(ehdr));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (ehdr.e_ident[EI_DATA] != ELFDATA2LSB)
#else
	if (ehdr.e_ident[EI_DATA] != ELFDATA2MSB)
#endif
		goto out_end;	/* nothing we copy; libdw can */
	if (shnum == 0 || shnum > SIZE_MAX / sizeof(*shdrs) / 2)
		goto out_end;
	shdrs = calloc(shnum, sizeof(*shdrs));
	run.jobs = calloc(shnum + 1, sizeof(*run.jobs));	/* + populate */
	spans = calloc(shnum + 3, sizeof(*spans));
	if (!shdrs || !run.jobs || !spans) {
		err = -ENOMEM;
		goto out_free;
	}

	/* Headers, kept as they are. */
	spans[nspans++] = (struct span){ 0, sizeof(ehdr), false };
	spans[nspans++] = (struct span){ ehdr.e_phoff, ehdr.e_phoff +
		(uint64_t)ehdr.e_phnum * ehdr.e_phentsize, false };
	spans[nspans++] = (struct span){ ehdr.e_shoff, ehdr.e_shoff +
		(uint64_t)shnum * ehdr.e_shentsize, false };
	/* Section 0 is no section: with many sections, it holds counts. */
	for (size_t i = 0; i < shnum; i++) {
		Elf_Scn *scn = elf_getscn(elf, i);
		GElf_Shdr sh;
		GElf_Chdr ch;
		const char *name;
		struct section_job *job;
		int known;

		if (!scn || !gelf_getshdr(scn, &sh)) {
			err = -ENOEXEC;
			goto out_free;
		}
		shdrs[i] = (Elf64_Shdr){
			.sh_name = sh.sh_name, .sh_type = sh.sh_type,
			.sh_flags = sh.sh_flags, .sh_addr = sh.sh_addr,
			.sh_offset = sh.sh_offset, .sh_size = sh.sh_size,
			.sh_link = sh.sh_link, .sh_info = sh.sh_info,
			.sh_addralign = sh.sh_addralign,
			.sh_entsize = sh.sh_entsize,
		};
		if (i == 0 || sh.sh_type == SHT_NOBITS)
			continue;
		/* Compressed names: nothing could be found by name. */
		if (i == shstrndx && (sh.sh_flags & SHF_COMPRESSED)) {
			err = -EINVAL;
			goto out_free;
		}
		if (sh.sh_offset > raw_size ||
		    sh.sh_size > raw_size - sh.sh_offset) {
			err = -EFBIG;
			goto out_free;
		}
		spans[nspans] = (struct span){ sh.sh_offset,
					       sh.sh_offset + sh.sh_size, false };
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		/* GNU's older compression, by name: libdw would rewrite its
		 * header to read it, in the read-only image. */
		if (name && !strncmp(name, ".zdebug", 7)) {
			err = -EINVAL;
			goto out_free;
		}
		if (name && !strcmp(name, ".debug_info"))
			has_info = true;
		if (!(sh.sh_flags & SHF_COMPRESSED)) {
			nspans++;
			continue;
		}
		known = name ? name_index(name, inflated_names,
					  NAMES(inflated_names)) : -1;
		if (known < 0) {
			/* Not read by the symbolizer: dropped, since libdw
			 * would decompress it in place (.debug_frame). */
			shdrs[i].sh_type = SHT_NOBITS;
			shdrs[i].sh_flags &= ~(uint64_t)SHF_COMPRESSED;
			shdrs[i].sh_size = 0;
			spans[nspans++].hole = true;
			continue;
		}
		/* zstd, say: libdw's business (0.188 cannot read it). */
		if (!gelf_getchdr(scn, &ch) || ch.ch_type != ELFCOMPRESS_ZLIB) {
			err = -EINVAL;
			goto out_free;
		}
		/* Two sections of one name: which libdw takes is its call. */
		if (seen & 1u << known) {
			err = -EINVAL;
			goto out_free;
		}
		seen |= 1u << known;
		if (sh.sh_size < sizeof(Elf64_Chdr) ||
		    sh.sh_size > UINT64_MAX / DEFLATE_MAX_RATIO ||
		    ch.ch_size > (sh.sh_size - sizeof(Elf64_Chdr)) *
				 DEFLATE_MAX_RATIO + 64 ||
		    ch.ch_size > budget - total) {
			err = -EFBIG;
			goto out_free;
		}
		total += ch.ch_size;
		job = &run.jobs[run.njobs++];
		job->index = i;
		job->name = name;
		job->in = raw + sh.sh_offset + sizeof(Elf64_Chdr);
		job->in_size = sh.sh_size - sizeof(Elf64_Chdr);
		job->out_size = ch.ch_size;
		job->align = ch.ch_addralign &&
			     !(ch.ch_addralign & (ch.ch_addralign - 1)) &&
			     ch.ch_addralign < 4096 ? ch.ch_addralign : 1;
		spans[nspans++].hole = true;
	}
	if (!has_info) {
		err = -ENODATA;
		goto out_free;
	}
	if (!run.njobs)
		goto out_free;	/* nothing to inflate: use the file itself */
	if (!holes_alone(spans, nspans)) {
		err = -EINVAL;	/* overlapping: left to libdw */
		goto out_free;
	}

	/* Layout: the original, then each section, then the headers. */
	out_size = align_up(raw_size, SECTION_ALIGN);
	for (size_t j = 0; j < run.njobs; j++) {
		uint64_t a = run.jobs[j].align > SECTION_ALIGN ?
			     run.jobs[j].align : SECTION_ALIGN;

		run.jobs[j].out_offset = align_up(out_size, a);
		out_size = run.jobs[j].out_offset + run.jobs[j].out_size;
		shdrs[run.jobs[j].index].sh_offset = run.jobs[j].out_offset;
		shdrs[run.jobs[j].index].sh_size = run.jobs[j].out_size;
		shdrs[run.jobs[j].index].sh_addralign = run.jobs[j].align;
		shdrs[run.jobs[j].index].sh_flags &= ~(uint64_t)SHF_COMPRESSED;
	}
	shoff = align_up(out_size, 8);
	out_size = shoff + shnum * sizeof(*shdrs);

	im = calloc(1, sizeof(*im));
	if (!im) {
		err = -ENOMEM;
		goto out_free;
	}
	im->size = out_size;
	im->map_size = out_size;
	im->refs = 1;
	im->map = mmap(NULL, im->map_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (im->map == MAP_FAILED) {
		err = -ENOMEM;
		goto out_free_image;
	}
	run.out = im->map;
	run.image = im;
	run.idle = idle;
	copy_original(im->map, raw, raw_size, spans, nspans);
	/* Headers first: the idle work finds sections through them. */
	ehdr.e_shoff = shoff;
	ehdr.e_shentsize = sizeof(Elf64_Shdr);
	/* Counts past the 16-bit fields live in section 0: kept. */
	memcpy(im->map, &ehdr, sizeof(ehdr));
	memcpy(im->map + shoff, shdrs, shnum * sizeof(*shdrs));
	qsort(run.jobs, run.njobs, sizeof(*run.jobs), job_by_size);
	plan_populate(&run, threads);
	err = inflate_all(&run, threads ? threads : 1);
	if (err)
		goto out_unmap;
	if (mprotect(im->map, im->map_size, PROT_READ) < 0) {
		err = -errno;
		goto out_unmap;
	}
	*image = im;
	if (inflated_bytes)
		*inflated_bytes = total;
	goto out_free;

out_unmap:
	munmap(im->map, im->map_size);
out_free_image:
	free(im);
out_free:
	free(spans);
	free(run.jobs);
	free(shdrs);
out_end:
	elf_end(elf);
	return err;
}

Elf *elf_image__open(struct elf_image *image)
{
	/* libelf wants it writable in type only: the handle reads it. */
	return elf_memory((char *)image->map, image->size);
}

size_t elf_image__size(const struct elf_image *image)
{
	return image->size;
}

struct elf_image *elf_image__get(struct elf_image *image)
{
	if (image)
		__atomic_add_fetch(&image->refs, 1, __ATOMIC_RELAXED);
	return image;
}

void elf_image__put(struct elf_image *image)
{
	if (!image || __atomic_sub_fetch(&image->refs, 1, __ATOMIC_ACQ_REL))
		return;
	munmap(image->map, image->map_size);
	free(image);
}

const void *elf_image__section(const struct elf_image *image,
			       const char *name, size_t *size)
{
	const unsigned char *map = image->map;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)map;
	const Elf64_Shdr *sh, *strtab;
	size_t shnum, shstrndx;

	*size = 0;
	if (eh->e_shoff > image->size ||
	    image->size - eh->e_shoff < sizeof(*sh))
		return NULL;
	sh = (const Elf64_Shdr *)(map + eh->e_shoff);
	shnum = eh->e_shnum ? eh->e_shnum : sh[0].sh_size;
	shstrndx = eh->e_shstrndx == SHN_XINDEX ? sh[0].sh_link :
						   eh->e_shstrndx;
	if (shnum > (image->size - eh->e_shoff) / sizeof(*sh) ||
	    shstrndx >= shnum)
		return NULL;
	strtab = &sh[shstrndx];
	if (strtab->sh_offset > image->size ||
	    strtab->sh_size > image->size - strtab->sh_offset)
		return NULL;
	for (size_t i = 1; i < shnum; i++) {
		const char *n = (const char *)map + strtab->sh_offset +
				sh[i].sh_name;

		if (sh[i].sh_type == SHT_NOBITS ||
		    sh[i].sh_name >= strtab->sh_size ||
		    !memchr(n, 0, strtab->sh_size - sh[i].sh_name) ||
		    strcmp(n, name))
			continue;
		if (sh[i].sh_offset > image->size ||
		    sh[i].sh_size > image->size - sh[i].sh_offset ||
		    (sh[i].sh_flags & SHF_COMPRESSED))
			return NULL;
		*size = sh[i].sh_size;
		return map + sh[i].sh_offset;
	}
	return NULL;
}
