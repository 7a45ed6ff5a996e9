// SPDX-License-Identifier: MIT
/*
 * cfi.c - a module's .eh_frame turned into a compact unwind table.
 *
 * The FDEs are taken in the order of .eh_frame_hdr's search table, which
 * the linker sorts by address, so the rows come out sorted.  Each FDE's
 * call frame instructions (after its CIE's initial ones) are run as the
 * DWARF standard says, keeping only what an x86-64 unwinder needs: the CFA
 * rule (a register and an offset), where rbp was saved, and whether the
 * return address is there at all (undefined: the thread's first frame).
 * Every advance of the location emits a row; a row equal to the one before
 * is not emitted; the end of an FDE that the next one does not start at
 * gets a CFI_NONE row, so an address between functions has no rule; an
 * FDE that cannot be read gets a CFI_OPAQUE row, up to the next one.
 *
 * Two CFA expressions are recognised by their shape: the PLT's (rsp plus 8
 * or 16 depending on the offset in the 16-byte entry, binutils' and lld's)
 * and none other; an FDE of a CIE with the "S" augmentation is a signal
 * trampoline (glibc's __restore_rt), whose registers are in the ucontext
 * the kernel pushed.  A frame realigned through a DRAP register (the CFA
 * the word at rbp + N, the caller's rbp saved at rbp) is CFI_DRAP, followed
 * exactly.  Any other expression, a CFA in another register, a
 * return address not at CFA - 8, or instructions that cannot be read make
 * the row CFI_OPAQUE: the walker stops there rather than guess.  It is
 * kept apart from CFI_NONE (no FDE at all), where the walker may follow a
 * frame record: code without tables keeps frame pointers, while a
 * function with tables we cannot follow need not (_dl_runtime_resolve
 * sets its CFA in rbx and leaves rbp as its caller's caller left it).
 *
 * The input is the target's own memory, which a broken or hostile module
 * can fill with anything: every read is checked against the source's
 * [lo, hi), every LEB128 is bounded, the remember/restore stack is
 * bounded, and an FDE whose CIE pointer, length or encoding makes no sense
 * is counted and skipped.  The builder allocates nothing and calls nothing
 * that could: it is run inside the target.
 */
#include "cfi.h"

#include <errno.h>
#include <link.h>
#include <stdbool.h>
#include <string.h>

/* pointer encodings (DW_EH_PE_*) */
#define PE_ABSPTR	0x00
#define PE_ULEB128	0x01
#define PE_UDATA2	0x02
#define PE_UDATA4	0x03
#define PE_UDATA8	0x04
#define PE_SLEB128	0x09
#define PE_SDATA2	0x0a
#define PE_SDATA4	0x0b
#define PE_SDATA8	0x0c
#define PE_PCREL	0x10
#define PE_DATAREL	0x30
#define PE_INDIRECT	0x80
#define PE_OMIT		0xff

/* x86-64 DWARF register numbers */
#define DW_RBP		6
#define DW_RSP		7
#define DW_RA		16

#define STATE_STACK	8	/* DW_CFA_remember_state depth kept */
#define MAX_FDES	(1u << 22)

/* A bounded reader over [p, end). */
struct cur {
	const uint8_t *p, *end;
	bool bad;
};

static uint8_t u8(struct cur *c)
{
	if (c->p >= c->end) {
		c->bad = true;
		return 0;
	}
	return *c->p++;
}

static uint64_t fixed(struct cur *c, size_t n)
{
	uint64_t v = 0;

	if ((size_t)(c->end - c->p) < n) {
		c->bad = true;
		c->p = c->end;
		return 0;
	}
	memcpy(&v, c->p, n);	/* little-endian */
	c->p += n;
	return v;
}

/* A LEB128 number, sign-extended if is_signed; bad past ten bytes. */
static uint64_t leb(struct cur *c, bool is_signed)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	uint8_t b;

	do {
		b = u8(c);
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while ((b & 0x80) && !c->bad && shift < 70);
	if (b & 0x80)
		c->bad = true;
	if (is_signed && shift < 64 && (b & 0x40))
		v |= ~0ull << shift;
	return v;
}

static uint64_t uleb(struct cur *c)
{
	return leb(c, false);
}

static int64_t sleb(struct cur *c)
{
	return (int64_t)leb(c, true);
}

/*
 * An encoded pointer at the cursor; at is its address in the process.
 * Indirect pointers (a personality's) are not followed: none of the
 * values the table needs is one.
 */
static uint64_t pointer(struct cur *c, uint8_t enc, uintptr_t at,
			uintptr_t datarel)
{
	uint64_t v;

	switch (enc & 0x0f) {
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8:
		v = fixed(c, 8);
		break;
	case PE_ULEB128:
		v = uleb(c);
		break;
	case PE_UDATA2:
		v = fixed(c, 2);
		break;
	case PE_SDATA2:
		v = (uint64_t)(int64_t)(int16_t)fixed(c, 2);
		break;
	case PE_UDATA4:
		v = fixed(c, 4);
		break;
	case PE_SDATA4:
		v = (uint64_t)(int64_t)(int32_t)fixed(c, 4);
		break;
	case PE_SLEB128:
		v = (uint64_t)sleb(c);
		break;
	default:
		c->bad = true;
		return 0;
	}
	switch (enc & 0x70) {
	case 0:
		break;
	case PE_PCREL:
		v += at;
		break;
	case PE_DATAREL:
		v += datarel;
		break;
	default:	/* textrel, funcrel, aligned: not on x86-64 */
		c->bad = true;
	}
	return v;
}

/* The size of the value an encoding stores (pc_range's, unrelocated). */
static uint64_t plain(struct cur *c, uint8_t enc)
{
	return pointer(c, enc & 0x0f, 0, 0);
}

/*
 * A register offset or a CFA offset in bytes: v factored by the CIE's data
 * alignment.  Anything past 2^31 is no stack frame: bad.
 */
static int64_t scaled(struct cur *c, int64_t v, int64_t factor)
{
	int64_t r;

	if (v > INT32_MAX || v < INT32_MIN ||
	    __builtin_mul_overflow(v, factor, &r) || r > INT32_MAX ||
	    r < INT32_MIN) {
		c->bad = true;
		return 0;
	}
	return r;
}

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_enc;
	bool aug_z, signal;
	const uint8_t *insns, *insns_end;
};

/* The rule set while the instructions run. */
struct rules {
	uint8_t cfa_reg;	/* DWARF number */
	int64_t cfa_off;
	bool cfa_plt;		/* the PLT's expression */
	uint8_t plt_at;		/* ... and its threshold */
	bool cfa_bad;		/* an expression we do not follow */
	bool cfa_drap;		/* *(rbp + cfa_off): a realigned frame */
	int64_t rbp_off;	/* saved at CFA + rbp_off */
	uint8_t rbp_how;	/* 0 same, 1 at offset, 2 lost, 3 at rbp */
	uint8_t ra_how;		/* 0 at CFA - 8, 1 undefined, 2 other */
};

/* Within [src->lo, src->hi): a cursor for [addr, addr + len). */
static bool span(const struct cfi_source *src, uintptr_t addr, uint64_t len,
		 struct cur *c)
{
	if (addr < src->lo || addr >= src->hi || len > src->hi - addr)
		return false;
	c->p = (const uint8_t *)addr;
	c->end = c->p + len;
	c->bad = false;
	return true;
}

/* The entry (CIE or FDE) at addr: its body after the length, and the
 * address of the next one.  False if it does not fit. */
static bool entry(const struct cfi_source *src, uintptr_t addr,
		  struct cur *body)
{
	struct cur c;
	uint64_t len;

	if (!span(src, addr, 4, &c))
		return false;
	len = fixed(&c, 4);
	if (len == 0xffffffffu) {
		if (!span(src, addr + 4, 8, &c))
			return false;
		len = fixed(&c, 8);
		addr += 8;
	}
	if (!len || len > src->hi - src->lo)
		return false;
	return span(src, addr + 4, len, body);
}

static bool read_cie(const struct cfi_source *src, uintptr_t addr,
		     struct cie *cie)
{
	struct cur c;
	const char *aug;
	size_t n;
	uint8_t version;

	memset(cie, 0, sizeof(*cie));
	if (!entry(src, addr, &c) || fixed(&c, 4) != 0)
		return false;	/* not a CIE */
	version = u8(&c);
	if (version != 1 && version != 3)
		return false;
	aug = (const char *)c.p;
	n = strnlen(aug, (size_t)(c.end - c.p));
	if (n == (size_t)(c.end - c.p) || n > 8)
		return false;
	c.p += n + 1;
	if (aug[0] == 'e' && aug[1] == 'h')
		return false;	/* GCC 2's, long gone */
	cie->code_align = uleb(&c);
	cie->data_align = sleb(&c);
	if (!cie->data_align || cie->data_align > 64 || cie->data_align < -64)
		return false;
	if ((version == 1 ? u8(&c) : uleb(&c)) != DW_RA)
		return false;
	cie->fde_enc = PE_ABSPTR;
	if (aug[0] == 'z') {
		uint64_t alen = uleb(&c);
		struct cur a;
		size_t i;

		if (c.bad || alen > (uint64_t)(c.end - c.p))
			return false;
		a.p = c.p;
		a.end = c.p + alen;
		a.bad = false;
		c.p += alen;
		cie->aug_z = true;
		for (i = 1; i < n; i++) {
			switch (aug[i]) {
			case 'L':
				u8(&a);
				break;
			case 'P': {
				uint8_t enc = u8(&a);

				pointer(&a, enc & 0x0f, 0, 0);
				break;
			}
			case 'R':
				cie->fde_enc = u8(&a);
				break;
			case 'S':
				cie->signal = true;
				break;
			case 'B':
				break;
			default:
				return false;	/* can't skip what we don't know */
			}
		}
		if (a.bad)
			return false;
	} else if (n) {
		return false;
	}
	if (c.bad || !cie->code_align || cie->code_align > 64)
		return false;
	cie->insns = c.p;
	cie->insns_end = c.end;
	return true;
}

/*
 * Is expr the PLT's CFA expression?  binutils and lld write
 *   DW_OP_breg7 (rsp) N; DW_OP_breg16 (rip) 0; DW_OP_lit15; DW_OP_and;
 *   DW_OP_litK; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
 * : rsp + N, plus 8 from byte K of the 16-byte entry on.
 */
static bool plt_expr(const uint8_t *p, uint64_t len, int64_t *off,
		     uint8_t *at)
{
	struct cur c = { p, p + len, false };
	int64_t n;
	uint8_t k;

	if (u8(&c) != 0x77)			/* DW_OP_breg7 */
		return false;
	n = sleb(&c);
	if (u8(&c) != 0x80 || sleb(&c) != 0)	/* DW_OP_breg16 0 */
		return false;
	if (u8(&c) != 0x3f || u8(&c) != 0x1a)	/* lit15, and */
		return false;
	k = u8(&c);
	if (k < 0x30 || k > 0x3f)		/* litK */
		return false;
	if (u8(&c) != 0x2a || u8(&c) != 0x33 ||	/* ge, lit3 */
	    u8(&c) != 0x24 || u8(&c) != 0x22)	/* shl, plus */
		return false;
	if (c.bad || c.p != c.end || n < 0 || n > 4096)
		return false;
	*off = n;
	*at = (uint8_t)(k - 0x30);
	return true;
}

/*
 * Is expr the CFA expression of a frame that realigned the stack through
 * a DRAP register (GCC, for over-aligned locals with alloca, or
 * -mstackrealign)?  In the body, after push rbp; mov rbp, rsp:
 *   DW_OP_breg6 (rbp) N; DW_OP_deref
 * : the CFA is the word at rbp + N (the DRAP register's saved value).
 */
static bool drap_expr(const uint8_t *p, uint64_t len, int64_t *off)
{
	struct cur c = { p, p + len, false };
	int64_t n;

	if (u8(&c) != 0x76)			/* DW_OP_breg6 */
		return false;
	n = sleb(&c);
	if (u8(&c) != 0x06)			/* DW_OP_deref */
		return false;
	if (c.bad || c.p != c.end || n < -4096 || n > 4096)
		return false;
	*off = n;
	return true;
}

/* Is expr DW_OP_breg6 (rbp) 0: a register saved at the address in rbp? */
static bool at_rbp_expr(const uint8_t *p, uint64_t len)
{
	return len == 2 && p[0] == 0x76 && p[1] == 0;
}

/* A CFA register number as the rules keep it: one past 255 is none the
 * table can use (and must not alias rbp or rsp). */
static uint8_t cfa_reg(uint64_t reg)
{
	return reg <= 255 ? (uint8_t)reg : 255;
}

struct emit {
	struct cfi_row *rows;
	size_t n, cap;
	uintptr_t bias;
	bool signal;
	bool full;
};

static struct cfi_row row_of(const struct rules *r, bool signal)
{
	struct cfi_row row = { .kind = CFI_OPAQUE, .rbp_off = CFI_RBP_LOST };

	if (signal) {
		row.kind = CFI_SIGNAL;
		return row;
	}
	if (r->ra_how == 1) {
		row.kind = CFI_OUTERMOST;
		return row;
	}
	if (r->ra_how != 0 || r->cfa_bad)
		return row;
	if (r->cfa_drap) {
		/* the caller's rbp pushed where rbp points: else not
		 * the frame we know */
		if (r->rbp_how != 3)
			return row;
		row.kind = CFI_DRAP;
		row.cfa_reg = CFI_RBP;
		row.cfa_off = (int32_t)r->cfa_off;
		row.rbp_off = CFI_RBP_SAME;
		return row;
	}
	if (r->cfa_plt) {
		row.kind = CFI_PLT;
		row.cfa_reg = CFI_RSP;
		row.cfa_off = (int32_t)r->cfa_off;
		row.rbp_off = r->plt_at;
		return row;
	}
	if ((r->cfa_reg != DW_RSP && r->cfa_reg != DW_RBP) ||
	    r->cfa_off < 8 || r->cfa_off > INT32_MAX)
		return row;
	row.kind = CFI_FRAME;
	row.cfa_reg = r->cfa_reg == DW_RSP ? CFI_RSP : CFI_RBP;
	row.cfa_off = (int32_t)r->cfa_off;
	if (r->rbp_how == 0)
		row.rbp_off = CFI_RBP_SAME;
	else if (r->rbp_how == 1 && r->rbp_off < 0 &&
		 r->rbp_off > INT16_MIN)
		row.rbp_off = (int16_t)r->rbp_off;
	else
		row.rbp_off = CFI_RBP_LOST;
	return row;
}

static bool same_row(const struct cfi_row *a, const struct cfi_row *b)
{
	return a->kind == b->kind && a->cfa_reg == b->cfa_reg &&
	       a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off;
}

/* A row from pc (absolute) on. */
static void put(struct emit *e, uint64_t pc, struct cfi_row row)
{
	uint64_t rel = pc - e->bias;

	if (pc < e->bias || rel > UINT32_MAX)
		return;
	row.pc = (uint32_t)rel;
	if (e->n) {
		struct cfi_row *last = &e->rows[e->n - 1];

		if (last->pc > row.pc)
			return;		/* out of order: a broken table */
		if (last->pc == row.pc) {
			*last = row;	/* the later rule at the same place */
			if (e->n > 1 && same_row(&e->rows[e->n - 2], last))
				e->n--;
			return;
		}
		if (same_row(last, &row))
			return;
	}
	if (e->n == e->cap) {
		e->full = true;
		return;
	}
	e->rows[e->n++] = row;
}

/*
 * Run the instructions in [p, end) from location *loc, emitting a row at
 * each advance while emitting (an FDE's instructions; a CIE's initial ones
 * only set the rules).  False on anything we cannot follow; the rows
 * emitted before stay.
 */
static bool run(const struct cfi_source *src, const struct cie *cie,
		struct cur *c, struct rules *r, const struct rules *initial,
		uint64_t *loc, uint64_t end_pc, struct emit *e)
{
	struct rules stack[STATE_STACK];
	unsigned int depth = 0;

	while (c->p < c->end && !c->bad) {
		uint8_t op = u8(c), low = op & 0x3f;
		uint64_t reg, delta = 0;
		int64_t off;
		bool advance = false;

		switch (op & 0xc0) {
		case 0x40:	/* DW_CFA_advance_loc */
			delta = low;
			advance = true;
			break;
		case 0x80:	/* DW_CFA_offset */
			off = scaled(c, (int64_t)uleb(c), cie->data_align);
			goto offset_low;
		case 0xc0:	/* DW_CFA_restore */
			reg = low;
			goto restore;
		}
		if (!advance) {
			switch (op) {
			case 0x00:	/* nop */
				continue;
			case 0x01: {	/* set_loc */
				uint64_t to = pointer(c, cie->fde_enc,
						      (uintptr_t)c->p, 0);

				if (to < *loc || to > end_pc)
					return false;
				if (e)
					put(e, *loc, row_of(r, e->signal));
				*loc = to;
				continue;
			}
			case 0x02:
				delta = fixed(c, 1);
				advance = true;
				break;
			case 0x03:
				delta = fixed(c, 2);
				advance = true;
				break;
			case 0x04:
				delta = fixed(c, 4);
				advance = true;
				break;
			case 0x05:	/* offset_extended */
				reg = uleb(c);
				off = scaled(c, (int64_t)uleb(c), cie->data_align);
				goto offset;
			case 0x11:	/* offset_extended_sf */
				reg = uleb(c);
				off = scaled(c, sleb(c), cie->data_align);
				goto offset;
			case 0x2f:	/* GNU_negative_offset_extended */
				reg = uleb(c);
				off = -scaled(c, (int64_t)uleb(c), cie->data_align);
				goto offset;
			case 0x06:	/* restore_extended */
				reg = uleb(c);
				goto restore;
			case 0x07:	/* undefined */
				reg = uleb(c);
				if (reg == DW_RA)
					r->ra_how = 1;
				else if (reg == DW_RBP)
					r->rbp_how = 2;
				continue;
			case 0x08:	/* same_value */
				reg = uleb(c);
				if (reg == DW_RBP)
					r->rbp_how = 0;
				else if (reg == DW_RA)
					r->ra_how = 2;
				continue;
			case 0x09:	/* register */
				reg = uleb(c);
				uleb(c);
				if (reg == DW_RBP)
					r->rbp_how = 2;
				else if (reg == DW_RA)
					r->ra_how = 2;
				continue;
			case 0x0a:	/* remember_state */
				if (depth == STATE_STACK)
					return false;
				stack[depth++] = *r;
				continue;
			case 0x0b:	/* restore_state */
				if (!depth)
					return false;
				{
					/* the CFA is not part of the state
					 * saved... but GCC expects it to be:
					 * both readings agree on x86-64 */
					*r = stack[--depth];
				}
				continue;
			case 0x0c:	/* def_cfa */
				r->cfa_reg = cfa_reg(uleb(c));
				r->cfa_off = scaled(c, (int64_t)uleb(c), 1);
				r->cfa_plt = r->cfa_bad = r->cfa_drap = false;
				continue;
			case 0x12:	/* def_cfa_sf */
				r->cfa_reg = cfa_reg(uleb(c));
				r->cfa_off = scaled(c, sleb(c), cie->data_align);
				r->cfa_plt = r->cfa_bad = r->cfa_drap = false;
				continue;
			case 0x0d:	/* def_cfa_register */
				r->cfa_reg = cfa_reg(uleb(c));
				r->cfa_plt = r->cfa_bad = r->cfa_drap = false;
				continue;
			case 0x0e:	/* def_cfa_offset */
				r->cfa_off = scaled(c, (int64_t)uleb(c), 1);
				continue;
			case 0x13:	/* def_cfa_offset_sf */
				r->cfa_off = scaled(c, sleb(c), cie->data_align);
				continue;
			case 0x0f: {	/* def_cfa_expression */
				uint64_t len = uleb(c);

				if (c->bad || len > (uint64_t)(c->end - c->p))
					return false;
				r->cfa_plt = plt_expr(c->p, len, &r->cfa_off,
						      &r->plt_at);
				r->cfa_drap = !r->cfa_plt &&
					      drap_expr(c->p, len, &r->cfa_off);
				r->cfa_bad = !r->cfa_plt && !r->cfa_drap;
				c->p += len;
				continue;
			}
			case 0x10:	/* expression */
			case 0x16: {	/* val_expression */
				uint64_t len;

				reg = uleb(c);
				len = uleb(c);
				if (c->bad || len > (uint64_t)(c->end - c->p))
					return false;
				if (reg == DW_RBP)
					r->rbp_how = op == 0x10 &&
						     at_rbp_expr(c->p, len) ? 3 : 2;
				else if (reg == DW_RA)
					r->ra_how = 2;
				c->p += len;
				continue;
			}
			case 0x14:	/* val_offset */
			case 0x15:	/* val_offset_sf */
				reg = uleb(c);
				if (op == 0x14)
					uleb(c);
				else
					sleb(c);
				if (reg == DW_RBP)
					r->rbp_how = 2;
				else if (reg == DW_RA)
					r->ra_how = 2;
				continue;
			case 0x2e:	/* GNU_args_size */
				uleb(c);
				continue;
			default:
				return false;
			}
		}
		if (advance) {
			/* the rules so far hold up to the new location */
			if (e)
				put(e, *loc, row_of(r, e->signal));
			*loc += delta * cie->code_align;
			if (*loc > end_pc)
				return false;
			continue;
		}
offset_low:
		reg = low;
offset:
		if (reg == DW_RBP) {
			r->rbp_how = 1;
			r->rbp_off = off;
		} else if (reg == DW_RA) {
			r->ra_how = off == -8 ? 0 : 2;
		}
		continue;
restore:
		if (!initial)
			return false;	/* not in a CIE */
		if (reg == DW_RBP) {
			r->rbp_how = initial->rbp_how;
			r->rbp_off = initial->rbp_off;
		} else if (reg == DW_RA) {
			r->ra_how = initial->ra_how;
		}
	}
	(void)src;
	if (e && !c->bad && *loc < end_pc)
		put(e, *loc, row_of(r, e->signal));
	return !c->bad;
}

/* One FDE at addr: its rows, then CFI_NONE at its end. */
static bool do_fde(const struct cfi_source *src, uintptr_t addr,
		   struct emit *e, uint64_t *fde_end)
{
	struct cur c, ci;
	struct cie cie;
	struct rules r = { .cfa_reg = DW_RSP, .cfa_off = 8 }, initial;
	uint64_t cie_ptr, pc, range, loc;
	uintptr_t at;

	if (!entry(src, addr, &c))
		return false;
	at = (uintptr_t)c.p;
	cie_ptr = fixed(&c, 4);
	if (!cie_ptr || cie_ptr > at - src->lo)
		return false;	/* a CIE, or one outside the source */
	/* the CIE pointer counts back from itself to the CIE's start */
	if (!read_cie(src, at - cie_ptr, &cie))
		return false;
	pc = pointer(&c, cie.fde_enc, (uintptr_t)c.p, 0);
	range = plain(&c, cie.fde_enc);
	if (c.bad || !range || range > UINT32_MAX || pc < src->text_lo ||
	    pc >= src->text_hi || range > src->text_hi - pc)
		return false;
	if (cie.aug_z) {
		uint64_t alen = uleb(&c);

		if (c.bad || alen > (uint64_t)(c.end - c.p))
			return false;
		c.p += alen;
	}
	/* the CIE's initial instructions set the rules the FDE starts with */
	ci.p = cie.insns;
	ci.end = cie.insns_end;
	ci.bad = false;
	loc = pc;
	if (!run(src, &cie, &ci, &r, NULL, &loc, pc + range, NULL))
		return false;
	initial = r;
	loc = pc;
	e->signal = cie.signal;
	if (!run(src, &cie, &c, &r, &initial, &loc, pc + range, e)) {
		/* what follows the place we could not read has no rule */
		put(e, loc, (struct cfi_row){ .kind = CFI_OPAQUE,
					      .rbp_off = CFI_RBP_LOST });
	}
	*fde_end = pc + range;
	return true;
}

/* The search table of src's .eh_frame_hdr: its entries and count. */
static bool hdr_table(const struct cfi_source *src, const uint8_t **table,
		      uint32_t *count)
{
	uintptr_t hdr = (uintptr_t)src->hdr;
	uint8_t version, ptr_enc, count_enc, table_enc;
	struct cur c;

	if (!span(src, hdr, 4, &c))
		return false;
	version = u8(&c);
	ptr_enc = u8(&c);
	count_enc = u8(&c);
	table_enc = u8(&c);
	/* version 1; fde_count udata4; table datarel sdata4: what binutils,
	 * lld and mold all write */
	if (version != 1 || count_enc != PE_UDATA4 ||
	    table_enc != (PE_DATAREL | PE_SDATA4) || ptr_enc == PE_OMIT)
		return false;
	c.end = (const uint8_t *)src->hi;
	/* eh_frame_ptr: not needed (the table points at each FDE), only
	 * stepped over */
	pointer(&c, ptr_enc, (uintptr_t)c.p, hdr);
	*count = (uint32_t)fixed(&c, 4);
	if (c.bad || !*count || *count > MAX_FDES ||
	    (uint64_t)*count * 8 > (uint64_t)(c.end - c.p))
		return false;
	*table = c.p;
	return true;
}

size_t cfi__max_rows(const struct cfi_source *src)
{
	const uint8_t *table;
	uint32_t count, i;
	size_t rows;

	if (!hdr_table(src, &table, &count))
		return 0;
	/* an FDE's rows: one per byte of its instructions at most (each
	 * takes an advance), its last, and the gap after it */
	rows = 1;
	for (i = 0; i < count; i++) {
		int32_t fde_rel;
		struct cur body;

		memcpy(&fde_rel, table + (size_t)i * 8 + 4, 4);
		if (entry(src, (uintptr_t)src->hdr + (int64_t)fde_rel, &body))
			rows += (size_t)(body.end - body.p);
		rows += 2;
	}
	return rows;
}

size_t cfi__build(const struct cfi_source *src, struct cfi_row *rows,
		  size_t cap, struct cfi_stats *st)
{
	struct emit e = { .rows = rows, .cap = cap, .bias = src->bias };
	const uint8_t *table;
	uint32_t count, i;
	uint64_t prev_end = 0;

	memset(st, 0, sizeof(*st));
	if (!hdr_table(src, &table, &count))
		return 0;
	for (i = 0; i < count && !e.full; i++) {
		int32_t loc_rel, fde_rel;
		uint64_t start, end = 0;
		uintptr_t fde;

		/* a build is a millisecond or more for a large module: the
		 * caller may want it stopped (a program's exit) */
		if (src->cancel && !(i & 63) &&
		    __atomic_load_n(src->cancel, __ATOMIC_RELAXED)) {
			st->cancelled = 1;
			return 0;
		}
		memcpy(&loc_rel, table + (size_t)i * 8, 4);
		memcpy(&fde_rel, table + (size_t)i * 8 + 4, 4);
		start = (uintptr_t)src->hdr + (int64_t)loc_rel;
		fde = (uintptr_t)src->hdr + (int64_t)fde_rel;
		st->fdes++;
		/* a gap since the last FDE has no rule */
		if (prev_end && start > prev_end)
			put(&e, prev_end, (struct cfi_row){
				.kind = CFI_NONE, .rbp_off = CFI_RBP_LOST });
		if (!do_fde(src, fde, &e, &end) || end <= start) {
			st->bad_fdes++;
			/* code with an FDE we cannot read is code with
			 * tables, not without: opaque up to the next FDE
			 * (or the module's end), never a gap the walker
			 * steps over by a frame record */
			/* not over an FDE read before it (a table whose
			 * starts repeat or overlap): that one's rows and end
			 * stand */
			if (start >= src->text_lo && start < src->text_hi &&
			    (!prev_end || start >= prev_end) &&
			    (!e.n || start - src->bias > e.rows[e.n - 1].pc)) {
				put(&e, start, (struct cfi_row){
					.kind = CFI_OPAQUE,
					.rbp_off = CFI_RBP_LOST });
				prev_end = 0;
			}
			continue;
		}
		prev_end = end;
	}
	if (prev_end)
		put(&e, prev_end, (struct cfi_row){ .kind = CFI_NONE,
						    .rbp_off = CFI_RBP_LOST });
	/* out of room (a table that lied to cfi__max_rows): the last rule
	 * must not cover the rest of the module */
	if (e.full && e.n)
		e.rows[e.n - 1].kind = CFI_OPAQUE;
	for (i = 0; i < e.n; i++)
		if (rows[i].kind == CFI_OPAQUE)
			st->none_rows++;
	return e.n;
}

const struct cfi_row *cfi__find(const struct cfi_row *rows, size_t n,
				uint32_t pc)
{
	size_t lo = 0, hi = n;

	/* the last row at or below pc */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &rows[lo - 1] : NULL;
}

int cfi__source_of(const struct dl_phdr_info *info, struct cfi_source *src)
{
	const ElfW(Phdr) *eh = NULL, *seg = NULL;
	uintptr_t text_lo = UINTPTR_MAX, text_hi = 0, hdr;
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_GNU_EH_FRAME)
			eh = ph;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			if (lo < text_lo)
				text_lo = lo;
			if (lo + ph->p_memsz > text_hi)
				text_hi = lo + ph->p_memsz;
		}
	}
	if (!eh || !text_hi)
		return -ENOENT;
	hdr = info->dlpi_addr + eh->p_vaddr;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R) &&
		    hdr >= lo && hdr - lo < ph->p_memsz)
			seg = ph;
	}
	if (!seg)
		return -ENOENT;
	*src = (struct cfi_source){
		.hdr = (const uint8_t *)hdr,
		.lo = info->dlpi_addr + seg->p_vaddr,
		/* what the file backs: past p_filesz is zeroes, no table */
		.hi = info->dlpi_addr + seg->p_vaddr + seg->p_filesz,
		.bias = info->dlpi_addr,
		.text_lo = text_lo, .text_hi = text_hi,
	};
	return 0;
}
