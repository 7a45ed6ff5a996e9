// SPDX-License-Identifier: MIT
/*
 * fuzz-unwind.c - libFuzzer target for the unwinder's input: the registers
 * and stack bytes of an agent's stack copy (elf/unwind.c), with this
 * program's own modules (itself, libc, libdw...) as the code.
 *
 * Input: pc, rbp, a register mask (8 bytes each, little-endian), then the
 * stack copy.  So that inputs keep their meaning across runs (the modules
 * move with ASLR), a word whose top 16 bits are 0xc0de stands for an
 * address in this program's text (the low bits, modulo its size, are the
 * offset), and one whose top bits are 0x57ac for an address in the copy;
 * pc is always taken as a text offset.  Anything else is used as it is.
 * The unwinder must return at least the pc and at most max frames, and
 * never crash, hang or read outside what it was given - ASan and UBSan
 * watch that.
 *
 * Built by `make fuzz` with clang -fsanitize=fuzzer,address,undefined; the
 * seeds are in tests/fuzz/unwind/.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elf/unwind.h"

#define STACK_AT	0x7ff000000000ull
#define MAX_COPY	65536
#define MAX_FRAMES	64

static struct unwinder *unwinder;
static uint64_t text_start, text_size;

static int add_module(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *path = info->dlpi_name[0] ? info->dlpi_name :
						 "/proc/self/exe";
	int fd, i;

	(void)size;
	(void)data;
	if (info->dlpi_name[0] && info->dlpi_name[0] != '/')
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		unwinder__add_module(unwinder, path, fd, -1, start,
				     start + ph->p_memsz, info->dlpi_addr);
		if (!info->dlpi_name[0] && !text_size) {
			text_start = start;
			text_size = ph->p_memsz;
		}
	}
	close(fd);
	return 0;
}

static uint64_t relocate(uint64_t w)
{
	switch (w >> 48) {
	case 0xc0de:
		return text_start + (w & 0xffffffffffffull) % text_size;
	case 0x57ac:
		return STACK_AT + (w & 0xffffffffffffull) % (MAX_COPY + 64);
	default:
		return w;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t regs[17] = { 0 }, frames[MAX_FRAMES], head[3];
	uint8_t *stack;
	struct unwind_regs r;
	enum unwind_end end;
	size_t copy, i;
	int n;

	if (!unwinder) {
		unwinder = unwinder__new(EM_X86_64);
		if (!unwinder)
			abort();
		dl_iterate_phdr(add_module, NULL);
		if (!text_size)
			abort();
	}
	if (size < sizeof(head))
		return 0;
	memcpy(head, data, sizeof(head));
	copy = size - sizeof(head);
	if (copy > MAX_COPY)
		copy = MAX_COPY;
	/* exactly copy bytes, so that ASan sees a read past them */
	stack = malloc(copy ? copy : 1);
	if (!stack)
		return 0;
	memcpy(stack, data + sizeof(head), copy);
	for (i = 0; i + 8 <= copy; i += 8) {
		uint64_t w;

		memcpy(&w, stack + i, 8);
		w = relocate(w);
		memcpy(stack + i, &w, 8);
	}
	regs[6] = relocate(head[1]);
	regs[7] = STACK_AT;
	r = (struct unwind_regs){
		.arch = EM_X86_64,
		.mask = (head[2] | 1ull << 7) & ((1ull << 16) - 1),
		.regs = regs,
		.nregs = 16,
		.pc = text_start + 2 + head[0] % (text_size - 2),
		.stack_start = STACK_AT,
		.stack = stack,
		.stack_size = copy,
	};
	n = unwinder__unwind(unwinder, &r, frames, MAX_FRAMES, &end);
	free(stack);
	if (n < 1 || n > MAX_FRAMES || frames[0] != r.pc)
		abort();
	return 0;
}
