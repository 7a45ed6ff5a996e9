// SPDX-License-Identifier: MIT
/*
 * hostile.c - a target that plays the agent and lies to the tracer
 * (tests/e2e/run-hostile.sh).  Built only for the tests.
 *
 *   hostile MODE PIDFILE [ARG]
 *
 * It makes an agent memfd by hand (the name, the header, a ring and a live
 * table, as include/pprof_alloc_memfd.h lays them out), says it is
 * recording, writes its pid to PIDFILE and waits for a tracer to attach
 * with --pid.  Most modes first write HELLO_RECORDS honest records (one
 * 1000-byte allocation each at hostile_hello called from hostile_caller,
 * at --rate 1), wait until the
 * tracer has consumed them (data_tail reaches data_head), then misbehave:
 *
 *   honest        nothing more (the control: the tracer must take it)
 *   unsealed      the memfd is not sealed at all (refused at connect)
 *   shrinkable    sealed against growing only; truncated to 0 once the
 *                 tracer has looked (refused at connect)
 *   writesealed   sealed against writes, so the tracer cannot map it
 *   lying         the header's data_size says twice the real ring
 *   abi           the header speaks ABI version + 1
 *   back          data_head moves behind data_tail
 *   ahead         data_head jumps two rings ahead of data_tail
 *   unaligned     data_head moves 12 bytes on
 *   reclen        a record whose length runs past the ring
 *   frames        an allocation record claiming 2^31 - 1 frames
 *   stackcopy     a stack-copy record whose copy size lies
 *   module        a module record whose path length lies
 *   busy          a record left busy for ever, honest records after it
 *   counters      10^12 lost records a second after the start (and
 *                 lost bytes at UINT64_MAX)
 *   backwards     the loss counters at 1000 lost records when the tracer
 *                 attaches, 5 after it has read the hello records
 *   stubborn      honest, but never obeys the tracer's detach command
 *   livegarbage   before anything: the live table and the stack table
 *                 full of random words, a few well-formed entries for
 *                 impossible addresses and sizes, and SEEDED (3) honest
 *                 entries of 1000 bytes at hostile_seeded
 *   flood         four threads write honest-looking records as fast as
 *                 they can, each with a new address (never freed) and a
 *                 new stack of MAX_FRAMES (256) random return addresses
 *                 inside libc's code
 *   paths ARG     dlopen the library ARG (a copy the test made), record
 *                 allocations whose stacks are in it, then replace the
 *                 file with a FIFO: a tracer that opens the path instead of
 *                 /proc/PID/map_files blocks for ever
 *   shrink ARG    as paths, but once the tracer has connected the
 *                 library file is emptied and filled again every 2 ms
 *                 (the tracer must not die of SIGBUS)
 *
 * Except in stubborn, a detach command is obeyed at once (agent_state
 * DETACHED), so the tracer's bounded wait is not what the test measures.
 * It runs until killed, or exits 1 after five minutes.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "../../include/pprof_alloc_memfd.h"

#define DATA_SIZE	(1u << 20)
#define LIVE_CAP	1024u
#define MAX_FRAMES	PA_MAX_FRAMES	/* the deepest stacks cost most */
#define HELLO_RECORDS	10
#define HELLO_SIZE	1000
#define SEEDED		3	/* honest live-table entries in livegarbage */

static struct pa_header *hdr;
static uint8_t *ring;
static const char *mode;
static volatile int stop_flood;

/* The functions the records' stacks point into: a frame is the function's
 * address + 4, inside its body (16 bytes of nops at least). */
#define BODY	__asm__ volatile(".rept 16\n\tnop\n\t.endr")

__attribute__((noinline)) void hostile_hello(void)
{
	BODY;
}

__attribute__((noinline)) void hostile_seeded(void)
{
	BODY;
}

__attribute__((noinline)) void hostile_caller(void)
{
	BODY;
	hostile_hello();
	hostile_seeded();
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void die(const char *what)
{
	fprintf(stderr, "hostile: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Reserve len bytes as the agent does (CAS on the head, padding at the
 * end); NULL when full. */
static struct pa_rec_hdr *reserve(uint32_t len, uint16_t type)
{
	uint64_t head, tail, off, pad;
	struct pa_rec_hdr *rec;

	head = __atomic_load_n(&hdr->data_head, __ATOMIC_RELAXED);
	do {
		tail = __atomic_load_n(&hdr->data_tail, __ATOMIC_ACQUIRE);
		off = head & (DATA_SIZE - 1);
		pad = off + len > DATA_SIZE ? DATA_SIZE - off : 0;
		if (head - tail + pad + len > DATA_SIZE)
			return NULL;
	} while (!__atomic_compare_exchange_n(&hdr->data_head, &head,
					      head + pad + len, 1,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	if (pad) {
		rec = (struct pa_rec_hdr *)(ring + off);
		rec->type = PA_REC_PAD;
		rec->flags = 0;
		__atomic_store_n(&rec->len, (uint32_t)pad, __ATOMIC_RELEASE);
		off = 0;
	}
	rec = (struct pa_rec_hdr *)(ring + off);
	rec->type = type;
	rec->flags = 0;
	__atomic_store_n(&rec->len, len | PA_REC_BUSY, __ATOMIC_RELAXED);
	return rec;
}

static void commit(struct pa_rec_hdr *rec)
{
	__atomic_store_n(&rec->len, rec->len & PA_REC_LEN_MASK,
			 __ATOMIC_RELEASE);
}

/* One allocation record; false if the ring is full. */
static bool record_alloc(uint64_t addr, uint64_t size, const uint64_t *frames,
			 uint32_t n, uint32_t tid, uint64_t seq)
{
	struct pa_rec_alloc *a;

	a = (void *)reserve((uint32_t)pa_alloc_rec_size(n, 0, 0),
			    PA_REC_ALLOC);
	if (!a)
		return false;
	a->seq = seq;
	a->time_ns = now_ns();
	a->addr = addr;
	a->size = size;
	a->tid = tid;
	a->nframes = n;
	memcpy(a->frames, frames, n * sizeof(*frames));
	commit(&a->hdr);
	return true;
}

static void hello_frames(uint64_t frames[2])
{
	frames[0] = (uint64_t)(uintptr_t)&hostile_hello + 4;
	frames[1] = (uint64_t)(uintptr_t)&hostile_caller + 8;
}

static void say_hello(void)
{
	uint64_t frames[2];
	int i;

	hello_frames(frames);
	for (i = 0; i < HELLO_RECORDS; i++)
		if (!record_alloc(0x100000 + 0x1000 * (uint64_t)i, HELLO_SIZE,
				  frames, 2, (uint32_t)getpid(), (uint64_t)i + 1))
			die("ring full at hello");
}

/* Until the tracer has consumed everything written so far. */
static void wait_consumed(void)
{
	while (__atomic_load_n(&hdr->data_tail, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&hdr->data_head, __ATOMIC_ACQUIRE))
		sleep_ms(5);
}

static int make_memfd(unsigned seals, int *fd)
{
	uint64_t size = pa_layout_file_size(DATA_SIZE, LIVE_CAP, MAX_FRAMES,
					    pa_site_capacity(LIVE_CAP));
	int f = memfd_create(PA_MEMFD_NAME, MFD_ALLOW_SEALING);
	void *map;

	if (f < 0 || ftruncate(f, (off_t)size))
		die("memfd");
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
	if (map == MAP_FAILED)
		die("mmap");
	hdr = map;
	pa_header_init(hdr, DATA_SIZE, LIVE_CAP, 1, MAX_FRAMES,
		       pa_site_capacity(LIVE_CAP));
	hdr->unwind_mode = PA_UNWIND_FP;
	ring = (uint8_t *)map + hdr->data_offset;
	/* sealed after mapping: F_SEAL_FUTURE_WRITE allows the mapping we
	 * already have, and refuses the tracer's */
	if (seals && fcntl(f, F_ADD_SEALS, seals))
		die("seals");
	*fd = f;
	return 0;
}

/* Random words, xorshift: deterministic per run is not needed. */
static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* The live table and the stack table after it: random words. */
static void fill_live_garbage(void)
{
	uint8_t *from = (uint8_t *)hdr + hdr->live_offset;
	uint8_t *to = (uint8_t *)hdr + hdr->stack_offset +
		      pa_stack_table_size(hdr->stack_capacity);
	uint64_t *w;

	struct pa_live_entry *live = (void *)from;
	uint64_t *stack = (uint64_t *)((uint8_t *)hdr + hdr->stack_offset +
				       pa_stack_arena_offset(hdr->stack_capacity));
	int i;

	for (w = (uint64_t *)from; (uint8_t *)(w + 1) <= to; w++)
		*w = rnd();
	hdr->live_entries = rnd();
	/* one well-formed stack, used by entries that are well-formed but
	 * for an impossible address or size, and by SEEDED honest ones */
	stack[1] = pa_stack_head(2, 0x1234560ull << 32);
	stack[2] = (uint64_t)(uintptr_t)&hostile_seeded + 4;
	stack[3] = (uint64_t)(uintptr_t)&hostile_caller + 8;
	for (i = 0; i < 16; i++) {
		live[i].key = 0x200000 + 0x1000 * (uint64_t)i;
		live[i].size = 1000;
		live[i].alloc_id = 0;
		live[i].stack_id = 1;
		live[i].site = 0;	/* recorded, not counted at a site */
	}
	live[0].size = 1ull << 62;
	live[1].size = UINT64_MAX;
	live[2].key = PA_USER_ADDR_LIMIT;
	live[3].key = UINT64_MAX - 0xfff;
	live[4].size = PA_USER_ADDR_LIMIT;
	live[5].stack_id = (uint32_t)pa_stack_words(hdr->stack_capacity);
	live[6].stack_id = UINT32_MAX - 1;
	for (i = 7; i < 16 - SEEDED; i++)
		live[i].key = 0;		/* empty */
}

/* ---- the flood ---------------------------------------------------------- */

static uint64_t libc_text, libc_text_len;

static int find_libc(struct dl_phdr_info *info, size_t size, void *arg)
{
	int i;

	(void)size;
	(void)arg;
	if (!strstr(info->dlpi_name, "libc.so"))
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			libc_text = info->dlpi_addr + ph->p_vaddr;
			libc_text_len = ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

static void *flood_thread(void *arg)
{
	uint64_t frames[MAX_FRAMES], state = (uintptr_t)arg * 0x9e3779b97f4a7c15ull;
	uint64_t seq = 0, addr = ((uintptr_t)arg + 1) << 40;
	uint32_t tid = (uint32_t)getpid() + 1000 + (uint32_t)(uintptr_t)arg;

	while (!stop_flood) {
		uint32_t i, n = MAX_FRAMES;

		for (i = 0; i < n; i++) {
			state ^= state << 13;
			state ^= state >> 7;
			state ^= state << 17;
			frames[i] = libc_text + state % libc_text_len;
		}
		if (record_alloc(addr, 64 + seq % 4096, frames, n, tid, seq + 1)) {
			seq++;
			addr += 16;
		}
	}
	return NULL;
}

/* ---- the library whose file changes under the tracer ------------------- */

static const char *lib_path;
static uint8_t *lib_copy;
static size_t lib_size;

static void load_lib(uint64_t frames[2])
{
	void *h = dlopen(lib_path, RTLD_NOW);
	void *fn = h ? dlsym(h, "dlsite_run") : NULL;
	struct stat st;
	int fd;

	if (!fn) {
		fprintf(stderr, "hostile: %s\n", dlerror());
		exit(1);
	}
	frames[0] = (uint64_t)(uintptr_t)fn + 4;
	frames[1] = (uint64_t)(uintptr_t)&hostile_caller + 8;
	fd = open(lib_path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		die(lib_path);
	lib_size = (size_t)st.st_size;
	lib_copy = mmap(NULL, lib_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE,
			fd, 0);
	if (lib_copy == MAP_FAILED)
		die("mmap library");
	close(fd);
}

/* Empty the file for 2 ms, fill it again for 2 ms, for ever: a tracer
 * reading it through a mapping meets pages that are gone (SIGBUS). */
static void *flip_thread(void *arg)
{
	uint8_t *keep = malloc(lib_size);
	int fd = open(lib_path, O_RDWR);

	(void)arg;
	if (!keep || fd < 0)
		die("flip");
	memcpy(keep, lib_copy, lib_size);
	for (;;) {
		if (ftruncate(fd, 0))
			die("flip truncate");
		sleep_ms(2);
		if (pwrite(fd, keep, lib_size, 0) != (ssize_t)lib_size)
			die("flip write");
		sleep_ms(2);
	}
	return NULL;
}

/* ---- misbehaviour after the hello records ------------------------------ */

static void corrupt_ring(void)
{
	uint64_t tail = __atomic_load_n(&hdr->data_tail, __ATOMIC_ACQUIRE);
	struct pa_rec_hdr *rec;
	struct pa_rec_alloc *a;
	uint64_t frames[2];

	hello_frames(frames);
	if (!strcmp(mode, "back")) {
		__atomic_store_n(&hdr->data_head, tail - 64, __ATOMIC_RELEASE);
	} else if (!strcmp(mode, "ahead")) {
		__atomic_store_n(&hdr->data_head, tail + 2ull * DATA_SIZE,
				 __ATOMIC_RELEASE);
	} else if (!strcmp(mode, "unaligned")) {
		__atomic_store_n(&hdr->data_head, tail + 12, __ATOMIC_RELEASE);
	} else if (!strcmp(mode, "reclen")) {
		rec = reserve(64, PA_REC_ALLOC);
		__atomic_store_n(&rec->len, 2u * DATA_SIZE, __ATOMIC_RELEASE);
	} else if (!strcmp(mode, "frames")) {
		a = (void *)reserve((uint32_t)pa_alloc_rec_size(2, 0, 0),
				    PA_REC_ALLOC);
		a->addr = 0x5000;
		a->size = 10;
		a->nframes = 0x7fffffff;
		commit(&a->hdr);
	} else if (!strcmp(mode, "stackcopy")) {
		struct pa_stack_copy *sc;

		a = (void *)reserve((uint32_t)pa_alloc_rec_size(2, 1, 64),
				    PA_REC_ALLOC);
		a->hdr.flags = PA_ALLOC_STACK;
		a->addr = 0x5000;
		a->size = 10;
		a->nframes = 2;
		memcpy(a->frames, frames, sizeof(frames));
		sc = (void *)&a->frames[2];
		sc->size = 1u << 30;
		commit(&a->hdr);
	} else if (!strcmp(mode, "module")) {
		struct pa_rec_module *m;

		m = (void *)reserve((uint32_t)pa_round_up8(sizeof(*m) + 8),
				    PA_REC_MODULE);
		m->start = 0x1000;
		m->end = 0x2000;
		m->path_len = 0xffffff;
		memcpy(m->path, "/bin/sh", 8);
		commit(&m->hdr);
	} else if (!strcmp(mode, "counters")) {
		/* more losses than a young process could have had: 10^12
		 * records in about a second (bytes at the extreme) */
		hdr->lost_records = 1000000000000ull;
		hdr->lost_samples = 1000000000000ull;
		hdr->lost_bytes = UINT64_MAX;
	} else if (!strcmp(mode, "backwards")) {
		/* fewer losses than the tracer read at its attach */
		hdr->lost_records = 5;
		hdr->lost_samples = 5;
		hdr->lost_bytes = 5000;
	} else if (!strcmp(mode, "busy")) {
		int i;

		rec = reserve((uint32_t)pa_alloc_rec_size(2, 0, 0),
			      PA_REC_ALLOC);	/* never committed */
		(void)rec;
		for (i = 0; i < HELLO_RECORDS; i++)
			record_alloc(0x900000 + 0x1000 * (uint64_t)i, 7, frames,
				     2, (uint32_t)getpid(), 100 + (uint64_t)i);
	}
}

int main(int argc, char **argv)
{
	uint64_t frames[2];
	pthread_t th[4];
	unsigned seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	uint64_t start;
	FILE *f;
	int fd, i;

	if (argc < 3) {
		fprintf(stderr, "usage: hostile MODE PIDFILE [LIBRARY]\n");
		return 2;
	}
	mode = argv[1];
	if (!strcmp(mode, "paths") || !strcmp(mode, "shrink")) {
		if (argc < 4) {
			fprintf(stderr, "hostile: %s needs a library\n", mode);
			return 2;
		}
		lib_path = argv[3];
	}
	if (!strcmp(mode, "unsealed"))
		seals = 0;
	else if (!strcmp(mode, "shrinkable"))
		seals = F_SEAL_GROW;
	else if (!strcmp(mode, "writesealed"))
		seals |= F_SEAL_FUTURE_WRITE;
	make_memfd(seals, &fd);
	if (!strcmp(mode, "lying"))
		hdr->data_size = 2 * DATA_SIZE;
	else if (!strcmp(mode, "abi"))
		hdr->abi_version = PA_ABI_VERSION + 1;
	else if (!strcmp(mode, "livegarbage"))
		fill_live_garbage();
	if (!strcmp(mode, "backwards")) {
		hdr->lost_records = 1000;
		hdr->lost_samples = 1000;
		hdr->lost_bytes = 1000000;
	}
	hdr->agent_pid = (uint32_t)getpid();
	hdr->agent_start_ns = now_ns();
	__atomic_store_n(&hdr->agent_state, PA_STATE_RUNNING, __ATOMIC_RELEASE);

	if (lib_path) {
		load_lib(frames);
		for (i = 0; i < HELLO_RECORDS; i++)
			record_alloc(0x700000 + 0x1000 * (uint64_t)i, 3000,
				     frames, 2, (uint32_t)getpid(),
				     50 + (uint64_t)i);
	}
	say_hello();
	f = fopen(argv[2], "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
		die(argv[2]);

	if (!strcmp(mode, "flood")) {
		dl_iterate_phdr(find_libc, NULL);
		if (!libc_text_len)
			die("no libc text");
	}
	wait_consumed();
	if (!strcmp(mode, "shrinkable") && ftruncate(fd, 0))
		die("truncate");
	corrupt_ring();
	if (!strcmp(mode, "paths")) {
		if (unlink(lib_path) || mkfifo(lib_path, 0600))
			die("fifo");
	} else if (!strcmp(mode, "shrink")) {
		if (pthread_create(&th[0], NULL, flip_thread, NULL))
			die("flip thread");
	} else if (!strcmp(mode, "flood")) {
		for (i = 0; i < 4; i++)
			if (pthread_create(&th[i], NULL, flood_thread,
					   (void *)(uintptr_t)i))
				die("flood thread");
	}

	start = now_ns();
	while (now_ns() - start < 300ull * 1000000000ull) {
		if (__atomic_load_n(&hdr->command, __ATOMIC_ACQUIRE) ==
			    PA_CMD_DETACH && strcmp(mode, "stubborn")) {
			stop_flood = 1;
			__atomic_store_n(&hdr->agent_state, PA_STATE_DETACHED,
					 __ATOMIC_RELEASE);
			__atomic_store_n(&hdr->command, PA_CMD_NONE,
					 __ATOMIC_RELEASE);
		}
		sleep_ms(2);
	}
	return 1;
}
