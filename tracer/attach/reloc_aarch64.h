/* SPDX-License-Identifier: MIT */
/*
 * reloc_aarch64.h - move the first A64 instructions of a function to an
 * entry page slot, and the patch that branches there (reloc_aarch64.c).
 *
 * Pure functions over instruction words: no process, no memory but the
 * caller's buffers, so that they build and are tested on any host.
 */
#ifndef PA_TRACER_RELOC_AARCH64_H
#define PA_TRACER_RELOC_AARCH64_H

#include <stddef.h>
#include <stdint.h>

/* The longest patch reloc_a64__patch() writes. */
#define RELOC_A64_PATCH_MAX	16u
/* The most bytes one displaced instruction becomes (a conditional branch
 * out of every reach, or a literal load through a register): with the
 * branch back, a slot of (patch_len / 4) * RELOC_A64_INSN_MAX +
 * RELOC_A64_BACK_MAX bytes always fits the relocated code. */
#define RELOC_A64_INSN_MAX	20u
#define RELOC_A64_BACK_MAX	16u

/*
 * The patch for the entry at `at`, branching to `target` (both 4-aligned):
 * "adrp x16, target; add x16, x16, :lo12:target; br x16" (12 bytes) when
 * target's page is within adrp's reach of at's (+-4 GiB), else
 * "ldr x16, .+8; br x16; .quad target" (16 bytes; the .quad is only
 * 4-aligned when at is not 8-aligned, which A64 loads allow).  *len is set
 * even when cap is too small (-ENOSPC), so that a NULL out with cap 0
 * asks for the length.  0, or -EINVAL (misaligned), -ENOSPC.
 */
int reloc_a64__patch(uint64_t at, uint64_t target, uint8_t *out, size_t cap,
		     size_t *len);

/*
 * Relocate the first patch_len bytes (a multiple of 4) of the function at
 * `from` (code: its first n words, little-endian as in the file) to run at
 * `to`, followed by a branch back to from + *replaced; writes *out_len
 * bytes into out (cap).  *replaced is patch_len: A64 instructions are all
 * 4 bytes.  The branch back and some expansions clobber x16 (IP0), which
 * the AAPCS64 lets a veneer do at a function's entry.  0, or -errno with
 * *why set to one sentence for a user, and the function is to be left
 * alone: -EINVAL (misaligned or short arguments), -ENOEXEC (an unknown or
 * reserved encoding), -ENOTSUP (an instruction that cannot be moved
 * exactly), -ENOSPC (cap too small: *out_len is then the size needed).
 */
int reloc_a64__relocate(const uint32_t *code, size_t n, uint64_t from,
			unsigned int patch_len, uint64_t to, uint8_t *out,
			size_t cap, size_t *out_len, unsigned int *replaced,
			const char **why);

/*
 * Does any PC-relative instruction of code (n words at from) lead into the
 * bytes the patch replaces: a branch (b, bl, b.cond, bc.cond, cb(n)z,
 * tb(n)z) or an adr to strictly inside (lo, hi), or a literal load
 * overlapping [lo, hi)?  Code at an address that is not 4-aligned is
 * refused too: no branch could land on its instructions.  0, or -ENOTSUP
 * with *why.
 */
int reloc_a64__scan(const uint32_t *code, size_t n, uint64_t from,
		    uint64_t lo, uint64_t hi, const char **why);

#endif /* PA_TRACER_RELOC_AARCH64_H */
