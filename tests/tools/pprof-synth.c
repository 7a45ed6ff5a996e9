// SPDX-License-Identifier: MIT
/*
 * pprof-synth.c - write an unsymbolized heap profile for given addresses in
 * an ELF file, for the symbolize benchmark and tests.
 *
 *   pprof-synth -e ELF -o OUT.pb.gz [-b BASE] [-s BYTES] < addresses
 *
 * The addresses (one a line, hex with or without 0x) are file-relative
 * virtual addresses, what addr2line -e ELF takes.  The profile looks like
 * one that `pprof-alloc --no-symbolize` wrote for a process that had ELF's
 * executable PT_LOAD segment mapped with load bias BASE:
 *
 *	Mapping   start  = BASE + page_down(p_vaddr)
 *	          limit  = BASE + page_up(p_vaddr + p_memsz)
 *	          offset = page_down(p_offset)
 *	          file = ELF as given, build_id = its GNU build ID in hex,
 *	          has_functions etc. false
 *	Location  address = BASE + addr, no lines, one per unique address
 *	Sample    that one location; 1, BYTES, 1, BYTES (alloc_objects,
 *	          alloc_space, inuse_objects, inuse_space); label bytes=BYTES
 *
 * so a symbolizer that works the bias out from the mapping the way the
 * loader places segments (see elf/elfinfo.c) asks about exactly addr in the
 * file.  BASE is 0 by default: for ET_DYN that is a valid (if unusual) load
 * address that makes run-time and file addresses equal; -b shifts it (page
 * aligned; ET_EXEC cannot be moved, so -b is refused for it).  Input
 * order is kept: the first occurrence of an address makes its location and
 * sample, repeats are counted into that sample.
 *
 * Every input line is checked: blank lines are skipped, anything else but
 * a hex address inside the executable segment is an error naming the line
 * (exit 1).  Usage errors
 * exit 2.  The builder is the tracer's own (tracer/output/pprof.h), so the file
 * is written the way pprof-alloc writes its profiles (gzipped, atomically).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/elfinfo.h"
#include "tracer/output/pprof.h"
#include "elf/u64map.h"

#define PAGE_SIZE_SYNTH	4096ull
#define DEFAULT_BYTES	64

static const char *prog = "pprof-synth";

static const struct pprof_sample_type sample_types[] = {
	{ "alloc_objects", "count" },
	{ "alloc_space", "bytes" },
	{ "inuse_objects", "count" },
	{ "inuse_space", "bytes" },
};
static const struct pprof_sample_type period_type = { "space", "bytes" };

/* The executable segment, in file terms. */
struct exec_segment {
	uint64_t vaddr, memsz, offset;
};

/* One unique address and how many times it was given. */
struct synth_site {
	uint64_t addr;
	uint64_t count;
};

static void usage(FILE *out)
{
	fprintf(out,
"usage: %s -e ELF -o OUT.pb.gz [-b BASE] [-s BYTES] < addresses\n"
"  Write an unsymbolized pprof heap profile with one location and one\n"
"  sample per address read from stdin (hex, one a line, file-relative as\n"
"  addr2line takes them), in one mapping of ELF's executable segment with\n"
"  its build ID.\n"
"  -e ELF      the ELF file the addresses are in\n"
"  -o FILE     the profile to write\n"
"  -b BASE     load bias, hex or decimal, page aligned (default 0; not for ET_EXEC)\n"
"  -s BYTES    size of each sample (default %d)\n"
"Exit status: 0 written, 1 error, 2 usage error.\n",
		prog, DEFAULT_BYTES);
}

/* Parse a whole string as an unsigned number (strtoull base 0).  0 or -EINVAL. */
static int parse_number(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!*s || *s == '-' || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * Parse one input line: optional blanks, a hex address with an optional
 * 0x, optional blanks.  Returns 1 with *addr set, 0 for a blank line,
 * -EINVAL for anything else.
 */
static int parse_address(const char *line, uint64_t *addr)
{
	const char *p = line;
	uint64_t v = 0;
	int digits = 0;

	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '\n' || *p == '\r' || *p == '\0')
		return 0;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	for (; isxdigit((unsigned char)*p); p++) {
		int d = isdigit((unsigned char)*p) ? *p - '0' :
						     tolower((unsigned char)*p) - 'a' + 10;

		if (++digits > 16)
			return -EINVAL;
		v = v << 4 | (uint64_t)d;
	}
	if (!digits)
		return -EINVAL;
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	if (*p)
		return -EINVAL;
	*addr = v;
	return 1;
}

/*
 * The type, build ID and executable PT_LOAD segment of the file open on
 * fd.  Prints what is wrong and returns -1 on failure.
 */
static int read_elf(const char *path, int fd, struct elfinfo *info,
		    struct exec_segment *seg)
{
	bool found = false;
	size_t phnum, i;
	Elf *elf;
	int err;

	err = elfinfo__read(fd, info);
	if (err) {
		fprintf(stderr, "%s: %s: %s\n", prog, path,
			err == -ENOEXEC ? "not an ELF file" : strerror(-err));
		return -1;
	}
	if (!info->build_id_len) {
		fprintf(stderr, "%s: %s: no GNU build ID note\n", prog, path);
		return -1;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		fprintf(stderr, "%s: libelf: %s\n", prog, elf_errmsg(-1));
		return -1;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_getphdrnum(elf, &phnum) != 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, elf_errmsg(-1));
		elf_end(elf);
		return -1;
	}
	for (i = 0; i < phnum; i++) {
		GElf_Phdr phdr;

		if (!gelf_getphdr(elf, (int)i, &phdr))
			continue;
		if (phdr.p_type != PT_LOAD || !(phdr.p_flags & PF_X))
			continue;
		if (found) {
			fprintf(stderr,
				"%s: %s: more than one executable PT_LOAD segment\n",
				prog, path);
			elf_end(elf);
			return -1;
		}
		seg->vaddr = phdr.p_vaddr;
		seg->memsz = phdr.p_memsz;
		seg->offset = phdr.p_offset;
		found = true;
	}
	elf_end(elf);
	if (!found) {
		fprintf(stderr, "%s: %s: no executable PT_LOAD segment\n",
			prog, path);
		return -1;
	}
	return 0;
}

/*
 * Read the addresses from in into *sites (unique, in input order).
 * Prints what is wrong and returns -1 on failure.
 */
static int read_addresses(FILE *in, const struct exec_segment *seg,
			  struct synth_site **sites, size_t *nsites)
{
	struct synth_site *list = NULL;
	size_t n = 0, cap = 0, len = 0;
	unsigned long lineno = 0;
	struct u64map index;
	char *line = NULL;
	int ret = -1;

	u64map__init(&index);
	while (getline(&line, &len, in) >= 0) {
		uint64_t addr, *known;
		int r;

		lineno++;
		r = parse_address(line, &addr);
		if (r == 0)
			continue;
		if (r < 0) {
			line[strcspn(line, "\n")] = '\0';
			fprintf(stderr,
				"%s: stdin line %lu: '%s' is not a hex address\n",
				prog, lineno, line);
			goto out;
		}
		if (addr < seg->vaddr || addr - seg->vaddr >= seg->memsz) {
			fprintf(stderr,
				"%s: stdin line %lu: 0x%" PRIx64
				" is outside the executable segment [0x%" PRIx64
				", 0x%" PRIx64 ")\n",
				prog, lineno, addr, seg->vaddr,
				seg->vaddr + seg->memsz);
			goto out;
		}
		known = u64map__find(&index, addr);
		if (known) {
			list[*known].count++;
			continue;
		}
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 1024;
			struct synth_site *grown;

			if (ncap > SIZE_MAX / sizeof(*list))
				goto out_nomem;
			grown = realloc(list, ncap * sizeof(*list));
			if (!grown)
				goto out_nomem;
			list = grown;
			cap = ncap;
		}
		if (u64map__put(&index, addr, n))
			goto out_nomem;
		list[n].addr = addr;
		list[n].count = 1;
		n++;
	}
	if (ferror(in)) {
		fprintf(stderr, "%s: reading stdin: %s\n", prog,
			strerror(errno));
		goto out;
	}
	if (!n) {
		fprintf(stderr, "%s: no addresses on stdin\n", prog);
		goto out;
	}
	*sites = list;
	*nsites = n;
	list = NULL;
	ret = 0;
	goto out;
out_nomem:
	fprintf(stderr, "%s: out of memory\n", prog);
out:
	free(list);
	free(line);
	u64map__fini(&index);
	return ret;
}

/* Build the profile and write it to path.  0 or -errno. */
static int write_profile(const char *path, const char *elf_path,
			 const struct elfinfo *info,
			 const struct exec_segment *seg, uint64_t base,
			 uint64_t bytes, const struct synth_site *sites,
			 size_t nsites)
{
	char hex[2 * ELFINFO_BUILD_ID_MAX + 1];
	uint64_t start, limit, offset;
	struct pprof_builder *b;
	int64_t map_id;
	char comment[256];
	size_t i;
	int err;

	start = base + (seg->vaddr & ~(PAGE_SIZE_SYNTH - 1));
	limit = base + ((seg->vaddr + seg->memsz + PAGE_SIZE_SYNTH - 1) &
			~(PAGE_SIZE_SYNTH - 1));
	offset = seg->offset & ~(PAGE_SIZE_SYNTH - 1);

	b = pprof__new(sample_types, 4, &period_type, 1);
	if (!b)
		return -errno;
	elfinfo__build_id_hex(info->build_id, info->build_id_len, hex);
	map_id = pprof__add_mapping(b, start, limit, offset, elf_path, hex,
				    false, false, false, false);
	if (map_id < 0) {
		err = (int)map_id;
		goto out_free;
	}
	for (i = 0; i < nsites; i++) {
		int64_t values[4];
		uint64_t loc;
		int64_t id;

		id = pprof__add_location(b, (uint64_t)map_id,
					 base + sites[i].addr, NULL, 0);
		if (id < 0) {
			err = (int)id;
			goto out_free;
		}
		loc = (uint64_t)id;
		values[0] = (int64_t)sites[i].count;
		values[1] = (int64_t)(sites[i].count * bytes);
		values[2] = values[0];
		values[3] = values[1];
		err = pprof__add_sample(b, &loc, 1, values, (int64_t)bytes);
		if (err)
			goto out_free;
	}
	snprintf(comment, sizeof(comment),
		 "pprof-synth: %zu addresses in %s, load bias 0x%" PRIx64,
		 nsites, elf_path, base);
	err = pprof__add_comment(b, comment);
	if (!err)
		err = pprof__set_default_sample_type(b, "inuse_space");
	if (!err)
		err = pprof__write(b, path);
out_free:
	pprof__free(b);
	return err;
}

int main(int argc, char **argv)
{
	const char *elf_path = NULL, *out_path = NULL;
	uint64_t base = 0, bytes = DEFAULT_BYTES;
	struct synth_site *sites = NULL;
	struct exec_segment seg = { 0 };
	struct elfinfo info = { 0 };
	bool have_base = false;
	size_t nsites = 0;
	int opt, fd, err;

	while ((opt = getopt(argc, argv, "e:o:b:s:h")) != -1) {
		switch (opt) {
		case 'e':
			elf_path = optarg;
			break;
		case 'o':
			out_path = optarg;
			break;
		case 'b':
			if (parse_number(optarg, &base) ||
			    (base & (PAGE_SIZE_SYNTH - 1))) {
				fprintf(stderr,
					"%s: -b '%s': want a page-aligned address\n",
					prog, optarg);
				return 2;
			}
			have_base = true;
			break;
		case 's':
			if (parse_number(optarg, &bytes) || !bytes ||
			    bytes > INT32_MAX) {
				fprintf(stderr,
					"%s: -s '%s': want a size in bytes, 1 to %d\n",
					prog, optarg, INT32_MAX);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!elf_path || !out_path || optind != argc) {
		usage(stderr);
		return 2;
	}

	fd = open(elf_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, elf_path,
			strerror(errno));
		return 1;
	}
	err = read_elf(elf_path, fd, &info, &seg);
	close(fd);
	if (err)
		return 1;
	if (have_base && base && info.type != ET_DYN) {
		fprintf(stderr,
			"%s: %s is not position-independent (ET_DYN): it loads at its link address, -b cannot move it\n",
			prog, elf_path);
		return 2;
	}
	if (read_addresses(stdin, &seg, &sites, &nsites))
		return 1;
	err = write_profile(out_path, elf_path, &info, &seg, base, bytes,
			    sites, nsites);
	free(sites);
	if (err) {
		fprintf(stderr, "%s: writing %s: %s\n", prog, out_path,
			strerror(-err));
		return 1;
	}
	return 0;
}
