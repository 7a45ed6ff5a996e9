// SPDX-License-Identifier: MIT
/*
 * fuzz-walk.c - libFuzzer target for the agent's walk by unwind tables
 * (agent/unwind_cfi.c): garbage stacks and start registers against the
 * real tables of the modules loaded here (libc's, this program's).
 *
 * Input: 24 bytes of start registers, then the words of the stack the
 * walk starts on (three quarters of the rest) and of the thread's "own"
 * stack a signal frame may lead back to (the last quarter), each copied
 * into a buffer of exactly its size, so that ASan sees a read past
 * either; the part of the first below the start's stack pointer is
 * poisoned, as the walk must not read under it either.  Words are taken as
 * they are, except that a word whose top byte is 0xaa becomes an address
 * in libc's code (or, 0xab, glibc's signal trampoline), and 0xbb or 0xbc
 * an address in the first or the second stack: so that the fuzzer can
 * build chains of frames.  The walk must end, within max frames.
 */
#include <link.h>
#include <sanitizer/asan_interface.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "agent/cfi.c"
#include "agent/unwind_cfi.c"

struct pa_agent pa_agent;

#define MAX	64

static uintptr_t code_lo, code_hi, restorer;

static int find_libc(struct dl_phdr_info *info, size_t size, void *data)
{
	int i;

	(void)size;
	(void)data;
	if (!strstr(info->dlpi_name, "libc.so"))
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			code_lo = info->dlpi_addr + ph->p_vaddr;
			code_hi = code_lo + ph->p_memsz;
		}
	}
	return 1;
}

static void nothing(int sig)
{
	(void)sig;
}

static void setup(void)
{
	struct sigaction sa = { .sa_handler = nothing }, old;

	dl_iterate_phdr(find_libc, NULL);
	if (!code_hi)
		abort();
	/* glibc gives back the restorer it installs */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR1, NULL, &old);
	restorer = (uintptr_t)old.sa_restorer;
}

static uint64_t word(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* v, or an address it names (see the top of the file) */
static uintptr_t shape(uint64_t v, uintptr_t s_lo, size_t s_len,
		       uintptr_t h_lo, size_t h_len)
{
	uint64_t low = v & 0xffffffffffffull;

	switch (v >> 56) {
	case 0xaa:
		return code_lo + low % (code_hi - code_lo);
	case 0xab:
		return restorer + low % 4;
	case 0xbb:
		return s_len ? s_lo + low % s_len : v;
	case 0xbc:
		return h_len ? h_lo + low % h_len : v;
	}
	return (uintptr_t)v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	uint64_t frames[MAX];
	struct cfi_regs start;
	struct cfi_stack stack;
	struct cfi_walk walk;
	size_t words, s_words, h_words, i;
	uint64_t *s, *h;
	uintptr_t s_lo, h_lo, below;
	unsigned int n;

	if (!ready) {
		setup();
		ready = true;
	}
	if (size < 24 + 16)
		return 0;
	words = (size - 24) / 8;
	h_words = words / 4;
	s_words = words - h_words;
	s = malloc(s_words * 8);
	h = malloc(h_words ? h_words * 8 : 1);
	if (!s || !h)
		abort();
	s_lo = (uintptr_t)s;
	h_lo = (uintptr_t)h;
	for (i = 0; i < s_words; i++)
		s[i] = shape(word(data + 24 + i * 8), s_lo, s_words * 8, h_lo,
			     h_words * 8);
	for (i = 0; i < h_words; i++)
		h[i] = shape(word(data + 24 + (s_words + i) * 8), s_lo,
			     s_words * 8, h_lo, h_words * 8);

	start.pc = shape(word(data), s_lo, s_words * 8, h_lo, h_words * 8);
	start.sp = s_lo + word(data + 8) % (s_words * 8);
	start.bp = shape(word(data + 16), s_lo, s_words * 8, h_lo,
			 h_words * 8);
	stack = (struct cfi_stack){
		.lo = start.sp, .hi = s_lo + s_words * 8,
		.home_lo = h_words ? h_lo : 0,
		.home_hi = h_words ? h_lo + h_words * 8 : 0,
	};
	below = start.sp - s_lo;
	ASAN_POISON_MEMORY_REGION(s, below);
	n = unwind_cfi(&start, &stack, frames, MAX, &walk);
	ASAN_UNPOISON_MEMORY_REGION(s, below);
	if (n > MAX || (walk.truncated && n != MAX))
		abort();
	free(h);
	free(s);
	return 0;
}
