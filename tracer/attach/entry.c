// SPDX-License-Identifier: MIT
/*
 * entry.c - patch the entries of an allocator linked into the program.
 *
 * A program that defines malloc itself, or jemalloc's je_ or Rust's _rjem_
 * functions, calls them directly: neither LD_PRELOAD nor a GOT slot sees
 * those calls.  Each such function (its symbol in the program's .symtab or
 * .dynsym, with its size) gets its first instructions replaced by a jump
 * to a slot of the agent's entry page (agent/entry.c), which holds a jump
 * to the agent's hook for it, the original counted (the hook calls that),
 * and the displaced instructions relocated, with a jump back
 * (entry_machine.h; one file a processor writes the code).
 *
 * Instructions are read from the program's file (never from memory the
 * target could have changed).  A function is refused, with one reason and
 * untouched, when it cannot be moved exactly: an instruction the decoder
 * does not know, one that cannot be moved, a function shorter than the
 * jump, or any branch of the function (or its .cold part) into the bytes
 * the jump replaces.  The entry's current bytes must be the file's, or
 * already our jump; anything else (a debugger's breakpoint) is refused.
 *
 * Every thread is stopped while bytes change (freeze.c), and the patch
 * waits (50 ms at most, then refuses) while a thread stands inside bytes
 * about to be replaced.  The page's code, the hooks' pointers to the
 * original and the jumps are all written in that one stop, through
 * /proc/PID/mem.
 * Unpatching writes the file's bytes back over our jumps, also in a stop;
 * the page stays (a thread may be inside it, a hook holds its address).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include "elf/elfinfo.h"
#include "common/log.h"
#include "elf/maps.h"
#include "elf/symtab.h"
#include "entry.h"
#include "entry_machine.h"
#include "freeze.h"
#include "machine.h"
#include "pa_clock.h"

#define SLOT_SIZE	ENTRY_SLOT_SIZE
#define SCAN_MAX	(256u << 10)
#define BUSY_MS		50	/* waiting for threads to leave the
					   bytes to be patched */

_Static_assert(SLOT_SIZE * PA_ENTRY_FAMILIES * PA_EP_FNS <= PA_ENTRY_PAGE_SIZE,
	       "every function's slot fits the entry page");
_Static_assert(sizeof(((struct entry_fn *)0)->code) == SLOT_SIZE, "slot");
_Static_assert(sizeof(((struct entry_fn *)0)->patch) == ENTRY_PATCH_MAX,
	       "patch");

static const char *const prefixes[PA_ENTRY_FAMILIES] = { "", "je_", "_rjem_" };
static const char *const fn_names[PA_EP_FNS] = {
	[PA_EP_MALLOC] = "malloc", [PA_EP_FREE] = "free",
	[PA_EP_CALLOC] = "calloc", [PA_EP_REALLOC] = "realloc",
	[PA_EP_POSIX_MEMALIGN] = "posix_memalign",
	[PA_EP_ALIGNED_ALLOC] = "aligned_alloc",
	[PA_EP_MEMALIGN] = "memalign", [PA_EP_VALLOC] = "valloc",
	[PA_EP_PVALLOC] = "pvalloc", [PA_EP_MALLOCX] = "mallocx",
	[PA_EP_RALLOCX] = "rallocx", [PA_EP_SDALLOCX] = "sdallocx",
	[PA_EP_DALLOCX] = "dallocx",
};

/* ---- finding the program and its functions -------------------------- */

/* The mapping of the program's file at offset 0 (/proc/PID/exe's inode). */
static const struct maps_entry *program_map(pid_t pid,
					    const struct proc_maps *pm)
{
	char path[64];
	struct stat st;
	size_t i;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &st))
		return NULL;
	for (i = 0; i < pm->count; i++) {
		const struct maps_entry *m = &pm->entries[i];

		if (m->inode == st.st_ino && m->offset == 0 &&
		    m->path[0] == '/')
			return m;
	}
	return NULL;
}

/* The file offset of address a of the program, through its mappings. */
static int file_offset(const struct proc_maps *pm, const struct maps_entry *prog,
		       uint64_t a, uint64_t *off)
{
	size_t i;

	for (i = 0; i < pm->count; i++) {
		const struct maps_entry *m = &pm->entries[i];

		if (m->inode != prog->inode || m->dev_major != prog->dev_major ||
		    m->dev_minor != prog->dev_minor || a < m->start ||
		    a >= m->end)
			continue;
		if (!(m->prot & MAPS_PROT_EXEC))
			return -EFAULT;
		*off = m->offset + (a - m->start);
		return 0;
	}
	return -EFAULT;
}

const char *entry__allocator_of(int fd)
{
	static const struct {
		const char *symbol, *name;
	} allocators[] = {
		{ "_rjem_mallctl", "jemalloc (Rust's jemalloc-sys, _rjem_ names)" },
		{ "je_mallctl", "jemalloc" }, { "mallctl", "jemalloc" },
		{ "tc_malloc", "tcmalloc" }, { "mi_malloc", "mimalloc" },
	};
	uint64_t v;
	size_t i;

	for (i = 0; i < sizeof(allocators) / sizeof(allocators[0]); i++)
		if (!elfsym__find_symtab(fd, allocators[i].symbol, &v) ||
		    !elfsym__find(fd, allocators[i].symbol, &v))
			return allocators[i].name;
	return "an allocator";
}

bool entry__file_wants(int fd)
{
	char names[PA_ENTRY_FAMILIES * PA_EP_FNS][64];
	const char *ptrs[PA_ENTRY_FAMILIES * PA_EP_FNS];
	unsigned int f, i, n = 0;

	/* every name at once: the file is read once, not once a name (a
	 * launch asked 36 times, 2-3 ms before the program started) */
	for (f = 0; f < PA_ENTRY_FAMILIES; f++)
		for (i = 0; i < PA_EP_FNS; i++, n++) {
			snprintf(names[n], sizeof(names[n]), "%s%s",
				 prefixes[f], fn_names[i]);
			ptrs[n] = names[n];
		}
	return !elfsym__find_any(fd, ptrs, n);
}

bool entry__path_wants(const char *path)
{
	bool wants;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return false;
	wants = entry__file_wants(fd);
	close(fd);
	return wants;
}

/* ---- the plan -------------------------------------------------------- */

static int read_mem(int mem, uint64_t addr, void *buf, size_t n)
{
	ssize_t r = pread(mem, buf, n, (off_t)addr);

	return r == (ssize_t)n ? 0 : r < 0 ? -errno : -EFAULT;
}

static int write_mem(int mem, uint64_t addr, const void *buf, size_t n)
{
	ssize_t r = pwrite(mem, buf, n, (off_t)addr);

	return r == (ssize_t)n ? 0 : r < 0 ? -errno : -EFAULT;
}

static bool is_agent(const struct maps_entry *m, const char *agent)
{
	static const char memfd[] = "/memfd:pprof-alloc-agent.so";

	return !strcmp(m->path, agent) ||
	       !strncmp(m->path, memfd, sizeof(memfd) - 1);
}

/* The agent's table, read from the target and checked against its maps. */
static int read_table(pid_t pid, int mem, const struct proc_maps *pm,
		      const char *agent, struct entry_plan *p, char *why,
		      size_t size)
{
	uint64_t value, tsize, bias, lo = UINT64_MAX, hi = 0;
	const struct maps_entry *first = NULL;
	size_t i;
	int fd, err;

	for (i = 0; i < pm->count; i++) {
		const struct maps_entry *m = &pm->entries[i];

		if (is_agent(m, agent)) {
			if (!first && !m->offset)
				first = m;
			if (m->start < lo)
				lo = m->start;
			hi = m->end;
			/* its .bss past the file */
			if (i + 1 < pm->count && !pm->entries[i + 1].path[0] &&
			    pm->entries[i + 1].start == m->end)
				hi = pm->entries[i + 1].end;
		}
	}
	if (!first) {
		snprintf(why, size, "the agent is not mapped in process %d",
			 (int)pid);
		return -ENOENT;
	}
	/* the target's agent is a copy of ours (checked by the attach) */
	fd = open(agent, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		snprintf(why, size, "cannot open %s: %s", agent, strerror(-err));
		return err;
	}
	err = elfsym__find_object(fd, PA_ENTRY_SYMBOL, &value, &tsize);
	if (!err)
		err = elfinfo__load_bias(fd, first->start, 0, &bias);
	close(fd);
	if (err || tsize != sizeof(p->table)) {
		snprintf(why, size, "the agent has no %s of this version",
			 PA_ENTRY_SYMBOL);
		return err ? err : -EPROTO;
	}
	p->table_addr = bias + value;
	err = read_mem(mem, p->table_addr, &p->table, sizeof(p->table));
	if (err) {
		snprintf(why, size, "cannot read the agent's entry table in process %d",
			 (int)pid);
		return err;
	}
	/* the TLS offsets: static TLS, near the thread pointer */
	if (p->table.magic != PA_ENTRY_MAGIC ||
	    p->table.abi_version != PA_ABI_VERSION ||
	    p->table.families != PA_ENTRY_FAMILIES ||
	    p->table.fns != PA_EP_FNS ||
	    p->table.page_size != PA_ENTRY_PAGE_SIZE ||
	    !entry_machine__tls_ok(p->table.nest_tls, 4) ||
	    !entry_machine__tls_ok(p->table.bytes_left_tls, 8)) {
		snprintf(why, size, "the agent's entry table in process %d is not of this version",
			 (int)pid);
		return -EPROTO;
	}
	p->agent_lo = lo;
	p->agent_hi = hi;
	return 0;
}

static bool page_ok(const struct proc_maps *pm, uint64_t page)
{
	size_t i;

	if (!page || page % 4096)
		return false;
	for (i = 0; i < pm->count; i++) {
		const struct maps_entry *m = &pm->entries[i];

		if (m->start <= page && page < m->end)
			return !m->path[0] && page + PA_ENTRY_PAGE_SIZE <= m->end &&
			       (m->prot & (MAPS_PROT_READ | MAPS_PROT_WRITE |
					   MAPS_PROT_EXEC | MAPS_SHARED)) ==
				       (MAPS_PROT_READ | MAPS_PROT_EXEC);
	}
	return false;
}

static void refuse(struct entry_fn *f, const char *why)
{
	snprintf(f->refused, sizeof(f->refused), "%s", why);
}

/* Plan one function: its relocated slot, the bytes it replaces. */
static void plan_fn(struct entry_plan *p, struct entry_fn *f, int fd,
		    int mem, const struct proc_maps *pm,
		    const struct maps_entry *prog)
{
	uint64_t off, slot = p->table.page + (uint64_t)f->slot * SLOT_SIZE;
	uint64_t hook = p->table.hook[f->family][f->fn];
	uint64_t real = p->table.real_slot[f->family][f->fn];
	const char *why = NULL;
	uint8_t *code = NULL, cur[ENTRY_PATCH_MAX];
	size_t n = f->size < SCAN_MAX ? f->size : SCAN_MAX;
	char cold[80];
	uint64_t cv, cs;

	if (f->size < entry_machine_patch_len)
		return refuse(f, "it is shorter than the jump that would replace its start");
	if (hook < p->agent_lo || hook >= p->agent_hi || real % 8 ||
	    real < p->agent_lo || real + 8 > p->agent_hi)
		return refuse(f, "the agent's table points outside the agent");
	if (file_offset(pm, prog, f->addr, &off))
		return refuse(f, "it is not in the program's mapped code");
	code = malloc(n);
	if (!code)
		return refuse(f, "out of memory");
	if (pread(fd, code, n, (off_t)off) != (ssize_t)n) {
		refuse(f, "its code cannot be read from the program's file");
		goto out_free;
	}
	if (entry_machine__slot(code, n, f->addr, slot, hook,
				p->table.nest_tls, p->table.bytes_left_tls,
				f->code, &f->len, &f->real_to, &why) ||
	    entry_machine__scan(code, n, f->addr, f->addr, f->addr + f->len,
				&why)) {
		refuse(f, why);
		goto out_free;
	}
	snprintf(cold, sizeof(cold), "%s.cold", f->name);
	if (!elfsym__find_sized(fd, cold, &cv, &cs) && cs) {
		uint8_t *c = malloc(cs < SCAN_MAX ? cs : SCAN_MAX);
		uint64_t coff;

		if (!c || file_offset(pm, prog, f->addr - f->file_value + cv, &coff) ||
		    pread(fd, c, cs < SCAN_MAX ? cs : SCAN_MAX, (off_t)coff) !=
			    (ssize_t)(cs < SCAN_MAX ? cs : SCAN_MAX) ||
		    entry_machine__scan(c, cs < SCAN_MAX ? cs : SCAN_MAX,
					f->addr - f->file_value + cv, f->addr,
					f->addr + f->len, &why)) {
			refuse(f, why ? why : "its .cold part cannot be read");
			free(c);
			goto out_free;
		}
		free(c);
	}
	if (f->len > sizeof(f->orig)) {
		refuse(f, "its first instructions are too long to keep");
		goto out_free;
	}
	memcpy(f->orig, code, f->len);
	/* the jump */
	if (entry_machine__patch(f->addr, slot, f->patch, &f->patch_len,
				 &why) || f->patch_len > f->len) {
		refuse(f, why ? why : "the jump is longer than the bytes moved");
		goto out_free;
	}
	f->real_at = real;
	if (read_mem(mem, f->addr, cur, f->patch_len)) {
		refuse(f, "its entry cannot be read in memory");
		goto out_free;
	}
	if (!memcmp(cur, f->patch, f->patch_len))
		f->was_patched = true;
	else if (memcmp(cur, f->orig, f->patch_len))
		refuse(f, "its first bytes in memory differ from the program's file (a debugger's breakpoint?)");
out_free:
	free(code);
}

int entry__plan(pid_t pid, const char *agent, struct entry_plan *p,
		char *why, size_t size)
{
	const struct maps_entry *prog;
	struct proc_maps *pm = NULL;
	unsigned int fam, i;
	uint64_t bias;
	char path[64];
	int fd = -1, mem = -1, err;

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	err = proc_maps__read(pid, &pm);
	if (err) {
		snprintf(why, size, "cannot read process %d's maps", (int)pid);
		return err;
	}
	prog = program_map(pid, pm);
	if (!prog) {
		snprintf(why, size, "process %d's program is not among its mappings",
			 (int)pid);
		err = -ENOENT;
		goto out_free;
	}
	snprintf(p->program, sizeof(p->program), "%s", prog->path);
	fd = maps_entry__open(pid, prog);
	if (fd < 0) {
		err = fd;
		snprintf(why, size, "cannot open process %d's program: %s",
			 (int)pid, strerror(-err));
		goto out_free;
	}
	err = elfinfo__load_bias(fd, prog->start, prog->offset, &bias);
	if (err) {
		snprintf(why, size, "process %d's program is not an ELF file it can be read from",
			 (int)pid);
		goto out_close;
	}
	for (fam = 0; fam < PA_ENTRY_FAMILIES; fam++)
		for (i = 0; i < PA_EP_FNS; i++) {
			struct entry_fn *f = &p->fn[p->n];
			uint64_t v, sz;

			snprintf(f->name, sizeof(f->name), "%s%s", prefixes[fam],
				 fn_names[i]);
			if (elfsym__find_sized(fd, f->name, &v, &sz))
				continue;
			f->family = fam;
			f->fn = i;
			f->slot = p->n;
			f->file_value = v;
			f->addr = bias + v;
			f->size = sz;
			p->n++;
		}
	p->allocator = entry__allocator_of(fd);
	if (!p->n)
		goto out_close;
	/* the program's own malloc is jemalloc's: its mallctl, for readings */
	{
		static const char *const ctl[] = { "mallctl", "je_mallctl" };
		uint64_t v, sz;
		unsigned int k;

		for (k = 0; k < 2 && p->fn[0].family == 0 &&
			    p->fn[0].fn == PA_EP_MALLOC; k++)
			if (!elfsym__find_sized(fd, ctl[k], &v, &sz)) {
				p->mallctl_at = bias + v;
				break;
			}
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	mem = open(path, O_RDONLY | O_CLOEXEC);
	if (mem < 0) {
		err = -errno;
		snprintf(why, size, "cannot open %s: %s", path, strerror(-err));
		goto out_close;
	}
	err = read_table(pid, mem, pm, agent, p, why, size);
	if (err)
		goto out_close;
	if (!p->table.page) {
		snprintf(why, size, "the agent in process %d has no entry page: it was preloaded without a tracer, which never asked for one (start the program under pprof-alloc, or attach without LD_PRELOAD)",
			 (int)pid);
		err = -ENOENT;
		goto out_close;
	}
	if (!page_ok(pm, p->table.page)) {
		snprintf(why, size, "the agent found no room for its entry page near process %d's program",
			 (int)pid);
		err = -ENOMEM;
		goto out_close;
	}
	for (i = 0; i < p->n; i++)
		plan_fn(p, &p->fn[i], fd, mem, pm, prog);
out_close:
	if (mem >= 0)
		close(mem);
	close(fd);
out_free:
	proc_maps__free(pm);
	return err;
}

/* ---- applying it ----------------------------------------------------- */

/* A thread stands inside bytes about to change (not at their start). */
static bool inside(const struct freeze *fr, const struct entry_fn *f)
{
	size_t i;

	for (i = 0; i < fr->n; i++) {
		uint64_t ip = machine__gregs_pc(&fr->t[i].regs);

		if (ip > f->addr && ip < f->addr + f->len)
			return true;
	}
	return false;
}

/*
 * A patch of more than one instruction (aarch64's adrp, add, br) may have
 * a thread stopped inside it, which the file's bytes put back would send
 * into the middle of the original's first instructions: it is moved on to
 * where the patch leads, the slot (x16, which the rest would have set, is
 * free there).  0, or -errno: the function stays patched.
 */
static int move_inside(struct entry_plan *p, struct freeze *fr,
		       const struct entry_fn *f)
{
	uint64_t slot = p->table.page + (uint64_t)f->slot * SLOT_SIZE;
	size_t i;
	int err;

	for (i = 0; i < fr->n; i++) {
		uint64_t ip = machine__gregs_pc(&fr->t[i].regs);

		if (ip <= f->addr || ip >= f->addr + f->patch_len)
			continue;
		err = freeze__set_pc(fr, i, slot);
		if (err)
			return err;
	}
	return 0;
}

/* Let the threads go, keeping how long they were held. */
static void thaw(struct entry_plan *p, struct freeze *fr)
{
	freeze__thaw(fr);
	if (fr->longest_ns > p->longest_stop_ns)
		p->longest_stop_ns = fr->longest_ns;
}

static int frozen_write(struct entry_plan *p, bool restore, char *why,
			size_t size)
{
	struct freeze fr;
	uint64_t deadline;
	char path[64];
	unsigned int i;
	int mem, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)p->pid);
	mem = open(path, O_RDWR | O_CLOEXEC);
	if (mem < 0) {
		err = -errno;
		snprintf(why, size, "cannot open %s for writing: %s", path,
			 strerror(-err));
		return err;
	}
	deadline = pa_now_ns() + BUSY_MS * PA_NSEC_PER_MSEC;
	for (;;) {
		bool busy = false;

		err = freeze__all(p->pid, &fr, why, size);
		if (err)
			goto out_close;
		for (i = 0; i < p->n && !restore; i++)
			if (!p->fn[i].refused[0] && !p->fn[i].was_patched &&
			    inside(&fr, &p->fn[i]))
				busy = true;
		if (!busy || pa_now_ns() >= deadline)
			break;
		thaw(p, &fr);
		nanosleep(&(struct timespec){ 0, PA_NSEC_PER_MSEC }, NULL);
	}
	if (restore) {
		for (i = 0; i < p->n; i++) {
			struct entry_fn *f = &p->fn[i];
			uint8_t cur[ENTRY_PATCH_MAX];

			if (f->refused[0] ||
			    read_mem(mem, f->addr, cur, f->patch_len) ||
			    memcmp(cur, f->patch, f->patch_len))
				continue;
			if (!move_inside(p, &fr, f) &&
			    !write_mem(mem, f->addr, f->orig, f->patch_len)) {
				p->restored++;
				continue;
			}
			/* still patched: its hook must stay */
			snprintf(why, size, "%s stays patched: a thread inside its jump could not be moved on",
				 f->name);
			err = -EBUSY;
		}
		goto out_thaw;
	}
	for (i = 0; i < p->n; i++) {
		struct entry_fn *f = &p->fn[i];
		uint64_t slot = p->table.page + (uint64_t)f->slot * SLOT_SIZE;

		if (f->refused[0])
			continue;
		if (!f->was_patched && inside(&fr, f)) {
			refuse(f, "a thread stayed inside its first instructions");
			continue;
		}
		/* the slot, the hook's way to the original, then the jump */
		err = write_mem(mem, slot, f->code, SLOT_SIZE);
		if (!err)
			err = write_mem(mem, f->real_at, &f->real_to, 8);
		if (!err)
			err = write_mem(mem, f->addr, f->patch, f->patch_len);
		if (err) {
			snprintf(why, size, "cannot write process %d's memory: %s",
				 (int)p->pid, strerror(-err));
			refuse(f, "its memory could not be written");
			break;
		}
		p->patched++;
	}
out_thaw:
	thaw(p, &fr);
out_close:
	close(mem);
	return err;
}

int entry__apply(struct entry_plan *p, char *why, size_t size)
{
	return frozen_write(p, false, why, size);
}

int entry__restore(struct entry_plan *p, char *why, size_t size)
{
	return frozen_write(p, true, why, size);
}

void entry__describe(const struct entry_plan *p, char *buf, size_t size)
{
	unsigned int i, pass;
	size_t used;

	used = (size_t)snprintf(buf, size, "%.400s defines its own allocator (%s, linked into the executable); hooked at their entry: %u of %u functions",
				p->program, p->allocator ? p->allocator : "an allocator",
				p->patched, p->n);
	/* the hooked ones by name, then each refused one with its reason */
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < p->n && used < size; i++) {
			const struct entry_fn *f = &p->fn[i];

			if (!pass && !f->refused[0])
				used += (size_t)snprintf(buf + used, size - used,
							 "%s%s", i ? ", " : " (", f->name);
			else if (pass && f->refused[0])
				used += (size_t)snprintf(buf + used, size - used,
							 "; %s not hooked: %s", f->name,
							 f->refused);
			if (!pass && i + 1 == p->n && p->patched && used < size)
				used += (size_t)snprintf(buf + used, size - used, ")");
		}
}
