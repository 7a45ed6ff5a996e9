// SPDX-License-Identifier: MIT
/*
 * test-linetable.c - elf/linetable.c against libdw itself.  For every CU of
 * each subject, every row address libdw's dwarf_getsrclines() lists, and
 * the bytes on either side of it, line_table__find() must give what
 * dwarf_getsrc_die() + dwarf_lineno() + dwarf_linesrc() give: found or
 * not, the line, the file name byte for byte; the table must have as
 * many rows as libdw's, and name each file index (and none past them) as
 * dwarf_getsrcfiles() + dwarf_filesrc() do.  Every CU is compared twice:
 * its table decoded for it, and taken from the set line_tables__read()
 * decodes from .debug_line alone (which must hold every DWARF 5 table and
 * no DWARF 4 one).  The subjects are built here from a C file with a
 * static inline function and a header-defined one (rows of several files,
 * several sequences with -ffunction-sections): GCC with DWARF 4 and 5,
 * clang with DWARF 5 (MD5 sums in the file table, .debug_line_str), and
 * this test's own binary; none of their tables may be refused (-ENOTSUP),
 * or the fast path would go untested.  LINETABLE_FILES="a b" adds more
 * (say, a distribution's debug files), where refusals are counted, not
 * failed.  Corrupt tables must be refused, not misread: every header
 * field of the first table cut or changed must give -ENOTSUP or a table
 * that agrees with libdw's reading of the same bytes (the first 96 bytes
 * of .debug_line of the GCC and clang DWARF 5 builds, each xor'ed with
 * 0xff and with 0x01); so must objects crafted where libdw reads a table
 * in some way of its own (see crafted[]).
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "elf/linetable.h"

static char dir[256];

struct tally {
	size_t cus, refused, shared, rows, lookups;
};

static void run(const char *cmd)
{
	int rc = system(cmd);

	if (rc != 0)
		fprintf(stderr, "test-linetable: `%s' exited %d\n", cmd, rc);
	CHECK(rc == 0);
}

/* One lookup of pc, both ways. */
static void same_answer(Dwarf_Die *cudie, const struct line_table *t,
			Dwarf_Addr pc, const char *what)
{
	Dwarf_Line *l = dwarf_getsrc_die(cudie, pc);
	const char *file = NULL, *want_file;
	int line = 0, want_line = 0;
	bool found = line_table__find(t, pc, &line, &file);

	if (!l) {
		if (found)
			fprintf(stderr, "%s: %#lx: libdw has no line, we say %s:%d\n",
				what, (unsigned long)pc, file ? file : "?", line);
		CHECK(!found);
		return;
	}
	CHECK(dwarf_lineno(l, &want_line) == 0);
	want_file = dwarf_linesrc(l, NULL, NULL);
	if (!found || line != want_line ||
	    (!file) != (!want_file) || (file && strcmp(file, want_file)))
		fprintf(stderr, "%s: %#lx: libdw %s:%d, we %s %s:%d\n", what,
			(unsigned long)pc, want_file ? want_file : "(null)",
			want_line, found ? "say" : "have none",
			file ? file : "(null)", line);
	CHECK(found);
	CHECK_EQ_INT(line, want_line);
	CHECK((!file) == (!want_file));
	if (file && want_file)
		CHECK(strcmp(file, want_file) == 0);
}

static void compare_cu(const struct line_sections *sec,
		       const struct line_tables *set, Dwarf_Die *cudie,
		       struct tally *tally, const char *what)
{
	const struct line_table *t;
	Dwarf_Lines *lines;
	bool owned;
	size_t n;
	int err;

	tally->cus++;
	err = line_table__for_cu(sec, set, cudie, &t, &owned);
	if (err == -ENOTSUP) {
		tally->refused++;
		return;
	}
	CHECK_EQ_INT(err, 0);
	if (dwarf_getsrclines(cudie, &lines, &n) != 0) {
		/* We read a table libdw refuses: that must not happen. */
		fprintf(stderr, "%s: libdw refuses a table we read\n", what);
		CHECK(0);
		if (owned)
			line_table__free((struct line_table *)t);
		return;
	}
	tally->shared += !owned;
	CHECK_EQ_INT(line_table__rows(t), n);
	/* The file table, as DW_AT_call_file indexes it, one past it too. */
	{
		Dwarf_Files *files;
		size_t nfiles;

		CHECK(dwarf_getsrcfiles(cudie, &files, &nfiles) == 0);
		for (size_t i = 0; i <= nfiles; i++) {
			const char *want = i < nfiles ?
				dwarf_filesrc(files, i, NULL, NULL) : NULL;
			const char *got = line_table__file(t, i);

			CHECK((!want) == (!got));
			if (want && got)
				CHECK(strcmp(want, got) == 0);
		}
	}
	for (size_t i = 0; i < n; i++) {
		Dwarf_Addr a;

		CHECK(dwarf_lineaddr(dwarf_onesrcline(lines, i), &a) == 0);
		same_answer(cudie, t, a, what);
		same_answer(cudie, t, a + 1, what);
		if (a)
			same_answer(cudie, t, a - 1, what);
		tally->lookups += 3;
	}
	tally->rows += n;
	if (owned)
		line_table__free((struct line_table *)t);
}

/*
 * A set is used only with the sections it was read from: given others (a
 * copy of .debug_line), or none (line_sections__of() refused the file),
 * the first CU's table is decoded for it, or refused.
 */
static void set_needs_same_sections(const struct line_sections *sec,
				    const struct line_tables *set,
				    Dwarf *dwarf)
{
	struct line_sections other = *sec, none = { 0 };
	const struct line_table *t;
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	Dwarf_Half version;
	uint8_t unit_type;
	uint8_t *copy;
	bool owned;

	if (!sec->line || dwarf_get_units(dwarf, cu, &cu, &version,
					  &unit_type, &cudie, NULL) != 0 ||
	    unit_type != DW_UT_compile)
		return;
	copy = malloc(sec->line_size);
	CHECK(copy);
	memcpy(copy, sec->line, sec->line_size);
	other.line = copy;
	if (line_table__for_cu(&other, set, &cudie, &t, &owned) == 0) {
		CHECK(owned);
		line_table__free((struct line_table *)t);
	}
	CHECK_EQ_INT(line_table__for_cu(&none, set, &cudie, &t, &owned),
		     -ENOTSUP);
	CHECK(!t);
	free(copy);
}

/* Every CU of path; the tally of it.  need_line: path must have lines
 * this reader takes (else it may leave them all to libdw). */
static struct tally compare_file(const char *path, bool need_line)
{
	struct tally tally = { 0 };
	struct line_sections sec;
	struct line_tables *set;
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t unit_type;
	Dwarf_Half version;
	Dwarf *dwarf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0);
	dwarf = dwarf_begin(fd, DWARF_C_READ);
	CHECK(dwarf);
	line_sections__of(dwarf, &sec);
	if (need_line)
		CHECK(sec.line);
	/* Every CU twice: decoded for itself, then from the set read from
	 * the section alone (DWARF 5 tables). */
	for (int pass = 0; pass < 2; pass++) {
		set = NULL;
		if (pass)
			CHECK_EQ_INT(line_tables__read(&sec, NULL, &set), 0);
		cu = NULL;
		while (dwarf_get_units(dwarf, cu, &cu, &version, &unit_type,
				       &cudie, NULL) == 0)
			if (unit_type == DW_UT_compile ||
			    unit_type == DW_UT_partial)
				compare_cu(&sec, set, &cudie, &tally, path);
		if (pass)
			set_needs_same_sections(&sec, set, dwarf);
		line_tables__put(set);
	}
	printf("  %s: %zu CUs (%zu refused, %zu from the set), %zu rows, %zu lookups\n",
	       path, tally.cus / 2, tally.refused / 2, tally.shared, tally.rows,
	       tally.lookups);
	dwarf_end(dwarf);
	close(fd);
	return tally;
}

/* Where path's .debug_line starts in the file. */
static long line_section_offset(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	long offset = -1;

	CHECK(elf && elf_getshdrstrndx(elf, &shstrndx) == 0);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		CHECK(gelf_getshdr(scn, &sh));
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".debug_line"))
			offset = (long)sh.sh_offset;
	}
	elf_end(elf);
	close(fd);
	CHECK(offset > 0);
	return offset;
}

/* A copy of path with byte `at` of its .debug_line xor'ed: every CU
 * refused, or read as libdw reads the same bytes.  Returns refusals. */
static size_t corrupt_at(const char *path, long at, uint8_t xor)
{
	char bad[512], cmd[1200];
	struct tally t;
	uint8_t byte;
	int fd;

	snprintf(bad, sizeof(bad), "%s/corrupt", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", path, bad);
	run(cmd);
	fd = open(bad, O_RDWR);
	CHECK(fd >= 0);
	CHECK(pread(fd, &byte, 1, line_section_offset(bad) + at) == 1);
	byte ^= xor;
	CHECK(pwrite(fd, &byte, 1, line_section_offset(bad) + at) == 1);
	close(fd);
	t = compare_file(bad, false);
	return t.refused;
}

/*
 * Objects crafted (assembled here) where libdw 0.188 reads a table its
 * own way: each must be refused, or read as libdw reads it.  One CU with
 * DW_AT_stmt_list (and DW_AT_comp_dir "/comp" where comp_dir), then the
 * .debug_line bytes.  Not here: two CUs of different DW_AT_comp_dir
 * sharing one DWARF 4 table.  libdw keeps the table of whichever CU asked
 * first and names the other's files by it; this reader names each CU's by
 * its own, which does not depend on the order CUs are asked about (nor on
 * --jobs).
 */
struct crafted {
	const char *name, *why;
	int version;		/* the CU's */
	unsigned int stmt_form;
	bool comp_dir;
	const char *zdebug_line;	/* bytes of a .zdebug_line first, or NULL */
	const char *line_section;	/* flags of .debug_line's .section */
	const char *line;		/* .debug_line's bytes */
};

/* A valid DWARF 4 table: a.c, one row at 0x1000 ending at 0x1010. */
#define PLAIN_V4 \
	"50,0,0,0,4,0,27,0,0,0,1,1,1,251,14,13,0,1,1,1,1,0,0,0,1,0,0," \
	"1,0,97,46,99,0,0,0,0,0,0,9,2,0,16,0,0,0,0,0,0,19,2,16,0,1,1"

static const struct crafted crafted[] = {
	{ "nvidia",
	  "an NVIDIA extended opcode (0x90), which libdw reads by its own rule",
	  4, DW_FORM_sec_offset, true, NULL, "\"\",@progbits",
	  "55,0,0,0,4,0,27,0,0,0,1,1,1,251,14,13,0,1,1,1,1,0,0,0,1,0,0,"
	  "1,0,97,46,99,0,0,0,0,0,0,9,2,0,16,0,0,0,0,0,0,19,0,1,144,33,"
	  "33,2,16,0,1,1" },
	{ "stmt-data4",
	  "DW_AT_stmt_list as data4 in a DWARF 4 CU (libdw: not a section offset)",
	  4, DW_FORM_data4, true, NULL, "\"\",@progbits",
	  PLAIN_V4 },
	{ "stmt-udata",
	  "DW_AT_stmt_list as udata in a DWARF 4 CU",
	  4, DW_FORM_udata, true, NULL, "\"\",@progbits",
	  PLAIN_V4 },
	{ "wide-content",
	  "a DWARF 5 file format with content code 0x10001 (libdw keeps 16 bits)",
	  5, DW_FORM_sec_offset, false, NULL, "\"\",@progbits",
	  "78,0,0,0,5,0,8,0,53,0,0,0,1,1,1,251,14,13,0,1,1,1,1,0,0,0,1,"
	  "0,0,1,1,1,8,1,47,100,0,3,1,8,2,11,129,128,4,8,2,97,46,99,0,"
	  "0,98,46,99,0,99,46,99,0,0,100,46,99,0,0,9,2,0,16,0,0,0,0,0,"
	  "0,19,2,16,0,1,1" },
	{ "zdebug-first",
	  "a .zdebug_line before .debug_line (libdw takes the first)",
	  4, DW_FORM_sec_offset, true,
	  "90,76,73,66,0,0,0,0,0,0,0,54,120,156,51,98,96,96,96,97,144,6,"
	  "146,140,140,140,191,249,120,65,20,35,136,7,66,85,122,201,12,96,"
	  "192,201,196,32,0,97,9,51,9,0,149,0,0,89,156,2,190",
	  "\"\",@progbits",
	  PLAIN_V4 },
	{ "group",
	  ".debug_line only in a COMDAT group (libdw skips group members)",
	  4, DW_FORM_sec_offset, true, NULL, "\"G\",@progbits,grp,comdat",
	  PLAIN_V4 },
	{ "control",
	  "the group case's table, plainly: must be read (else the others prove nothing)",
	  4, DW_FORM_sec_offset, true, NULL, "\"\",@progbits",
	  PLAIN_V4 },
};

/* The assembler source of c. */
static void write_crafted(FILE *f, const struct crafted *c)
{
	if (c->zdebug_line)
		fprintf(f, ".section .zdebug_line,\"\",@progbits\n.byte %s\n",
			c->zdebug_line);
	fprintf(f, ".section .debug_abbrev,\"\",@progbits\n"
		".uleb128 1\n.uleb128 %#x\n.byte 0\n"	/* compile_unit */
		".uleb128 %#x\n.uleb128 %#x\n",		/* stmt_list */
		DW_TAG_compile_unit, DW_AT_stmt_list, c->stmt_form);
	if (c->comp_dir)
		fprintf(f, ".uleb128 %#x\n.uleb128 %#x\n", DW_AT_comp_dir,
			DW_FORM_string);
	fprintf(f, ".byte 0,0\n.byte 0\n"
		".section .debug_info,\"\",@progbits\n"
		".long .Lcu0e - .Lcu0s\n.Lcu0s:\n.short %d\n", c->version);
	if (c->version >= 5)	/* unit type, address size, abbrevs */
		fprintf(f, ".byte %d\n.byte 8\n.long 0\n", DW_UT_compile);
	else			/* abbrevs, address size */
		fprintf(f, ".long 0\n.byte 8\n");
	fprintf(f, ".uleb128 1\n%s 0\n",
		c->stmt_form == DW_FORM_udata ? ".uleb128" : ".long");
	if (c->comp_dir)
		fprintf(f, ".asciz \"/comp\"\n");
	fprintf(f, ".Lcu0e:\n.section .debug_line,%s\n.byte %s\n",
		c->line_section, c->line);
}

static void test_crafted(void)
{
	char path[512], cmd[1200];
	struct tally t;
	FILE *f;

	for (size_t i = 0; i < sizeof(crafted) / sizeof(crafted[0]); i++) {
		printf("  crafted %s: %s\n", crafted[i].name, crafted[i].why);
		snprintf(path, sizeof(path), "%s/%s.s", dir, crafted[i].name);
		f = fopen(path, "w");
		CHECK(f);
		write_crafted(f, &crafted[i]);
		CHECK(fclose(f) == 0);
		snprintf(cmd, sizeof(cmd), "as -o %s/%s.o %s", dir,
			 crafted[i].name, path);
		run(cmd);
		snprintf(path, sizeof(path), "%s/%s.o", dir, crafted[i].name);
		t = compare_file(path, false);
		if (!strcmp(crafted[i].name, "control"))
			CHECK(t.cus == 2 && t.refused == 0 && t.rows > 0);
	}
}

static const char source[] =
	"#include <stdio.h>\n"
	"#include \"helper.h\"\n"
	"static inline int twice(int x)\n{\n\treturn x * 2;\n}\n"
	"int compute(int n)\n{\n\tint s = 0;\n\tfor (int i = 0; i < n; i++)\n"
	"\t\ts += twice(i) + helper(i);\n\treturn s;\n}\n"
	"int main(int argc, char **argv)\n{\n\t(void)argv;\n"
	"\tprintf(\"%d\\n\", compute(argc * 1000));\n\treturn 0;\n}\n";
static const char header[] =
	"static inline int helper(int x)\n{\n\tif (x & 1)\n\t\treturn x + 3;\n"
	"\treturn x - 1;\n}\n";

int main(void)
{
	static const char *const builds[][2] = {
		{ "gcc4", "gcc -O2 -gdwarf-4 -ffunction-sections" },
		{ "gcc5", "gcc -O2 -gdwarf-5 -ffunction-sections" },
		{ "clang5", "clang -O2 -gdwarf-5" },
	};
	char path[512], cmd[2048], self[64];
	const char *extra = getenv("LINETABLE_FILES");
	size_t refused = 0;
	struct tally t;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/test-linetable.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/prog.c", dir);
	f = fopen(path, "w");
	CHECK(f && fputs(source, f) >= 0 && fclose(f) == 0);
	snprintf(path, sizeof(path), "%s/helper.h", dir);
	f = fopen(path, "w");
	CHECK(f && fputs(header, f) >= 0 && fclose(f) == 0);

	for (size_t i = 0; i < sizeof(builds) / sizeof(builds[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, builds[i][0]);
		snprintf(cmd, sizeof(cmd), "cd %s && %s -o %s prog.c", dir,
			 builds[i][1], path);
		run(cmd);
		t = compare_file(path, true);
		CHECK(t.cus >= 2);
		CHECK(t.rows >= 10);
		CHECK_EQ_INT(t.refused, 0);
		/* DWARF 5 tables all come from the set, DWARF 4 ones never. */
		CHECK_EQ_INT(t.shared, strstr(builds[i][0], "5") ? t.cus / 2 : 0);
	}
	snprintf(self, sizeof(self), "/proc/%d/exe", (int)getpid());
	t = compare_file(self, true);
	CHECK(t.cus >= 4);
	CHECK_EQ_INT(t.refused, 0);

	test_crafted();

	/* Corrupt the first table's header and program, a byte at a time. */
	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, builds[i + 1][0]);
		for (long at = 0; at < 96; at++) {
			refused += corrupt_at(path, at, 0xff);
			refused += corrupt_at(path, at, 0x01);
		}
	}
	printf("  corrupted bytes: %zu tables refused\n", refused);
	CHECK(refused > 0);

	while (extra && *extra) {
		size_t len = strcspn(extra, " ");

		if (len && len < sizeof(path)) {
			memcpy(path, extra, len);
			path[len] = 0;
			compare_file(path, false);
		}
		extra += len + (extra[len] == ' ');
	}

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	run(cmd);
	CHECK_SUMMARY("test-linetable");
	return 0;
}
