/* SPDX-License-Identifier: MIT */
/*
 * entry_machine.h - the processor's side of entry patching (entry.c).
 *
 * entry.c finds a linked allocator's functions, reads their code from the
 * program's file, and writes slots and patches while every thread is
 * stopped; what the code is made of is this interface, one file a
 * processor (entry_x86_64.c, decoding with Zydis; entry_aarch64.c, with
 * reloc_aarch64.c).  A function's slot in the agent's entry page holds:
 *
 *   +0           a jump to the agent's hook, which the patch reaches
 *   +wrap        the original, counted: the agent's thread-local nest
 *                count raised and its sampling countdown kept across a
 *                call of the relocated start, so that the allocator's
 *                calls to its own public functions are not taken for the
 *                program's (the hook calls this)
 *   +tramp       the function's first instructions, relocated, then a
 *                jump back past the bytes the patch replaces
 */
#ifndef PA_TRACER_ENTRY_MACHINE_H
#define PA_TRACER_ENTRY_MACHINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ENTRY_SLOT_SIZE		192u
#define ENTRY_PATCH_MAX		16u

/* The bytes a patch replaces at least: a function shorter is refused. */
extern const unsigned int entry_machine_patch_len;

/*
 * Is off a thread-pointer offset the agent's initial-exec TLS can have
 * (below the thread pointer on x86-64, above it on aarch64), aligned to
 * align?
 */
bool entry_machine__tls_ok(int64_t off, unsigned int align);

/*
 * The slot (ENTRY_SLOT_SIZE bytes into slot) for the function at from,
 * whose file bytes are code (n of them), to be written at slot_at: the
 * jump to hook, the counted original (thread-pointer offsets nest_tls of
 * the 32-bit count, left_tls of the 64-bit countdown) at *real_to, and
 * the relocated start.  *replaced: the bytes of the entry the patch
 * covers (whole instructions).  0, or -errno with *why.
 */
int entry_machine__slot(const uint8_t *code, size_t n, uint64_t from,
			uint64_t slot_at, uint64_t hook, int64_t nest_tls,
			int64_t left_tls, uint8_t *slot, unsigned int *replaced,
			uint64_t *real_to, const char **why);

/*
 * Does any branch in code (n bytes at from) land in (lo, hi), the bytes
 * the patch replaces, or can that not be ruled out?  0, or -errno with
 * *why.
 */
int entry_machine__scan(const uint8_t *code, size_t n, uint64_t from,
			uint64_t lo, uint64_t hi, const char **why);

/* The patch at the entry at, reaching the slot at slot_at: *len bytes
 * (at most ENTRY_PATCH_MAX, never more than the slot's replaced bytes).
 * 0, or -ERANGE with *why when the slot is out of its reach. */
int entry_machine__patch(uint64_t at, uint64_t slot_at, uint8_t *patch,
			 unsigned int *len, const char **why);

#endif /* PA_TRACER_ENTRY_MACHINE_H */
