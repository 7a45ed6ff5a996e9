// SPDX-License-Identifier: MIT
/*
 * test-maps.c - unit test of the /proc/PID/maps parser (elf/maps.c).
 *
 * A hand-written maps text covers the shapes the kernel prints: file
 * mappings padded to the path column, a path with blanks in it, a
 * " (deleted)" file, anonymous lines (with and without the kernel's
 * trailing blank), [stack], [vdso], [vsyscall] at the top of the address
 * space, and a last line without its newline.  Every field of every entry
 * is compared.  Then each kind of damage the parser promises to catch is
 * fed to it and must fail the whole parse with -EINVAL.  A large synthetic
 * text checks that nothing is quadratic and that paths stay intact, and
 * finally our own /proc/self/maps must hold the mapping of main() with
 * execute permission.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "elf/maps.h"

static const char sample[] =
	"55d0c0a00000-55d0c0a02000 r--p 00000000 fd:01 1234567                    /usr/bin/my prog\n"
	"55d0c0a02000-55d0c0a04000 r-xp 00002000 fd:01 1234567                    /usr/bin/my prog\n"
	"55d0c0a04000-55d0c0a05000 rw-p 00004000 fd:01 1234567                    /usr/bin/my  two  spaces \n"
	"7f1234560000-7f1234580000 rw-p 00000000 00:00 0 \n"
	"7f1234580000-7f1234590000 r-xs 00001000 103:0a 18446744073709551615        /tmp/lib.so (deleted)\n"
	"7f12345a0000-7f12345b0000 ---p 00000000 00:00 0\n"
	"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n"
	"7ffd001fe000-7ffd00200000 r-xp 00000000 00:00 0                          [vdso]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";

struct expect {
	uint64_t start, end, offset;
	uint32_t prot, major, minor;
	uint64_t inode;
	const char *path;
};

static const struct expect sample_expect[] = {
	{ 0x55d0c0a00000, 0x55d0c0a02000, 0, MAPS_PROT_READ, 0xfd, 1,
	  1234567, "/usr/bin/my prog" },
	{ 0x55d0c0a02000, 0x55d0c0a04000, 0x2000,
	  MAPS_PROT_READ | MAPS_PROT_EXEC, 0xfd, 1, 1234567,
	  "/usr/bin/my prog" },
	{ 0x55d0c0a04000, 0x55d0c0a05000, 0x4000,
	  MAPS_PROT_READ | MAPS_PROT_WRITE, 0xfd, 1, 1234567,
	  "/usr/bin/my  two  spaces " },
	{ 0x7f1234560000, 0x7f1234580000, 0,
	  MAPS_PROT_READ | MAPS_PROT_WRITE, 0, 0, 0, "" },
	{ 0x7f1234580000, 0x7f1234590000, 0x1000,
	  MAPS_PROT_READ | MAPS_PROT_EXEC | MAPS_SHARED, 0x103, 0xa,
	  UINT64_MAX, "/tmp/lib.so (deleted)" },
	{ 0x7f12345a0000, 0x7f12345b0000, 0, 0, 0, 0, 0, "" },
	{ 0x7ffd00000000, 0x7ffd00021000, 0,
	  MAPS_PROT_READ | MAPS_PROT_WRITE, 0, 0, 0, "[stack]" },
	{ 0x7ffd001fe000, 0x7ffd00200000, 0,
	  MAPS_PROT_READ | MAPS_PROT_EXEC, 0, 0, 0, "[vdso]" },
	{ 0xffffffffff600000, 0xffffffffff601000, 0, MAPS_PROT_EXEC, 0, 0,
	  0, "[vsyscall]" },
};

static void test_sample(void)
{
	size_t n = sizeof(sample_expect) / sizeof(sample_expect[0]);
	struct proc_maps *maps = NULL;

	CHECK_EQ_INT(proc_maps__parse(sample, strlen(sample), &maps), 0);
	CHECK(maps != NULL);
	CHECK_EQ_INT(maps->count, n);
	for (size_t i = 0; i < n; i++) {
		const struct maps_entry *e = &maps->entries[i];
		const struct expect *x = &sample_expect[i];

		CHECK(e->start == x->start);
		CHECK(e->end == x->end);
		CHECK(e->offset == x->offset);
		CHECK_EQ_INT(e->prot, x->prot);
		CHECK_EQ_INT(e->dev_major, x->major);
		CHECK_EQ_INT(e->dev_minor, x->minor);
		CHECK(e->inode == x->inode);
		CHECK_EQ_STR(e->path, x->path);
	}
	proc_maps__free(maps);

	/* With the final newline it is the same. */
	{
		char text[sizeof(sample) + 1];

		memcpy(text, sample, sizeof(sample) - 1);
		text[sizeof(sample) - 1] = '\n';
		CHECK_EQ_INT(proc_maps__parse(text, sizeof(sample), &maps), 0);
		CHECK_EQ_INT(maps->count, n);
		CHECK_EQ_STR(maps->entries[n - 1].path, "[vsyscall]");
		proc_maps__free(maps);
	}

	/* Empty text: no entries. */
	maps = NULL;
	CHECK_EQ_INT(proc_maps__parse("", 0, &maps), 0);
	CHECK(maps != NULL);
	CHECK_EQ_INT(maps->count, 0);
	proc_maps__free(maps);
	proc_maps__free(NULL);

	/* Upper-case hex is hex too; the length passed is what counts. */
	{
		static const char upper[] =
			"7F00-7F10 r--p 0000000A FD:0B 5 /x\nGARBAGE";

		CHECK_EQ_INT(proc_maps__parse(upper, sizeof(upper) - 1 - 7,
					      &maps), 0);
		CHECK_EQ_INT(maps->count, 1);
		CHECK(maps->entries[0].start == 0x7f00);
		CHECK(maps->entries[0].offset == 0xa);
		CHECK_EQ_INT(maps->entries[0].dev_major, 0xfd);
		CHECK_EQ_STR(maps->entries[0].path, "/x");
		proc_maps__free(maps);
	}
}

/* The kernel writes a newline in a path as \012: it is a newline again,
 * and the line after it is still its own. */
static void test_newline(void)
{
	static const char text[] =
		"1000-2000 r-xp 00000000 08:01 12 /tmp/a\\012b\\01/c\\012\n"
		"3000-4000 r--p 00000000 08:01 13 /tmp/d\n";
	struct proc_maps *maps = NULL;

	CHECK_EQ_INT(proc_maps__parse(text, strlen(text), &maps), 0);
	CHECK_EQ_INT(maps->count, 2);
	CHECK_EQ_STR(maps->entries[0].path, "/tmp/a\nb\\01/c\n");
	CHECK_EQ_STR(maps->entries[1].path, "/tmp/d");
	proc_maps__free(maps);
}

static void check_rejected(const char *text)
{
	struct proc_maps *maps = (struct proc_maps *)&maps;	/* poison */
	int err = proc_maps__parse(text, strlen(text), &maps);

	if (err != -EINVAL)
		fprintf(stderr, "accepted or wrong error (%d) for: \"%s\"\n",
			err, text);
	CHECK_EQ_INT(err, -EINVAL);
	/* Untouched on failure. */
	CHECK(maps == (struct proc_maps *)&maps);
}

#define GOOD "7f00-7f10 r-xp 00001000 08:01 42 /lib/x.so\n"

static void test_malformed(void)
{
	static const char *const bad[] = {
		/* truncated lines */
		"7f00-7f10 r-xp 0000",
		"7f00-7f10 r-xp 00001000 08:01\n",
		"7f00-7f10 r-xp 00001000 08:01 \n",
		"7f00-7f10 r-xp 00001000 08:\n",
		"7f00-7f10 r-xp\n",
		"7f00-7f10\n",
		"7f00-\n",
		"7f00",
		GOOD "7f20-7f30 r-",
		/* bad hex */
		"7g00-7f10 r-xp 00001000 08:01 42 /lib/x.so\n",
		"7f00-7f1z r-xp 00001000 08:01 42 /lib/x.so\n",
		"7f00-7f10 r-xp 0000x000 08:01 42 /lib/x.so\n",
		"7f00-7f10 r-xp 00001000 0g:01 42 /lib/x.so\n",
		"0x7f00-7f10 r-xp 00001000 08:01 42 /lib/x.so\n",
		"-7f10 r-xp 00001000 08:01 42 /lib/x.so\n",
		"7f00-7f10 r-xp 00001000 08:01 4x2 /lib/x.so\n",
		"7f00-7f10 r-xp 00001000 08:01 -1 /lib/x.so\n",
		/* start >= end */
		"7f10-7f00 r-xp 00001000 08:01 42 /lib/x.so\n",
		"7f00-7f00 r-xp 00001000 08:01 42 /lib/x.so\n",
		/* perms */
		"7f00-7f10 r-xpx 00001000 08:01 42 /lib/x.so\n",
		"7f00-7f10 r-x 00001000 08:01 42 /lib/x.so\n",
		"7f00-7f10 rwxq 00001000 08:01 42 /lib/x.so\n",
		"7f00-7f10 xwrp 00001000 08:01 42 /lib/x.so\n",
		"7f00-7f10 R-xp 00001000 08:01 42 /lib/x.so\n",
		/* overflow */
		"10000000000000000-10000000000000010 r-xp 0 08:01 42 /x\n",
		"7f00-10000000000000000 r-xp 0 08:01 42 /x\n",
		"7f00-7f10 r-xp 10000000000000000 08:01 42 /x\n",
		"7f00-7f10 r-xp 0 100000000:01 42 /x\n",
		"7f00-7f10 r-xp 0 08:100000000 42 /x\n",
		"7f00-7f10 r-xp 0 08:01 18446744073709551616 /x\n",
		/* separators */
		"7f00 7f10 r-xp 00001000 08:01 42 /lib/x.so\n",
		"7f00-7f10-r-xp 00001000 08:01 42 /lib/x.so\n",
		"7f00-7f10 r-xp 00001000 08-01 42 /lib/x.so\n",
		"7f00-7f10 r-xp 00001000 08:01 42/lib/x.so\n",
		" 7f00-7f10 r-xp 00001000 08:01 42 /lib/x.so\n",
		/* empty line, NUL in a line */
		"\n",
		GOOD "\n",
		GOOD "\n" GOOD,
		/* out of order or overlapping */
		"7f20-7f30 r-xp 0 08:01 42 /x\n7f00-7f10 r-xp 0 08:01 42 /x\n",
		"7f00-7f30 r-xp 0 08:01 42 /x\n7f20-7f40 r-xp 0 08:01 42 /x\n",
	};

	/* The line the damage is done to is fine as it is. */
	{
		struct proc_maps *maps = NULL;

		CHECK_EQ_INT(proc_maps__parse(GOOD, strlen(GOOD), &maps), 0);
		CHECK_EQ_INT(maps->count, 1);
		CHECK_EQ_STR(maps->entries[0].path, "/lib/x.so");
		proc_maps__free(maps);
	}

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		check_rejected(bad[i]);

	/* A NUL inside the path. */
	{
		static const char with_nul[] =
			"7f00-7f10 r-xp 0 08:01 42 /a\0b\n";
		struct proc_maps *maps = NULL;

		CHECK_EQ_INT(proc_maps__parse(with_nul, sizeof(with_nul) - 1,
					      &maps), -EINVAL);
		CHECK(maps == NULL);
	}

	/* Bad arguments. */
	{
		struct proc_maps *maps = NULL;

		CHECK_EQ_INT(proc_maps__parse(NULL, 5, &maps), -EINVAL);
		CHECK_EQ_INT(proc_maps__parse(GOOD, strlen(GOOD), NULL),
			     -EINVAL);
		CHECK_EQ_INT(proc_maps__read(-1, &maps), -EINVAL);
		CHECK_EQ_INT(proc_maps__read(0, &maps), -EINVAL);
	}
}

/* Many lines: the parse is linear and every path lands where it should. */
static void test_large(void)
{
	enum { LINES = 200000 };
	struct proc_maps *maps = NULL;
	size_t cap = (size_t)LINES * 96, len = 0;
	char *text = malloc(cap);

	CHECK(text != NULL);
	for (unsigned i = 0; i < LINES; i++) {
		uint64_t start = 0x10000000ull + (uint64_t)i * 0x2000;
		int n = snprintf(text + len, cap - len,
				 "%" PRIx64 "-%" PRIx64 " r-xp %08x fd:01 %u"
				 "                    /lib/lib %u.so\n",
				 start, start + 0x1000, i * 0x1000u, i, i);

		CHECK(n > 0 && (size_t)n < cap - len);
		len += (size_t)n;
	}
	CHECK_EQ_INT(proc_maps__parse(text, len, &maps), 0);
	CHECK_EQ_INT(maps->count, LINES);
	for (unsigned i = 0; i < LINES; i += 9973) {
		char want[32];

		snprintf(want, sizeof(want), "/lib/lib %u.so", i);
		CHECK_EQ_STR(maps->entries[i].path, want);
		CHECK(maps->entries[i].inode == i);
		CHECK(maps->entries[i].offset == (uint64_t)i * 0x1000);
	}
	CHECK_EQ_STR(maps->entries[LINES - 1].path, "/lib/lib 199999.so");
	proc_maps__free(maps);
	free(text);
}

int main(void);

static void test_self(void)
{
	uint64_t main_addr = (uint64_t)(uintptr_t)&main;
	const struct maps_entry *found = NULL;
	struct proc_maps *maps = NULL;

	CHECK_EQ_INT(proc_maps__read(getpid(), &maps), 0);
	CHECK(maps->count > 3);
	for (size_t i = 0; i < maps->count; i++) {
		const struct maps_entry *e = &maps->entries[i];

		if (i > 0)
			CHECK(e->start >= maps->entries[i - 1].end);
		if (main_addr >= e->start && main_addr < e->end)
			found = e;
	}
	CHECK(found != NULL);
	CHECK(found->prot & MAPS_PROT_EXEC);
	CHECK(found->prot & MAPS_PROT_READ);
	CHECK(!(found->prot & MAPS_SHARED));
	CHECK(found->path[0] == '/');
	CHECK(strstr(found->path, "test-maps") != NULL);
	CHECK(found->inode != 0);
	proc_maps__free(maps);
}

int main(void)
{
	test_newline();
	test_sample();
	test_malformed();
	test_large();
	test_self();
	CHECK_SUMMARY("test-maps");
	return 0;
}
