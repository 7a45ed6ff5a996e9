// SPDX-License-Identifier: MIT
/*
 * test-reloc-aarch64.c - reloc_aarch64.c against the GNU assembler.
 *
 * Each case is A64 assembly at an address ("@0x10000000 cbz x3, $0x...",
 * "$0x..." an absolute target) with its words.  The words were filled in,
 * and are checked, by tests/tools/verify-reloc-aarch64.py, which assembles
 * and links every such string at its address with aarch64-linux-gnu-as
 * and -ld: nothing here is encoded by hand.  A relocation case gives the displaced code at
 * `from` and the code expected at `to`; the "!@" strings are forms the
 * linker must refuse, showing that each limit case is at the limit.
 *
 * Runs on any host: a main() counting checks, nonzero on any failure.  Its
 * checks go on after a failure (each case names its own line), unlike
 * check.h's: the cases do not depend on each other.
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tracer/attach/reloc_aarch64.h"

static unsigned long checks, failures;

#define CHECK_AT(line, cond)						\
	do {								\
		checks++;						\
		if (!(cond)) {						\
			failures++;					\
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n",	\
				__FILE__, (line), #cond);		\
		}							\
	} while (0)

#define CHECK_EQ_INT_AT(line, a, b)					\
	do {								\
		intmax_t a_ = (intmax_t)(a), b_ = (intmax_t)(b);	\
		checks++;						\
		if (a_ != b_) {						\
			failures++;					\
			fprintf(stderr, "%s:%d: CHECK_EQ_INT(%s, %s) "	\
				"failed: %jd != %jd\n", __FILE__,	\
				(line), #a, #b, a_, b_);		\
		}							\
	} while (0)

#define CHECK(cond)		CHECK_AT(__LINE__, cond)
#define CHECK_EQ_INT(a, b)	CHECK_EQ_INT_AT(__LINE__, a, b)

#define MAXW	24

struct seq {
	const char *as;		/* "@address instructions" */
	uint32_t w[MAXW];	/* what GNU as makes of them there */
	size_t n;
};

#define W(...)	{ __VA_ARGS__ },					\
		sizeof((uint32_t[]){ __VA_ARGS__ }) / sizeof(uint32_t)

static uint64_t addr_of(const struct seq *s)
{
	return strtoull(s->as + 1, NULL, 16);
}

/* The words of s as in a file, little-endian. */
static void file_words(const struct seq *s, uint32_t *code)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		code[i] = htole32(s->w[i]);
}

/* Are the len bytes at out s's words?  If not, say what they are. */
static bool same(int line, const uint8_t *out, size_t len,
		 const struct seq *s)
{
	bool ok = len == s->n * 4;
	size_t i;

	for (i = 0; ok && i < s->n; i++) {
		uint32_t w;

		memcpy(&w, out + 4 * i, 4);
		ok = le32toh(w) == s->w[i];
	}
	if (!ok) {
		fprintf(stderr, "%s:%d: for \"%s\" got", __FILE__, line, s->as);
		for (i = 0; i + 4 <= len; i += 4) {
			uint32_t w;

			memcpy(&w, out + i, 4);
			fprintf(stderr, " %08x", le32toh(w));
		}
		fprintf(stderr, ", want");
		for (i = 0; i < s->n; i++)
			fprintf(stderr, " %08x", s->w[i]);
		fprintf(stderr, "\n");
	}
	return ok;
}

/* ---- relocations that succeed ---------------------------------------- */

struct rcase {
	int line;
	unsigned int plen;
	struct seq in, out;	/* at from, expected at to */
};

#define RC(plen, in, inw, out, outw)					\
	{ __LINE__, plen, { in, inw }, { out, outw } }

static const struct rcase rcases[] = {
	/* b: in reach, both limits and one past them, far */
	RC(4, "@0x10000000 b $0x10000100", W(0x14000040),
	      "@0x10080000 b $0x10000100", W(0x17fe0040)),
	RC(4, "@0x10000000 b $0x0fff0000", W(0x17ffc000),
	      "@0x7f0000000000 ldr x16, .+8; br x16; .quad 0x0fff0000",
	      W(0x58000050, 0xd61f0200, 0x0fff0000, 0x00000000)),
	RC(4, "@0x10000000 b $0x10000100", W(0x14000040),
	      "@0x18000100 b $0x10000100", W(0x16000000)),
	RC(4, "@0x10000000 b $0x10000100", W(0x14000040),
	      "@0x18000104 ldr x16, .+8; br x16; .quad 0x10000100",
	      W(0x58000050, 0xd61f0200, 0x10000100, 0x00000000)),
	RC(4, "@0x10000000 b $0x10000100", W(0x14000040),
	      "@0x08000104 b $0x10000100", W(0x15ffffff)),
	RC(4, "@0x10000000 b $0x10000100", W(0x14000040),
	      "@0x08000100 ldr x16, .+8; br x16; .quad 0x10000100",
	      W(0x58000050, 0xd61f0200, 0x10000100, 0x00000000)),

	/* bl, blr as the last displaced instruction */
	RC(12, "@0x10000000 nop; nop; bl $0x10000200",
	       W(0xd503201f, 0xd503201f, 0x9400007e),
	       "@0x10080000 nop; nop; bl $0x10000200; b $0x1000000c",
	       W(0xd503201f, 0xd503201f, 0x97fe007e, 0x17fe0000)),
	RC(12, "@0x10000000 nop; nop; bl $0x10000200",
	       W(0xd503201f, 0xd503201f, 0x9400007e),
	       "@0x7f0000000000 nop; nop; ldr x16, .+12; blr x16; b .+12; "
	       ".quad 0x10000200; ldr x16, .+8; br x16; .quad 0x1000000c",
	       W(0xd503201f, 0xd503201f, 0x58000070, 0xd63f0200, 0x14000003,
		 0x10000200, 0x00000000, 0x58000050, 0xd61f0200, 0x1000000c,
		 0x00000000)),
	RC(4, "@0x10000000 bl $0x10000100", W(0x94000040),
	      "@0x18000100 bl $0x10000100; ldr x16, .+8; br x16; "
	      ".quad 0x10000004", W(0x96000000, 0x58000050, 0xd61f0200,
				    0x10000004, 0x00000000)),
	RC(4, "@0x10000000 bl $0x10000100", W(0x94000040),
	      "@0x18000104 ldr x16, .+12; blr x16; b .+12; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x58000070, 0xd63f0200, 0x14000003, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 bl $0x10000100", W(0x94000040),
	      "@0x08000104 bl $0x10000100; b $0x10000004",
	      W(0x95ffffff, 0x15ffffbf)),
	RC(4, "@0x10000000 bl $0x10000100", W(0x94000040),
	      "@0x08000100 ldr x16, .+12; blr x16; b .+12; "
	      ".quad 0x10000100; b $0x10000004",
	      W(0x58000070, 0xd63f0200, 0x14000003, 0x10000100, 0x00000000,
		0x15ffffbc)),
	RC(12, "@0x10000000 nop; nop; blr x3",
	       W(0xd503201f, 0xd503201f, 0xd63f0060),
	       "@0x10080000 nop; nop; blr x3; b $0x1000000c",
	       W(0xd503201f, 0xd503201f, 0xd63f0060, 0x17fe0000)),
	RC(8, "@0x10000000 nop; blraaz x1", W(0xd503201f, 0xd63f083f),
	      "@0x10080000 nop; blraaz x1; b $0x10000008",
	      W(0xd503201f, 0xd63f083f, 0x17fe0000)),
	RC(4, "@0x10000000 blraa x1, sp", W(0xd73f083f),
	      "@0x10080000 blraa x1, sp; b $0x10000004",
	      W(0xd73f083f, 0x17fe0000)),

	/* b.cond: in reach, limits, the inverted condition over a b or
	 * over the absolute form, a negative offset */
	RC(4, "@0x10000000 b.ne $0x10000100", W(0x54000801),
	      "@0x10080000 b.ne $0x10000100; b $0x10000004",
	      W(0x54c00801, 0x17fe0000)),
	RC(4, "@0x10000000 b.ne $0x10000100", W(0x54000801),
	      "@0x10100100 b.ne $0x10000100; b $0x10000004",
	      W(0x54800001, 0x17fbffc0)),
	RC(4, "@0x10000000 b.ne $0x10000100", W(0x54000801),
	      "@0x10100104 b.eq .+8; b $0x10000100; b $0x10000004",
	      W(0x54000040, 0x17fbfffe, 0x17fbffbe)),
	RC(4, "@0x10000000 b.ne $0x10000100", W(0x54000801),
	      "@0x0ff00104 b.ne $0x10000100; b $0x10000004",
	      W(0x547fffe1, 0x1403ffbf)),
	RC(4, "@0x10000000 b.ne $0x10000100", W(0x54000801),
	      "@0x0ff00100 b.eq .+8; b $0x10000100; b $0x10000004",
	      W(0x54000040, 0x1403ffff, 0x1403ffbf)),
	RC(4, "@0x10000000 b.ne $0x10000100", W(0x54000801),
	      "@0x180000fc b.eq .+8; b $0x10000100; ldr x16, .+8; br x16; "
	      ".quad 0x10000004", W(0x54000040, 0x16000000, 0x58000050,
				    0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 b.ne $0x10000100", W(0x54000801),
	      "@0x18000100 b.eq .+20; ldr x16, .+8; br x16; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x540000a0, 0x58000050, 0xd61f0200, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 b.lt $0x0fff8000", W(0x54fc000b),
	      "@0x10080000 b.lt $0x0fff8000; b $0x10000004",
	      W(0x54bc000b, 0x17fe0000)),
RC(4, "@0x10000000 b.eq $0x10000100", W(0x54000800),
	      "@0x7f0000000000 b.ne .+20; ldr x16, .+8; br x16; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x540000a1, 0x58000050, 0xd61f0200, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 b.ne $0x10000100", W(0x54000801),
	      "@0x7f0000000000 b.eq .+20; ldr x16, .+8; br x16; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x540000a0, 0x58000050, 0xd61f0200, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 b.hs $0x10000100", W(0x54000802),
	      "@0x7f0000000000 b.lo .+20; ldr x16, .+8; br x16; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x540000a3, 0x58000050, 0xd61f0200, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 b.lo $0x10000100", W(0x54000803),
	      "@0x7f0000000000 b.hs .+20; ldr x16, .+8; br x16; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x540000a2, 0x58000050, 0xd61f0200, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 b.mi $0x10000100", W(0x54000804),
	      "@0x7f0000000000 b.pl .+20; ldr x16, .+8; br x16; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x540000a5, 0x58000050, 0xd61f0200, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 b.pl $0x10000100", W(0x54000805),
	      "@0x7f0000000000 b.mi .+20; ldr x16, .+8; br x16; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x540000a4, 0x58000050, 0xd61f0200, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 b.vs $0x10000100", W(0x54000806),
	      "@0x7f0000000000 b.vc .+20; ldr x16, .+8; br x16; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x540000a7, 0x58000050, 0xd61f0200, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 b.vc $0x10000100", W(0x54000807),
	      "@0x7f0000000000 b.vs .+20; ldr x16, .+8; br x16; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x540000a6, 0x58000050, 0xd61f0200, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 b.hi $0x10000100", W(0x54000808),
	      "@0x7f0000000000 b.ls .+20; ldr x16, .+8; br x16; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x540000a9, 0x58000050, 0xd61f0200, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 b.ls $0x10000100", W(0x54000809),
	      "@0x7f0000000000 b.hi .+20; ldr x16, .+8; br x16; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x540000a8, 0x58000050, 0xd61f0200, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 b.ge $0x10000100", W(0x5400080a),
	      "@0x7f0000000000 b.lt .+20; ldr x16, .+8; br x16; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x540000ab, 0x58000050, 0xd61f0200, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 b.lt $0x10000100", W(0x5400080b),
	      "@0x7f0000000000 b.ge .+20; ldr x16, .+8; br x16; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x540000aa, 0x58000050, 0xd61f0200, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 b.gt $0x10000100", W(0x5400080c),
	      "@0x7f0000000000 b.le .+20; ldr x16, .+8; br x16; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x540000ad, 0x58000050, 0xd61f0200, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 b.le $0x10000100", W(0x5400080d),
	      "@0x7f0000000000 b.gt .+20; ldr x16, .+8; br x16; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x540000ac, 0x58000050, 0xd61f0200, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	/* b.al and b.nv cannot be inverted: they are b */
	RC(12, "@0x10000000 nop; b.al $0x10000100; nop",
	       W(0xd503201f, 0x540007ee, 0xd503201f),
	       "@0x10080000 nop; b.al $0x10000100", W(0xd503201f, 0x54c007ee)),
	RC(4, "@0x10000000 b.al $0x10000100", W(0x5400080e),
	      "@0x7f0000000000 ldr x16, .+8; br x16; .quad 0x10000100",
	      W(0x58000050, 0xd61f0200, 0x10000100, 0x00000000)),
	RC(4, "@0x10000000 b.nv $0x10000100", W(0x5400080f),
	      "@0x10080000 b.nv $0x10000100", W(0x54c0080f)),
	RC(4, "@0x10000000 b.nv $0x10000100", W(0x5400080f),
	      "@0x7f0000000000 ldr x16, .+8; br x16; .quad 0x10000100",
	      W(0x58000050, 0xd61f0200, 0x10000100, 0x00000000)),
	/* bc.cond (FEAT_HBC) */
	RC(4, "@0x10000000 bc.ne $0x10000100", W(0x54000811),
	      "@0x10080000 bc.ne $0x10000100; b $0x10000004",
	      W(0x54c00811, 0x17fe0000)),
	RC(4, "@0x10000000 bc.ne $0x10000100", W(0x54000811),
	      "@0x7f0000000000 bc.eq .+20; ldr x16, .+8; br x16; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x540000b0, 0x58000050, 0xd61f0200, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),

	/* cbz, cbnz */
	RC(4, "@0x10000000 cbz x3, $0x10000100", W(0xb4000803),
	      "@0x10080000 cbz x3, $0x10000100; b $0x10000004",
	      W(0xb4c00803, 0x17fe0000)),
	RC(4, "@0x10000000 cbnz w5, $0x10000100", W(0x35000805),
	      "@0x10100100 cbnz w5, $0x10000100; b $0x10000004",
	      W(0x35800005, 0x17fbffc0)),
	RC(4, "@0x10000000 cbnz w5, $0x10000100", W(0x35000805),
	      "@0x10100104 cbz w5, .+8; b $0x10000100; b $0x10000004",
	      W(0x34000045, 0x17fbfffe, 0x17fbffbe)),
	RC(4, "@0x10000000 cbz x3, $0x10000100", W(0xb4000803),
	      "@0x0ff00104 cbz x3, $0x10000100; b $0x10000004",
	      W(0xb47fffe3, 0x1403ffbf)),
	RC(4, "@0x10000000 cbz x3, $0x10000100", W(0xb4000803),
	      "@0x0ff00100 cbnz x3, .+8; b $0x10000100; b $0x10000004",
	      W(0xb5000043, 0x1403ffff, 0x1403ffbf)),
	RC(4, "@0x10000000 cbnz x3, $0x0ffffff0", W(0xb5ffff83),
	      "@0x7f0000000000 cbz x3, .+20; ldr x16, .+8; br x16; "
	      ".quad 0x0ffffff0; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0xb40000a3, 0x58000050, 0xd61f0200, 0x0ffffff0, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),

	/* tbz, tbnz */
	RC(4, "@0x10000000 tbz w3, #5, $0x10000100", W(0x36280803),
	      "@0x10001000 tbz w3, #5, $0x10000100; b $0x10000004",
	      W(0x362f8803, 0x17fffc00)),
	RC(4, "@0x10000000 tbz w3, #5, $0x10000100", W(0x36280803),
	      "@0x10008100 tbz w3, #5, $0x10000100; b $0x10000004",
	      W(0x362c0003, 0x17ffdfc0)),
	RC(4, "@0x10000000 tbz w3, #5, $0x10000100", W(0x36280803),
	      "@0x10008104 tbnz w3, #5, .+8; b $0x10000100; b $0x10000004",
	      W(0x37280043, 0x17ffdffe, 0x17ffdfbe)),
	RC(4, "@0x10000000 tbnz x7, #63, $0x10000100", W(0xb7f80807),
	      "@0x0fff8104 tbnz x7, #63, $0x10000100; b $0x10000004",
	      W(0xb7fbffe7, 0x14001fbf)),
	RC(4, "@0x10000000 tbnz x7, #63, $0x10000100", W(0xb7f80807),
	      "@0x0fff8100 tbz x7, #63, .+8; b $0x10000100; b $0x10000004",
	      W(0xb6f80047, 0x14001fff, 0x14001fbf)),
	RC(4, "@0x10000000 tbz x7, #33, $0x0fffc000", W(0xb60e0007),
	      "@0x7f0000000000 tbnz x7, #33, .+20; ldr x16, .+8; br x16; "
	      ".quad 0x0fffc000; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0xb70800a7, 0x58000050, 0xd61f0200, 0x0fffc000, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),

	/* adr: in reach, limits, then adrp (and add), far, xzr */
	RC(4, "@0x10000000 adr x1, $0x10000123", W(0x70000901),
	      "@0x10080000 adr x1, $0x10000123; b $0x10000004",
	      W(0x70c00901, 0x17fe0000)),
	RC(4, "@0x10000000 adr x1, $0x10000124", W(0x10000921),
	      "@0x10100124 adr x1, $0x10000124; b $0x10000004",
	      W(0x10800001, 0x17fbffb7)),
	RC(4, "@0x10000000 adr x1, $0x10000124", W(0x10000921),
	      "@0x10100128 adrp x1, $0x10000124; add x1, x1, #0x124; "
	      "b $0x10000004", W(0x90fff801, 0x91049021, 0x17fbffb5)),
	RC(4, "@0x10000000 adr x1, $0x10000127", W(0x70000921),
	      "@0x0ff00128 adr x1, $0x10000127; b $0x10000004",
	      W(0x707fffe1, 0x1403ffb6)),
	RC(4, "@0x10000000 adr x1, $0x10000127", W(0x70000921),
	      "@0x0ff00124 adrp x1, $0x10000127; "
	      "add x1, x1, :lo12:$0x10000127; b $0x10000004",
	      W(0x90000801, 0x91049c21, 0x1403ffb6)),
	RC(4, "@0x10000000 adr x2, $0x10001000", W(0x10008002),
	      "@0x14000000 adrp x2, $0x10001000; b $0x10000004",
	      W(0xb0fe0002, 0x17000000)),
	RC(4, "@0x10000000 adr x1, $0x0ff00123", W(0x70800901),
	      "@0x7f0000000000 ldr x1, .+8; b .+12; .quad 0x0ff00123; "
	      "ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x58000041, 0x14000003, 0x0ff00123, 0x00000000, 0x58000050,
		0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 adr xzr, $0x10000100", W(0x1000081f),
	      "@0x10080000 nop; b $0x10000004", W(0xd503201f, 0x17fe0000)),

	/* adrp: in reach, limits (+-4 GiB in pages), far, xzr */
	RC(4, "@0x10000000 adrp x2, $0x12345000", W(0xb0011a22),
	      "@0x10080000 adrp x2, $0x12345000; b $0x10000004",
	      W(0xb0011622, 0x17fe0000)),
	RC(4, "@0x10000000 adrp x2, $0x10000000", W(0x90000002),
	      "@0x110000000 adrp x2, $0x10000000; ldr x16, .+8; br x16; "
	      ".quad 0x10000004", W(0x90800002, 0x58000050, 0xd61f0200,
				    0x10000004, 0x00000000)),
	RC(4, "@0x10000000 adrp x2, $0x10000000", W(0x90000002),
	      "@0x110000ffc adrp x2, $0x10000000; ldr x16, .+8; br x16; "
	      ".quad 0x10000004", W(0x90800002, 0x58000050, 0xd61f0200,
				    0x10000004, 0x00000000)),
	RC(4, "@0x10000000 adrp x2, $0x10000000", W(0x90000002),
	      "@0x110001000 ldr x2, .+8; b .+12; .quad 0x10000000; "
	      "ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x58000042, 0x14000003, 0x10000000, 0x00000000, 0x58000050,
		0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x200000000 adrp x2, $0x200000000", W(0x90000002),
	      "@0x100001000 adrp x2, $0x200000000; ldr x16, .+8; br x16; "
	      ".quad 0x200000004", W(0xf07fffe2, 0x58000050, 0xd61f0200,
				     0x00000004, 0x00000002)),
	RC(4, "@0x200000000 adrp x2, $0x200000000", W(0x90000002),
	      "@0x100000ffc ldr x2, .+8; b .+12; .quad 0x200000000; "
	      "ldr x16, .+8; br x16; .quad 0x200000004",
	      W(0x58000042, 0x14000003, 0x00000000, 0x00000002, 0x58000050,
		0xd61f0200, 0x00000004, 0x00000002)),
	RC(4, "@0x10000000 adrp x3, $0x0f000000", W(0x90ff8003),
	      "@0x7f0000000000 ldr x3, .+8; b .+12; .quad 0x0f000000; "
	      "ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x58000043, 0x14000003, 0x0f000000, 0x00000000, 0x58000050,
		0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 adrp xzr, $0x10000000", W(0x9000001f),
	      "@0x7f0000000000 nop; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0xd503201f, 0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),

	/* ldr (literal): in reach, limits, through the destination or
	 * through x16, each kind */
	RC(4, "@0x10000000 ldr x3, $0x10000100", W(0x58000803),
	      "@0x10080000 ldr x3, $0x10000100; b $0x10000004",
	      W(0x58c00803, 0x17fe0000)),
	RC(4, "@0x10000000 ldr x3, $0x0ff80000", W(0x58c00003),
	      "@0x10080000 ldr x3, $0x0ff80000; b $0x10000004",
	      W(0x58800003, 0x17fe0000)),
	RC(4, "@0x10000000 ldr w4, $0x10000100", W(0x18000804),
	      "@0x10100100 ldr w4, $0x10000100; b $0x10000004",
	      W(0x18800004, 0x17fbffc0)),
	RC(4, "@0x10000000 ldr w4, $0x10000100", W(0x18000804),
	      "@0x10100104 ldr x4, .+12; ldr w4, [x4]; b .+12; "
	      ".quad 0x10000100; b $0x10000004",
	      W(0x58000064, 0xb9400084, 0x14000003, 0x10000100, 0x00000000,
		0x17fbffbb)),
	RC(4, "@0x10000000 ldr w4, $0x10000100", W(0x18000804),
	      "@0x0ff00104 ldr w4, $0x10000100; b $0x10000004",
	      W(0x187fffe4, 0x1403ffbf)),
	RC(4, "@0x10000000 ldr w4, $0x10000100", W(0x18000804),
	      "@0x0ff00100 ldr x4, .+12; ldr w4, [x4]; b .+12; "
	      ".quad 0x10000100; b $0x10000004",
	      W(0x58000064, 0xb9400084, 0x14000003, 0x10000100, 0x00000000,
		0x1403ffbc)),
RC(4, "@0x10000000 ldr x3, $0x10000100", W(0x58000803),
	      "@0x7f0000000000 ldr x3, .+12; ldr x3, [x3]; b .+12; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x58000063, 0xf9400063, 0x14000003, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 ldr w3, $0x10000100", W(0x18000803),
	      "@0x7f0000000000 ldr x3, .+12; ldr w3, [x3]; b .+12; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x58000063, 0xb9400063, 0x14000003, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 ldrsw x5, $0x10000100", W(0x98000805),
	      "@0x7f0000000000 ldr x5, .+12; ldrsw x5, [x5]; b .+12; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x58000065, 0xb98000a5, 0x14000003, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 ldr s1, $0x10000100", W(0x1c000801),
	      "@0x7f0000000000 ldr x16, .+12; ldr s1, [x16]; b .+12; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x58000070, 0xbd400201, 0x14000003, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 ldr d17, $0x10000100", W(0x5c000811),
	      "@0x7f0000000000 ldr x16, .+12; ldr d17, [x16]; b .+12; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x58000070, 0xfd400211, 0x14000003, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 ldr q2, $0x10000100", W(0x9c000802),
	      "@0x7f0000000000 ldr x16, .+12; ldr q2, [x16]; b .+12; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x58000070, 0x3dc00202, 0x14000003, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 prfm pldl1keep, $0x10000100", W(0xd8000800),
	      "@0x7f0000000000 ldr x16, .+12; prfm pldl1keep, [x16]; b .+12; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x58000070, 0xf9800200, 0x14000003, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 prfm pstl3strm, $0x10000100", W(0xd8000815),
	      "@0x7f0000000000 ldr x16, .+12; prfm pstl3strm, [x16]; b .+12; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x58000070, 0xf9800215, 0x14000003, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 ldr wzr, $0x10000100", W(0x1800081f),
	      "@0x7f0000000000 ldr x16, .+12; ldr wzr, [x16]; b .+12; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x58000070, 0xb940021f, 0x14000003, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 ldr xzr, $0x10000100", W(0x5800081f),
	      "@0x7f0000000000 ldr x16, .+12; ldr xzr, [x16]; b .+12; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x58000070, 0xf940021f, 0x14000003, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
	RC(4, "@0x10000000 prfm pldl2keep, $0x10000100", W(0xd8000802),
	      "@0x10080000 prfm pldl2keep, $0x10000100; b $0x10000004",
	      W(0xd8c00802, 0x17fe0000)),
	RC(4, "@0x10000000 ldr q2, $0x10000100", W(0x9c000802),
	      "@0x14000000 ldr x16, .+12; ldr q2, [x16]; b .+12; "
	      ".quad 0x10000100; b $0x10000004",
	      W(0x58000070, 0x3dc00202, 0x14000003, 0x10000100, 0x00000000,
		0x16fffffc)),

	/* whole entries */
	RC(12, "@0x10000000 paciasp; stp x29, x30, [sp, #-48]!; mov x29, sp; "
	       "str x19, [sp, #16]", W(0xd503233f, 0xa9bd7bfd, 0x910003fd,
				       0xf9000bf3),
	       "@0x10080000 paciasp; stp x29, x30, [sp, #-48]!; mov x29, sp; "
	       "b $0x1000000c", W(0xd503233f, 0xa9bd7bfd, 0x910003fd,
				  0x17fe0000)),
	RC(16, "@0x10000000 mrs x1, tpidr_el0; adrp x2, $0x10234000; "
	       "ldr x2, [x2, #0x18]; cbz x2, $0x10000100; nop",
	       W(0xd53bd041, 0x900011a2, 0xf9400c42, 0xb40007a2, 0xd503201f),
	       "@0x7f0000000000 mrs x1, tpidr_el0; ldr x2, .+8; b .+12; "
	       ".quad 0x10234000; ldr x2, [x2, #0x18]; cbnz x2, .+20; "
	       "ldr x16, .+8; br x16; .quad 0x10000100; ldr x16, .+8; "
	       "br x16; .quad 0x10000010",
	       W(0xd53bd041, 0x58000042, 0x14000003, 0x10234000, 0x00000000,
		 0xf9400c42, 0xb50000a2, 0x58000050, 0xd61f0200, 0x10000100,
		 0x00000000, 0x58000050, 0xd61f0200, 0x10000010, 0x00000000)),
	RC(16, "@0x10000000 mrs x1, tpidr_el0; adrp x2, $0x10234000; "
	       "ldr x2, [x2, #0x18]; cbz x2, $0x10000100; nop",
	       W(0xd53bd041, 0x900011a2, 0xf9400c42, 0xb40007a2, 0xd503201f),
	       "@0x14000000 mrs x1, tpidr_el0; adrp x2, $0x10234000; "
	       "ldr x2, [x2, #0x18]; cbnz x2, .+8; b $0x10000100; "
	       "b $0x10000010", W(0xd53bd041, 0x90fe11a2, 0xf9400c42,
				  0xb5000042, 0x1700003c, 0x16ffffff)),
	RC(12, "@0x10000000 bti c; cmp x0, #0x10; b.ls $0x10000040; nop",
	   W(0xd503245f, 0xf100401f, 0x540001c9, 0xd503201f),
	   "@0x10080000 bti c; cmp x0, #0x10; b.ls $0x10000040; "
	   "b $0x1000000c", W(0xd503245f, 0xf100401f, 0x54c001c9, 0x17fe0000)),
	/* the run ends at b, ret, br: the rest is not copied */
	RC(12, "@0x10000000 b $0x10004000; nop; nop",
	       W(0x14001000, 0xd503201f, 0xd503201f),
	       "@0x10080000 b $0x10004000", W(0x17fe1000)),
	RC(12, "@0x10000000 ret; mov x16, x0; nop",
	       W(0xd65f03c0, 0xaa0003f0, 0xd503201f),
	       "@0x10080000 ret", W(0xd65f03c0)),
	RC(12, "@0x10000000 cmp x0, #0x10; br x1; udf #0",
	       W(0xf100401f, 0xd61f0020, 0x00000000),
	       "@0x10080000 cmp x0, #0x10; br x1", W(0xf100401f, 0xd61f0020)),
	/* to the entry itself, or just past the patch: fine */
	RC(12, "@0x10000000 nop; cbz x0, $0x10000000; nop",
	       W(0xd503201f, 0xb4ffffe0, 0xd503201f),
	       "@0x10080000 nop; cbz x0, $0x10000000; nop; b $0x1000000c",
	       W(0xd503201f, 0xb4bfffe0, 0xd503201f, 0x17fe0000)),
	RC(12, "@0x10000000 nop; nop; b.eq $0x1000000c",
	       W(0xd503201f, 0xd503201f, 0x54000020),
	       "@0x10080000 nop; nop; b.eq $0x1000000c; b $0x1000000c",
	       W(0xd503201f, 0xd503201f, 0x54c00020, 0x17fe0000)),
	RC(12, "@0x10000000 adr x0, $0x10000000; nop; nop",
	       W(0x10000000, 0xd503201f, 0xd503201f),
	       "@0x10080000 adr x0, $0x10000000; nop; nop; b $0x1000000c",
	       W(0x10c00000, 0xd503201f, 0xd503201f, 0x17fe0000)),
	RC(12, "@0x10000000 ldr x0, $0x1000000c; nop; nop",
	       W(0x58000060, 0xd503201f, 0xd503201f),
	       "@0x10080000 ldr x0, $0x1000000c; nop; nop; b $0x1000000c",
	       W(0x58c00060, 0xd503201f, 0xd503201f, 0x17fe0000)),
	RC(12, "@0x10000000 ldr x0, $0x0ffffff8; nop; nop",
	       W(0x58ffffc0, 0xd503201f, 0xd503201f),
	       "@0x10080000 ldr x0, $0x0ffffff8; nop; nop; b $0x1000000c",
	       W(0x58bfffc0, 0xd503201f, 0xd503201f, 0x17fe0000)),
	/* x16 (v16) as a vector register, or 16 as a number, is no x16 */
	RC(12, "@0x10000000 ldp q16, q17, [sp]; mov x0, #16; fmov d16, x1",
	   W(0xad4047f0, 0xd2800200, 0x9e670030),
	   "@0x10080000 ldp q16, q17, [sp]; mov x0, #16; fmov d16, x1; "
	   "b $0x1000000c", W(0xad4047f0, 0xd2800200, 0x9e670030, 0x17fe0000)),
	RC(4, "@0x10000000 ldr q17, $0x10000100", W(0x9c000811),
	      "@0x7f0000000000 ldr x16, .+12; ldr q17, [x16]; b .+12; "
	      ".quad 0x10000100; ldr x16, .+8; br x16; .quad 0x10000004",
	      W(0x58000070, 0x3dc00211, 0x14000003, 0x10000100, 0x00000000,
		0x58000050, 0xd61f0200, 0x10000004, 0x00000000)),
};

/*
 * One past each limit above: the linker refuses these, or needs a veneer
 * (b, bl), so the cases at the limit are at it.
 */
static const char *const beyond[] = {
	"!@0x18000104 b $0x10000100",
	"!@0x08000100 b $0x10000100",
	"!@0x18000104 bl $0x10000100",
	"!@0x08000100 bl $0x10000100",
	"!@0x10100104 b.ne $0x10000100",
	"!@0x0ff00100 b.ne $0x10000100",
	"!@0x10100104 cbnz w5, $0x10000100",
	"!@0x0ff00100 cbz x3, $0x10000100",
	"!@0x10008104 tbz w3, #5, $0x10000100",
	"!@0x0fff8100 tbnz x7, #63, $0x10000100",
	"!@0x10100128 adr x1, $0x10000124",
	"!@0x0ff00124 adr x1, $0x10000127",
	"!@0x110001000 adrp x2, $0x10000000",
	"!@0x100000ffc adrp x2, $0x200000000",
	"!@0x10100104 ldr w4, $0x10000100",
	"!@0x0ff00100 ldr w4, $0x10000100",
	"!@0x1000 adrp x16, $0x100001000",
	"!@0x200000000 adrp x16, $0xfffff000",
};

static void test_rcases(void)
{
	size_t i;

	for (i = 0; i < sizeof(rcases) / sizeof(rcases[0]); i++) {
		const struct rcase *c = &rcases[i];
		uint32_t code[MAXW];
		uint8_t out[256];
		size_t len = 0;
		unsigned int replaced = 0;
		const char *why = NULL;
		int err;

		file_words(&c->in, code);
		err = reloc_a64__relocate(code, c->in.n, addr_of(&c->in),
					  c->plen, addr_of(&c->out), out,
					  sizeof(out), &len, &replaced, &why);
		CHECK_EQ_INT_AT(c->line, err, 0);
		if (err) {
			fprintf(stderr, "%s:%d: %s\n", __FILE__, c->line, why);
			continue;
		}
		CHECK_EQ_INT_AT(c->line, replaced, c->plen);
		CHECK_AT(c->line, same(c->line, out, len, &c->out));
		/* the slot bound of reloc_aarch64.h */
		CHECK_AT(c->line, len <= c->plen / 4 * RELOC_A64_INSN_MAX +
					 RELOC_A64_BACK_MAX);
	}
	for (i = 0; i < sizeof(beyond) / sizeof(beyond[0]); i++)
		CHECK(beyond[i][0] == '!');
}

/* ---- the decoder: copied as is, ending the run, refused -------------- */

struct item {
	int line;
	struct seq s;
};

#define L(as, ...)	{ __LINE__, { as, __VA_ARGS__ } }

/* Position-independent: copied, then the branch back. */
static const struct item plain[] = {
	L("@0x10000000 nop", W(0xd503201f)),
	L("@0x10000000 paciasp", W(0xd503233f)),
	L("@0x10000000 pacibsp", W(0xd503237f)),
	L("@0x10000000 autiasp", W(0xd50323bf)),
	L("@0x10000000 paciaz", W(0xd503231f)),
	L("@0x10000000 xpaclri", W(0xd50320ff)),
	L("@0x10000000 bti", W(0xd503241f)),
	L("@0x10000000 bti c", W(0xd503245f)),
	L("@0x10000000 bti j", W(0xd503249f)),
	L("@0x10000000 bti jc", W(0xd50324df)),
	L("@0x10000000 yield", W(0xd503203f)),
	L("@0x10000000 csdb", W(0xd503229f)),
	L("@0x10000000 esb", W(0xd503221f)),
	L("@0x10000000 dmb ish", W(0xd5033bbf)),
	L("@0x10000000 dmb ishld", W(0xd50339bf)),
	L("@0x10000000 dsb sy", W(0xd5033f9f)),
	L("@0x10000000 isb", W(0xd5033fdf)),
	L("@0x10000000 clrex", W(0xd5033f5f)),
	L("@0x10000000 svc #0", W(0xd4000001)),
	L("@0x10000000 svc #0x80", W(0xd4001001)),
	L("@0x10000000 mrs x0, tpidr_el0", W(0xd53bd040)),
	L("@0x10000000 mrs x1, nzcv", W(0xd53b4201)),
	L("@0x10000000 msr tpidr_el0, x1", W(0xd51bd041)),
	L("@0x10000000 msr fpcr, x0", W(0xd51b4400)),
	L("@0x10000000 stp x29, x30, [sp, #-32]!", W(0xa9be7bfd)),
	L("@0x10000000 ldp x29, x30, [sp], #32", W(0xa8c27bfd)),
	L("@0x10000000 stp x19, x20, [sp, #16]", W(0xa90153f3)),
	L("@0x10000000 ldpsw x0, x1, [x2, #8]", W(0x69410440)),
	L("@0x10000000 stnp x0, x1, [x2]", W(0xa8000440)),
	L("@0x10000000 stp w0, w1, [x2, #-8]", W(0x293f0440)),
	L("@0x10000000 stp q0, q1, [sp, #-64]!", W(0xadbe07e0)),
	L("@0x10000000 ldp d16, d17, [x0]", W(0x6d404410)),
	L("@0x10000000 ldnp s0, s1, [x0]", W(0x2c400400)),
	L("@0x10000000 mov x29, sp", W(0x910003fd)),
	L("@0x10000000 sub sp, sp, #0x40", W(0xd10103ff)),
	L("@0x10000000 add x0, x1, #0x10, lsl #12", W(0x91404020)),
	L("@0x10000000 cmp x0, #0x10", W(0xf100401f)),
	L("@0x10000000 cmn w1, #1", W(0x3100043f)),
	L("@0x10000000 add x0, x1, #16", W(0x91004020)),
	L("@0x10000000 and x0, x1, #0xff", W(0x92401c20)),
	L("@0x10000000 orr w2, w3, #0x80000000", W(0x32010062)),
	L("@0x10000000 eor x0, x0, #0x5555555555555555", W(0xd200f000)),
	L("@0x10000000 tst x0, #0x7", W(0xf240081f)),
	L("@0x10000000 and sp, x1, #0xfffffffffffffff0", W(0x927cec3f)),
	L("@0x10000000 mov x0, #16", W(0xd2800200)),
	L("@0x10000000 mov x0, #17", W(0xd2800220)),
	L("@0x10000000 movz w1, #0xffff, lsl #16", W(0x52bfffe1)),
	L("@0x10000000 movk x2, #0x1234, lsl #48", W(0xf2e24682)),
	L("@0x10000000 movn x3, #0", W(0x92800003)),
	L("@0x10000000 lsr x0, x1, #4", W(0xd344fc20)),
	L("@0x10000000 lsl w2, w3, #3", W(0x531d7062)),
	L("@0x10000000 sbfx x0, x1, #3, #5", W(0x93431c20)),
	L("@0x10000000 ubfiz x2, x3, #4, #8", W(0xd37c1c62)),
	L("@0x10000000 bfi w0, w1, #3, #4", W(0x331d0c20)),
	L("@0x10000000 extr x0, x1, x2, #7", W(0x93c21c20)),
	L("@0x10000000 sxtw x0, w1", W(0x93407c20)),
	L("@0x10000000 uxtb w0, w1", W(0x53001c20)),
	L("@0x10000000 mov x19, x0", W(0xaa0003f3)),
	L("@0x10000000 orr x0, x1, x2, lsl #3", W(0xaa020c20)),
	L("@0x10000000 bic w0, w1, w2, ror #5", W(0x0ae21420)),
	L("@0x10000000 mvn x0, x1", W(0xaa2103e0)),
	L("@0x10000000 ands x0, x1, x2", W(0xea020020)),
	L("@0x10000000 add x0, x1, x2, lsl #3", W(0x8b020c20)),
	L("@0x10000000 subs w0, w1, w2, asr #31", W(0x6b827c20)),
	L("@0x10000000 neg x0, x1", W(0xcb0103e0)),
	L("@0x10000000 add x0, sp, w1, uxtw #2", W(0x8b214be0)),
	L("@0x10000000 sub sp, sp, x1, uxtx #4", W(0xcb2173ff)),
	L("@0x10000000 cmp x0, w1, sxtw", W(0xeb21c01f)),
	L("@0x10000000 adc x0, x1, x2", W(0x9a020020)),
	L("@0x10000000 sbcs w0, w1, w2", W(0x7a020020)),
	L("@0x10000000 ccmp x0, x1, #4, ne", W(0xfa411004)),
	L("@0x10000000 ccmn w0, #3, #0, eq", W(0x3a430800)),
	L("@0x10000000 ccmp x0, #16, #0, eq", W(0xfa500800)),
	L("@0x10000000 csel x0, x1, x2, eq", W(0x9a820020)),
	L("@0x10000000 csinc w0, w1, w2, ne", W(0x1a821420)),
	L("@0x10000000 cset x0, hi", W(0x9a9f97e0)),
	L("@0x10000000 cneg x0, x1, mi", W(0xda815420)),
	L("@0x10000000 udiv x0, x1, x2", W(0x9ac20820)),
	L("@0x10000000 sdiv w0, w1, w2", W(0x1ac20c20)),
	L("@0x10000000 lsl x0, x1, x2", W(0x9ac22020)),
	L("@0x10000000 ror w0, w1, w2", W(0x1ac22c20)),
	L("@0x10000000 crc32b w0, w1, w2", W(0x1ac24020)),
	L("@0x10000000 crc32cx w0, w1, x2", W(0x9ac25c20)),
	L("@0x10000000 madd x0, x1, x2, x3", W(0x9b020c20)),
	L("@0x10000000 mul w0, w1, w2", W(0x1b027c20)),
	L("@0x10000000 smull x0, w1, w2", W(0x9b227c20)),
	L("@0x10000000 umulh x0, x1, x2", W(0x9bc27c20)),
	L("@0x10000000 umsubl x0, w1, w2, x3", W(0x9ba28c20)),
	L("@0x10000000 rbit x0, x1", W(0xdac00020)),
	L("@0x10000000 rev w0, w1", W(0x5ac00820)),
	L("@0x10000000 rev16 x0, x1", W(0xdac00420)),
	L("@0x10000000 rev32 x0, x1", W(0xdac00820)),
	L("@0x10000000 rev x0, x1", W(0xdac00c20)),
	L("@0x10000000 clz x0, x1", W(0xdac01020)),
	L("@0x10000000 cls w0, w1", W(0x5ac01420)),
	L("@0x10000000 pacia x30, sp", W(0xdac103fe)),
	L("@0x10000000 autib x0, x1", W(0xdac11420)),
	L("@0x10000000 paciza x0", W(0xdac123e0)),
	L("@0x10000000 xpaci x0", W(0xdac143e0)),
	L("@0x10000000 pacda x0, x1", W(0xdac10820)),
	L("@0x10000000 ldr x0, [x1]", W(0xf9400020)),
	L("@0x10000000 ldr w0, [x1, #4]", W(0xb9400420)),
	L("@0x10000000 ldrb w0, [x1, #1]!", W(0x38401c20)),
	L("@0x10000000 ldrsh x0, [x1], #2", W(0x78802420)),
	L("@0x10000000 strh w0, [x1, x2, lsl #1]", W(0x78227820)),
	L("@0x10000000 ldr x0, [x1, w2, sxtw #3]", W(0xf862d820)),
	L("@0x10000000 ldur x0, [x1, #-8]", W(0xf85f8020)),
	L("@0x10000000 sturb w0, [x1, #-1]", W(0x381ff020)),
	L("@0x10000000 ldtr x0, [x1]", W(0xf8400820)),
	L("@0x10000000 ldrsw x0, [x1, #4]", W(0xb9800420)),
	L("@0x10000000 str xzr, [sp, #8]", W(0xf90007ff)),
	L("@0x10000000 prfm pldl1keep, [x0]", W(0xf9800000)),
	L("@0x10000000 prfm pstl2strm, [x0, x1]", W(0xf8a16813)),
	L("@0x10000000 prfum pldl1keep, [x0, #-1]", W(0xf89ff000)),
	L("@0x10000000 ldr q0, [x0]", W(0x3dc00000)),
	L("@0x10000000 str d1, [sp, #8]", W(0xfd0007e1)),
	L("@0x10000000 ldr b2, [x0, #1]", W(0x3d400402)),
	L("@0x10000000 ldur q3, [x0, #-16]", W(0x3cdf0003)),
	L("@0x10000000 str h4, [x0], #2", W(0x7c002404)),
	L("@0x10000000 ldr d16, [x0]", W(0xfd400010)),
	L("@0x10000000 str q16, [sp, #32]", W(0x3d800bf0)),
	L("@0x10000000 ldar x0, [x1]", W(0xc8dffc20)),
	L("@0x10000000 stlr w0, [x1]", W(0x889ffc20)),
	L("@0x10000000 ldarb w0, [x1]", W(0x08dffc20)),
	L("@0x10000000 stlrh w0, [x1]", W(0x489ffc20)),
	L("@0x10000000 ldlar x0, [x1]", W(0xc8df7c20)),
	L("@0x10000000 stllr x0, [x1]", W(0xc89f7c20)),
	L("@0x10000000 cas x0, x1, [x2]", W(0xc8a07c41)),
	L("@0x10000000 casal w0, w1, [x2]", W(0x88e0fc41)),
	L("@0x10000000 casb w0, w1, [x2]", W(0x08a07c41)),
	L("@0x10000000 ldadd x0, x1, [x2]", W(0xf8200041)),
	L("@0x10000000 stadd w0, [x1]", W(0xb820003f)),
	L("@0x10000000 swpal x0, x1, [x2]", W(0xf8e08041)),
	L("@0x10000000 ldsmaxl w0, w1, [x2]", W(0xb8604041)),
	L("@0x10000000 ldumin x0, x1, [sp]", W(0xf82073e1)),
	L("@0x10000000 ldapr x0, [x1]", W(0xf8bfc020)),
	L("@0x10000000 ldaprb w0, [x1]", W(0x38bfc020)),
	L("@0x10000000 ldraa x0, [x1]", W(0xf8200420)),
	L("@0x10000000 ldrab x0, [x1, #8]!", W(0xf8a01c20)),
	L("@0x10000000 movi v0.2d, #0", W(0x6f00e400)),
	L("@0x10000000 movi v1.16b, #0x80", W(0x4f04e401)),
	L("@0x10000000 mvni v2.4s, #1", W(0x6f000422)),
	L("@0x10000000 movi d3, #0xff00ff00ff00ff00", W(0x2f05e543)),
	L("@0x10000000 fmov v4.2d, #1.0", W(0x6f03f604)),
	L("@0x10000000 fmov v5.4s, #-2.0", W(0x4f04f405)),
	L("@0x10000000 orr v6.4s, #1, lsl #8", W(0x4f003426)),
	L("@0x10000000 bic v7.8h, #2", W(0x6f009447)),
	L("@0x10000000 movi v16.2d, #0", W(0x6f00e410)),
	L("@0x10000000 mov v0.16b, v1.16b", W(0x4ea11c20)),
	L("@0x10000000 mov v16.8b, v17.8b", W(0x0eb11e30)),
	L("@0x10000000 fmov d0, x1", W(0x9e670020)),
	L("@0x10000000 fmov x2, d3", W(0x9e660062)),
	L("@0x10000000 fmov s4, w5", W(0x1e2700a4)),
	L("@0x10000000 fmov w6, s7", W(0x1e2600e6)),
	L("@0x10000000 fmov d16, x1", W(0x9e670030)),
};

/* The branch back after one plain instruction of `plain`. */
static const struct seq back = { "@0x10080004 b $0x10000004", W(0x17fe0000) };

/* ret, br and their pac forms: copied, nothing after them. */
static const struct item ends[] = {
	L("@0x10000000 ret", W(0xd65f03c0)),
	L("@0x10000000 ret x1", W(0xd65f0020)),
	L("@0x10000000 retaa", W(0xd65f0bff)),
	L("@0x10000000 retab", W(0xd65f0fff)),
	L("@0x10000000 br x3", W(0xd61f0060)),
	L("@0x10000000 braaz x1", W(0xd61f083f)),
	L("@0x10000000 brabz x2", W(0xd61f0c5f)),
	L("@0x10000000 braa x1, x2", W(0xd71f0822)),
	L("@0x10000000 brab x3, sp", W(0xd71f0c7f)),
};

/* Unknown, reserved or unallocated: -ENOEXEC. */
static const struct item unknown[] = {
	L("@0x10000000 udf #0", W(0)),
	L("@0x10000000 .inst 0x00000001", W(0x00000001)),
	L("@0x10000000 brk #0", W(0xd4200000)),
	L("@0x10000000 brk #1000", W(0xd4207d00)),
	L("@0x10000000 hlt #0", W(0xd4400000)),
	L("@0x10000000 hvc #0", W(0xd4000002)),
	L("@0x10000000 eret", W(0xd69f03e0)),
	L("@0x10000000 ptrue p0.b", W(0x2518e3e0)),
	L("@0x10000000 add z0.d, z0.d, z1.d", W(0x04e10000)),
	L("@0x10000000 ld1 {v0.16b}, [x0]", W(0x4c407000)),
	L("@0x10000000 casp x0, x1, x2, x3, [x4]", W(0x48207c82)),
	L("@0x10000000 stg x0, [x1]", W(0xd9200820)),
	L("@0x10000000 irg x0, x1", W(0x9adf1020)),
	L("@0x10000000 addg x0, x1, #16, #1", W(0x91810420)),
	L("@0x10000000 stgp x0, x1, [x2]", W(0x69000440)),
	L("@0x10000000 ldapur x0, [x1, #8]", W(0xd9408020)),
	L("@0x10000000 cpyfp [x0]!, [x1]!, x2!", W(0x19010440)),
	L("@0x10000000 msr daifset, #2", W(0xd50342df)),
	L("@0x10000000 dc zva, x0", W(0xd50b7420)),
	L("@0x10000000 wfet x0", W(0xd5031000)),
	L("@0x10000000 hint #39", W(0xd50324ff)),
	L("@0x10000000 hint #9", W(0xd503213f)),
	L("@0x10000000 fadd d0, d1, d2", W(0x1e622820)),
	L("@0x10000000 setf8 w0", W(0x3a00080d)),
	L("@0x10000000 rmif x0, #3, #2", W(0xba018402)),
	/* b.cond with o1 set; ret with op4 set */
	L("@0x10000000 .inst 0x55000000", W(0x55000000)),
	L("@0x10000000 .inst 0xd65f03c1", W(0xd65f03c1)),
	/* ldr (literal) with opc 11 and V 1 */
	L("@0x10000000 .inst 0xdc000000", W(0xdc000000)),
	/* and x0, x0 with N 1 and imms all ones: a reserved bitmask */
	L("@0x10000000 .inst 0x9240fc00", W(0x9240fc00)),
	/* movz with opc 01; w-sized movz with hw 2 */
	L("@0x10000000 .inst 0xb2800000", W(0xb2800000)),
	L("@0x10000000 .inst 0x52c00000", W(0x52c00000)),
	/* ldr x (unsigned offset) with opc 11; ldrsw with opc 11 */
	L("@0x10000000 .inst 0xf9c00000", W(0xf9c00000)),
	L("@0x10000000 .inst 0xb9c00000", W(0xb9c00000)),
	/* ldr x0, [x1, w2, uxtb]: option<1> clear */
	L("@0x10000000 .inst 0xf8620820", W(0xf8620820)),
	/* ldnp with opc 01 */
	L("@0x10000000 .inst 0x68400000", W(0x68400000)),
};

/* Exclusive: -ENOTSUP. */
static const struct item exclusive[] = {
	L("@0x10000000 ldxr x0, [x1]", W(0xc85f7c20)),
	L("@0x10000000 stxr w2, x0, [x1]", W(0xc8027c20)),
	L("@0x10000000 ldaxr w0, [x1]", W(0x885ffc20)),
	L("@0x10000000 stlxr w2, w0, [x1]", W(0x8802fc20)),
	L("@0x10000000 ldxp x0, x1, [x2]", W(0xc87f0440)),
	L("@0x10000000 stxp w3, x0, x1, [x2]", W(0xc8230440)),
	L("@0x10000000 ldaxp w0, w1, [x2]", W(0x887f8440)),
	L("@0x10000000 stlxp w3, x0, x1, [x2]", W(0xc8238440)),
	L("@0x10000000 ldxrb w0, [x1]", W(0x085f7c20)),
	L("@0x10000000 stlxrh w2, w0, [x1]", W(0x4802fc20)),
};

/* Naming x16 or x17: -ENOTSUP. */
static const struct item ip[] = {
	L("@0x10000000 mov x16, x0", W(0xaa0003f0)),
	L("@0x10000000 mov x0, x17", W(0xaa1103e0)),
	L("@0x10000000 add x16, sp, #8", W(0x910023f0)),
	L("@0x10000000 add x0, x16, #1", W(0x91000600)),
	L("@0x10000000 ldr x17, [x0]", W(0xf9400011)),
	L("@0x10000000 ldr x0, [x16]", W(0xf9400200)),
	L("@0x10000000 str x0, [x1, x16]", W(0xf8306820)),
	L("@0x10000000 ldp x16, x17, [sp]", W(0xa94047f0)),
	L("@0x10000000 ldp x0, x1, [x17]", W(0xa9400620)),
	L("@0x10000000 stp x0, x16, [sp]", W(0xa90043e0)),
	L("@0x10000000 cbz x16, $0x10000100", W(0xb4000810)),
	L("@0x10000000 tbnz w17, #1, $0x10000100", W(0x37080811)),
	L("@0x10000000 adr x16, $0x10000100", W(0x10000810)),
	L("@0x10000000 adrp x17, $0x10000000", W(0x90000011)),
	L("@0x10000000 ldr x16, $0x10000100", W(0x58000810)),
	L("@0x10000000 ldrsw x17, $0x10000100", W(0x98000811)),
	L("@0x10000000 br x16", W(0xd61f0200)),
	L("@0x10000000 blr x17", W(0xd63f0220)),
	L("@0x10000000 ret x16", W(0xd65f0200)),
	L("@0x10000000 braa x0, x16", W(0xd71f0810)),
	L("@0x10000000 mrs x16, tpidr_el0", W(0xd53bd050)),
	L("@0x10000000 madd x0, x1, x2, x16", W(0x9b024020)),
	L("@0x10000000 pacia1716", W(0xd503211f)),
	L("@0x10000000 autib1716", W(0xd50321df)),
	L("@0x10000000 hint #40", W(0xd503251f)),
	L("@0x10000000 ldadd x16, x0, [x1]", W(0xf8300020)),
	L("@0x10000000 cas x0, x17, [x1]", W(0xc8a07c31)),
	L("@0x10000000 ccmp x16, #3, #0, eq", W(0xfa430a00)),
	L("@0x10000000 fmov x16, d0", W(0x9e660010)),
	L("@0x10000000 fmov d0, x17", W(0x9e670220)),
	L("@0x10000000 csel x0, x16, x1, eq", W(0x9a810200)),
	L("@0x10000000 udiv x0, x1, x17", W(0x9ad10820)),
	L("@0x10000000 ldraa x16, [x0]", W(0xf8200410)),
	L("@0x10000000 ldar x17, [x0]", W(0xc8dffc11)),
	L("@0x10000000 extr x0, x16, x1, #3", W(0x93c10e00)),
	L("@0x10000000 pacia x0, x16", W(0xdac10200)),
};

/* Relocate one instruction (plen 4) to 0x10080000. */
static int one(const struct item *it, uint8_t *out, size_t cap, size_t *len,
	       const char **why)
{
	uint32_t code[MAXW];
	unsigned int replaced;

	file_words(&it->s, code);
	*len = 0;
	*why = NULL;
	return reloc_a64__relocate(code, it->s.n, addr_of(&it->s), 4,
				   0x10080000, out, cap, len, &replaced, why);
}

static void test_lists(void)
{
	uint8_t out[64];
	const char *why;
	size_t i, len;
	int err;

	for (i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		const struct item *it = &plain[i];
		uint32_t w;

		err = one(it, out, sizeof(out), &len, &why);
		CHECK_EQ_INT_AT(it->line, err, 0);
		CHECK_EQ_INT_AT(it->line, it->s.n, 1);
		CHECK_EQ_INT_AT(it->line, len, 8);
		if (err || len != 8)
			continue;
		memcpy(&w, out, 4);
		CHECK_AT(it->line, le32toh(w) == it->s.w[0]);
		CHECK_AT(it->line, same(it->line, out + 4, 4, &back));
	}
	for (i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
		const struct item *it = &ends[i];

		err = one(it, out, sizeof(out), &len, &why);
		CHECK_EQ_INT_AT(it->line, err, 0);
		CHECK_AT(it->line, !err && same(it->line, out, len, &it->s));
	}
	for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		err = one(&unknown[i], out, sizeof(out), &len, &why);
		CHECK_EQ_INT_AT(unknown[i].line, err, -ENOEXEC);
		CHECK_AT(unknown[i].line, why && strstr(why, "unknown"));
	}
	for (i = 0; i < sizeof(exclusive) / sizeof(exclusive[0]); i++) {
		err = one(&exclusive[i], out, sizeof(out), &len, &why);
		CHECK_EQ_INT_AT(exclusive[i].line, err, -ENOTSUP);
		CHECK_AT(exclusive[i].line, why && strstr(why, "exclusive"));
	}
	for (i = 0; i < sizeof(ip) / sizeof(ip[0]); i++) {
		err = one(&ip[i], out, sizeof(out), &len, &why);
		CHECK_EQ_INT_AT(ip[i].line, err, -ENOTSUP);
		CHECK_AT(ip[i].line, why && strstr(why, "x16 or x17"));
	}
}

/* ---- refusals --------------------------------------------------------- */

struct fcase {
	int line;
	unsigned int plen;
	struct seq in;
	uint64_t to;
	int err;
	const char *why;	/* a part of the reason */
};

#define FC(plen, in, inw, to, err, why)				\
	{ __LINE__, plen, { in, inw }, to, err, why }

static const struct fcase fcases[] = {
	/* a call returning into the replaced bytes */
	FC(12, "@0x10000000 bl $0x10000100; nop; nop",
	       W(0x94000040, 0xd503201f, 0xd503201f),
	   0x10080000, -ENOTSUP, "returns into them"),
	FC(12, "@0x10000000 nop; blr x3; nop",
	       W(0xd503201f, 0xd63f0060, 0xd503201f),
	   0x10080000, -ENOTSUP, "returns into them"),
	FC(16, "@0x10000000 nop; bl $0x10000100; nop; nop",
	       W(0xd503201f, 0x9400003f, 0xd503201f, 0xd503201f),
	   0x10080000, -ENOTSUP, "returns into them"),
	FC(8, "@0x10000000 blraaz x1; nop", W(0xd63f083f, 0xd503201f),
	   0x10080000, -ENOTSUP, "returns into them"),
	/* into the replaced bytes, other than the entry */
	FC(12, "@0x10000000 cbz x0, $0x10000008; nop; nop",
	       W(0xb4000040, 0xd503201f, 0xd503201f),
	   0x10080000, -ENOTSUP, "branches into its own first bytes"),
	FC(12, "@0x10000000 nop; b.eq $0x10000004; nop",
	       W(0xd503201f, 0x54000000, 0xd503201f),
	   0x10080000, -ENOTSUP, "branches into its own first bytes"),
	FC(12, "@0x10000000 nop; nop; b $0x10000004",
	       W(0xd503201f, 0xd503201f, 0x17ffffff),
	   0x10080000, -ENOTSUP, "branches into its own first bytes"),
	FC(12, "@0x10000000 tbz w0, #0, $0x10000008; nop; nop",
	       W(0x36000040, 0xd503201f, 0xd503201f),
	   0x10080000, -ENOTSUP, "branches into its own first bytes"),
	FC(12, "@0x10000000 ldr x0, $0x10000004; nop; nop",
	       W(0x58000020, 0xd503201f, 0xd503201f),
	   0x10080000, -ENOTSUP, "refers to its own first bytes"),
	FC(12, "@0x10000000 ldr x0, $0x0ffffffc; nop; nop",
	       W(0x58ffffe0, 0xd503201f, 0xd503201f),
	   0x10080000, -ENOTSUP, "refers to its own first bytes"),
	FC(12, "@0x10000000 ldr q0, $0x0ffffff8; nop; nop",
	       W(0x9cffffc0, 0xd503201f, 0xd503201f),
	   0x10080000, -ENOTSUP, "refers to its own first bytes"),
	FC(12, "@0x10000000 adr x1, $0x10000008; nop; nop",
	       W(0x10000041, 0xd503201f, 0xd503201f),
	   0x10080000, -ENOTSUP, "refers to its own first bytes"),
	/* the run is refused even when the refused word comes later */
	FC(12, "@0x10000000 nop; nop; ldaxr x0, [x1]",
	       W(0xd503201f, 0xd503201f, 0xc85ffc20),
	   0x10080000, -ENOTSUP, "exclusive"),
	FC(12, "@0x10000000 nop; mov x17, x0; nop",
	       W(0xd503201f, 0xaa0003f1, 0xd503201f),
	   0x10080000, -ENOTSUP, "x16 or x17"),
	FC(16, "@0x10000000 nop; nop; nop; udf #1",
	       W(0xd503201f, 0xd503201f, 0xd503201f, 0x00000001),
	   0x10080000, -ENOEXEC, "unknown"),
	/* arguments */
	FC(0, "@0x10000000 nop", W(0xd503201f),
	   0x10080000, -EINVAL, "whole number"),
	FC(6, "@0x10000000 nop; nop", W(0xd503201f, 0xd503201f),
	   0x10080000, -EINVAL,
	   "whole number"),
	FC(16, "@0x10000000 nop; nop; nop",
	       W(0xd503201f, 0xd503201f, 0xd503201f), 0x10080000, -EINVAL,
	   "shorter"),
	FC(4, "@0x10000000 nop", W(0xd503201f),
	   0x10080002, -EINVAL, "4-aligned"),
};

static void test_fcases(void)
{
	uint32_t code[MAXW];
	uint8_t out[256];
	unsigned int replaced = 7;
	const char *why;
	size_t i, len;
	int err;

	for (i = 0; i < sizeof(fcases) / sizeof(fcases[0]); i++) {
		const struct fcase *c = &fcases[i];

		file_words(&c->in, code);
		why = NULL;
		replaced = 7;
		err = reloc_a64__relocate(code, c->in.n, addr_of(&c->in),
					  c->plen, c->to, out, sizeof(out),
					  &len, &replaced, &why);
		CHECK_EQ_INT_AT(c->line, err, c->err);
		CHECK_AT(c->line, why && strstr(why, c->why));
		CHECK_EQ_INT_AT(c->line, replaced, 7);
	}
	/* a function not 4-aligned */
	file_words(&fcases[0].in, code);
	why = NULL;
	err = reloc_a64__relocate(code, 3, 0x10000002, 12, 0x10080000, out,
				  sizeof(out), &len, &replaced, &why);
	CHECK_EQ_INT(err, -EINVAL);
	CHECK(why && strstr(why, "4-aligned"));
	/* a slot too small: -ENOSPC, and the length it needs */
	file_words(&rcases[7].in, code);
	why = NULL;
	err = reloc_a64__relocate(code, 3, 0x10000000, 12, 0x7f0000000000,
				  out, 43, &len, &replaced, &why);
	CHECK_EQ_INT(err, -ENOSPC);
	CHECK_EQ_INT(len, 44);
	CHECK(why && strstr(why, "do not fit"));
	err = reloc_a64__relocate(code, 3, 0x10000000, 12, 0x7f0000000000,
				  NULL, 0, &len, &replaced, &why);
	CHECK_EQ_INT(err, -ENOSPC);
	CHECK_EQ_INT(len, 44);
	err = reloc_a64__relocate(code, 3, 0x10000000, 12, 0x7f0000000000,
				  out, 44, &len, &replaced, &why);
	CHECK_EQ_INT(err, 0);
	CHECK(same(__LINE__, out, len, &rcases[7].out));
}

/* ---- scan ------------------------------------------------------------- */

struct scase {
	int line;
	struct seq code;
	uint64_t lo, hi;
	int err;
	const char *why;
};

#define SC(code, w, lo, hi, err, why)				\
	{ __LINE__, { code, w }, lo, hi, err, why }

static const struct scase scases[] = {
	SC("@0x10000000 nop; nop; nop; b.ne $0x10000004",
	   W(0xd503201f, 0xd503201f, 0xd503201f, 0x54ffffc1),
	   0x10000000, 0x1000000c, -ENOTSUP, "a branch"),
	SC("@0x10000000 nop; nop; nop; tbz x1, #40, $0x10000008",
	   W(0xd503201f, 0xd503201f, 0xd503201f, 0xb647ffe1),
	   0x10000000, 0x1000000c, -ENOTSUP, "a branch"),
	SC("@0x10000000 nop; nop; nop; nop; b $0x10000004",
	   W(0xd503201f, 0xd503201f, 0xd503201f, 0xd503201f, 0x17fffffd),
	   0x10000000, 0x10000010, -ENOTSUP, "a branch"),
	SC("@0x10000000 nop; nop; nop; bl $0x1000000c",
	   W(0xd503201f, 0xd503201f, 0xd503201f, 0x94000000),
	   0x10000000, 0x10000010, -ENOTSUP, "a branch"),
	SC("@0x10000000 nop; nop; nop; cbnz w2, $0x10000008",
	   W(0xd503201f, 0xd503201f, 0xd503201f, 0x35ffffe2),
	   0x10000000, 0x1000000c, -ENOTSUP, "a branch"),
	SC("@0x10000000 nop; nop; nop; adr x0, $0x10000005",
	   W(0xd503201f, 0xd503201f, 0xd503201f, 0x30ffffc0),
	   0x10000000, 0x1000000c, -ENOTSUP, "an address"),
	SC("@0x10000000 nop; nop; nop; ldr w0, $0x10000000",
	   W(0xd503201f, 0xd503201f, 0xd503201f, 0x18ffffa0),
	   0x10000000, 0x1000000c, -ENOTSUP, "a literal"),
	SC("@0x10000000 nop; nop; nop; ldr x0, $0x0ffffffc",
	   W(0xd503201f, 0xd503201f, 0xd503201f, 0x58ffff80),
	   0x10000000, 0x1000000c, -ENOTSUP, "a literal"),
	SC("@0x10000000 nop; nop; nop; ldr q0, $0x0ffffff4",
	   W(0xd503201f, 0xd503201f, 0xd503201f, 0x9cffff40),
	   0x10000000, 0x1000000c, -ENOTSUP, "a literal"),
	SC("@0x10000000 nop; nop; nop; ldr x0, $0x10000008",
	   W(0xd503201f, 0xd503201f, 0xd503201f, 0x58ffffe0),
	   0x10000000, 0x1000000c, -ENOTSUP, "a literal"),
	/* a .cold part far from the entry */
	SC("@0x10100000 b.eq $0x10000008", W(0x54800040),
	   0x10000000, 0x1000000c, -ENOTSUP, "a branch"),
	/* to the entry, to the end, around: fine */
	SC("@0x10000000 nop; nop; nop; cbz x0, $0x10000000; "
	   "b $0x1000000c; b.lt $0x0ffffffc; bl $0x10000010; "
	   "adr x0, $0x10000000; adr x1, $0x1000000c; "
	   "adrp x2, $0x10000000; ldr w0, $0x1000000c; "
	   "ldr x0, $0x0ffffff8; ldr q0, $0x0ffffff0; "
	   "prfm pldl1keep, $0x10000004; udf #0; .inst 0xffffffff; ret",
	   W(0xd503201f, 0xd503201f, 0xd503201f, 0xb4ffffa0, 0x17ffffff,
	     0x54ffff4b, 0x97fffffe, 0x10ffff20, 0x10ffff61, 0x90000002,
	     0x18ffff20, 0x58fffe60, 0x9cfffe00, 0xd8fffe80, 0x00000000,
	     0xffffffff, 0xd65f03c0),
	   0x10000000, 0x1000000c, 0, NULL),
};

static void test_scan(void)
{
	uint32_t code[MAXW];
	const char *why;
	size_t i;
	int err;

	for (i = 0; i < sizeof(scases) / sizeof(scases[0]); i++) {
		const struct scase *c = &scases[i];

		file_words(&c->code, code);
		why = NULL;
		err = reloc_a64__scan(code, c->code.n, addr_of(&c->code),
				      c->lo, c->hi, &why);
		CHECK_EQ_INT_AT(c->line, err, c->err);
		if (c->why)
			CHECK_AT(c->line, why && strstr(why, c->why));
	}
	/* code not 4-aligned */
	file_words(&scases[0].code, code);
	why = NULL;
	err = reloc_a64__scan(code, 1, 0x10000002, 0x10000000, 0x1000000c,
			      &why);
	CHECK_EQ_INT(err, -ENOTSUP);
	CHECK(why && strstr(why, "4-aligned"));
	/* nothing to scan */
	CHECK_EQ_INT(reloc_a64__scan(NULL, 0, 0x10000000, 0x10000000,
				     0x1000000c, &why), 0);
}

/* ---- patch ------------------------------------------------------------ */

struct pcase {
	int line;
	struct seq patch;	/* at its address */
	uint64_t target;
};

#define PC(as, w, target)	{ __LINE__, { as, w }, target }

static const struct pcase pcases[] = {
	PC("@0x10000000 adrp x16, $0x10080040; "
	   "add x16, x16, :lo12:$0x10080040; br x16",
	   W(0x90000410, 0x91010210, 0xd61f0200), 0x10080040),
	PC("@0x10000004 adrp x16, $0x0f000ffc; "
	   "add x16, x16, :lo12:$0x0f000ffc; br x16",
	   W(0x90ff8010, 0x913ff210, 0xd61f0200), 0x0f000ffc),
	/* adrp's limits, +-4 GiB in pages */
	PC("@0x10000000 adrp x16, $0x10ffffffc; "
	   "add x16, x16, :lo12:$0x10ffffffc; br x16",
	   W(0xf07ffff0, 0x913ff210, 0xd61f0200), 0x10ffffffc),
	PC("@0x10000ffc adrp x16, $0x10ffff000; "
	   "add x16, x16, :lo12:$0x10ffff000; br x16",
	   W(0xf07ffff0, 0x91000210, 0xd61f0200), 0x10ffff000),
	PC("@0x10000000 ldr x16, .+8; br x16; .quad 0x110000000",
	   W(0x58000050, 0xd61f0200, 0x10000000, 0x00000001),
	   0x110000000),
	PC("@0x200000000 adrp x16, $0x100000000; "
	   "add x16, x16, :lo12:$0x100000000; br x16",
	   W(0x90800010, 0x91000210, 0xd61f0200), 0x100000000),
	PC("@0x200000ffc adrp x16, $0x100000010; "
	   "add x16, x16, :lo12:$0x100000010; br x16",
	   W(0x90800010, 0x91004210, 0xd61f0200), 0x100000010),
	PC("@0x200000000 ldr x16, .+8; br x16; .quad 0xfffffffc",
	   W(0x58000050, 0xd61f0200, 0xfffffffc, 0x00000000),
	   0xfffffffc),
	/* far: the literal 8-aligned or not */
	PC("@0x10000000 ldr x16, .+8; br x16; .quad 0x7f0000001234",
	   W(0x58000050, 0xd61f0200, 0x00001234, 0x00007f00),
	   0x7f0000001234),
	PC("@0x10000004 ldr x16, .+8; br x16; .quad 0x7f0000001234",
	   W(0x58000050, 0xd61f0200, 0x00001234, 0x00007f00),
	   0x7f0000001234),
};

static void test_patch(void)
{
	uint8_t out[RELOC_A64_PATCH_MAX];
	size_t i, len;

	for (i = 0; i < sizeof(pcases) / sizeof(pcases[0]); i++) {
		const struct pcase *c = &pcases[i];
		int err;

		len = 0;
		err = reloc_a64__patch(addr_of(&c->patch), c->target, out,
				       sizeof(out), &len);
		CHECK_EQ_INT_AT(c->line, err, 0);
		CHECK_AT(c->line, !err && same(c->line, out, len, &c->patch));
		CHECK_AT(c->line, len <= RELOC_A64_PATCH_MAX);
	}
	CHECK_EQ_INT(reloc_a64__patch(0x10000002, 0x10080000, out,
				      sizeof(out), &len), -EINVAL);
	CHECK_EQ_INT(reloc_a64__patch(0x10000000, 0x10080001, out,
				      sizeof(out), &len), -EINVAL);
	/* the length asked for, with no room or too little */
	len = 0;
	CHECK_EQ_INT(reloc_a64__patch(0x10000000, 0x10080000, NULL, 0, &len),
		     -ENOSPC);
	CHECK_EQ_INT(len, 12);
	len = 0;
	CHECK_EQ_INT(reloc_a64__patch(0x10000000, 0x7f0000000000, out, 15,
				      &len), -ENOSPC);
	CHECK_EQ_INT(len, 16);
	CHECK_EQ_INT(reloc_a64__patch(0x10000000, 0x10080040, out, 12, &len),
		     0);
	CHECK(same(__LINE__, out, len, &pcases[0].patch));
}

int main(void)
{
	test_rcases();
	test_lists();
	test_fcases();
	test_scan();
	test_patch();
	printf("test-reloc-aarch64: %lu checks, %lu failed\n", checks,
	       failures);
	return failures != 0;
}
