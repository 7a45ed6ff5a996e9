// SPDX-License-Identifier: MIT
/*
 * test-unwind.c - unit test of elf/unwind.c and tracer/record/stackwalk.c.
 *
 * The test unwinds itself.  main -> top -> mid -> leafcall -> capture, the
 * callers built -O2 without frame pointers (the tracer's flags), capture
 * with them: capture takes the state of its caller at the call exactly as
 * the agent does at the allocator's (pc from its frame record, sp its CFA,
 * the caller's frame pointer) and copies the stack from there.  Each
 * function records its own return address, so the expected frames are
 * known: unwinding the copy with the modules of this process (found with
 * dl_iterate_phdr, files opened by path) must give them, in order, and
 * reach the outermost frame (_start) through libc.
 *
 * Then the limits: a copy cut short ends in UNWIND_CUT, max frames in
 * UNWIND_MAX, a pc in no module gives that one frame; garbage registers
 * and stack bytes (a fixed-seed generator, many rounds) never crash and
 * never give more than max frames; bad arguments are -EINVAL; an
 * architecture it cannot unwind (riscv) is EAFNOSUPPORT.  stackwalk__record turns
 * an agent-shaped record into one with the unwound frames, falls back to
 * the frame-pointer frames when the copy says nothing, and marks cut
 * stacks with STACKWALK_TRUNCATED.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "arch/arch.h"
#include "check.h"
#include "elf/unwind.h"
#include "pprof_alloc_abi.h"
#include "tracer/record/stackwalk.h"

#define NOIPA __attribute__((noipa))
#define COPY 16384

struct capture {
	uint64_t regs[PA_UNWIND_REGS];
	uint64_t mask, pc, sp;
	uint8_t stack[COPY];
	size_t size;
};

static struct capture cap;
static uint64_t ret_leafcall, ret_mid, ret_top;
static volatile int sink;

/* The end of the mapping of /proc/self/maps that holds addr. */
static uint64_t mapping_end(uint64_t addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi, end = 0;
	char line[512];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && addr >= lo &&
		    addr < hi)
			end = hi;
	if (f)
		fclose(f);
	return end;
}

/* Raw stack bytes, ASan's redzones included: not through its memcpy. */
__attribute__((no_sanitize("address")))
static void copy_stack(uint8_t *to, const uint8_t *from, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((volatile uint8_t *)to)[i] = from[i];
}

/* The caller's state at its call to us, as agent__record_alloc takes it:
 * COPY bytes of stack or up to the stack's end. */
NOIPA __attribute__((optimize("no-omit-frame-pointer")))
static void capture(struct capture *c)
{
	const uint64_t *record = __builtin_frame_address(0);
	uint64_t sp = (uint64_t)(uintptr_t)__builtin_dwarf_cfa();

	memset(c->regs, 0, sizeof(c->regs));
	c->pc = record[1];
	c->sp = sp;
	c->regs[PA_DWARF_FP] = record[0];
	c->regs[PA_DWARF_SP] = sp;
	c->regs[PA_DWARF_RA] = c->pc;
	c->mask = 1ull << PA_DWARF_FP | 1ull << PA_DWARF_SP |
		  1ull << PA_DWARF_RA;
	c->size = mapping_end(sp) - sp < COPY ? mapping_end(sp) - sp : COPY;
	copy_stack(c->stack, (const uint8_t *)(uintptr_t)sp, c->size);
}

NOIPA static void leafcall(void)
{
	ret_leafcall = (uint64_t)__builtin_return_address(0);
	capture(&cap);
	sink++;
}

NOIPA static void mid(void)
{
	ret_mid = (uint64_t)__builtin_return_address(0);
	leafcall();
	sink++;
}

NOIPA static void top(void)
{
	ret_top = (uint64_t)__builtin_return_address(0);
	mid();
	sink++;
}

/* Every module of this process with a file, as the tracer would. */
static int add_one(struct dl_phdr_info *info, size_t size, void *data)
{
	struct unwinder *u = data;
	const char *path = info->dlpi_name[0] ? info->dlpi_name :
						 "/proc/self/exe";
	int fd, i;

	(void)size;
	if (info->dlpi_name[0] && info->dlpi_name[0] != '/')
		return 0;	/* the vDSO */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
			CHECK_EQ_INT(unwinder__add_module(u, path, fd, -1, start,
							  start + ph->p_memsz,
							  info->dlpi_addr), 0);
	}
	close(fd);
	return 0;
}

static struct unwind_regs regs_of(const struct capture *c, size_t size)
{
	return (struct unwind_regs){
		.arch = PA_ARCH_EM, .mask = c->mask, .regs = c->regs,
		.nregs = unwind__arch(PA_ARCH_EM)->nregs, .pc = c->pc,
		.stack_start = c->sp,
		.stack = c->stack, .stack_size = size,
	};
}

static void test_own_stack(struct unwinder *u)
{
	struct unwind_regs r = regs_of(&cap, cap.size);
	uint64_t frames[64];
	enum unwind_end end;
	int n, i;

	n = unwinder__unwind(u, &r, frames, 64, &end);
	for (i = 0; i < n; i++)
		fprintf(stderr, "  frame %d: %#lx\n", i, (unsigned long)frames[i]);
	CHECK(n >= 5);
	CHECK(frames[0] == cap.pc);
	CHECK(frames[1] == ret_leafcall);
	CHECK(frames[2] == ret_mid);
	CHECK(frames[3] == ret_top);
	/* main's caller in libc, then on to _start: the outermost frame */
	CHECK_EQ_INT(end, UNWIND_OUTERMOST);

	/* the same with room for three frames */
	n = unwinder__unwind(u, &r, frames, 3, &end);
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_INT(end, UNWIND_MAX);
	CHECK(frames[2] == ret_mid);

	/* a copy that ends inside mid's frame: leafcall's caller is found,
	 * the rest is cut */
	r = regs_of(&cap, 8);
	n = unwinder__unwind(u, &r, frames, 64, &end);
	CHECK(n >= 1 && n < 5);
	CHECK_EQ_INT(end, UNWIND_CUT);

	/* no stack at all */
	r = regs_of(&cap, 0);
	n = unwinder__unwind(u, &r, frames, 64, &end);
	CHECK(n >= 1);
	CHECK(frames[0] == cap.pc);
	CHECK(end != UNWIND_OUTERMOST);
}

static void test_limits(struct unwinder *u)
{
	struct unwind_regs r = regs_of(&cap, cap.size);
	uint64_t frames[8];
	enum unwind_end end;
	int n;

	/* a pc in no module, no frame pointer for libdwfl's guess: that
	 * frame alone */
	r.pc = 0x1000;
	r.mask = 1ull << PA_DWARF_SP;
	n = unwinder__unwind(u, &r, frames, 8, &end);
	CHECK_EQ_INT(n, 1);
	CHECK(frames[0] == 0x1000);
	CHECK(end != UNWIND_OUTERMOST);

	r = regs_of(&cap, cap.size);
	CHECK_EQ_INT(unwinder__unwind(u, &r, frames, 0, &end), -EINVAL);
	/* another architecture than the unwinder's */
	r.arch = PA_ARCH_EM == EM_X86_64 ? EM_AARCH64 : EM_X86_64;
	CHECK_EQ_INT(unwinder__unwind(u, &r, frames, 8, &end), -EINVAL);
	r = regs_of(&cap, cap.size);
	r.stack = NULL;
	CHECK_EQ_INT(unwinder__unwind(u, &r, frames, 8, &end), -EINVAL);
	CHECK_EQ_INT(unwinder__add_module(u, "x", -1, -1, 0, 1, 0), -EINVAL);

	errno = 0;
	CHECK(!unwinder__new(EM_RISCV));
	CHECK_EQ_INT(errno, EAFNOSUPPORT);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Garbage in: registers pointing anywhere (into the copy, into code,
 * nowhere), stack words that are stack addresses, code addresses or
 * noise.  Never more than max frames, never a crash. */
static void test_garbage(struct unwinder *u)
{
	static struct capture g;
	uint64_t frames[32], code = cap.pc & ~0xfffull;
	enum unwind_end end;
	int round, n;

	for (round = 0; round < 3000; round++) {
		struct unwind_regs r;
		size_t i, size = next() % 2048 * 8;

		g.sp = 0x7ff000000000ull + (next() % 4096) * 8;
		for (i = 0; i < size / 8; i++) {
			uint64_t v = next(), w;

			switch (v % 4) {
			case 0: w = g.sp + (v >> 8) % (size + 64); break;
			case 1: w = code + (v >> 8) % 0x4000; break;
			case 2: w = 0; break;
			default: w = v; break;
			}
			memcpy(g.stack + i * 8, &w, 8);
		}
		for (i = 0; i < PA_UNWIND_REGS; i++)
			g.regs[i] = next() % 2 ? g.sp + next() % 256 : next();
		g.regs[PA_DWARF_SP] = g.sp;
		g.mask = next() | 1ull << PA_DWARF_SP;
		g.pc = next() % 2 ? code + next() % 0x4000 : next() | 2;
		r = regs_of(&g, size);
		n = unwinder__unwind(u, &r, frames, 32, &end);
		CHECK(n >= 1 && n <= 32);
		CHECK(frames[0] == g.pc);
	}
}

/* An allocation record as the agent writes it, with the copy. */
static struct pa_rec_alloc *agent_record(size_t copy, uint32_t fp_frames)
{
	size_t len = pa_alloc_rec_size(fp_frames, 1, (uint32_t)copy);
	struct pa_rec_alloc *rec = calloc(1, len);
	struct pa_stack_copy *sc;

	CHECK(rec != NULL);
	rec->hdr.len = (uint32_t)len;
	rec->hdr.type = PA_REC_ALLOC;
	rec->hdr.flags = PA_ALLOC_STACK;
	rec->seq = 7;
	rec->addr = 0x1000;
	rec->size = 64;
	rec->tid = 42;
	rec->nframes = fp_frames;
	for (uint32_t i = 0; i < fp_frames; i++)
		rec->frames[i] = i ? 0x5000 + i : cap.pc;
	sc = (struct pa_stack_copy *)&rec->frames[fp_frames];
	sc->arch = PA_ARCH_EM;
	sc->size = (uint32_t)copy;
	sc->regs_mask = cap.mask;
	memcpy(sc->regs, cap.regs, sizeof(sc->regs));
	memcpy(sc->stack, cap.stack, copy < cap.size ? copy : cap.size);
	return rec;
}

static void test_stackwalk(void)
{
	struct stackwalk *sw = stackwalk__new(5);
	struct stackwalk_stats st;
	struct mapping_set ms;
	struct pa_rec_alloc *rec, plain = { 0 };
	const struct pa_rec_alloc *out;

	CHECK(sw != NULL);
	CHECK(!stackwalk__new(0) && errno == EINVAL);
	/* the mappings of this process: the program, opened by path */
	mapping_set__init(&ms, getpid());
	CHECK_EQ_INT(mapping_set__refresh(&ms), 0);

	/* a record without a copy passes through untouched */
	plain.hdr.type = PA_REC_ALLOC;
	plain.nframes = 0;
	CHECK(stackwalk__record(sw, &ms, &plain) == &plain);

	/* with a copy: the unwound frames (7 of them), cut at 5 with the
	 * mark in the last place */
	rec = agent_record(cap.size, 1);
	out = stackwalk__record(sw, &ms, rec);
	CHECK(out != rec);
	CHECK(!(out->hdr.flags & PA_ALLOC_STACK));
	CHECK_EQ_INT(out->nframes, 5);
	CHECK(out->frames[0] == cap.pc);
	CHECK(out->frames[1] == ret_leafcall);
	CHECK(out->frames[2] == ret_mid);
	CHECK(out->frames[3] == ret_top);
	CHECK(out->frames[4] == STACKWALK_TRUNCATED);
	CHECK(out->hdr.flags & PA_ALLOC_TRUNCATED);
	CHECK_EQ_INT(out->hdr.len, pa_alloc_rec_size(5, 0, 0));
	CHECK_EQ_INT(out->seq, 7);
	CHECK_EQ_INT(out->tid, 42);
	free(rec);

	/* a copy that does not match its own first frame: the agent's
	 * frame-pointer frames are kept */
	rec = agent_record(cap.size, 3);
	((struct pa_stack_copy *)&rec->frames[3])->regs[PA_DWARF_RA] ^= 1;
	out = stackwalk__record(sw, &ms, rec);
	CHECK_EQ_INT(out->nframes, 3);
	CHECK(out->frames[1] == 0x5001 && out->frames[2] == 0x5002);
	free(rec);

	/* frame-pointer frames cut at max_frames get the mark too */
	rec = agent_record(0, 5);
	rec->hdr.flags = PA_ALLOC_TRUNCATED;
	out = stackwalk__record(sw, &ms, rec);
	CHECK_EQ_INT(out->nframes, 5);
	CHECK(out->frames[3] == 0x5003);
	CHECK(out->frames[4] == STACKWALK_TRUNCATED);
	free(rec);

	stackwalk__stats(sw, &st);
	CHECK_EQ_INT(st.records, 2);
	CHECK_EQ_INT(st.unwound, 1);
	CHECK_EQ_INT(st.cut, 1);
	CHECK_EQ_INT(st.failed, 1);
	mapping_set__fini(&ms);
	stackwalk__free(sw);
}

int main(void)
{
	struct unwinder *u;

	top();
	u = unwinder__new(PA_ARCH_EM);
	CHECK(u != NULL);
	dl_iterate_phdr(add_one, u);
	/* the same modules again: no-ops */
	dl_iterate_phdr(add_one, u);
	CHECK(unwinder__covers(u, cap.pc));
	CHECK(!unwinder__covers(u, 0x1000));
	test_own_stack(u);
	test_limits(u);
	test_garbage(u);
	unwinder__free(u);
	test_stackwalk();
	CHECK_SUMMARY("test-unwind");
	return 0;
}
