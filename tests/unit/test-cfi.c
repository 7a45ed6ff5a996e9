// SPDX-License-Identifier: MIT
/*
 * test-cfi.c - the agent's unwind tables (agent/cfi.c) against libdw's
 * reading of the same .eh_frame.
 *
 * Every module this test has loaded (libc, ld.so, libdw, libelf, libz,
 * liblzma, libzstd, libbz2...: Debian's builds, without frame pointers)
 * gets a table built from its mapped .eh_frame_hdr, as the agent builds
 * it; then at every row's address, at the byte before each row boundary,
 * and in the middle of each row, the row's rule is compared with the frame
 * libdw computes from the module's file (dwarf_cfi_addrframe):
 *   - a CFI_FRAME row: libdw's CFA is the same register plus the same
 *     offset, the return address is at CFA - 8, and rbp is the same value
 *     or saved at the same offset (CFI_RBP_LOST: some other rule);
 *   - a CFI_PLT row: libdw's CFA is an expression starting rsp + offset;
 *   - CFI_OUTERMOST: the return address is undefined;
 *   - CFI_NONE: libdw has no frame there;
 *   - CFI_OPAQUE: libdw has one this table cannot hold (a CFA expression,
 *     a CFA in another register, an odd RA rule).
 * Any disagreement fails with the module, the address and both rules.
 * The table must also be useful: of the addresses in libc that libdw has
 * a frame for, at most 5% may be CFI_OPAQUE.  A build whose cancel flag is set
 * (the program exits) gives no rows and says it was cancelled.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "agent/cfi.h"
#include "check.h"
#include "pa_clock.h"

struct totals {
	unsigned long modules, rows, looked, none, libc_looked, libc_none;
	unsigned long disagree;
	unsigned long drap;	/* CFI_DRAP rows looked at */
};

static const char *kind_name(unsigned int k)
{
	static const char *const names[] = { "none", "frame", "plt",
					     "signal", "outermost",
					     "opaque", "drap" };

	return k < 7 ? names[k] : "?";
}

/* What libdw says at pc (file address). */
struct dw_rule {
	bool found;
	int cfa_reg;		/* -1: an expression */
	int64_t cfa_off;
	bool cfa_plt;		/* expression starting DW_OP_breg7 */
	bool cfa_drap;		/* DW_OP_breg6 N; DW_OP_deref */
	int ra;			/* 0 at CFA-8, 1 undefined, 2 other */
	int rbp;		/* 0 same, 1 at offset, 2 other, 3 at rbp */
	int64_t rbp_off;
};

static void dw_rule_at(Dwarf_CFI *cfi, uint64_t pc, struct dw_rule *r)
{
	Dwarf_Frame *frame = NULL;
	Dwarf_Op *ops, ops_mem[3];
	size_t nops;

	memset(r, 0, sizeof(*r));
	if (dwarf_cfi_addrframe(cfi, pc, &frame) || !frame)
		return;
	r->found = true;
	r->cfa_reg = -1;
	if (!dwarf_frame_cfa(frame, &ops, &nops) && nops == 1 &&
	    ops[0].atom == DW_OP_bregx) {
		r->cfa_reg = (int)ops[0].number;
		r->cfa_off = (int64_t)ops[0].number2;
	} else if (nops >= 1 && ops[0].atom == DW_OP_breg7) {
		r->cfa_plt = true;
		r->cfa_off = (int64_t)ops[0].number;
	} else if (nops == 2 && ops[0].atom == DW_OP_breg6 &&
		   ops[1].atom == DW_OP_deref) {
		r->cfa_drap = true;
		r->cfa_off = (int64_t)ops[0].number;
	}
	r->ra = 2;
	if (!dwarf_frame_register(frame, 16, ops_mem, &ops, &nops)) {
		if (!nops && ops)	/* libdw: undefined */
			r->ra = 1;
		else if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
			 ops[1].atom == DW_OP_plus_uconst &&
			 (int64_t)ops[1].number == -8)
			r->ra = 0;
	}
	r->rbp = 2;
	if (!dwarf_frame_register(frame, 6, ops_mem, &ops, &nops)) {
		if (!nops && !ops)	/* libdw: the same value */
			r->rbp = 0;
		else if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
			 ops[1].atom == DW_OP_plus_uconst) {
			r->rbp = 1;
			r->rbp_off = (int64_t)ops[1].number;
		} else if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
			   ops[1].atom == DW_OP_breg6 && ops[1].number == 0) {
			/* DW_CFA_expression (the CFA pushed first, as DWARF
			 * says): saved where rbp points */
			r->rbp = 3;
		}
	}
	free(frame);
}

/* Does the row agree with libdw's rule?  why: what differs. */
static bool agrees(const struct cfi_row *row, const struct dw_rule *d,
		   const char **why)
{
	switch (row->kind) {
	case CFI_NONE:
		/* no FDE: right when libdw has nothing */
		return !d->found ? true : (*why = "libdw has a frame", false);
	case CFI_OPAQUE:
		/* an FDE, with nothing a table holds */
		if (!d->found)
			return *why = "libdw has no frame", false;
		if (d->ra == 1)
			return *why = "libdw: outermost", false;
		if (d->cfa_reg == 7 || d->cfa_reg == 6) {
			if (d->ra == 0)
				return *why = "libdw has a plain rule", false;
		}
		return true;
	case CFI_FRAME:
		if (!d->found)
			return *why = "libdw has no frame", false;
		if (d->cfa_reg != (row->cfa_reg == CFI_RSP ? 7 : 6) ||
		    d->cfa_off != row->cfa_off)
			return *why = "CFA", false;
		if (d->ra != 0)
			return *why = "return address", false;
		if (row->rbp_off == CFI_RBP_SAME)
			return d->rbp == 0 ? true : (*why = "rbp same", false);
		if (row->rbp_off == CFI_RBP_LOST)
			return d->rbp == 2 || d->rbp == 3 ||
			       (d->rbp == 1 && (d->rbp_off >= 0 ||
						d->rbp_off <= INT16_MIN)) ?
				       true : (*why = "rbp lost", false);
		return d->rbp == 1 && d->rbp_off == row->rbp_off ?
			       true : (*why = "rbp offset", false);
	case CFI_PLT:
		return d->found && d->cfa_plt && d->cfa_off == row->cfa_off ?
			       true : (*why = "PLT", false);
	case CFI_OUTERMOST:
		return d->found && d->ra == 1 ? true :
						(*why = "outermost", false);
	case CFI_SIGNAL:
		return d->found ? true : (*why = "signal", false);
	case CFI_DRAP:
		return d->found && d->cfa_drap && d->cfa_off == row->cfa_off &&
			       d->ra == 0 && d->rbp == 3 ?
			       true : (*why = "DRAP", false);
	}
	return *why = "kind", false;
}

static void compare(const char *name, struct totals *t, Dwarf_CFI *cfi,
		    const struct cfi_row *rows, size_t n, uintptr_t text_lo,
		    uintptr_t text_hi, uintptr_t bias, bool is_libc)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t lo = rows[i].pc;
		uint64_t hi = i + 1 < n ? rows[i + 1].pc : lo + 1;
		uint64_t pcs[3] = { lo, lo + (hi - lo) / 2, hi - 1 };
		int k;

		for (k = 0; k < 3; k++) {
			const struct cfi_row *row = cfi__find(rows, n,
							      (uint32_t)pcs[k]);
			struct dw_rule d;
			const char *why = "";

			if (pcs[k] + bias < text_lo || pcs[k] + bias >= text_hi)
				continue;
			CHECK(row == &rows[i]);
			dw_rule_at(cfi, pcs[k], &d);
			if (!d.found && row->kind == CFI_NONE)
				continue;	/* between functions */
			t->looked++;
			if (row->kind == CFI_NONE || row->kind == CFI_OPAQUE)
				t->none++;
			t->drap += row->kind == CFI_DRAP;
			if (is_libc) {
				t->libc_looked++;
				t->libc_none += row->kind == CFI_NONE ||
						row->kind == CFI_OPAQUE;
			}
			if (agrees(row, &d, &why))
				continue;
			t->disagree++;
			if (t->disagree <= 20)
				fprintf(stderr, "%s: %#" PRIx64 ": %s: table %s cfa %s%+d rbp %d; libdw found %d cfa reg %d%+" PRId64 " plt %d ra %d rbp %d%+" PRId64 "\n",
					name, pcs[k], why,
					kind_name(row->kind),
					row->cfa_reg == CFI_RSP ? "rsp" : "rbp",
					row->cfa_off, row->rbp_off, d.found,
					d.cfa_reg, d.cfa_off, d.cfa_plt, d.ra,
					d.rbp, d.rbp_off);
		}
	}
}

static int one_module(struct dl_phdr_info *info, size_t size, void *data)
{
	struct totals *t = data;
	struct cfi_source src;
	struct cfi_stats st;
	struct cfi_row *rows;
	size_t max, n, bytes;
	const char *path = info->dlpi_name;
	uint64_t t0;
	Dwarf_CFI *cfi;
	Elf *elf;
	int fd;

	(void)size;
	if (!path[0])
		path = "/proc/self/exe";
	if (strstr(path, "linux-vdso"))
		return 0;
	/* the source as the agent finds it (a module without
	 * .eh_frame_hdr or code has none) */
	if (cfi__source_of(info, &src))
		return 0;
	max = cfi__max_rows(&src);
	CHECK(max > 0);
	bytes = max * sizeof(*rows);
	rows = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(rows != MAP_FAILED);
	t0 = pa_now_ns();
	n = cfi__build(&src, rows, max, &st);
	t0 = pa_now_ns() - t0;
	CHECK(n > 0);
	CHECK(st.fdes > 0);
	CHECK_EQ_INT(st.cancelled, 0);
	for (size_t k = 1; k < n; k++)
		CHECK(rows[k - 1].pc < rows[k].pc);
	{
		/* a build told to stop (the program exits) gives nothing,
		 * and says so; one whose flag is clear, the same table */
		int stop = 1;
		struct cfi_stats cst;
		struct cfi_source csrc = src;

		csrc.cancel = &stop;
		CHECK_EQ_INT(cfi__build(&csrc, rows, max, &cst), 0);
		CHECK_EQ_INT(cst.cancelled, 1);
		stop = 0;
		CHECK_EQ_INT(cfi__build(&csrc, rows, max, &cst), n);
		CHECK_EQ_INT(cst.cancelled, 0);
	}

	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	CHECK(elf != NULL);
	cfi = dwarf_getcfi_elf(elf);
	CHECK(cfi != NULL);
	compare(path, t, cfi, rows, n, src.text_lo, src.text_hi,
		info->dlpi_addr, strstr(path, "libc.so") != NULL);
	printf("  %s: %u FDEs (%u unreadable), %zu rows (%zu KiB), %u without a rule; built in %.2f ms\n",
	       path, st.fdes, st.bad_fdes, n, n * sizeof(*rows) / 1024,
	       st.none_rows, (double)t0 / PA_NSEC_PER_MSEC);
	t->modules++;
	t->rows += n;
	dwarf_cfi_end(cfi);
	elf_end(elf);
	close(fd);
	munmap(rows, bytes);
	return 0;
}

/* Garbage .eh_frame_hdr and .eh_frame: no crash, no read outside. */
static void hostile_input(void)
{
	static uint8_t buf[4096];
	struct cfi_row rows[256];
	struct cfi_stats st;
	struct cfi_source src = {
		.hdr = buf, .lo = (uintptr_t)buf,
		.hi = (uintptr_t)buf + sizeof(buf), .bias = 0,
		.text_lo = 0, .text_hi = UINTPTR_MAX,
	};
	unsigned int seed = 1;
	int round;

	for (round = 0; round < 2000; round++) {
		size_t i;

		for (i = 0; i < sizeof(buf); i++) {
			seed = seed * 1103515245 + 12345;
			buf[i] = (uint8_t)(seed >> 16);
		}
		/* a plausible header, so the FDE walk is reached */
		buf[0] = 1;
		buf[1] = 0x1b;
		buf[2] = 0x03;
		buf[3] = 0x3b;
		memcpy(buf + 8, &(uint32_t){ 64 }, 4);
		(void)cfi__build(&src, rows, 256, &st);
		CHECK(st.fdes <= 64);
	}
	/* too small for its own header */
	src.hi = src.lo + 6;
	CHECK_EQ_INT(cfi__build(&src, rows, 256, &st), 0);
	CHECK_EQ_INT(cfi__max_rows(&src), 0);
}

/*
 * An .eh_frame of three FDEs, made here: the middle one's CIE has an
 * augmentation no one knows ("zQ"), so it cannot be read.  Its code has
 * tables all the same: it must be CFI_OPAQUE (the walk ends there), not
 * CFI_NONE (the walk would step over it by a frame record).
 */
static size_t put_cie(uint8_t *p, const char *aug)
{
	/* version 1, aug, code 1, data -8, RA 16, aug data: R = absptr;
	 * def_cfa rsp 8, offset r16 at cfa-8 */
	uint8_t body[32] = { 0, 0, 0, 0, 1 };
	size_t n = 5, len;

	memcpy(body + n, aug, strlen(aug) + 1);
	n += strlen(aug) + 1;
	body[n++] = 1;
	body[n++] = 0x78;
	body[n++] = 16;
	body[n++] = 1;
	body[n++] = 0x00;
	body[n++] = 0x0c, body[n++] = 7, body[n++] = 8;
	body[n++] = 0x90, body[n++] = 1;
	len = (n + 4 + 7) & ~(size_t)7;	/* nops to an 8-byte multiple */
	memset(p, 0, len);
	memcpy(p, &(uint32_t){ (uint32_t)(len - 4) }, 4);
	memcpy(p + 4, body, n);
	return len;
}

static size_t put_fde(uint8_t *p, const uint8_t *cie, uint64_t pc,
		      uint64_t range)
{
	/* CIE pointer, pc (absptr), range, no aug data, nops */
	memcpy(p, &(uint32_t){ 4 + 8 + 8 + 1 + 3 }, 4);
	memcpy(p + 4, &(uint32_t){ (uint32_t)(p + 4 - cie) }, 4);
	memcpy(p + 8, &pc, 8);
	memcpy(p + 16, &range, 8);
	memset(p + 24, 0, 4);
	return 28;
}

/* The kind of the row for pc, or -1 if none holds it. */
static int kind_at(const struct cfi_row *rows, size_t n, uint32_t pc)
{
	const struct cfi_row *r = cfi__find(rows, n, pc);

	return r ? r->kind : -1;
}

static void unreadable_fde(void)
{
	static uint8_t buf[512] __attribute__((aligned(8)));
	uintptr_t base = (uintptr_t)buf;
	struct cfi_source src = {
		.hdr = buf, .lo = base, .hi = base + sizeof(buf), .bias = base,
		.text_lo = base + 0x1000, .text_hi = base + 0x2000,
	};
	struct cfi_row rows[32];
	struct cfi_stats st;
	uint8_t *at = buf + 64, *good, *bad;
	uint32_t fdes[3];
	size_t n, i;

	memset(buf, 0, sizeof(buf));
	good = at;
	at += put_cie(at, "zR");
	bad = at;
	at += put_cie(at, "zQ");
	for (i = 0; i < 3; i++) {
		fdes[i] = (uint32_t)(at - buf);
		at += put_fde(at, i == 1 ? bad : good,
			      base + 0x1000 + 0x100 * i, 0x100);
	}
	/* .eh_frame_hdr: version 1, eh_frame_ptr pcrel sdata4, count
	 * udata4, table datarel sdata4 */
	buf[0] = 1, buf[1] = 0x1b, buf[2] = 0x03, buf[3] = 0x3b;
	memcpy(buf + 8, &(uint32_t){ 3 }, 4);
	for (i = 0; i < 3; i++) {
		memcpy(buf + 12 + 8 * i, &(int32_t){ (int32_t)(0x1000 + 0x100 * i) }, 4);
		memcpy(buf + 16 + 8 * i, &fdes[i], 4);
	}
	n = cfi__build(&src, rows, 32, &st);
	CHECK_EQ_INT(st.fdes, 3);
	CHECK_EQ_INT(st.bad_fdes, 1);
	CHECK_EQ_INT(kind_at(rows, n, 0x1080), CFI_FRAME);
	CHECK_EQ_INT(kind_at(rows, n, 0x1180), CFI_OPAQUE);
	CHECK_EQ_INT(kind_at(rows, n, 0x1280), CFI_FRAME);
	CHECK_EQ_INT(kind_at(rows, n, 0x1380), CFI_NONE);
	CHECK_EQ_INT(n, 4);
	printf("  an FDE that cannot be read: %zu rows, %u of %u FDEs unreadable\n",
	       n, st.bad_fdes, st.fdes);
	/* the same unreadable FDE listed again at the first one's start (a
	 * hostile table): the first keeps its rule and its end */
	memcpy(buf + 20, &(int32_t){ 0x1000 }, 4);
	n = cfi__build(&src, rows, 32, &st);
	CHECK_EQ_INT(kind_at(rows, n, 0x1080), CFI_FRAME);
	CHECK_EQ_INT(kind_at(rows, n, 0x1180), CFI_NONE);
	CHECK_EQ_INT(kind_at(rows, n, 0x1280), CFI_FRAME);
}

/* A frame GCC realigns through a DRAP register: its rows are CFI_DRAP,
 * checked against libdw with the rest of this program's */
static __attribute__((noinline, optimize("omit-frame-pointer"))) int
realigned(int n)
{
	_Alignas(64) volatile char big[64];
	volatile char *p = __builtin_alloca((size_t)n);

	p[0] = (char)n;
	big[0] = p[0];
	return big[0];
}

int main(void)
{
	struct totals t = { 0 };

	elf_version(EV_CURRENT);
	CHECK_EQ_INT(realigned(24), 24);
	dl_iterate_phdr(one_module, &t);
	printf("%lu modules, %lu rows; %lu addresses with CFI looked at, %lu without a rule here (libc: %lu of %lu); %lu disagreements\n",
	       t.modules, t.rows, t.looked, t.none, t.libc_none,
	       t.libc_looked, t.disagree);
	CHECK(t.modules >= 5);
	CHECK(t.libc_looked > 10000);
	CHECK_EQ_INT(t.disagree, 0);
	/* this program's realigned(), at least */
	printf("%lu addresses in realigned frames (CFI_DRAP)\n", t.drap);
	CHECK(t.drap > 0);
	CHECK(t.libc_none * 20 <= t.libc_looked);
	hostile_input();
	unreadable_fde();
	CHECK_SUMMARY("test-cfi");
	return 0;
}
