// SPDX-License-Identifier: MIT
/*
 * entry_aarch64.c - entry_machine.h for 64-bit Arm.
 *
 * The patch is "b slot" (4 bytes) when the slot is within 128 MiB, as the
 * agent places its entry page just below the program, so that a function
 * as short as one instruction (jemalloc's rallocx is a tail call) can be
 * hooked; else "adrp x16, slot; add x16, x16, :lo12:slot; br x16" (12
 * bytes): the page lies within 2 GiB of the program, inside adrp's 4 GiB.
 * The literal form, 16 bytes, would not leave the slot room for its
 * relocated code, and a page beyond adrp's reach is refused.  x16 (IP0)
 * is free to clobber at a function's entry, as the linker's veneers do.
 * The slot:
 *
 *   +0    ldr x16, .+8; br x16; .quad hook
 *   +16   the original, counted (the hook calls it as a C function, so
 *         x9-x13 are free; x0-x8 reach the original untouched):
 *           stp  x29, x30, [sp, #-48]!
 *           mov  x29, sp
 *           mrs  x9, tpidr_el0
 *           add  x10, x9, #left, lsl 12 ; add x10, x10, #left  (&left)
 *           add  x11, x9, #nest, lsl 12 ; add x11, x11, #nest  (&nest)
 *           ldr  x12, [x10]             the countdown, kept
 *           stp  x10, x12, [sp, #16] ; str x11, [sp, #32]
 *           ldr  w13, [x11] ; add w13, w13, #1 ; str w13, [x11]
 *           bl   +tramp
 *           ldp  x10, x12, [sp, #16] ; ldr x11, [sp, #32]
 *           ldr  w13, [x11] ; sub w13, w13, #1 ; str w13, [x11]
 *           str  x12, [x10]
 *           ldp  x29, x30, [sp], #48
 *           ret
 *   +104  the first one or three instructions, relocated
 *         (reloc_aarch64.c), then the branch back
 *
 * The agent's thread-local variables are initial-exec, at fixed offsets
 * above the thread pointer (TLS variant I), under 16 MiB.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "entry_machine.h"
#include "reloc_aarch64.h"

#define PATCH_LEN	12u		/* adrp, add, br */
#define B_REACH		(1ll << 27)	/* b's +-128 MiB */
#define WRAP_OFF	16u
#define TRAMP_OFF	104u
#define TLS_MAX		(1ll << 24)

const unsigned int entry_machine_patch_len = 4;

_Static_assert(TRAMP_OFF + (PATCH_LEN / 4) * RELOC_A64_INSN_MAX +
		       RELOC_A64_BACK_MAX <= ENTRY_SLOT_SIZE,
	       "the relocated start fits the slot");

bool entry_machine__tls_ok(int64_t off, unsigned int align)
{
	return off > 0 && off < TLS_MAX && !(off % align);
}

/* The patch's length from at to the slot: 4 (b), 12 (adrp), or 0 when
 * the slot is out of reach. */
static unsigned int patch_len(uint64_t at, uint64_t slot_at)
{
	int64_t d = (int64_t)(slot_at - at);
	size_t len;

	if (at % 4 || slot_at % 4)
		return 0;
	if (d >= -B_REACH && d < B_REACH)
		return 4;
	if (reloc_a64__patch(at, slot_at, NULL, 0, &len) == -ENOSPC &&
	    len == PATCH_LEN)
		return PATCH_LEN;
	return 0;
}

struct words {
	uint8_t *buf;
	size_t len;
};

static void put32(struct words *w, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
			 (uint8_t)(v >> 24) };

	memcpy(w->buf + w->len, b, 4);
	w->len += 4;
}

static void put64(struct words *w, uint64_t v)
{
	put32(w, (uint32_t)v);
	put32(w, (uint32_t)(v >> 32));
}

/* add xd, xn, #imm12 [, lsl 12] */
static uint32_t add_imm(unsigned int rd, unsigned int rn, uint32_t imm,
			bool lsl12)
{
	return 0x91000000u | (lsl12 ? 1u << 22 : 0) | (imm & 0xfff) << 10 |
	       rn << 5 | rd;
}

static void put_wrapper(struct words *w, uint64_t at, int64_t nest,
			int64_t left)
{
	uint64_t bl_at;

	put32(w, 0xa9bd7bfdu);			/* stp x29, x30, [sp, #-48]! */
	put32(w, 0x910003fdu);			/* mov x29, sp */
	put32(w, 0xd53bd049u);			/* mrs x9, tpidr_el0 */
	put32(w, add_imm(10, 9, (uint32_t)(left >> 12), true));
	put32(w, add_imm(10, 10, (uint32_t)left, false));
	put32(w, add_imm(11, 9, (uint32_t)(nest >> 12), true));
	put32(w, add_imm(11, 11, (uint32_t)nest, false));
	put32(w, 0xf940014cu);			/* ldr x12, [x10] */
	put32(w, 0xa90133eau);			/* stp x10, x12, [sp, #16] */
	put32(w, 0xf90013ebu);			/* str x11, [sp, #32] */
	put32(w, 0xb940016du);			/* ldr w13, [x11] */
	put32(w, 0x110005adu);			/* add w13, w13, #1 */
	put32(w, 0xb900016du);			/* str w13, [x11] */
	bl_at = at + w->len - WRAP_OFF;
	put32(w, 0x94000000u |			/* bl tramp */
		 (uint32_t)(((at - WRAP_OFF + TRAMP_OFF) - bl_at) / 4 &
			    0x3ffffff));
	put32(w, 0xa94133eau);			/* ldp x10, x12, [sp, #16] */
	put32(w, 0xf94013ebu);			/* ldr x11, [sp, #32] */
	put32(w, 0xb940016du);			/* ldr w13, [x11] */
	put32(w, 0x510005adu);			/* sub w13, w13, #1 */
	put32(w, 0xb900016du);			/* str w13, [x11] */
	put32(w, 0xf900014cu);			/* str x12, [x10] */
	put32(w, 0xa8c37bfdu);			/* ldp x29, x30, [sp], #48 */
	put32(w, 0xd65f03c0u);			/* ret */
}

int entry_machine__slot(const uint8_t *code, size_t n, uint64_t from,
			uint64_t slot_at, uint64_t hook, int64_t nest_tls,
			int64_t left_tls, uint8_t *slot, unsigned int *replaced,
			uint64_t *real_to, const char **why)
{
	struct words w = { slot, 0 };
	size_t words = n / 4, out_len;
	unsigned int len = patch_len(from, slot_at);
	uint32_t *insns;
	int err;

	if (!entry_machine__tls_ok(nest_tls, 4) ||
	    !entry_machine__tls_ok(left_tls, 8)) {
		*why = "the agent's thread-local offsets are not of this architecture";
		return -EPROTO;
	}
	if (!len) {
		*why = "the entry page is out of its reach";
		return -ERANGE;
	}
	if (words < len / 4) {
		*why = "it is shorter than the jump that would replace its start";
		return -EINVAL;
	}
	memset(slot, 0, ENTRY_SLOT_SIZE);
	put32(&w, 0x58000050u);			/* ldr x16, .+8 */
	put32(&w, 0xd61f0200u);			/* br x16 */
	put64(&w, hook);
	put_wrapper(&w, slot_at + WRAP_OFF, nest_tls, left_tls);
	if (w.len != TRAMP_OFF) {
		*why = "internal error: the slot's layout";
		return -EPROTO;
	}
	/* the file's bytes as words (code need not be aligned) */
	insns = malloc(words * 4);
	if (!insns) {
		*why = "out of memory";
		return -ENOMEM;
	}
	memcpy(insns, code, words * 4);
	err = reloc_a64__relocate(insns, words, from, len,
				  slot_at + TRAMP_OFF, slot + TRAMP_OFF,
				  ENTRY_SLOT_SIZE - TRAMP_OFF, &out_len,
				  replaced, why);
	free(insns);
	if (err)
		return err;
	*real_to = slot_at + WRAP_OFF;
	return 0;
}

int entry_machine__scan(const uint8_t *code, size_t n, uint64_t from,
			uint64_t lo, uint64_t hi, const char **why)
{
	size_t words = n / 4;
	uint32_t *insns = malloc(words ? words * 4 : 4);
	int err;

	if (!insns) {
		*why = "out of memory";
		return -ENOMEM;
	}
	memcpy(insns, code, words * 4);
	err = reloc_a64__scan(insns, words, from, lo, hi, why);
	free(insns);
	return err;
}

int entry_machine__patch(uint64_t at, uint64_t slot_at, uint8_t *patch,
			 unsigned int *len, const char **why)
{
	unsigned int n = patch_len(at, slot_at);
	size_t got;

	if (n == 4) {
		uint32_t b = 0x14000000u |
			     (uint32_t)(((int64_t)(slot_at - at) / 4) &
					0x3ffffff);

		patch[0] = (uint8_t)b;
		patch[1] = (uint8_t)(b >> 8);
		patch[2] = (uint8_t)(b >> 16);
		patch[3] = (uint8_t)(b >> 24);
	} else if (!n || reloc_a64__patch(at, slot_at, patch, ENTRY_PATCH_MAX,
					  &got) || got != n) {
		*why = "the entry page is out of its reach";
		return -ERANGE;
	}
	*len = n;
	return 0;
}
