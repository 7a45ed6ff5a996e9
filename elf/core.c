// SPDX-License-Identifier: MIT
/*
 * core.c - read an ELF core dump: its memory, its file mappings, its notes.
 *
 * A core is the dead process's memory as PT_LOAD segments (one per
 * mapping; p_filesz is 0, or less than p_memsz, for what the
 * coredump_filter left out - gdb's gcore leaves mappings of files it can
 * read again out altogether) and a PT_NOTE segment: NT_PRSTATUS (pid,
 * signal), NT_PRPSINFO (command name and arguments), NT_AUXV (where the
 * executable's program headers and the loader are) and NT_FILE, the file
 * mappings (start, end, page offset, path).  NT_FILE may be missing (an
 * older gcore; notes cut by systemd-coredump) or cut short: the core
 * still opens, and core_modules.c finds the modules in the loader's list.
 *
 * Nothing in a core is trusted: it may be cut short (a full disk, a size
 * limit), or be anything with a .core name.  Counts and offsets are
 * checked against the file before use, reads are pread()s bounded by the
 * segment and the file, and a short read is an error, never zeros.
 * libelf parses the headers and walks the notes.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "array.h"
#include "core.h"

#define NT_FILE_TYPE	0x46494c45	/* NT_FILE */
#define MAX_FILES	(1u << 20)
#define MAX_AUXV	512u		/* entries; the kernel writes ~25 */

static int say(char *why, size_t len, int err, const char *what)
{
	snprintf(why, len, "%s", what);
	return err;
}

/* NT_FILE: count, page size, count x (start, end, page offset), paths */
static int parse_nt_file(struct core *c, const uint8_t *d, size_t len)
{
	uint64_t count, page, i;
	const char *name, *end;
	size_t cap = 0;

	if (len < 16)
		return -EINVAL;
	memcpy(&count, d, 8);
	memcpy(&page, d + 8, 8);
	if (!count || count > MAX_FILES || (len - 16) / 24 < count ||
	    !page || (page & (page - 1)))
		return -EINVAL;
	name = (const char *)d + 16 + count * 24;
	end = (const char *)d + len;
	if (array__grow((void **)&c->files, &cap, count, sizeof(*c->files)))
		return -ENOMEM;
	for (i = 0; i < count; i++) {
		struct core_file_map *f = &c->files[i];
		const char *nul = memchr(name, 0, (size_t)(end - name));
		uint64_t v[3];

		if (name >= end || !nul)
			return -EINVAL;
		memcpy(v, d + 16 + i * 24, 24);
		if (v[1] <= v[0] || v[2] > UINT64_MAX / page)
			return -EINVAL;
		f->start = v[0];
		f->end = v[1];
		f->offset = v[2] * page;
		f->path = strdup(name);
		if (!f->path)
			return -ENOMEM;
		c->nfiles++;
		name = nul + 1;
	}
	return 0;
}

static void drop_files(struct core *c)
{
	size_t i;

	for (i = 0; i < c->nfiles; i++)
		free(c->files[i].path);
	free(c->files);
	c->files = NULL;
	c->nfiles = 0;
}

/* NT_AUXV: (type, value) pairs up to AT_NULL */
static void parse_auxv(struct core *c, const uint8_t *d, size_t len)
{
	size_t i, n = len / 16;

	if (n > MAX_AUXV)
		n = MAX_AUXV;
	for (i = 0; i < n; i++) {
		uint64_t kv[2];

		memcpy(kv, d + i * 16, 16);
		if (kv[0] == AT_NULL)
			break;
		switch (kv[0]) {
		case AT_PHDR: c->auxv.phdr = kv[1]; break;
		case AT_PHNUM: c->auxv.phnum = kv[1]; break;
		case AT_BASE: c->auxv.base = kv[1]; break;
		case AT_ENTRY: c->auxv.entry = kv[1]; break;
		case AT_EXECFN: c->auxv.execfn = kv[1]; break;
		}
	}
	c->has_auxv = true;
}

static int read_notes(struct core *c, Elf *elf, const GElf_Phdr *ph)
{
	Elf_Data *data;
	GElf_Nhdr nh;
	size_t off = 0, name_off, desc_off;
	int err;

	if (ph->p_offset > c->size || ph->p_filesz > c->size - ph->p_offset)
		return -EINVAL;
	data = elf_getdata_rawchunk(elf, (int64_t)ph->p_offset,
				    ph->p_filesz, ELF_T_NHDR);
	if (!data)
		return -EINVAL;
	while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const uint8_t *desc = (const uint8_t *)data->d_buf + desc_off;
		const char *name = (const char *)data->d_buf + name_off;

		if (nh.n_namesz != 5 || memcmp(name, "CORE", 5))
			continue;
		if (nh.n_type == NT_FILE_TYPE &&
		    c->file_note == CORE_FILE_NOTE_NONE) {
			/* a note that does not parse is as good as none:
			 * the loader's list may still name the modules */
			err = parse_nt_file(c, desc, nh.n_descsz);
			if (err == -ENOMEM)
				return err;
			c->file_note = err ? CORE_FILE_NOTE_BAD :
					     CORE_FILE_NOTE_OK;
			if (err)
				drop_files(c);
		} else if (nh.n_type == NT_AUXV && !c->has_auxv) {
			parse_auxv(c, desc, nh.n_descsz);
		} else if (nh.n_type == NT_PRSTATUS && !c->pid &&
			   nh.n_descsz >= 36) {
			int16_t sig;
			int32_t pid;

			/* elf_prstatus, the same on x86_64 and aarch64:
			 * si_signo etc (12), cursig (2, then 2 padding),
			 * sigpend, sighold (16), pid (4) */
			memcpy(&sig, desc + 12, 2);
			memcpy(&pid, desc + 32, 4);
			c->signal = sig;
			c->pid = pid;
		} else if (nh.n_type == NT_PRPSINFO && nh.n_descsz >= 56) {
			/* pr_fname[16] at 40, pr_psargs[80] at 56 in the
			 * elf_prpsinfo of x86_64 and aarch64 */
			memcpy(c->comm, desc + 40, 16);
			c->comm[16] = 0;
			if (nh.n_descsz >= 136) {
				memcpy(c->psargs, desc + 56, 80);
				c->psargs[80] = 0;
			}
		}
	}
	return 0;
}

int core__open(struct core *c, const char *path, char *why, size_t why_len)
{
	GElf_Ehdr eh;
	GElf_Phdr ph;
	struct stat st;
	size_t n, i, cap = 0;
	Elf *elf;
	int err;

	memset(c, 0, sizeof(*c));
	c->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (c->fd < 0) {
		err = -errno;
		snprintf(why, why_len, "cannot open it: %s", strerror(errno));
		return err;
	}
	if (fstat(c->fd, &st) || !S_ISREG(st.st_mode)) {
		err = say(why, why_len, -EINVAL, "not a regular file");
		goto out_close;
	}
	c->size = (uint64_t)st.st_size;
	elf_version(EV_CURRENT);
	elf = elf_begin(c->fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		err = say(why, why_len, -ENOEXEC, "not an ELF file");
		goto out_end;
	}
	if (eh.e_type != ET_CORE) {
		err = say(why, why_len, -ENOEXEC, "an ELF file, but not a core dump");
		goto out_end;
	}
	/* x86-64's user space ends at 2^47 (4-level pages), aarch64's at
	 * 2^48, or 2^52 for mappings asked for above it */
	if ((eh.e_machine != EM_X86_64 && eh.e_machine != EM_AARCH64) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64) {
		err = say(why, why_len, -ENOEXEC, "a core dump of another architecture (x86_64 and aarch64 are read)");
		goto out_end;
	}
	c->machine = eh.e_machine;
	c->user_end = eh.e_machine == EM_X86_64 ? 1ull << 47 : 1ull << 52;
	if (elf_getphdrnum(elf, &n) || !n) {
		err = say(why, why_len, -ENOEXEC, "a core dump without program headers (truncated?)");
		goto out_end;
	}
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph)) {
			err = say(why, why_len, -EINVAL, "its program headers are cut short");
			goto out_end;
		}
		if (ph.p_type == PT_NOTE) {
			err = read_notes(c, elf, &ph);
			if (err == -ENOMEM)
				goto out_end;
			if (err) {
				err = say(why, why_len, err, "its notes are corrupt or cut short");
				goto out_end;
			}
		} else if (ph.p_type == PT_LOAD) {
			struct core_segment *s;

			if (array__grow((void **)&c->segs, &cap, c->nsegs + 1,
					sizeof(*c->segs))) {
				err = -ENOMEM;
				goto out_end;
			}
			s = &c->segs[c->nsegs++];
			s->vaddr = ph.p_vaddr;
			s->memsz = ph.p_memsz;
			s->offset = ph.p_offset;
			s->filesz = ph.p_filesz < ph.p_memsz ? ph.p_filesz :
							      ph.p_memsz;
			s->exec = ph.p_flags & PF_X;
		}
	}
	elf_end(elf);
	return 0;
out_end:
	if (!err)
		err = -EINVAL;
	elf_end(elf);
out_close:
	core__close(c);
	return err;
}

int core__read(const struct core *c, uint64_t vaddr, void *buf, size_t len)
{
	uint8_t *out = buf;
	size_t i;

	while (len) {
		const struct core_segment *s = NULL;
		uint64_t in, avail, take;
		ssize_t got;

		for (i = 0; i < c->nsegs; i++)
			if (vaddr >= c->segs[i].vaddr &&
			    vaddr - c->segs[i].vaddr < c->segs[i].memsz) {
				s = &c->segs[i];
				break;
			}
		if (!s)
			return -EFAULT;
		in = vaddr - s->vaddr;
		if (in >= s->filesz || s->offset > c->size)
			return -EFAULT;		/* not dumped */
		avail = s->filesz - in;
		if (avail > c->size - s->offset - in || s->offset + in > c->size)
			avail = s->offset + in >= c->size ? 0 :
				c->size - s->offset - in;	/* truncated */
		if (!avail)
			return -EFAULT;
		take = len < avail ? len : avail;
		got = pread(c->fd, out, take, (off_t)(s->offset + in));
		if (got <= 0)
			return -EFAULT;
		out += got;
		vaddr += (uint64_t)got;
		len -= (size_t)got;
	}
	return 0;
}

#define NOTE_MAX	4096u

/* The GNU build ID in the notes at vaddr (len bytes of them). */
static size_t find_build_id(const struct core *c, uint64_t vaddr,
			    uint64_t len, uint8_t *id, size_t id_max)
{
	uint8_t notes[NOTE_MAX];
	uint64_t off = 0;

	if (len > sizeof(notes))
		len = sizeof(notes);
	if (core__read(c, vaddr, notes, (size_t)len))
		return 0;
	while (off + 12 <= len) {
		uint32_t namesz, descsz, type;
		uint64_t name_at, desc_at;

		memcpy(&namesz, notes + off, 4);
		memcpy(&descsz, notes + off + 4, 4);
		memcpy(&type, notes + off + 8, 4);
		name_at = off + 12;
		desc_at = name_at + ((namesz + 3ull) & ~3ull);
		if (desc_at > len || descsz > len - desc_at)
			return 0;
		if (type == NT_GNU_BUILD_ID && namesz == 4 &&
		    !memcmp(notes + name_at, "GNU", 4) && descsz &&
		    descsz <= id_max) {
			memcpy(id, notes + desc_at, descsz);
			return descsz;
		}
		off = desc_at + ((descsz + 3ull) & ~3ull);
	}
	return 0;
}

int core__read_string(const struct core *c, uint64_t vaddr, char *buf,
		      size_t len)
{
	size_t got = 0;

	/* a page at a time: a page is either in the core or not */
	while (got < len) {
		size_t take = 4096 - (size_t)((vaddr + got) & 4095);
		char *nul;

		if (take > len - got)
			take = len - got;
		if (vaddr + got < vaddr ||
		    core__read(c, vaddr + got, buf + got, take))
			return -EFAULT;
		nul = memchr(buf + got, 0, take);
		if (nul)
			return 0;
		got += take;
	}
	if (len)
		buf[len - 1] = 0;
	return -ENAMETOOLONG;
}

bool core__image(const struct core *c, uint64_t base, struct core_image *img)
{
	Elf64_Ehdr eh;
	bool have_bias = false;
	unsigned int i;

	memset(img, 0, sizeof(*img));
	if (core__read(c, base, &eh, sizeof(eh)) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || !eh.e_phnum ||
	    eh.e_phnum > CORE_PHDR_MAX || eh.e_phoff > 65536 ||
	    core__read(c, base + eh.e_phoff, img->ph,
		       eh.e_phnum * sizeof(img->ph[0])))
		return false;
	img->base = base;
	img->phoff = eh.e_phoff;
	img->phnum = eh.e_phnum;
	for (i = 0; i < img->phnum && !have_bias; i++)
		if (img->ph[i].p_type == PT_LOAD) {
			/* the lowest load maps the file's start at base */
			img->bias = base - (img->ph[i].p_vaddr -
					    img->ph[i].p_offset);
			have_bias = true;
		}
	for (i = 0; have_bias && i < img->phnum && !img->build_id_len; i++)
		if (img->ph[i].p_type == PT_NOTE)
			img->build_id_len =
				find_build_id(c, img->bias + img->ph[i].p_vaddr,
					      img->ph[i].p_filesz,
					      img->build_id,
					      sizeof(img->build_id));
	return have_bias;
}

bool core__module_identity(const struct core *c, uint64_t base,
			   uint64_t *bias, uint8_t *id, size_t id_max,
			   size_t *id_len)
{
	struct core_image img;

	*id_len = 0;
	if (!core__image(c, base, &img))
		return false;
	*bias = img.bias;
	if (img.build_id_len <= id_max) {
		memcpy(id, img.build_id, img.build_id_len);
		*id_len = img.build_id_len;
	}
	return true;
}

void core__close(struct core *c)
{
	drop_files(c);
	free(c->segs);
	if (c->fd >= 0)
		close(c->fd);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}
