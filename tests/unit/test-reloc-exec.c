// SPDX-License-Identifier: MIT
/*
 * test-reloc-exec.c - run relocated A64 code (aarch64 only: natively,
 * or under qemu-aarch64).
 *
 * A few functions (below, in assembly) start with PC-relative
 * instructions: adrp, adr, ldr/ldrsw/ldr d/ldr q/prfm literals, cbz, cbnz,
 * tbz, b.cond, bl, b.  Their first instructions are relocated to slots at
 * several distances (in the text, within 128 MiB, within 4 GiB, far), and
 * each function is called three ways with the same arguments: as is,
 * through its slot (which branches back into it), and through its entry,
 * patched with reloc_a64__patch() to branch to the slot.  The results must
 * be the same.  Exits nonzero on any difference or unexpected refusal.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "tracer/attach/reloc_aarch64.h"

#ifndef __aarch64__
#error "test-reloc-exec.c runs A64 code: build it for aarch64"
#endif

#define SLOT_SIZE	256u

__asm__(
	"	.text\n"
	"	.p2align 4\n"
	/* x0 ? table[x0 & 3] + 0x1234 : 7 */
	"	.globl f_adrp\n"
	"f_adrp:\n"
	"	adrp x1, table\n"
	"	ldr x2, 9f\n"
	"	cbz x0, 1f\n"
	"	add x1, x1, :lo12:table\n"
	"	and x0, x0, #3\n"
	"	ldr x0, [x1, x0, lsl #3]\n"
	"	add x0, x0, x2\n"
	"	ret\n"
	"1:	mov x0, #7\n"
	"	ret\n"
	"	.p2align 3\n"
	"9:	.quad 0x1234\n"
	/* odd x0 ? 'Z' : 'A' - 5 */
	"	.globl f_adr\n"
	"f_adr:\n"
	"	adr x1, 8f\n"
	"	tbnz w0, #0, 2f\n"
	"	ldrsw x2, 9f\n"
	"	prfm pldl1keep, 9f\n"
	"	ldrb w0, [x1]\n"
	"	add x0, x0, x2\n"
	"	ret\n"
	"2:	ldrb w0, [x1, #1]\n"
	"	ret\n"
	"9:	.word -5\n"
	"8:	.ascii \"AZ\"\n"
	"	.p2align 2\n"
	/* x0 > 10 ? 99 : x0 + bits of 2.0 + the q literal's high half */
	"	.globl f_cond\n"
	"f_cond:\n"
	"	cmp x0, #10\n"
	"	b.hi 3f\n"
	"	ldr d0, 8f\n"
	"	ldr q1, 9f\n"
	"	fmov x1, d0\n"
	"	mov x2, v1.d[1]\n"
	"	add x0, x0, x1\n"
	"	add x0, x0, x2\n"
	"	ret\n"
	"3:	mov x0, #99\n"
	"	ret\n"
	"	.p2align 4\n"
	"8:	.double 2.0\n"
	"	.quad 0\n"
	"9:	.quad 0x1111, 0x2222\n"
	/* 2 * x0 + 1, bl third */
	"	.globl f_call3\n"
	"f_call3:\n"
	"	stp x29, x30, [sp, #-16]!\n"
	"	mov x29, sp\n"
	"	bl twice\n"
	"	add x0, x0, #1\n"
	"	ldp x29, x30, [sp], #16\n"
	"	ret\n"
	/* 2 * x0 + 3, bl fourth */
	"	.globl f_call4\n"
	"f_call4:\n"
	"	paciasp\n"
	"	stp x29, x30, [sp, #-16]!\n"
	"	mov x29, sp\n"
	"	bl twice\n"
	"	add x0, x0, #3\n"
	"	ldp x29, x30, [sp], #16\n"
	"	autiasp\n"
	"	ret\n"
	"twice:\n"
	"	lsl x0, x0, #1\n"
	"	ret\n"
	/* x0 < 0 ? -x0 : x0, plus the w literal, or 0 when x0 == 5 */
	"	.globl f_tb\n"
	"f_tb:\n"
	"	ldr w3, 9f\n"
	"	cbnz w0, 4f\n"
	"	tbz x0, #63, 5f\n"
	"	nop\n"
	"4:	cmp x0, #5\n"
	"	b.eq 6f\n"
	"	tbz x0, #63, 5f\n"
	"	neg x0, x0\n"
	"5:	add x0, x0, x3\n"
	"	ret\n"
	"6:	mov x0, #0\n"
	"	ret\n"
	"9:	.word 0x100\n"
	/* 3 * x0 through a b: the run ends */
	"	.globl f_b\n"
	"f_b:\n"
	"	b thrice\n"
	"	udf #0\n"
	"	udf #0\n"
	"	udf #0\n"
	"	udf #0\n"
	"thrice:\n"
	"	add x0, x0, x0, lsl #1\n"
	"	ret\n"
	/* slots in the text itself: everything in reach */
	"	.section .text.slots, \"ax\"\n"
	"	.p2align 12\n"
	"	.globl text_slots\n"
	"text_slots:\n"
	"	.fill 8192, 1, 0\n"
	"	.data\n"
	"	.p2align 3\n"
	"table:	.quad 10, 20, 30, 40\n"
	"	.text\n");

typedef uint64_t fn_t(uint64_t);
extern fn_t f_adrp, f_adr, f_cond, f_call3, f_call4, f_tb, f_b;
extern uint8_t text_slots[];

static const struct {
	const char *name;
	fn_t *fn;
	unsigned int refused_at;	/* the patch length it refuses */
} fns[] = {
	{ "f_adrp", f_adrp, 0 },
	{ "f_adr", f_adr, 0 },
	{ "f_cond", f_cond, 0 },
	{ "f_call3", f_call3, 16 },	/* its bl would return into them */
	{ "f_call4", f_call4, 0 },
	{ "f_tb", f_tb, 0 },
	{ "f_b", f_b, 0 },
};

static const uint64_t args[] = { 0, 1, 2, 3, 5, 10, 11, 0x7fff,
				 (uint64_t)-3, (uint64_t)-100 };

static unsigned long calls, failures;

static void flush(void *p, size_t n)
{
	__builtin___clear_cache((char *)p, (char *)p + n);
}

/* Relocate, call through the slot and through the patched entry. */
static void run(const char *place, uint8_t *slot, unsigned int i)
{
	uint64_t from = (uint64_t)(uintptr_t)fns[i].fn;
	uint64_t to = (uint64_t)(uintptr_t)slot;
	uint8_t patch[RELOC_A64_PATCH_MAX], saved[RELOC_A64_PATCH_MAX];
	uint32_t code[16];
	unsigned int replaced;
	const char *why = "";
	size_t len, plen;
	uintptr_t page = from & ~(uintptr_t)4095;
	unsigned int k;
	int err;

	/* the patch at the entry decides how many bytes are moved */
	err = reloc_a64__patch(from, to, patch, sizeof(patch), &plen);
	if (err) {
		printf("%s %s: patch: %d\n", fns[i].name, place, err);
		failures++;
		return;
	}
	memcpy(code, (void *)(uintptr_t)from, sizeof(code));
	err = reloc_a64__relocate(code, 16, from, (unsigned int)plen, to,
				  slot, SLOT_SIZE, &len, &replaced, &why);
	if (!err)
		err = reloc_a64__scan(code, 16, from, from, from + replaced,
				      &why);
	if (err) {
		bool expected = fns[i].refused_at == plen;

		printf("%-8s %-10s patch %2zu: refused%s: %s\n", fns[i].name,
		       place, plen, expected ? " as expected" : "", why);
		if (!expected)
			failures++;
		return;
	}
	if (fns[i].refused_at == plen) {
		printf("%s %s: not refused\n", fns[i].name, place);
		failures++;
	}
	flush(slot, len);
	for (k = 0; k < sizeof(args) / sizeof(args[0]); k++) {
		uint64_t want = fns[i].fn(args[k]);
		uint64_t got = ((fn_t *)(uintptr_t)to)(args[k]);

		calls++;
		if (got != want) {
			printf("%s %s: slot(%#llx) = %#llx, want %#llx\n",
			       fns[i].name, place, (unsigned long long)args[k],
			       (unsigned long long)got,
			       (unsigned long long)want);
			failures++;
		}
	}
	/* the entry itself, patched */
	if (mprotect((void *)page, 8192, PROT_READ | PROT_WRITE | PROT_EXEC)) {
		perror("mprotect");
		failures++;
		return;
	}
	memcpy(saved, (void *)(uintptr_t)from, plen);
	{
		uint64_t want[sizeof(args) / sizeof(args[0])];

		for (k = 0; k < sizeof(args) / sizeof(args[0]); k++)
			want[k] = fns[i].fn(args[k]);
		memcpy((void *)(uintptr_t)from, patch, plen);
		flush((void *)(uintptr_t)from, plen);
		for (k = 0; k < sizeof(args) / sizeof(args[0]); k++) {
			uint64_t got = fns[i].fn(args[k]);

			calls++;
			if (got != want[k]) {
				printf("%s %s: patched(%#llx) = %#llx, want %#llx\n",
				       fns[i].name, place,
				       (unsigned long long)args[k],
				       (unsigned long long)got,
				       (unsigned long long)want[k]);
				failures++;
			}
		}
	}
	memcpy((void *)(uintptr_t)from, saved, plen);
	flush((void *)(uintptr_t)from, plen);
	printf("%-8s %-10s patch %2zu: %zu bytes at %#llx, %zu calls the same\n",
	       fns[i].name, place, plen, len, (unsigned long long)to,
	       2 * sizeof(args) / sizeof(args[0]));
}

/* A page at about `at`, or NULL. */
static uint8_t *page_at(uint64_t at)
{
	void *p = mmap((void *)(uintptr_t)at, 4096,
		       PROT_READ | PROT_WRITE | PROT_EXEC,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

int main(void)
{
	uint64_t text = (uint64_t)(uintptr_t)f_adrp & ~4095ull;
	struct {
		const char *name;
		uint8_t *slot;
	} places[] = {
		{ "in text", text_slots },
		{ "+64MiB", page_at(text + (64ull << 20)) },
		{ "+2GiB", page_at(text + (2ull << 30)) },
		{ "+8GiB", page_at(text + (8ull << 30)) },
		{ "far", page_at(0x100000000000ull) },
	};
	unsigned int p, i;

	if (mprotect(text_slots, 8192, PROT_READ | PROT_WRITE | PROT_EXEC)) {
		perror("mprotect");
		return 1;
	}
	for (p = 0; p < sizeof(places) / sizeof(places[0]); p++) {
		if (!places[p].slot) {
			printf("%s: no page there, skipped\n", places[p].name);
			continue;
		}
		for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
			memset(places[p].slot, 0, SLOT_SIZE);
			run(places[p].name, places[p].slot, i);
		}
	}
	printf("exec-reloc-aarch64: %lu calls compared, %lu failures\n", calls,
	       failures);
	return failures != 0;
}
