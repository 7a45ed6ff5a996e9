// SPDX-License-Identifier: MIT
/*
 * test-symbolize.c - unit test of elf/elfinfo.c, elf/symbolize.c and
 * elf/symbolize_jobs.c.
 *
 * The test is its own subject.  It finds its own executable mapping in
 * /proc/self/maps, opens the file through /proc/self/map_files (or by path
 * when that is not allowed), and checks:
 *
 *  - elfinfo__read(): ET_DYN (ET_EXEC when built without -fpie) and a
 *    20-byte GNU build ID equal to the one read from our own PT_NOTE in
 *    memory via dl_iterate_phdr(), and to the one `readelf -n` prints
 *    (skipped with a note when readelf is not installed);
 *  - elfinfo__load_bias(): equal to dlpi_addr, the loader's own bias;
 *  - symbolizer__lookup() on return addresses recorded by probe(): in a
 *    plain function (one frame, right name, file and line) and inside an
 *    always_inline helper (two frames, leaf first: the helper with the
 *    line of the probe call, then its caller with the line of the call
 *    site).  Lines are __LINE__ captured at the calls, so they cannot go
 *    stale as the file is edited;
 *  - the cache: same pointers on a second lookup, truncation to `max`
 *    without losing the full chain;
 *  - modules added after lookups (libc), re-adding a known module, a
 *    different file over known addresses (-EEXIST), and addresses outside
 *    every module (0 frames);
 *  - batches (sym_batch__resolve): 6000 addresses over our own .text, some
 *    repeated, give the same frames (equal strings) with 1 thread and
 *    with several, and clones resolve like the original after it is gone;
 *  - failures: elfinfo on a pipe, a text file and a truncated ELF file
 *    (-ENOEXEC), load bias for an offset no segment covers (-ENOENT).
 *
 * probe() and the functions under test are noipa, so -O2 neither inlines
 * nor clones them; the probe's return address minus one is inside the call
 * instruction, which the line table attributes to the line of the call.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* dl_iterate_phdr, RTLD_NOLOAD, memfd_create */
#endif
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "elf/elfinfo.h"
#include "elf/maps.h"
#include "elf/symbolize.h"
#include "elf/symbolize_jobs.h"

#if defined(__clang__)
#define NOIPA __attribute__((noinline, optnone))
#else
#define NOIPA __attribute__((noipa))
#endif

static volatile uintptr_t probe_pc;
static volatile int probe_line;
static volatile int call_site_line;

/* Records where it was called from (return address) and the caller's line. */
NOIPA static void probe(int line)
{
	probe_pc = (uintptr_t)__builtin_return_address(0);
	probe_line = line;
}

static inline __attribute__((always_inline)) int inlined_helper(int x,
								 int line)
{
	call_site_line = line;
	probe(__LINE__);
	return x * 3;
}

NOIPA static int outer_caller(int x)
{
	return inlined_helper(x, __LINE__) + 1;
}

#ifndef __clang__
/*
 * A GNU C nested function: its DIE is below its parent's, its code outside
 * the parent's ranges (as with OpenMP's outlined regions).
 */
NOIPA static int nest_parent(int x)
{
	NOIPA int nest_child(int y)
	{
		return inlined_helper(y, __LINE__) + x;
	}
	return nest_child(x + 1);
}
#endif

NOIPA static int plain_function(int x)
{
	probe(__LINE__);
	return x + 7;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The maps entry holding addr, or NULL. */
static const struct maps_entry *find_mapping(const struct proc_maps *maps,
					     uint64_t addr)
{
	for (size_t i = 0; i < maps->count; i++) {
		const struct maps_entry *e = &maps->entries[i];

		if (addr >= e->start && addr < e->end)
			return e;
	}
	return NULL;
}

/* Open the file behind e the way the tracer does, by path if we must. */
static int open_mapping(const struct maps_entry *e)
{
	char path[96];
	int fd;

	snprintf(path, sizeof(path),
		 "/proc/self/map_files/%" PRIx64 "-%" PRIx64, e->start, e->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open(e->path, O_RDONLY | O_CLOEXEC);
	return fd;
}

/* What dl_iterate_phdr says about the main program. */
struct self_info {
	bool found;
	uint64_t bias;
	uint8_t build_id[ELFINFO_BUILD_ID_MAX];
	size_t build_id_len;
};

static size_t align_up(size_t n, size_t align)
{
	return (n + align - 1) & ~(align - 1);
}

static int self_phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct self_info *self = arg;

	(void)size;
	/* The main program comes first, with an empty name. */
	self->found = true;
	self->bias = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *notes;
		size_t align = ph->p_align == 8 ? 8 : 4, off = 0;

		if (ph->p_type != PT_NOTE)
			continue;
		notes = (const char *)(info->dlpi_addr + ph->p_vaddr);
		while (off + sizeof(ElfW(Nhdr)) <= ph->p_memsz) {
			const ElfW(Nhdr) *nh = (const void *)(notes + off);
			size_t name_off = off + sizeof(*nh);
			size_t desc_off = align_up(name_off + nh->n_namesz,
						   align);

			if (nh->n_type == NT_GNU_BUILD_ID &&
			    nh->n_namesz == 4 &&
			    memcmp(notes + name_off, "GNU", 4) == 0 &&
			    nh->n_descsz <= ELFINFO_BUILD_ID_MAX) {
				memcpy(self->build_id, notes + desc_off,
				       nh->n_descsz);
				self->build_id_len = nh->n_descsz;
				return 1;
			}
			off = align_up(desc_off + nh->n_descsz, align);
		}
	}
	return 1;
}

/*
 * The build ID `readelf -n` prints for path, in hex, into out.  false if
 * readelf could not be run.
 */
static bool readelf_build_id(const char *path, char *out, size_t out_size)
{
	char buf[16384];
	size_t len = 0;
	int pipefd[2], status;
	bool ok = false;
	ssize_t n;
	pid_t pid;
	char *p;

	if (pipe(pipefd) < 0)
		return false;
	pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return false;
	}
	if (pid == 0) {
		dup2(pipefd[1], 1);
		close(pipefd[0]);
		close(pipefd[1]);
		execlp("readelf", "readelf", "-n", path, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	while (len < sizeof(buf) - 1 &&
	       (n = read(pipefd[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(pipefd[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return false;
	p = strstr(buf, "Build ID: ");
	if (p) {
		p += strlen("Build ID: ");
		len = strspn(p, "0123456789abcdef");
		if (len > 0 && len < out_size) {
			memcpy(out, p, len);
			out[len] = '\0';
			ok = true;
		}
	}
	return ok;
}

static void test_elfinfo(const struct maps_entry *text, int fd)
{
	struct self_info self = { 0 };
	char hex[2 * ELFINFO_BUILD_ID_MAX + 1], self_hex[sizeof(hex)];
	char readelf_hex[sizeof(hex)], exe[4096];
	struct elfinfo info;
	uint64_t bias = 1;
	ssize_t n;

	CHECK_EQ_INT(elfinfo__read(fd, &info), 0);
#ifdef __PIE__
	CHECK_EQ_INT(info.type, ET_DYN);
#else
	CHECK_EQ_INT(info.type, ET_EXEC);
#endif
	CHECK_EQ_INT(info.build_id_len, 20);

	dl_iterate_phdr(self_phdr_cb, &self);
	CHECK(self.found);
	CHECK_EQ_INT(self.build_id_len, 20);
	CHECK(memcmp(info.build_id, self.build_id, 20) == 0);
	elfinfo__build_id_hex(info.build_id, info.build_id_len, hex);
	elfinfo__build_id_hex(self.build_id, self.build_id_len, self_hex);
	CHECK_EQ_INT(strlen(hex), 40);
	CHECK_EQ_STR(hex, self_hex);

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(n > 0);
	exe[n] = '\0';
	if (readelf_build_id(exe, readelf_hex, sizeof(readelf_hex)))
		CHECK_EQ_STR(hex, readelf_hex);
	else
		printf("test-symbolize: readelf not usable, build ID "
		       "compared with the in-memory note only\n");

	CHECK_EQ_INT(elfinfo__load_bias(fd, text->start, text->offset, &bias),
		     0);
	CHECK(bias == self.bias);
#ifdef __PIE__
	CHECK(bias != 0);	/* a PIE under ASLR */
#endif

	/* No PT_LOAD covers a terabyte into the file. */
	CHECK_EQ_INT(elfinfo__load_bias(fd, text->start, 1ull << 40, &bias),
		     -ENOENT);

	{
		static const uint8_t id[] = { 0xde, 0xad, 0x01, 0x0f, 0xf0 };
		char out[11];

		CHECK(elfinfo__build_id_hex(id, sizeof(id), out) == out);
		CHECK_EQ_STR(out, "dead010ff0");
		CHECK_EQ_STR(elfinfo__build_id_hex(id, 0, out), "");
	}
}

static void test_elfinfo_failures(int self_fd)
{
	static const char text[] = "this is not an ELF file\n";
	struct elfinfo info;
	uint64_t bias;
	char head[128];
	int pipefd[2], fd;

	CHECK_EQ_INT(pipe(pipefd), 0);
	CHECK_EQ_INT(write(pipefd[1], text, sizeof(text) - 1),
		     sizeof(text) - 1);
	close(pipefd[1]);
	CHECK_EQ_INT(elfinfo__read(pipefd[0], &info), -ENOEXEC);
	close(pipefd[0]);

	fd = memfd_create("text", MFD_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_EQ_INT(write(fd, text, sizeof(text) - 1), sizeof(text) - 1);
	CHECK_EQ_INT(elfinfo__read(fd, &info), -ENOEXEC);
	CHECK_EQ_INT(elfinfo__load_bias(fd, 0x1000, 0, &bias), -ENOEXEC);
	close(fd);

	/* Empty file. */
	fd = memfd_create("empty", MFD_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_EQ_INT(elfinfo__read(fd, &info), -ENOEXEC);
	close(fd);

	/* The ELF header of a real file, but the program headers cut off. */
	CHECK_EQ_INT(pread(self_fd, head, sizeof(head), 0), sizeof(head));
	fd = memfd_create("truncated", MFD_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_EQ_INT(write(fd, head, sizeof(head)), sizeof(head));
	CHECK_EQ_INT(elfinfo__read(fd, &info), -ENOEXEC);
	CHECK_EQ_INT(elfinfo__load_bias(fd, 0x1000, 0, &bias), -ENOEXEC);
	close(fd);

	CHECK_EQ_INT(elfinfo__read(-1, &info), -EBADF);
}

static void test_symbolize(const struct proc_maps *maps,
			   const struct maps_entry *text, int fd)
{
	struct sym_frame frames[8], again[8];
	const struct maps_entry *libc;
	struct symbolizer *s;
	uint64_t bias, plain_pc, inline_pc, stack_addr, libc_getpid;
	void *libc_handle;
	int plain_line, inline_line, caller_line, libc_fd, n, stack_var = 0;
	int saved_stderr, dev_null, err;

	CHECK_EQ_INT(elfinfo__load_bias(fd, text->start, text->offset, &bias),
		     0);
	s = symbolizer__new();
	CHECK(s != NULL);

	/* Before any module: nothing is known. */
	CHECK_EQ_INT(symbolizer__lookup(s, text->start, frames, 8), 0);

	CHECK_EQ_INT(symbolizer__add_module(s, text->path, fd, text->start,
					    text->end, bias), 0);
	/* Again, as the tracer may for each mapping of a file: a no-op. */
	CHECK_EQ_INT(symbolizer__add_module(s, text->path, fd, text->start,
					    text->end, bias), 0);

	plain_function(1);
	plain_pc = probe_pc - 1;
	plain_line = probe_line;
	outer_caller(2);
	inline_pc = probe_pc - 1;
	inline_line = probe_line;
	caller_line = call_site_line;
	CHECK(plain_pc >= text->start && plain_pc < text->end);
	CHECK(inline_pc >= text->start && inline_pc < text->end);

	/* A plain function: one frame. */
	n = symbolizer__lookup(s, plain_pc, frames, 8);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_STR(frames[0].function, "plain_function");
	CHECK(frames[0].file && ends_with(frames[0].file, "test-symbolize.c"));
	CHECK_EQ_INT(frames[0].line, plain_line);

	/* Inside the inlined helper: the helper, then its caller. */
	n = symbolizer__lookup(s, inline_pc, frames, 8);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_STR(frames[0].function, "inlined_helper");
	CHECK(frames[0].file && ends_with(frames[0].file, "test-symbolize.c"));
	CHECK_EQ_INT(frames[0].line, inline_line);
	CHECK_EQ_STR(frames[1].function, "outer_caller");
	CHECK(frames[1].file && ends_with(frames[1].file, "test-symbolize.c"));
	CHECK_EQ_INT(frames[1].line, caller_line);

	/* Cached: the same interned pointers; max cuts the leaf-first list. */
	CHECK_EQ_INT(symbolizer__lookup(s, inline_pc, again, 1), 1);
	CHECK(again[0].function == frames[0].function);
	CHECK(again[0].file == frames[0].file);
	CHECK_EQ_INT(again[0].line, inline_line);
	CHECK_EQ_INT(symbolizer__lookup(s, inline_pc, again, 8), 2);
	CHECK(again[1].function == frames[1].function);
	CHECK(again[0].file == again[1].file);
	CHECK_EQ_INT(symbolizer__lookup(s, inline_pc, again, 0), -EINVAL);

	/* A function's entry: the outermost frame is that function. */
	n = symbolizer__lookup(s, (uintptr_t)&outer_caller, frames, 8);
	CHECK(n >= 1);
	CHECK_EQ_STR(frames[n - 1].function, "outer_caller");

	/* Outside every module. */
	stack_addr = (uintptr_t)&stack_var;
	CHECK_EQ_INT(symbolizer__lookup(s, stack_addr, frames, 8), 0);
	CHECK_EQ_INT(symbolizer__lookup(s, 0x10, frames, 8), 0);

	/*
	 * libc, added after lookups; its symbol table names getpid.  Ask libc
	 * itself for the address: in a non-PIE executable &getpid is a PLT
	 * entry of the executable.
	 */
	libc_handle = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	CHECK(libc_handle != NULL);
	libc_getpid = (uintptr_t)dlsym(libc_handle, "getpid");
	CHECK(libc_getpid != 0);
	libc = find_mapping(maps, libc_getpid);
	CHECK(libc != NULL);
	CHECK(libc != text);
	libc_fd = open_mapping(libc);
	CHECK(libc_fd >= 0);
	CHECK_EQ_INT(elfinfo__load_bias(libc_fd, libc->start, libc->offset,
					&bias), 0);
	/*
	 * A different file over the test's own addresses is refused (with a
	 * message on stderr, which would only confuse the test's log).
	 */
	saved_stderr = dup(2);
	CHECK(saved_stderr >= 0);
	dev_null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	CHECK(dev_null >= 0);
	CHECK(dup2(dev_null, 2) == 2);
	err = symbolizer__add_module(s, libc->path, libc_fd, text->start,
				     text->end, bias);
	CHECK(dup2(saved_stderr, 2) == 2);
	close(saved_stderr);
	close(dev_null);
	CHECK_EQ_INT(err, -EEXIST);
	CHECK_EQ_INT(symbolizer__add_module(s, libc->path, libc_fd,
					    libc->start, libc->end, bias), 0);
	close(libc_fd);	/* the symbolizer keeps its own */
	n = symbolizer__lookup(s, libc_getpid, frames, 8);
	CHECK(n >= 1);
	CHECK(frames[n - 1].function != NULL);
	CHECK(strstr(frames[n - 1].function, "getpid") != NULL);
	dlclose(libc_handle);

	/* The first module still answers, cached and not. */
	CHECK_EQ_INT(symbolizer__lookup(s, inline_pc, again, 8), 2);
	CHECK_EQ_STR(again[1].function, "outer_caller");
	n = symbolizer__lookup(s, (uintptr_t)&plain_function, frames, 8);
	CHECK(n >= 1);
	CHECK_EQ_STR(frames[n - 1].function, "plain_function");

	/* Bad arguments. */
	CHECK_EQ_INT(symbolizer__add_module(s, "x", -1, 1, 2, 0), -EINVAL);
	CHECK_EQ_INT(symbolizer__add_module(s, "x", fd, 2, 2, 0), -EINVAL);
	CHECK_EQ_INT(symbolizer__lookup(s, inline_pc, NULL, 8), -EINVAL);

	symbolizer__free(s);
	symbolizer__free(NULL);
}

/* Many distinct addresses: the cache grows and every answer is stable. */
static void test_many_addresses(const struct maps_entry *text, int fd)
{
	struct sym_frame frames[4], again[4];
	struct symbolizer *s = symbolizer__new();
	uint64_t bias, start = (uintptr_t)&outer_caller;
	int n;

	CHECK(s != NULL);
	CHECK_EQ_INT(elfinfo__load_bias(fd, text->start, text->offset, &bias),
		     0);
	CHECK_EQ_INT(symbolizer__add_module(s, "self", fd, text->start,
					    text->end, bias), 0);
	for (uint64_t a = text->start; a < text->end && a < text->start + 8000;
	     a++) {
		n = symbolizer__lookup(s, a, frames, 4);
		CHECK(n >= 0 && n <= 4);
	}
	for (uint64_t a = text->start; a < text->end && a < text->start + 8000;
	     a += 97) {
		n = symbolizer__lookup(s, a, frames, 4);
		CHECK_EQ_INT(symbolizer__lookup(s, a, again, 4), n);
		for (int i = 0; i < n; i++) {
			CHECK(frames[i].function == again[i].function);
			CHECK(frames[i].file == again[i].file);
			CHECK_EQ_INT(frames[i].line, again[i].line);
		}
	}
	n = symbolizer__lookup(s, start, frames, 4);
	CHECK(n >= 1);
	CHECK_EQ_STR(frames[n - 1].function, "outer_caller");
	symbolizer__free(s);
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Resolve addr in s and in whole (no plan): the same frames. */
static void same_as_whole(struct symbolizer *s, struct symbolizer *whole,
			  uint64_t addr)
{
	struct sym_frame frames[8], want[8];
	int n = symbolizer__resolve(s, addr, frames, 8);

	CHECK_EQ_INT(symbolizer__resolve(whole, addr, want, 8), n);
	for (int i = 0; i < n; i++) {
		CHECK(same_str(frames[i].function, want[i].function));
		CHECK(same_str(frames[i].system_name, want[i].system_name));
		CHECK(same_str(frames[i].file, want[i].file));
		CHECK_EQ_INT(frames[i].line, want[i].line);
	}
}

/*
 * symbolizer__plan(): planned addresses resolve as without a plan (the
 * scope indexes then cover only the functions around them), and so does
 * an address off the plan, which drops it; a plan must be ascending.
 */
static void test_plan(const struct maps_entry *text, int fd)
{
	struct symbolizer *s = symbolizer__new(), *whole = symbolizer__new();
	uint64_t bias, plan[64], end = text->end;
	size_t n = 0;

	CHECK(s && whole);
	CHECK_EQ_INT(elfinfo__load_bias(fd, text->start, text->offset, &bias),
		     0);
	CHECK_EQ_INT(symbolizer__add_module(s, "self", fd, text->start,
					    text->end, bias), 0);
	CHECK_EQ_INT(symbolizer__add_module(whole, "self", fd, text->start,
					    text->end, bias), 0);
	for (uint64_t a = text->start; a < end && n < 64;
	     a += (end - text->start) / 64 + 1)
		plan[n++] = a;
	CHECK(n > 8);
	CHECK_EQ_INT(symbolizer__plan(s, plan + 1, 1), 0);
	uint64_t unsorted[2] = { plan[1], plan[0] };
	CHECK_EQ_INT(symbolizer__plan(s, unsorted, 2), -EINVAL);
	CHECK_EQ_INT(symbolizer__plan(s, plan, n), 0);
	for (size_t i = 0; i < n; i++)
		same_as_whole(s, whole, plan[i]);
	/* Off the plan: a function no planned address is in, then more. */
	same_as_whole(s, whole, (uintptr_t)&outer_caller);
	same_as_whole(s, whole, probe_pc - 1);
	for (size_t i = 0; i + 1 < n; i++)
		same_as_whole(s, whole, plan[i] + (plan[i + 1] - plan[i]) / 2);
#ifndef __clang__
	/* Planned alone, code in a nested function: its parent, holding no
	 * planned address, is left out, but not what is nested in it.  A
	 * fresh symbolizer: s has whole indexes now. */
	nest_parent(3);
	{
		struct symbolizer *fresh = symbolizer__new();
		struct sym_frame frames[8];
		uint64_t nested_pc = probe_pc - 1;

		CHECK(fresh != NULL);
		CHECK_EQ_INT(symbolizer__add_module(fresh, "self", fd,
						    text->start, text->end,
						    bias), 0);
		CHECK_EQ_INT(symbolizer__plan(fresh, &nested_pc, 1), 0);
		CHECK_EQ_INT(symbolizer__resolve(fresh, nested_pc, frames, 8),
			     2);
		CHECK_EQ_STR(frames[0].function, "inlined_helper");
		CHECK(!strncmp(frames[1].function, "nest_child", 10));
		same_as_whole(fresh, whole, nested_pc);
		symbolizer__free(fresh);
	}
#endif
	/* Planned again, then dropped. */
	CHECK_EQ_INT(symbolizer__plan(s, plan, n), 0);
	same_as_whole(s, whole, plan[n / 2]);
	CHECK_EQ_INT(symbolizer__plan(s, NULL, 0), 0);
	same_as_whole(s, whole, plan[n / 2] + 1);
	symbolizer__free(s);
	symbolizer__free(whole);
}

/*
 * A batch in threads gives what one thread gives: the same frames (equal
 * strings, from different symbolizers) for every item, duplicates
 * included; clones resolve like the original.
 */
static void test_batch(const struct maps_entry *text, int fd)
{
	struct symbolizer *s = symbolizer__new(), *clone;
	struct sym_batch one, many;
	struct sym_frame frames[4];
	uint64_t bias, *addrs, span = text->end - text->start;
	size_t n = 6000;
	int k;

	CHECK(s != NULL);
	CHECK_EQ_INT(elfinfo__load_bias(fd, text->start, text->offset, &bias),
		     0);
	CHECK_EQ_INT(symbolizer__add_module(s, "self", fd, text->start,
					    text->end, bias), 0);
	addrs = calloc(n, sizeof(*addrs));
	CHECK(addrs != NULL);
	/* Spread over .text, backwards, every tenth one repeated. */
	for (size_t i = 0; i < n; i++)
		addrs[i] = i % 10 == 9 ? addrs[i - 3] :
			text->end - 1 - (uint64_t)i * (span / n);
	CHECK_EQ_INT(sym_batch__resolve(&one, s, addrs, n, 1), 0);
	CHECK_EQ_INT(one.threads, 1);
	CHECK_EQ_INT(one.nclones, 0);
	CHECK_EQ_INT(sym_batch__resolve(&many, s, addrs, n, 4), 0);
	CHECK(many.threads > 1);
	CHECK(many.hits > n / 2);
	CHECK_EQ_INT(many.hits, one.hits);
	CHECK_EQ_INT(many.nframes, one.nframes);
	for (size_t i = 0; i < n; i++) {
		CHECK_EQ_INT(many.count[i], one.count[i]);
		for (uint32_t j = 0; j < one.count[i]; j++) {
			const struct sym_frame *a = &one.frames[one.first[i] + j];
			const struct sym_frame *b = &many.frames[many.first[i] + j];

			CHECK(same_str(a->function, b->function));
			CHECK(same_str(a->system_name, b->system_name));
			CHECK(same_str(a->file, b->file));
			CHECK_EQ_INT(a->line, b->line);
		}
	}
	sym_batch__fini(&many);
	sym_batch__fini(&one);
	sym_batch__fini(NULL);

	clone = symbolizer__clone(s);
	CHECK(clone != NULL);
	symbolizer__free(s);	/* either may go first */
	k = symbolizer__resolve(clone, (uintptr_t)&outer_caller, frames, 4);
	CHECK(k >= 1);
	CHECK_EQ_STR(frames[k - 1].function, "outer_caller");
	symbolizer__free(clone);
	free(addrs);
}

int main(void)
{
	const struct maps_entry *text;
	struct proc_maps *maps = NULL;
	int fd;

	CHECK_EQ_INT(proc_maps__read(getpid(), &maps), 0);
	text = find_mapping(maps, (uintptr_t)&outer_caller);
	CHECK(text != NULL);
	CHECK(text->prot & MAPS_PROT_EXEC);
	fd = open_mapping(text);
	CHECK(fd >= 0);

	test_elfinfo(text, fd);
	test_elfinfo_failures(fd);
	test_symbolize(maps, text, fd);
	test_many_addresses(text, fd);
	test_plan(text, fd);
	test_batch(text, fd);

	close(fd);
	proc_maps__free(maps);
	CHECK_SUMMARY("test-symbolize");
	return 0;
}
