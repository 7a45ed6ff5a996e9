// SPDX-License-Identifier: MIT
/*
 * reloc_aarch64.c - relocate the first A64 instructions of a function.
 *
 * The aarch64 side of entry.c (entry_aarch64.c): a function's first
 * instructions are replaced by a branch to a slot of the entry page (b,
 * or adrp, add and br through x16); the slot holds them, rewritten to run
 * there, and a branch back.  Everything here
 * is a pure function over little-endian instruction words.
 *
 * Each displaced word is decoded against a whitelist of the A64 classes a
 * compiler puts at a function's entry (data processing, loads and stores,
 * branches, hints, barriers, mrs/msr, svc, a few SIMD moves), checking their
 * unallocated encodings: anything else (udf, reserved words, SVE, an
 * extension we do not know, which might be PC-relative) is refused, as are
 * exclusive loads and stores (a relocated pair may never succeed).  The
 * decoder also gives the general registers an instruction names, so that
 * one using x16 or x17, which the patch and the relocated code clobber
 * (the AAPCS64 lets veneers do so), is refused.
 *
 * Position-independent instructions are copied.  PC-relative ones are
 * re-encoded when their target is in reach of the new address, else
 * rewritten exactly:
 *
 *   b t            ldr x16, .+8; br x16; .quad t
 *   bl t           ldr x16, .+12; blr x16; b .+12; .quad t
 *   b.c t          b.!c .+8; b t   or   b.!c .+20; ldr x16, .+8; br x16;
 *   cb(n)z, tb(n)z .quad t (the same with the other test; b.al and b.nv,
 *                  which cannot be inverted, are b)
 *   adr xd, v      adrp xd, v; add xd, xd, :lo12:v   or
 *   adrp xd, v     ldr xd, .+8; b .+12; .quad v
 *   ldr lit        ldr xt, .+12; ldr wt|xt, [xt]; b .+12; .quad a  (ldrsw
 *                  alike; s, d, q and prfm through x16 instead of xt)
 *
 * A literal is only 4-aligned when its place is: A64 loads need no
 * alignment in Normal memory (SCTLR_EL1.A is clear for Linux tasks), and
 * nothing rewrites it while the code runs.  ret, br and b end the run:
 * past them the rest of the patch is reached by branches only, which
 * reloc_a64__scan() refuses.  A call is accepted only as the last
 * displaced instruction (see NOTES.md): it returns into the slot, which
 * then branches back, and a thread already in the callee when the patch
 * is written returns to from + replaced, which the patch leaves alone.
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include "reloc_aarch64.h"

#define X16		16u
#define X30		30u
#define IP_REGS		((1u << 16) | (1u << 17))
#define NOP		0xd503201fu
#define B		0x14000000u
#define BL		0x94000000u
#define BR_X16		0xd61f0200u
#define BLR_X16		0xd63f0200u
#define ADRP		0x90000000u
#define ADD_X_IMM	0x91000000u
#define LDR_X_LIT	0x58000000u

enum kind {
	K_PLAIN,	/* position-independent: copied as is */
	K_END,		/* br, ret, their pac forms: copied, nothing follows */
	K_CALL,		/* blr and its pac forms: copied, a call */
	K_B, K_BL,	/* imm26 */
	K_BCOND,	/* b.cond, bc.cond: imm19 */
	K_CB,		/* cbz, cbnz: imm19 */
	K_TB,		/* tbz, tbnz: imm14 */
	K_ADR, K_ADRP,	/* imm21 */
	K_LIT,		/* ldr, ldrsw, prfm (literal): imm19 */
	K_EXCL,		/* exclusive load or store */
	K_UNKNOWN,	/* not one we know, reserved or unallocated */
};

/* ---- decoding -------------------------------------------------------- */

/* The general register in the field at lsb as a bit, none for 31 (sp or
 * zr, never x16 or x17). */
static uint32_t reg(uint32_t w, unsigned int lsb)
{
	unsigned int r = (w >> lsb) & 31;

	return r == 31 ? 0 : 1u << r;
}

#define RT(w)	reg(w, 0)
#define RN(w)	reg(w, 5)
#define RT2(w)	reg(w, 10)
#define RM(w)	reg(w, 16)

static bool bit(uint32_t w, unsigned int n)
{
	return (w >> n) & 1;
}

/* DecodeBitMasks' reserved cases: no element size, or an all-ones run. */
static bool bitmask_ok(unsigned int n, unsigned int imms)
{
	unsigned int v = (n << 6) | (~imms & 63), len = 0, levels;

	if (v < 2)
		return false;
	while (v >> (len + 1))
		len++;
	levels = (1u << len) - 1;
	return (imms & levels) != levels;
}

/* Data processing (immediate): bits 28:26 = 100. */
static enum kind dp_imm(uint32_t w, uint32_t *regs)
{
	unsigned int sf = w >> 31, n = bit(w, 22), opc = (w >> 29) & 3;
	unsigned int immr = (w >> 16) & 63, imms = (w >> 10) & 63;

	*regs = RT(w) | RN(w);
	switch ((w >> 23) & 7) {
	case 0:
	case 1:
		*regs = RT(w);
		return sf ? K_ADRP : K_ADR;
	case 2:		/* add, adds, sub, subs */
		return K_PLAIN;
	case 4:		/* and, orr, eor, ands */
		return (!sf && n) || !bitmask_ok(n, imms) ? K_UNKNOWN : K_PLAIN;
	case 5:		/* movn, movz, movk */
		*regs = RT(w);
		return opc == 1 || (!sf && n) ? K_UNKNOWN : K_PLAIN;
	case 6:		/* sbfm, bfm, ubfm */
		return opc == 3 || n != sf || (!sf && ((immr | imms) & 32)) ?
			       K_UNKNOWN : K_PLAIN;
	case 7:		/* extr */
		*regs |= RM(w);
		return opc || bit(w, 21) || n != sf || (!sf && (imms & 32)) ?
			       K_UNKNOWN : K_PLAIN;
	default:	/* with tags (MTE), min/max (CSSC) */
		return K_UNKNOWN;
	}
}

static enum kind hint(uint32_t w, uint32_t *regs)
{
	*regs = 0;
	switch ((w >> 5) & 127) {
	case 8:		/* pacia1716 */
	case 10:	/* pacib1716 */
	case 12:	/* autia1716 */
	case 14:	/* autib1716 */
		*regs = IP_REGS;
		return K_PLAIN;
	case 40:	/* chkfeat x16 */
		*regs = 1u << X16;
		return K_PLAIN;
	case 0 ... 7:	/* nop, yield, wfe, wfi, sev, sevl, dgh, xpaclri */
	case 16 ... 20:	/* esb, psb, tsb, gcsb, csdb */
	case 22:	/* clrbhb */
	case 24 ... 31:	/* paci[ab]z, paci[ab]sp, auti[ab]z, auti[ab]sp */
	case 32:	/* bti */
	case 34:	/* bti c */
	case 36:	/* bti j */
	case 38:	/* bti jc */
		return K_PLAIN;
	default:	/* pacm (39) and the hints we do not know */
		return K_UNKNOWN;
	}
}

/* Unconditional branch (register). */
static enum kind branch_reg(uint32_t w, uint32_t *regs)
{
	*regs = RN(w);
	switch (w & 0xfffffc1fu) {
	case 0xd61f0000u:	/* br */
	case 0xd65f0000u:	/* ret */
		return K_END;
	case 0xd63f0000u:	/* blr */
		*regs |= 1u << X30;
		return K_CALL;
	}
	if (w == 0xd65f0bffu || w == 0xd65f0fffu) {	/* retaa, retab */
		*regs = 1u << X30;
		return K_END;
	}
	if ((w & 0xfffff81fu) == 0xd61f081fu)		/* braaz, brabz */
		return K_END;
	if ((w & 0xfffff81fu) == 0xd63f081fu) {		/* blraaz, blrabz */
		*regs |= 1u << X30;
		return K_CALL;
	}
	*regs |= RT(w);		/* the modifier */
	if ((w & 0xfffff800u) == 0xd71f0800u)		/* braa, brab */
		return K_END;
	if ((w & 0xfffff800u) == 0xd73f0800u) {		/* blraa, blrab */
		*regs |= 1u << X30;
		return K_CALL;
	}
	return K_UNKNOWN;
}

/* Branches, exception generating and system: bits 28:26 = 101. */
static enum kind branch_sys(uint32_t w, uint32_t *regs)
{
	*regs = RT(w);
	if ((w & 0x7c000000u) == 0x14000000u) {
		*regs = w >> 31 ? 1u << X30 : 0;
		return w >> 31 ? K_BL : K_B;
	}
	if ((w & 0x7e000000u) == 0x34000000u)
		return K_CB;
	if ((w & 0x7e000000u) == 0x36000000u)
		return K_TB;
	if ((w & 0xff000000u) == 0x54000000u) {
		*regs = 0;
		return K_BCOND;
	}
	if ((w & 0xfe000000u) == 0xd6000000u)
		return branch_reg(w, regs);
	if ((w & 0xfffff01fu) == 0xd503201fu)
		return hint(w, regs);
	if ((w & 0xfffff01fu) == 0xd503301fu) {
		/* clrex, dsb, dmb, isb */
		*regs = 0;
		switch ((w >> 5) & 7) {
		case 2:
		case 4:
		case 5:
		case 6:
			return K_PLAIN;
		default:
			return K_UNKNOWN;
		}
	}
	if ((w & 0xffd00000u) == 0xd5100000u)	/* msr, mrs (register) */
		return K_PLAIN;
	/* svc: the kernel returns, or restarts the call, at the copy's */
	if ((w & 0xffe0001fu) == 0xd4000001u) {
		*regs = 0;
		return K_PLAIN;
	}
	/* brk, hlt, hvc, smc, msr (immediate), sys, ... */
	return K_UNKNOWN;
}

/* Atomic memory operations (LSE) and ldapr. */
static enum kind atomic(uint32_t w, uint32_t *regs)
{
	unsigned int op = (w >> 12) & 7;

	*regs = RT(w) | RN(w) | RM(w);
	if (bit(w, 26))
		return K_UNKNOWN;
	if (!bit(w, 15) || !op)		/* ld<op>, st<op>, swp */
		return K_PLAIN;
	if (op == 4 && bit(w, 23) && !bit(w, 22) &&
	    ((w >> 16) & 31) == 31)	/* ldapr */
		return K_PLAIN;
	return K_UNKNOWN;
}

/* Load/store register, all addressing forms: bits 29:27 = 111. */
static enum kind ldst_reg(uint32_t w, uint32_t *regs)
{
	unsigned int size = w >> 30, v = bit(w, 26), opc = (w >> 22) & 3;
	bool prfm = !v && size == 3 && opc == 2;
	bool unpriv = false, prfm_ok = true;

	*regs = RN(w) | (v || prfm ? 0 : RT(w));
	if (!bit(w, 24) && !bit(w, 21)) {
		/* unscaled, post-indexed, unprivileged, pre-indexed */
		unpriv = ((w >> 10) & 3) == 2;
		prfm_ok = ((w >> 10) & 3) == 0;		/* prfum */
	} else if (!bit(w, 24)) {
		switch ((w >> 10) & 3) {
		case 0:
			return atomic(w, regs);
		case 2:		/* register offset: option<1> set */
			if (!bit(w, 14))
				return K_UNKNOWN;
			*regs |= RM(w);
			break;
		default:	/* ldraa, ldrab */
			*regs = RN(w) | RT(w);
			return v || size != 3 ? K_UNKNOWN : K_PLAIN;
		}
	}
	if (v)
		return ((opc & 2) && size) || unpriv ? K_UNKNOWN : K_PLAIN;
	if (prfm)
		return prfm_ok ? K_PLAIN : K_UNKNOWN;
	return opc == 3 && size >= 2 ? K_UNKNOWN : K_PLAIN;
}

/* Loads and stores: bits 28:25 = x1x0. */
static enum kind ldst(uint32_t w, uint32_t *regs)
{
	unsigned int size = w >> 30, v = bit(w, 26);

	*regs = RT(w) | RN(w);
	if ((w & 0x3f000000u) == 0x08000000u) {
		/* exclusive, ordered, compare and swap: o2 (23), o1 (21) */
		if (!bit(w, 23))	/* or casp, not known */
			return bit(w, 21) && size < 2 ? K_UNKNOWN : K_EXCL;
		*regs |= RM(w);
		if (((w >> 10) & 31) != 31 ||
		    (!bit(w, 21) && ((w >> 16) & 31) != 31))
			return K_UNKNOWN;
		return K_PLAIN;		/* ldar, stlr, ldlar, stllr, cas */
	}
	if ((w & 0x3b000000u) == 0x18000000u) {
		/* ldr (literal): w, x, sw, prfm; s, d, q */
		*regs = v || size == 3 ? 0 : RT(w);
		return v && size == 3 ? K_UNKNOWN : K_LIT;
	}
	if ((w & 0x38000000u) == 0x28000000u) {
		/* pairs: no-allocate, post-, pre-indexed, offset */
		if (v) {
			*regs = RN(w);
			return size == 3 ? K_UNKNOWN : K_PLAIN;
		}
		*regs |= RT2(w);
		/* ldpsw exists only with an index; stgp is MTE's */
		if (size == 3 || (size == 1 && (!bit(w, 22) ||
						!((w >> 23) & 3))))
			return K_UNKNOWN;
		return K_PLAIN;
	}
	if ((w & 0x38000000u) == 0x38000000u)
		return ldst_reg(w, regs);
	/* SIMD structures, memory tags, rcpc unscaled, memcpy/memset */
	return K_UNKNOWN;
}

static enum kind dp_1src(uint32_t w, uint32_t *regs)
{
	unsigned int op2 = (w >> 16) & 31, op = (w >> 10) & 63;
	bool sf = w >> 31, zn = ((w >> 5) & 31) == 31;

	*regs = RT(w) | RN(w);
	if (bit(w, 29))
		return K_UNKNOWN;
	if (!op2)	/* rbit, rev16, rev32 (rev), rev, clz, cls */
		return op > 5 || (op == 3 && !sf) ? K_UNKNOWN : K_PLAIN;
	if (op2 != 1 || !sf)
		return K_UNKNOWN;
	/* pac[id][ab], aut[id][ab]; their z forms and xpac[id] on zr */
	return op < 8 || (op < 18 && zn) ? K_PLAIN : K_UNKNOWN;
}

static enum kind dp_2src(uint32_t w)
{
	unsigned int op = (w >> 10) & 63;
	bool sf = w >> 31;

	if (bit(w, 29))
		return K_UNKNOWN;
	switch (op) {
	case 2:		/* udiv */
	case 3:		/* sdiv */
	case 8 ... 11:	/* lslv, lsrv, asrv, rorv */
		return K_PLAIN;
	case 16 ... 23:	/* crc32[c][bhwx]: x with sf only */
		return sf == ((op & 3) == 3) ? K_PLAIN : K_UNKNOWN;
	default:
		return K_UNKNOWN;
	}
}

static enum kind dp_3src(uint32_t w, uint32_t *regs)
{
	bool sf = w >> 31, o0 = bit(w, 15), ra31 = ((w >> 10) & 31) == 31;

	*regs |= RT2(w);
	if ((w >> 29) & 3)
		return K_UNKNOWN;
	switch ((w >> 21) & 7) {
	case 0:		/* madd, msub */
		return K_PLAIN;
	case 1:		/* smaddl, smsubl */
	case 5:		/* umaddl, umsubl */
		return sf ? K_PLAIN : K_UNKNOWN;
	case 2:		/* smulh */
	case 6:		/* umulh */
		return sf && !o0 && ra31 ? K_PLAIN : K_UNKNOWN;
	default:
		return K_UNKNOWN;
	}
}

/* Data processing (register): bits 27:25 = 101. */
static enum kind dp_reg(uint32_t w, uint32_t *regs)
{
	unsigned int op2 = (w >> 21) & 15;
	bool sf = w >> 31;

	*regs = RT(w) | RN(w) | RM(w);
	if (!bit(w, 28)) {
		if (!(op2 & 8))		/* logical (shifted register) */
			return !sf && bit(w, 15) ? K_UNKNOWN : K_PLAIN;
		if (!(op2 & 1))		/* add/sub (shifted register) */
			return ((w >> 22) & 3) == 3 || (!sf && bit(w, 15)) ?
				       K_UNKNOWN : K_PLAIN;
		/* add/sub (extended register) */
		return (w >> 22) & 3 || ((w >> 10) & 7) > 4 ? K_UNKNOWN :
							       K_PLAIN;
	}
	switch (op2) {
	case 0:		/* adc, adcs, sbc, sbcs */
		return (w >> 10) & 63 ? K_UNKNOWN : K_PLAIN;
	case 2:		/* ccmn, ccmp: register, or immediate in Rm */
		if (!bit(w, 29) || bit(w, 10) || bit(w, 4))
			return K_UNKNOWN;
		if (bit(w, 11))
			*regs = RN(w);
		else
			*regs = RN(w) | RM(w);
		return K_PLAIN;
	case 4:		/* csel, csinc, csinv, csneg */
		return bit(w, 29) || bit(w, 11) ? K_UNKNOWN : K_PLAIN;
	case 6:
		return bit(w, 30) ? dp_1src(w, regs) : dp_2src(w);
	case 8 ... 15:
		return dp_3src(w, regs);
	default:
		return K_UNKNOWN;
	}
}

/* SIMD and floating point: bits 27:25 = 111; only a few moves. */
static enum kind simd(uint32_t w, uint32_t *regs)
{
	*regs = 0;
	if ((w & 0x9ff80400u) == 0x0f000400u) {
		/* movi, mvni, orr, bic, fmov (vector, immediate) */
		if (bit(w, 11) ||
		    (bit(w, 29) && ((w >> 12) & 15) == 15 && !bit(w, 30)))
			return K_UNKNOWN;
		return K_PLAIN;
	}
	if ((w & 0xbfe0fc00u) == 0x0ea01c00u)	/* orr (vector): mov */
		return K_PLAIN;
	switch (w & 0xfffffc00u) {
	case 0x1e260000u:	/* fmov wd, sn */
	case 0x9e660000u:	/* fmov xd, dn */
		*regs = RT(w);
		return K_PLAIN;
	case 0x1e270000u:	/* fmov sd, wn */
	case 0x9e670000u:	/* fmov dd, xn */
		*regs = RN(w);
		return K_PLAIN;
	default:
		return K_UNKNOWN;
	}
}

/* The class of w and the general registers it names, in *regs. */
static enum kind decode(uint32_t w, uint32_t *regs)
{
	unsigned int op0 = (w >> 25) & 15;

	*regs = 0;
	if ((op0 & 14) == 8)
		return dp_imm(w, regs);
	if ((op0 & 14) == 10)
		return branch_sys(w, regs);
	if ((op0 & 5) == 4)
		return ldst(w, regs);
	if ((op0 & 7) == 5)
		return dp_reg(w, regs);
	if ((op0 & 7) == 7)
		return simd(w, regs);
	return K_UNKNOWN;	/* udf, reserved, SME, SVE */
}

/* ---- addresses ------------------------------------------------------- */

static bool pc_relative(enum kind k)
{
	return k >= K_B && k <= K_LIT;
}

static int64_t sext(uint64_t v, unsigned int bits)
{
	return (int64_t)(v << (64 - bits)) >> (64 - bits);
}

/* The address the PC-relative instruction w, of kind k, at pc leads to. */
static uint64_t target_of(uint32_t w, enum kind k, uint64_t pc)
{
	int64_t imm21 = sext(((w >> 5) & 0x7ffff) << 2 | ((w >> 29) & 3), 21);

	switch (k) {
	case K_B:
	case K_BL:
		return pc + (uint64_t)(sext(w, 26) * 4);
	case K_TB:
		return pc + (uint64_t)(sext(w >> 5, 14) * 4);
	case K_ADR:
		return pc + (uint64_t)imm21;
	case K_ADRP:
		return (pc & ~0xfffull) + (uint64_t)(imm21 * 4096);
	default:	/* b.cond, cb(n)z, literals */
		return pc + (uint64_t)(sext(w >> 5, 19) * 4);
	}
}

/* The bytes a literal load reads (none for prfm). */
static unsigned int lit_size(uint32_t w)
{
	static const unsigned char size[2][4] = { { 4, 8, 4, 0 },
						  { 4, 8, 16, 0 } };

	return size[bit(w, 26)][w >> 30];
}

/* Does w (kind k, leading to t) lead into the patch's bytes: a branch or
 * an adr strictly inside (lo, hi), a literal overlapping [lo, hi)? */
static bool leads_into(uint32_t w, enum kind k, uint64_t t, uint64_t lo,
		       uint64_t hi)
{
	switch (k) {
	case K_B:
	case K_BL:
	case K_BCOND:
	case K_CB:
	case K_TB:
	case K_ADR:
		return t > lo && t < hi;
	case K_LIT:
		return lit_size(w) && t < hi && t + lit_size(w) > lo;
	default:
		return false;
	}
}

/* Is d a multiple of 1 << shift whose quotient fits a signed field of
 * `bits` bits? */
static bool reach(int64_t d, unsigned int bits, unsigned int shift)
{
	int64_t lim = (int64_t)1 << (bits - 1 + shift);

	return d >= -lim && d < lim && !(d & ((1 << shift) - 1));
}

/* The pages from at's to t's, adrp's immediate. */
static int64_t pages(uint64_t at, uint64_t t)
{
	return (int64_t)((t & ~0xfffull) - (at & ~0xfffull)) >> 12;
}

/* w with the field of `bits` bits at lsb set to v (truncated). */
static uint32_t with_field(uint32_t w, int64_t v, unsigned int bits,
			   unsigned int lsb)
{
	uint32_t mask = ((1u << bits) - 1) << lsb;

	return (w & ~mask) | (((uint32_t)v << lsb) & mask);
}

/* adr or adrp w with the immediate imm (bytes or pages). */
static uint32_t with_imm21(uint32_t w, int64_t imm)
{
	return with_field(with_field(w, imm, 2, 29), imm >> 2, 19, 5);
}

/* ---- emitting -------------------------------------------------------- */

struct out {
	uint8_t *buf;
	size_t len, cap;	/* len goes on counting past cap */
	uint64_t at;		/* the address of buf[0] */
};

static uint64_t here(const struct out *o)
{
	return o->at + o->len;
}

static void put(struct out *o, const void *p, size_t n)
{
	if (o->len <= o->cap && n <= o->cap - o->len)
		memcpy(o->buf + o->len, p, n);
	o->len += n;
}

static void put32(struct out *o, uint32_t w)
{
	w = htole32(w);
	put(o, &w, sizeof(w));
}

static void put64(struct out *o, uint64_t v)
{
	v = htole64(v);
	put(o, &v, sizeof(v));
}

/* ldr xt, .+d */
static uint32_t ldr_lit_x(unsigned int rt, unsigned int d)
{
	return LDR_X_LIT | (d / 4) << 5 | rt;
}

/* b t, or ldr x16, .+8; br x16; .quad t */
static void put_jump(struct out *o, uint64_t t)
{
	int64_t d = (int64_t)(t - here(o));

	if (reach(d, 26, 2)) {
		put32(o, with_field(B, d >> 2, 26, 0));
		return;
	}
	put32(o, ldr_lit_x(X16, 8));
	put32(o, BR_X16);
	put64(o, t);
}

/* bl t, or ldr x16, .+12; blr x16; b .+12; .quad t */
static void put_call(struct out *o, uint64_t t)
{
	int64_t d = (int64_t)(t - here(o));

	if (reach(d, 26, 2)) {
		put32(o, with_field(BL, d >> 2, 26, 0));
		return;
	}
	put32(o, ldr_lit_x(X16, 12));
	put32(o, BLR_X16);
	put32(o, B | 3);		/* b .+12, over the literal */
	put64(o, t);
}

/* b.cond, bc.cond, cb(n)z, tb(n)z to t; *ends for b.al and b.nv. */
static void put_cond(struct out *o, uint32_t w, enum kind k, uint64_t t,
		     bool *ends)
{
	unsigned int bits = k == K_TB ? 14 : 19;
	int64_t d = (int64_t)(t - here(o));
	uint32_t inv;

	if (k == K_BCOND && (w & 14) == 14)
		*ends = true;
	if (reach(d, bits, 2)) {
		put32(o, with_field(w, d >> 2, bits, 5));
		return;
	}
	if (*ends) {
		put_jump(o, t);
		return;
	}
	/* the opposite test skips the jump, a b or the absolute form */
	inv = k == K_BCOND ? w ^ 1 : w ^ (1u << 24);
	d = reach((int64_t)(t - here(o) - 4), 26, 2) ? 8 : 20;
	put32(o, with_field(inv, d >> 2, bits, 5));
	put_jump(o, t);
}

/* adr or adrp to xd of the value v it computed at its old place. */
static void put_adr(struct out *o, uint32_t w, enum kind k, uint64_t v)
{
	unsigned int rd = w & 31;
	int64_t d = (int64_t)(v - here(o)), p = pages(here(o), v);

	if (rd == 31) {		/* xzr: nothing to compute */
		put32(o, NOP);
		return;
	}
	if (k == K_ADR && reach(d, 21, 0)) {
		put32(o, with_imm21(w, d));
		return;
	}
	if (reach(p, 21, 0)) {
		put32(o, with_imm21(ADRP | rd, p));
		if (v & 0xfff)
			put32(o, ADD_X_IMM | (uint32_t)(v & 0xfff) << 10 |
					 rd << 5 | rd);
		return;
	}
	put32(o, ldr_lit_x(rd, 8));
	put32(o, B | 3);		/* b .+12, over the literal */
	put64(o, v);
}

/* A literal load (or prfm) of the bytes at a. */
static void put_lit(struct out *o, uint32_t w, uint64_t a)
{
	/* the same load from [xn]: by opc, for V = 0 and V = 1 */
	static const uint32_t load[2][3] = {
		{ 0xb9400000u, 0xf9400000u, 0xb9800000u },	/* w, x, sw */
		{ 0xbd400000u, 0xfd400000u, 0x3dc00000u },	/* s, d, q */
	};
	unsigned int opc = w >> 30, v = bit(w, 26), rt = w & 31;
	unsigned int base = !v && opc < 3 && rt != 31 ? rt : X16;
	int64_t d = (int64_t)(a - here(o));

	if (reach(d, 19, 2)) {
		put32(o, with_field(w, d >> 2, 19, 5));
		return;
	}
	put32(o, ldr_lit_x(base, 12));
	put32(o, (opc == 3 ? 0xf9800000u : load[v][opc]) | base << 5 | rt);
	put32(o, B | 3);		/* b .+12, over the literal */
	put64(o, a);
}

/* ---- the interface --------------------------------------------------- */

int reloc_a64__patch(uint64_t at, uint64_t target, uint8_t *out, size_t cap,
		     size_t *len)
{
	struct out o = { out, 0, cap, at };
	int64_t p = pages(at, target);

	if (at % 4 || target % 4)
		return -EINVAL;
	*len = reach(p, 21, 0) ? 12 : 16;
	if (*len > cap)
		return -ENOSPC;
	if (*len == 12) {
		put32(&o, with_imm21(ADRP | X16, p));
		put32(&o, ADD_X_IMM | (uint32_t)(target & 0xfff) << 10 |
				  X16 << 5 | X16);
		put32(&o, BR_X16);
	} else {
		put32(&o, ldr_lit_x(X16, 8));
		put32(&o, BR_X16);
		put64(&o, target);
	}
	return 0;
}

int reloc_a64__relocate(const uint32_t *code, size_t n, uint64_t from,
			unsigned int patch_len, uint64_t to, uint8_t *out,
			size_t cap, size_t *out_len, unsigned int *replaced,
			const char **why)
{
	struct out o = { out, 0, cap, to };
	uint64_t end = from + patch_len;
	bool ends = false;
	size_t i;

	if (from % 4 || to % 4) {
		*why = "its address or its slot's is not 4-aligned, which A64 code always is";
		return -EINVAL;
	}
	if (!patch_len || patch_len % 4) {
		*why = "the patch is not a whole number of A64 instructions";
		return -EINVAL;
	}
	if (n < patch_len / 4) {
		*why = "it is shorter than the patch that would replace its start";
		return -EINVAL;
	}
	for (i = 0; i < patch_len / 4 && !ends; i++) {
		uint32_t w = le32toh(code[i]), regs;
		uint64_t pc = from + 4 * i, t = 0;
		enum kind k = decode(w, &regs);

		if (k == K_UNKNOWN) {
			*why = "one of its first instructions is unknown or reserved, so it cannot be moved with certainty";
			return -ENOEXEC;
		}
		if (k == K_EXCL) {
			*why = "an exclusive load or store among its first instructions cannot be moved: the pair might never succeed";
			return -ENOTSUP;
		}
		if (regs & IP_REGS) {
			*why = "one of its first instructions uses x16 or x17, which the patch and the moved code clobber";
			return -ENOTSUP;
		}
		if (pc_relative(k)) {
			t = target_of(w, k, pc);
			if (leads_into(w, k, t, from, end)) {
				*why = k == K_ADR || k == K_LIT ?
					"one of its first instructions refers to its own first bytes" :
					"it branches into its own first bytes";
				return -ENOTSUP;
			}
		}
		/* a thread inside that callee now would come back into the
		 * patch */
		if ((k == K_BL || k == K_CALL) && pc + 4 < end) {
			*why = "a call among its first bytes returns into them";
			return -ENOTSUP;
		}
		switch (k) {
		case K_B:
			put_jump(&o, t);
			ends = true;
			break;
		case K_BL:
			put_call(&o, t);
			break;
		case K_BCOND:
		case K_CB:
		case K_TB:
			put_cond(&o, w, k, t, &ends);
			break;
		case K_ADR:
		case K_ADRP:
			put_adr(&o, w, k, t);
			break;
		case K_LIT:
			put_lit(&o, w, t);
			break;
		case K_END:
			ends = true;
			put32(&o, w);
			break;
		default:
			put32(&o, w);
			break;
		}
	}
	/* past b, br or ret the rest of the patch is reached by branches
	 * only, which reloc_a64__scan() refuses */
	if (!ends)
		put_jump(&o, end);
	*out_len = o.len;
	if (o.len > cap) {
		*why = "its first instructions do not fit the page's slot";
		return -ENOSPC;
	}
	*replaced = patch_len;
	return 0;
}

int reloc_a64__scan(const uint32_t *code, size_t n, uint64_t from,
		    uint64_t lo, uint64_t hi, const char **why)
{
	size_t i;

	if (from % 4) {
		*why = "its code is not 4-aligned, so no branch can land on its instructions";
		return -ENOTSUP;
	}
	for (i = 0; i < n; i++) {
		uint32_t w = le32toh(code[i]), regs;
		enum kind k = decode(w, &regs);

		if (!pc_relative(k) ||
		    !leads_into(w, k, target_of(w, k, from + 4 * i), lo, hi))
			continue;
		if (k == K_ADR)
			*why = "an address taken inside it points into the bytes the patch replaces";
		else if (k == K_LIT)
			*why = "a literal load inside it reads the bytes the patch replaces";
		else
			*why = "a branch inside it jumps into the bytes the patch replaces";
		return -ENOTSUP;
	}
	return 0;
}
