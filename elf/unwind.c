/* SPDX-License-Identifier: MIT */
/*
 * unwind.c - DWARF unwinding of a copied stack, with libdwfl.
 *
 * libdwfl's unwinder (dwfl_attach_state, dwfl_getthread_frames) walks a
 * thread's frames with the CFI of the module each pc falls in: .eh_frame
 * first, then .debug_frame (from a separate debug file if the caller gave
 * one), then the architecture's frame-pointer guess.  It gets the thread
 * from callbacks, which here serve one "thread": the sample being unwound.
 * Its initial registers are those the caller knows (the rest stay unset,
 * and a rule that needs one ends the unwind); its memory is the stack
 * copy, or for an address in a module the bytes of that module's file
 * (read-only data, as a PLT's CFI may want); anything else is unreadable.
 * libdwfl ends an unwind whose return address it cannot read as if it had
 * reached the outermost frame; a failed read makes it a cut one here.
 *
 * The pc handed in is a return address.  libdwfl takes the first frame's
 * pc as exact (an "activation"), so it gets pc - 1, inside the call, whose
 * CFI row is the one in force at the call; frames[0] is still reported as
 * the return address, like every later frame.  A frame a signal
 * interrupted is reported as its pc + 1, so that every frame's byte
 * before is in its instruction (the agent's walk does the same).
 *
 * Modules are added with dwfl_report_elf() at their bias, on a dup of the
 * caller's fd, between dwfl_report_begin_add() and dwfl_report_end(), at
 * any time; libdwfl parses each module's CFI once, on first use, and keeps
 * it for the life of the unwinder.  The thread state is attached once, at
 * creation, with an ELF header of our own for the architecture, so no
 * module needs to be there first and none is kept alive for it.
 *
 * Nothing in the copy is trusted: libdwfl reads it only through
 * memory_read, which checks bounds; the number of frames is capped; a
 * cycle in garbage CFA values only repeats frames up to the cap.  Not
 * thread-safe (nor is a Dwfl).
 */
#include "elf/unwind.h"

#include <elf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "arch/arch.h"
#include "elf/array.h"

struct uw_module {
	uint64_t start, end;	/* the caller's range, widened to libdwfl's */
	uint64_t bias;
	dev_t dev;
	ino_t ino;
	int debug_fd;		/* -1: none */
};

struct unwinder {
	Dwfl *dwfl;
	Elf *arch_elf;			/* our own header, for the backend */
	Elf64_Ehdr ehdr;
	uint16_t arch;

	struct uw_module **modules;
	size_t nmodules, modules_cap;

	/* the sample being unwound */
	const struct unwind_regs *cur;
	uint64_t *frames;
	unsigned int nframes, max;
	bool read_failed;		/* memory outside copy and modules */
	bool past_copy;			/* ... above the copy's end */
};

/* x86_64: rax..r15, then the return address column; aarch64: x0..x30,
 * sp, then the pc (libdwfl's numbering for both) */
static const struct unwind_arch arches[] = {
	{ .em = EM_X86_64, .nregs = 16, .sp = 7, .pc = 16 },
	{ .em = EM_AARCH64, .nregs = 32, .sp = 31, .pc = 32 },
};

const struct unwind_arch *unwind__arch(uint16_t em)
{
	for (size_t i = 0; i < sizeof(arches) / sizeof(arches[0]); i++)
		if (arches[i].em == em)
			return &arches[i];
	return NULL;
}

static int find_debuginfo(Dwfl_Module *mod, void **userdata,
			  const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	const struct uw_module *m = *userdata;

	(void)mod;
	(void)modname;
	(void)base;
	(void)file_name;
	(void)debuglink_file;
	(void)debuglink_crc;
	*debuginfo_file_name = NULL;
	if (!m || m->debug_fd < 0)
		return -1;
	return fcntl(m->debug_fd, F_DUPFD_CLOEXEC, 0);
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* ---- the one thread ---------------------------------------------------- */

static pid_t next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
	struct unwinder *u = dwfl_arg;

	(void)dwfl;
	if (*thread_argp || !u->cur)
		return 0;
	*thread_argp = u;
	return 1;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg,
		       void **thread_argp)
{
	struct unwinder *u = dwfl_arg;

	(void)dwfl;
	*thread_argp = u;
	return tid == 1 && u->cur;
}

/* 8 bytes at vaddr of a module's file, from the PT_LOAD holding them. */
static bool read_module(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, addr);
	GElf_Addr bias;
	Elf *elf;
	size_t phnum, size;
	char *raw;

	if (!mod || !(elf = dwfl_module_getelf(mod, &bias)) ||
	    elf_getphdrnum(elf, &phnum) || !(raw = elf_rawfile(elf, &size)))
		return false;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		uint64_t v = addr - bias;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    v < ph.p_vaddr || ph.p_filesz < 8 ||
		    v - ph.p_vaddr > ph.p_filesz - 8)
			continue;
		if (ph.p_offset > size || v - ph.p_vaddr > size - ph.p_offset ||
		    size - ph.p_offset - (v - ph.p_vaddr) < 8)
			return false;
		memcpy(result, raw + ph.p_offset + (v - ph.p_vaddr), 8);
		return true;
	}
	return false;
}

/*
 * aarch64's pointer authentication: code built with -mbranch-protection
 * signs x30 before it saves it, putting a code in the bits above the
 * address (54..48 with a 48-bit address space, and the top byte for
 * instruction addresses), which libdwfl (0.188) does not strip.  A word of
 * the copy that is a module's code address once those bits are cleared is
 * taken as a signed return address and given back stripped; no other word
 * is changed (bit 55, which says user or kernel, is never part of it).
 * Which bits hold the code is the kernel's choice (its NT_ARM_PAC_MASK):
 * on aarch64 the processor says, as it strips an address with every such
 * bit set (xpaclri); elsewhere, or on a processor without PAC (a core
 * from another machine), the bits of a 48-bit address space.
 */
#define AARCH64_PAC_BITS	0xff7f000000000000ull

static uint64_t pac_mask(void)
{
	uint64_t m = 0;
#ifdef __aarch64__
	uint64_t all = AARCH64_PAC_BITS | 0xffffffffffffull;

	m = all & ~pa_arch_strip_ra(all);	/* one instruction */
#endif
	return m ? m : AARCH64_PAC_BITS;
}

static Dwarf_Word unsigned_ra(struct unwinder *u, Dwarf_Word v)
{
	uint64_t m;

	if (u->arch != EM_AARCH64)
		return v;
	m = pac_mask();
	if ((v & m) && unwinder__covers(u, v & ~m))
		return v & ~m;
	return v;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result,
			void *dwfl_arg)
{
	struct unwinder *u = dwfl_arg;
	const struct unwind_regs *r = u->cur;

	if (r && r->stack_size >= 8 && addr >= r->stack_start &&
	    addr - r->stack_start <= r->stack_size - 8) {
		memcpy(result, r->stack + (addr - r->stack_start), 8);
		*result = unsigned_ra(u, *result);
		return true;
	}
	if (read_module(dwfl, addr, result))
		return true;
	u->read_failed = true;
	if (r && addr >= r->stack_start + r->stack_size)
		u->past_copy = true;
	return false;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	struct unwinder *u = thread_arg;
	const struct unwind_regs *r = u->cur;
	const struct unwind_arch *a = unwind__arch(u->arch);
	unsigned int n = r->nregs < a->nregs ? r->nregs : a->nregs;

	for (unsigned int i = 0; i < n; i++) {
		Dwarf_Word v = r->regs[i];

		if ((r->mask >> i & 1) &&
		    !dwfl_thread_state_registers(thread, (int)i, 1, &v))
			return false;
	}
	dwfl_thread_state_register_pc(thread, r->pc - 1);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* ---- life -------------------------------------------------------------- */

struct unwinder *unwinder__new(uint16_t arch)
{
	struct unwinder *u;

	if (!unwind__arch(arch)) {
		errno = EAFNOSUPPORT;
		return NULL;
	}
	elf_version(EV_CURRENT);
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->arch = arch;
	memcpy(u->ehdr.e_ident, ELFMAG, SELFMAG);
	u->ehdr.e_ident[EI_CLASS] = ELFCLASS64;
	u->ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
	u->ehdr.e_ident[EI_VERSION] = EV_CURRENT;
	u->ehdr.e_type = ET_CORE;
	u->ehdr.e_machine = arch;
	u->ehdr.e_version = EV_CURRENT;
	u->ehdr.e_ehsize = sizeof(u->ehdr);
	u->arch_elf = elf_memory((char *)&u->ehdr, sizeof(u->ehdr));
	u->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!u->arch_elf || !u->dwfl ||
	    !dwfl_attach_state(u->dwfl, u->arch_elf, 1, &thread_callbacks, u)) {
		unwinder__free(u);
		errno = ENOMEM;
		return NULL;
	}
	return u;
}

void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	if (u->dwfl)
		dwfl_end(u->dwfl);
	if (u->arch_elf)
		elf_end(u->arch_elf);
	for (size_t i = 0; i < u->nmodules; i++) {
		if (u->modules[i]->debug_fd >= 0)
			close(u->modules[i]->debug_fd);
		free(u->modules[i]);
	}
	free(u->modules);
	free(u);
}

int unwinder__add_module(struct unwinder *u, const char *name, int fd,
			 int debug_fd, uint64_t start, uint64_t end,
			 uint64_t bias)
{
	struct uw_module *m;
	Dwarf_Addr low, high;
	Dwfl_Module *mod;
	void **userdata;
	struct stat st;
	int dwfl_fd, err;

	if (!u || !name || fd < 0 || start >= end)
		return -EINVAL;
	if (fstat(fd, &st) < 0)
		return -errno;
	for (size_t i = 0; i < u->nmodules; i++) {
		const struct uw_module *k = u->modules[i];

		if (start >= k->end || k->start >= end)
			continue;
		if (k->bias == bias && k->dev == st.st_dev &&
		    k->ino == st.st_ino)
			return 0;
		return -EEXIST;
	}
	err = array__grow((void **)&u->modules, &u->modules_cap,
			  u->nmodules + 1, sizeof(*u->modules));
	if (err)
		return err;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->debug_fd = -1;
	if (debug_fd >= 0 && debug_fd != fd) {
		m->debug_fd = fcntl(debug_fd, F_DUPFD_CLOEXEC, 0);
		if (m->debug_fd < 0) {
			err = -errno;
			goto out_free;
		}
	}
	dwfl_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dwfl_fd < 0) {
		err = -errno;
		goto out_close_debug;
	}
	dwfl_report_begin_add(u->dwfl);
	/* add_p_vaddr = true: base is the load bias (see libdwfl.h) */
	mod = dwfl_report_elf(u->dwfl, name, name, dwfl_fd, bias, true);
	dwfl_report_end(u->dwfl, NULL, NULL);
	if (!mod) {
		close(dwfl_fd);	/* taken only on success */
		err = -ENOEXEC;
		goto out_close_debug;
	}
	dwfl_module_info(mod, &userdata, &low, &high, NULL, NULL, NULL, NULL);
	*userdata = m;
	m->start = low < start ? low : start;
	m->end = high > end ? high : end;
	m->bias = bias;
	m->dev = st.st_dev;
	m->ino = st.st_ino;
	u->modules[u->nmodules++] = m;
	return 0;

out_close_debug:
	if (m->debug_fd >= 0)
		close(m->debug_fd);
out_free:
	free(m);
	return err;
}

bool unwinder__covers(struct unwinder *u, uint64_t addr)
{
	for (size_t i = 0; i < u->nmodules; i++)
		if (addr >= u->modules[i]->start && addr < u->modules[i]->end)
			return true;
	return false;
}

/* ---- unwinding ----------------------------------------------------------- */

static int on_frame(Dwfl_Frame *frame, void *arg)
{
	struct unwinder *u = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(frame, &pc, &activation))
		return DWARF_CB_ABORT;
	if (u->nframes == u->max)
		return DWARF_CB_ABORT;
	/* the first frame is the call site we gave (pc - 1): report the
	 * return address, like the others; a frame a signal interrupted
	 * (an activation after the first) as pc + 1, as the agent's walk
	 * does, so that the byte before is in its instruction */
	u->frames[u->nframes] = !u->nframes ? u->cur->pc :
				activation ? pc + 1 : pc;
	u->nframes++;
	return DWARF_CB_OK;
}

int unwinder__unwind(struct unwinder *u, const struct unwind_regs *regs,
		     uint64_t *frames, unsigned int max, enum unwind_end *end)
{
	int rc;

	*end = UNWIND_CUT;
	if (!u || !regs || regs->arch != u->arch || !max || regs->pc < 2 ||
	    (regs->stack_size && !regs->stack))
		return -EINVAL;
	u->cur = regs;
	u->frames = frames;
	u->nframes = 0;
	u->max = max;
	u->read_failed = false;
	u->past_copy = false;
	rc = dwfl_getthread_frames(u->dwfl, 1, on_frame, u);
	u->cur = NULL;
	/* libdwfl takes a return address it could not read for the end of
	 * the stack: that is the copy running out, not the outermost frame */
	if (rc == 0 && !u->read_failed)
		*end = UNWIND_OUTERMOST;
	else if (rc == DWARF_CB_ABORT && u->nframes == max)
		*end = UNWIND_MAX;
	if (!u->nframes) {
		frames[0] = regs->pc;
		return 1;
	}
	return (int)u->nframes;
}

bool unwinder__past_copy(const struct unwinder *u)
{
	return u->past_copy;
}

/* The size of this process's vDSO image (its ELF, section headers
 * included, pages rounded), and the bias its first load segment wants at
 * a mapping at 0; 0 if it is not an image this can read. */
static uint64_t own_vdso_size(const uint8_t *own, uint64_t *load_off)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)own;
	const Elf64_Phdr *ph;
	uint64_t top, load = UINT64_MAX;

	if (!own || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_phentsize != sizeof(*ph) || eh->e_phoff > (1u << 20) ||
	    eh->e_shoff > (1u << 20) || eh->e_phnum > 64)
		return 0;
	top = eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize;
	ph = (const Elf64_Phdr *)(own + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD || ph[i].p_offset > (1u << 20) ||
		    ph[i].p_filesz > (1u << 20))
			continue;
		if (ph[i].p_offset + ph[i].p_filesz > top)
			top = ph[i].p_offset + ph[i].p_filesz;
		if (load == UINT64_MAX)
			load = ph[i].p_vaddr - ph[i].p_offset;
	}
	if (load == UINT64_MAX || top > (1u << 20))
		return 0;
	*load_off = load;
	return (top + 4095) & ~(uint64_t)4095;
}

bool unwinder__vdso_is_own(pid_t pid, uint64_t start, uint64_t end)
{
	const uint8_t *own = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
	uint64_t size, load;
	uint8_t *theirs;
	bool same;

	size = own_vdso_size(own, &load);
	if (!size || start >= end || end - start != size)
		return false;
	theirs = malloc(size);
	if (!theirs)
		return false;
	{
		struct iovec local = { theirs, size };
		struct iovec remote = { (void *)(uintptr_t)start, size };

		same = process_vm_readv(pid, &local, 1, &remote, 1, 0) ==
			       (ssize_t)size &&
		       !memcmp(theirs, own, size);
	}
	free(theirs);
	return same;
}

int unwinder__add_vdso(struct unwinder *u, uint64_t start, uint64_t end)
{
	const uint8_t *own = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
	uint64_t size, load = 0;
	int fd, err;

	size = own_vdso_size(own, &load);
	if (!size || start >= end || end - start != size)
		return -ENOENT;
	fd = memfd_create("pprof-alloc-vdso", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, own, size) != (ssize_t)size) {
		err = -EIO;
		goto out_close;
	}
	err = unwinder__add_module(u, "[vdso]", fd, -1, start, end,
				   start - load);
out_close:
	close(fd);
	return err;
}
