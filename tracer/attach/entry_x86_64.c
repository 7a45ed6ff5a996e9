// SPDX-License-Identifier: MIT
/*
 * entry_x86_64.c - entry_machine.h for x86-64.
 *
 * The patch is a rel32 jump (5 bytes) to the slot: the agent maps its
 * entry page within 2 GiB of the program.  The slot:
 *
 *   +0   jmp *[rip]; .quad hook        the agent's hook for it
 *   +16  push %fs:left; incl %fs:nest; call +64; decl %fs:nest;
 *        pop %fs:left; ret              the original, which the hook
 *                                       calls: counted in the agent's
 *                                       thread-local pa_entry_nest, and
 *                                       the sampler's countdown put back
 *                                       after it
 *   +64  the displaced instructions, relocated, then jmp *[rip]; .quad
 *        entry+len
 *
 * Instructions are decoded with Zydis from the program's file (never from
 * memory the target could have changed) and relocated: rip-relative
 * operands get a new displacement, relative jumps and calls are rewritten
 * as rel32 or absolute forms.  A function is refused, with one reason,
 * when that cannot be done exactly: an instruction Zydis cannot decode,
 * loop/jrcxz, a rip-relative operand out of reach, or any branch of the
 * function (or its .cold part) into the bytes the jump replaces.  The
 * agent's thread-local variables are initial-exec, below the thread
 * pointer (TLS variant II).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <Zydis/Zydis.h>
#include "entry_machine.h"

#define WRAP_OFF	16u		/* the original, counted */
#define TRAMP_OFF	64u		/* the relocated start */
#define PATCH_LEN	5u
#define ABS_JMP_LEN	14u		/* jmp *[rip+0]; .quad */

const unsigned int entry_machine_patch_len = PATCH_LEN;

bool entry_machine__tls_ok(int64_t off, unsigned int align)
{
	return off < 0 && off >= -(1ll << 30) && !(off % align);
}

/* ---- relocation ------------------------------------------------------ */

struct emit {
	uint8_t *buf;
	size_t len, cap;
	uint64_t at;		/* the target's address of buf[0] */
};

static int put(struct emit *e, const void *p, size_t n)
{
	if (e->len + n > e->cap)
		return -ENOSPC;
	memcpy(e->buf + e->len, p, n);
	e->len += n;
	return 0;
}

static bool rel32(uint64_t next_ip, uint64_t target, int32_t *out)
{
	int64_t d = (int64_t)(target - next_ip);

	if (d != (int32_t)d)
		return false;
	*out = (int32_t)d;
	return true;
}

/* jmp *[rip+0]; .quad target */
static int put_abs_jmp(struct emit *e, uint64_t target)
{
	uint8_t b[ABS_JMP_LEN] = { 0xff, 0x25, 0, 0, 0, 0 };

	memcpy(b + 6, &target, 8);
	return put(e, b, sizeof(b));
}

/* op rel32 (jmp e9, call e8, jcc 0f 8x): the rel32 form when in reach */
static int put_rel(struct emit *e, const uint8_t *op, size_t oplen,
		   uint64_t target, bool *fits)
{
	int32_t d;
	int err;

	*fits = rel32(e->at + e->len + oplen + 4, target, &d);
	if (!*fits)
		return 0;
	err = put(e, op, oplen);
	return err ? err : put(e, &d, 4);
}

static void decoder_init(ZydisDecoder *dec)
{
	ZydisDecoderInit(dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
}

static bool rip_relative(const ZydisDecodedInstruction *in,
			 const ZydisDecodedOperand *ops)
{
	unsigned int i;

	for (i = 0; i < in->operand_count; i++)
		if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    ops[i].mem.base == ZYDIS_REGISTER_RIP)
			return true;
	return false;
}

/* One relative branch (jmp, jcc, call with an immediate), re-emitted to
 * reach target from the page.  *ends for an unconditional jump. */
static int put_branch(struct emit *e, const ZydisDecodedInstruction *in,
		      uint64_t target, bool *ends, const char **why)
{
	uint8_t op[2];
	bool fits;
	int err;

	switch (in->meta.category) {
	case ZYDIS_CATEGORY_UNCOND_BR:
		*ends = true;
		op[0] = 0xe9;
		err = put_rel(e, op, 1, target, &fits);
		return err || fits ? err : put_abs_jmp(e, target);
	case ZYDIS_CATEGORY_CALL: {
		/* call *[rip+2]; jmp +8; .quad target */
		uint8_t far[16] = { 0xff, 0x15, 2, 0, 0, 0, 0xeb, 8 };

		op[0] = 0xe8;
		err = put_rel(e, op, 1, target, &fits);
		if (err || fits)
			return err;
		memcpy(far + 8, &target, 8);
		return put(e, far, sizeof(far));
	}
	case ZYDIS_CATEGORY_COND_BR: {
		unsigned int cc;

		if (in->opcode_map == ZYDIS_OPCODE_MAP_DEFAULT &&
		    in->opcode >= 0x70 && in->opcode <= 0x7f)
			cc = in->opcode & 0xf;
		else if (in->opcode_map == ZYDIS_OPCODE_MAP_0F &&
			 in->opcode >= 0x80 && in->opcode <= 0x8f)
			cc = in->opcode & 0xf;
		else {
			*why = "it starts with loop or jrcxz, which cannot be moved";
			return -ENOTSUP;
		}
		op[0] = 0x0f;
		op[1] = (uint8_t)(0x80 | cc);
		err = put_rel(e, op, 2, target, &fits);
		if (err || fits)
			return err;
		/* the opposite condition jumps over an absolute jump */
		op[0] = (uint8_t)(0x70 | (cc ^ 1));
		op[1] = ABS_JMP_LEN;
		err = put(e, op, 2);
		return err ? err : put_abs_jmp(e, target);
	}
	default:
		*why = "it starts with a relative instruction of an unknown kind";
		return -ENOTSUP;
	}
}

/*
 * Relocate the first instructions of the function at from (code: the
 * file's bytes, avail of them) into e, followed by a jump back.  *len: how
 * many bytes the patch replaces.  0, or -errno with *why.
 */
static int relocate(const uint8_t *code, size_t avail, uint64_t from,
		    struct emit *e, unsigned int *len, const char **why)
{
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecodedInstruction in;
	ZydisDecoder dec;
	bool ends = false;
	size_t off = 0, call_end = 0;
	int err;

	decoder_init(&dec);
	while (off < PATCH_LEN && !ends) {
		uint64_t ip = from + off, target;
		size_t at;

		if (ZYAN_FAILED(ZydisDecoderDecodeFull(&dec, code + off,
						       avail - off, &in, ops))) {
			*why = "an instruction among its first bytes cannot be decoded";
			return -ENOEXEC;
		}
		if (in.raw.imm[0].is_relative) {
			target = ip + in.length + (uint64_t)in.raw.imm[0].value.s;
			if (target > from && target < from + PATCH_LEN) {
				*why = "it branches into its own first bytes";
				return -ENOTSUP;
			}
			err = put_branch(e, &in, target, &ends, why);
			if (err == -ENOSPC)
				*why = "its first instructions do not fit the page's slot";
			if (err)
				return err;
		} else if (rip_relative(&in, ops)) {
			int32_t d;

			if (in.raw.disp.size != 32) {
				*why = "it starts with a rip-relative operand of an unknown form";
				return -ENOTSUP;
			}
			target = ip + in.length + (uint64_t)in.raw.disp.value;
			at = e->len;
			if (!rel32(e->at + at + in.length, target, &d)) {
				*why = "a rip-relative operand among its first instructions is out of the entry page's reach";
				return -ERANGE;
			}
			if (put(e, code + off, in.length)) {
				*why = "its first instructions do not fit the page's slot";
				return -ENOSPC;
			}
			memcpy(e->buf + at + in.raw.disp.offset, &d, 4);
		} else {
			if (in.attributes & ZYDIS_ATTRIB_IS_RELATIVE) {
				*why = "it starts with a relative instruction of an unknown kind";
				return -ENOTSUP;
			}
			if (in.meta.category == ZYDIS_CATEGORY_RET ||
			    in.meta.category == ZYDIS_CATEGORY_UNCOND_BR)
				ends = true;
			if (put(e, code + off, in.length)) {
				*why = "its first instructions do not fit the page's slot";
				return -ENOSPC;
			}
		}
		if (in.meta.category == ZYDIS_CATEGORY_CALL)
			call_end = off + in.length;
		off += in.length;
	}
	/* past an unconditional jump or a return the rest of the five bytes
	 * is reached by branches only, which scan() refuses */
	*len = off < PATCH_LEN ? PATCH_LEN : (unsigned int)off;
	/* a thread inside that callee now would come back into the jump */
	if (call_end && call_end < *len) {
		*why = "a call among its first bytes returns into them";
		return -ENOTSUP;
	}
	if (!ends && put_abs_jmp(e, from + off)) {
		*why = "its first instructions do not fit the page's slot";
		return -ENOSPC;
	}
	return 0;
}

/*
 * Does any relative branch in code (at from, n bytes) land in (lo, hi)?
 * A linear sweep, checked against itself: a branch inside the code that
 * lands where the sweep saw no instruction start means the sweep lost its
 * way (data among the code) and may have hidden a branch, so that is a
 * refusal too.
 */
static int scan(const uint8_t *code, size_t n, uint64_t from, uint64_t lo,
		uint64_t hi, const char **why)
{
	uint8_t *starts, *targets;
	ZydisDecodedInstruction in;
	ZydisDecoder dec;
	size_t off = 0, i;
	int err = -ENOMEM;

	starts = calloc(2, n / 8 + 1);
	if (!starts) {
		*why = "out of memory";
		return err;
	}
	targets = starts + n / 8 + 1;
	decoder_init(&dec);
	while (off < n) {
		if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(&dec, NULL,
							      code + off,
							      n - off, &in))) {
			*why = "part of its code cannot be decoded, so branches into its first bytes cannot be ruled out";
			err = -ENOEXEC;
			goto out_free;
		}
		starts[off / 8] |= (uint8_t)(1u << (off % 8));
		if (in.raw.imm[0].is_relative) {
			uint64_t t = from + off + in.length +
				     (uint64_t)in.raw.imm[0].value.s;

			if (t > lo && t < hi) {
				*why = "a branch inside it jumps into the bytes the patch replaces";
				err = -ENOTSUP;
				goto out_free;
			}
			if (t >= from && t < from + n)
				targets[(t - from) / 8] |=
					(uint8_t)(1u << ((t - from) % 8));
		}
		off += in.length;
	}
	for (i = 0; i < n / 8 + 1; i++)
		if (targets[i] & ~starts[i]) {
			*why = "a branch inside it lands within an instruction (data among its code?), so its code cannot be read reliably";
			err = -ENOTSUP;
			goto out_free;
		}
	err = 0;
out_free:
	free(starts);
	return err;
}


int entry_machine__slot(const uint8_t *code, size_t n, uint64_t from,
			uint64_t slot_at, uint64_t hook, int64_t nest_tls,
			int64_t left_tls, uint8_t *slot, unsigned int *replaced,
			uint64_t *real_to, const char **why)
{
	struct emit e = { slot, 0, ENTRY_SLOT_SIZE, slot_at };
	int32_t nest = (int32_t)nest_tls;
	int32_t left = (int32_t)left_tls;
	int32_t to = (int32_t)(TRAMP_OFF - (WRAP_OFF + 8 + 8 + 5));
	uint8_t w[30] = {
		0x64, 0xff, 0x34, 0x25, 0, 0, 0, 0,	/* push %fs:left */
		0x64, 0xff, 0x04, 0x25, 0, 0, 0, 0,	/* incl %fs:nest */
		0xe8, 0, 0, 0, 0,			/* call reloc */
		0x64, 0xff, 0x0c, 0x25, 0, 0, 0, 0,	/* decl %fs:nest */
		0x64,					/* pop %fs:left, */
	};
	uint8_t w2[8] = {
		0x8f, 0x04, 0x25, 0, 0, 0, 0,		/* ... */
		0xc3,					/* ret */
	};

	if (!entry_machine__tls_ok(nest_tls, 4) ||
	    !entry_machine__tls_ok(left_tls, 8)) {
		*why = "the agent's thread-local offsets are not of this architecture";
		return -EPROTO;
	}
	memset(slot, 0, ENTRY_SLOT_SIZE);
	/* the hook stub, the counting wrapper, then the relocated start */
	if (put_abs_jmp(&e, hook))
		goto out_nospace;
	e.len = WRAP_OFF;
	memcpy(w + 4, &left, 4);
	memcpy(w + 12, &nest, 4);
	memcpy(w + 17, &to, 4);
	memcpy(w + 25, &nest, 4);
	memcpy(w2 + 3, &left, 4);
	if (put(&e, w, sizeof(w)) || put(&e, w2, sizeof(w2)))
		goto out_nospace;
	e.len = TRAMP_OFF;
	*real_to = slot_at + WRAP_OFF;
	return relocate(code, n, from, &e, replaced, why);
out_nospace:
	*why = "its first instructions do not fit the page's slot";
	return -ENOSPC;
}

int entry_machine__scan(const uint8_t *code, size_t n, uint64_t from,
			uint64_t lo, uint64_t hi, const char **why)
{
	return scan(code, n, from, lo, hi, why);
}

int entry_machine__patch(uint64_t at, uint64_t slot_at, uint8_t *patch,
			 unsigned int *len, const char **why)
{
	int32_t d;

	if (!rel32(at + PATCH_LEN, slot_at, &d)) {
		*why = "the entry page is out of its reach";
		return -ERANGE;
	}
	patch[0] = 0xe9;
	memcpy(patch + 1, &d, 4);
	*len = PATCH_LEN;
	return 0;
}
