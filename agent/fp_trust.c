// SPDX-License-Identifier: MIT
/*
 * fp_trust.c - which modules keep frame pointers, for --unwind auto.
 *
 * A frame-pointer walk is right only through functions that keep a frame
 * record ({saved rbp, return address} at rbp).  Through one that does not,
 * rbp holds whatever the function left there, and the walk skips frames or
 * follows garbage.  Whole modules are built one way or the other (Debian
 * builds glibc, libstdc++ and its packages without frame pointers), so
 * the agent decides once per module, when it first sees it, and auto
 * mode copies the stack only for samples whose walk went through an
 * untrusted module.
 *
 * The test reads function entries from the module's .eh_frame_hdr search
 * table (PT_GNU_EH_FRAME): up to SAMPLE functions spread evenly over the
 * table.  A function built with frame pointers sets up its frame record
 * at its start (x86_64: "push %rbp" and "mov %rsp,%rbp", after an endbr64,
 * with other instructions scheduled between or before them at -O2;
 * aarch64: x29 set from sp: pa_arch_frame_prologue).
 * Modules built with frame pointers match far more often than those
 * built without (some functions are frameless on purpose even then: crt
 * code, PLT stubs, the agent's own malloc and free), so a module is
 * trusted when at least a quarter of its sampled functions match.  A module with no search table, or one in an encoding not handled here, is
 * untrusted: auto then copies, which costs time, never stack.  So is an
 * address in no module seen yet (see trusted_at).
 *
 * Only memory the loader mapped readable is read (PF_R segments), and
 * every read is checked against the segment: execute-only text would
 * fault.  The table is append-only: an entry, once published by the
 * release store of nranges, never changes, so samplers read it without a
 * lock while a scan (one at a time, modules.c) appends; a module loaded
 * where an unloaded one was gets a newer entry, found first.
 */
#include <elf.h>
#include <link.h>
#include <string.h>
#include "agent.h"

/* .eh_frame_hdr pointer encodings (the LSB's EH_PE_*) */
#define EH_PE_udata4	0x03
#define EH_PE_sdata4	0x0b
#define EH_PE_datarel	0x30

#define MAX_RANGES	1024
#define SAMPLE		64u
#define PROLOGUE_SCAN	36u	/* bytes from the entry where it may be */

struct fp_range {
	uint64_t start, end;
	bool trusted;
};

static struct fp_range ranges[MAX_RANGES];
static unsigned int nranges;
static uint64_t static_tls;	/* the modules' PT_TLS, as at_thread_top
				   (unwind_fp.c) wants it */
static int rescan_wanted;	/* a frame in no known module */

/* The readable PT_LOAD segment holding [addr, addr + len), or NULL. */
static const ElfW(Phdr) *readable(const struct dl_phdr_info *info,
				  uint64_t addr, uint64_t len)
{
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R))
			continue;
		if (addr >= lo && len <= ph->p_memsz &&
		    addr - lo <= ph->p_memsz - len)
			return ph;
	}
	return NULL;
}

/* The function at p sets up a frame record in its first bytes (the
 * architecture's prologue: arch/).  avail: bytes readable. */
static bool has_frame_record(const uint8_t *p, size_t avail)
{
	return pa_arch_frame_prologue(p, avail < PROLOGUE_SCAN ? avail
							     : PROLOGUE_SCAN);
}

/* Bytes readable from addr within the readable segment holding it. */
static size_t readable_from(const struct dl_phdr_info *info, uint64_t addr,
			    bool *exec)
{
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R) ||
		    addr < lo || addr - lo >= ph->p_memsz)
			continue;
		*exec = ph->p_flags & PF_X;
		return (size_t)(ph->p_memsz - (addr - lo));
	}
	return 0;
}

/* Whether the module's functions keep frame records (see above). */
static bool module_keeps_fp(const struct dl_phdr_info *info)
{
	const uint8_t *hdr = NULL;
	uint32_t count, i, checked = 0, matched = 0;
	int j;

	for (j = 0; j < info->dlpi_phnum; j++)
		if (info->dlpi_phdr[j].p_type == PT_GNU_EH_FRAME)
			hdr = (const uint8_t *)(info->dlpi_addr +
						info->dlpi_phdr[j].p_vaddr);
	if (!hdr || !readable(info, (uintptr_t)hdr, 12))
		return false;
	/* version 1; eh_frame_ptr any 4-byte encoding; fde_count udata4;
	 * table datarel sdata4: what binutils, lld and mold all write */
	if (hdr[0] != 1 || (hdr[1] & 0x0f) != EH_PE_sdata4 ||
	    hdr[2] != EH_PE_udata4 ||
	    hdr[3] != (EH_PE_datarel | EH_PE_sdata4))
		return false;
	memcpy(&count, hdr + 8, sizeof(count));
	if (!count || count > (1u << 24) ||
	    !readable(info, (uintptr_t)hdr, 12 + (uint64_t)count * 8))
		return false;
	for (i = 0; i < SAMPLE && i < count; i++) {
		uint32_t k = (uint32_t)((uint64_t)i * count /
					(count < SAMPLE ? count : SAMPLE));
		int32_t rel;
		uint64_t entry;
		size_t avail;
		bool exec = false;

		memcpy(&rel, hdr + 12 + (uint64_t)k * 8, sizeof(rel));
		entry = (uintptr_t)hdr + (uint64_t)(int64_t)rel;
		avail = readable_from(info, entry, &exec);
		if (avail < 4 || !exec)
			continue;
		checked++;
		if (has_frame_record((const uint8_t *)(uintptr_t)entry, avail))
			matched++;
	}
	return checked && matched * 4 >= checked;
}

/* Whether a module's first executable segment is in the table already. */
static bool known_module(const struct dl_phdr_info *info, unsigned int n)
{
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t start = info->dlpi_addr + ph->p_vaddr;
		unsigned int k;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		for (k = n; k-- > 0;)
			if (ranges[k].start == start)
				return true;
		return false;
	}
	return true;	/* no code: nothing to count twice */
}

void fp_trust__note(const struct dl_phdr_info *info)
{
	unsigned int n = __atomic_load_n(&nranges, __ATOMIC_RELAXED);
	bool decided = false, trusted = false;
	int i;

	/* once per module: its first segment is new to the table below */
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_TLS && !known_module(info, n))
			__atomic_add_fetch(&static_tls, ph->p_memsz +
					   (ph->p_align > 1 ? ph->p_align : 0),
					   __ATOMIC_RELAXED);
	}

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t start = info->dlpi_addr + ph->p_vaddr;
		uint64_t end = start + ph->p_memsz;
		unsigned int k;
		bool known = false;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		for (k = n; k-- > 0;)
			if (ranges[k].start < end && start < ranges[k].end) {
				known = ranges[k].start == start &&
					ranges[k].end == end;
				break;
			}
		if (known)
			continue;
		if (n == MAX_RANGES)
			return;
		if (!decided) {
			trusted = module_keeps_fp(info);
			decided = true;
		}
		ranges[n].start = start;
		ranges[n].end = end;
		ranges[n].trusted = trusted;
		__atomic_store_n(&nranges, ++n, __ATOMIC_RELEASE);
	}
}

/*
 * An address in no module seen yet is untrusted - a module that glibc
 * loaded itself (NSS, gconv, libgcc_s) reaches no dlopen hook - and asks
 * for a scan (modules__after_sample); code in no module at all (a JIT's)
 * stays unknown, and its samples are copied: the unwinder does what it can.
 */
static bool trusted_at(uint64_t pc, unsigned int n)
{
	unsigned int k;

	for (k = n; k-- > 0;)
		if (pc >= ranges[k].start && pc < ranges[k].end)
			return ranges[k].trusted;
	if (n < MAX_RANGES)
		__atomic_store_n(&rescan_wanted, 1, __ATOMIC_RELAXED);
	return false;
}

bool fp_trust__rescan_wanted(void)
{
	return __atomic_load_n(&rescan_wanted, __ATOMIC_RELAXED);
}

bool fp_trust__take_rescan(void)
{
	return __atomic_load_n(&rescan_wanted, __ATOMIC_RELAXED) &&
	       __atomic_exchange_n(&rescan_wanted, 0, __ATOMIC_ACQ_REL);
}

uint64_t fp_trust__static_tls(void)
{
	return __atomic_load_n(&static_tls, __ATOMIC_RELAXED);
}

/*
 * frames[i] is a return address into the function whose frame record
 * gave frames[i + 1]; so every frame whose record the walk followed must be
 * in a trusted module - up to the thread's entry: the frames read at the
 * top of its stack are glibc's (__libc_start_call_main, start_thread), in
 * a libc without frame pointers, below every complete walk of a program
 * with them, and what the walk finds past them matters to nobody.  A walk
 * that never got to the top was cut: by a frameless function's rbp, or
 * garbage.  A walk cut at max_frames gains nothing from a copy: the
 * unwind stops there too.
 */
bool fp_trust__walk_needs_copy(const uint64_t *frames, unsigned int n,
			       const struct fp_walk *walk)
{
	unsigned int known = __atomic_load_n(&nranges, __ATOMIC_ACQUIRE);
	unsigned int i, end;

	if (!n || (walk->top >= n && !walk->truncated))
		return true;
	end = walk->top < n ? walk->top : n - 1;
	for (i = 0; i < end; i++)
		if (!trusted_at(frames[i], known))
			return true;
	return false;
}
