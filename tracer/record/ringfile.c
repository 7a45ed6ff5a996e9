// SPDX-License-Identifier: MIT
/*
 * ringfile.c - create, validate and map the agent's memfd.
 *
 * The memfd is sealed against growing and shrinking before anyone maps it,
 * so a mapping can never become a SIGBUS trap under the tracer.  When the
 * tracer did not create the file itself it checks those seals, the size from
 * fstat and every header field against pa_layout_file_size() before it maps
 * anything, and from then on uses only the copies in struct ringfile.
 * The counters the agent keeps in the header (losses) are checked for
 * plausibility each time they are read (ringfile__losses), since advice
 * is given on them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "pprof_alloc_memfd.h"
#include "ringfile.h"
#include "pa_clock.h"
#include "elf/maps.h"

int ringfile__create(struct ringfile *rf, uint64_t data_size,
		     uint64_t live_capacity, uint64_t sample_rate,
		     uint32_t max_frames)
{
	int err = pa_memfd_create(data_size, live_capacity, sample_rate,
				  max_frames, &rf->fd, &rf->hdr);

	if (err)
		return err;
	rf->site_capacity = pa_sites_for_rate(sample_rate, live_capacity);
	rf->file_size = pa_layout_file_size(data_size, live_capacity,
					    max_frames, rf->site_capacity);
	rf->stack_capacity = pa_stack_capacity(live_capacity, sample_rate == 1,
					       max_frames);
	rf->data_size = data_size;
	rf->live_capacity = live_capacity;
	rf->sample_rate = sample_rate;
	rf->max_frames = max_frames;
	rf->in_memory = false;
	rf->losses_bad = NULL;
	rf->born_ns = 0;
	memset(&rf->losses_seen, 0, sizeof(rf->losses_seen));
	return 0;
}

int ringfile__open(struct ringfile *rf, int fd, const char **why)
{
	volatile struct pa_header *vh;
	struct pa_header copy;
	struct stat st;
	void *map;
	int seals;
	uint64_t fsize;

	if (fstat(fd, &st)) {
		*why = "cannot stat the memfd";
		return -errno;
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (!S_ISREG(st.st_mode) || seals < 0 ||
	    (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) !=
		    (F_SEAL_SHRINK | F_SEAL_GROW)) {
		*why = "the memfd is not sealed against resizing";
		return -EPERM;
	}
	if ((uint64_t)st.st_size < PA_HEADER_SIZE) {
		*why = "the memfd is smaller than its header";
		return -EPROTO;
	}
	vh = map = mmap(NULL, PA_HEADER_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		*why = "cannot map the memfd header";
		return -errno;
	}
	copy.magic = vh->magic;
	copy.abi_version = vh->abi_version;
	copy.file_size = vh->file_size;
	copy.data_offset = vh->data_offset;
	copy.data_size = vh->data_size;
	copy.live_offset = vh->live_offset;
	copy.live_capacity = vh->live_capacity;
	copy.stack_offset = vh->stack_offset;
	copy.stack_capacity = vh->stack_capacity;
	copy.sample_rate = vh->sample_rate;
	copy.max_frames = vh->max_frames;
	copy.site_offset = vh->site_offset;
	copy.site_capacity = vh->site_capacity;
	munmap(map, PA_HEADER_SIZE);

	if (copy.magic != PA_MAGIC) {
		*why = "the memfd does not start with the pprof-alloc magic";
		return -EPROTO;
	}
	if (copy.abi_version != PA_ABI_VERSION) {
		*why = "the agent speaks another ABI version than this tracer";
		return -EPROTONOSUPPORT;
	}
	fsize = pa_layout_file_size(copy.data_size, copy.live_capacity,
				    copy.max_frames, copy.site_capacity);
	if (!fsize || fsize != copy.file_size ||
	    copy.site_offset != pa_site_offset(copy.data_size,
					       copy.live_capacity,
					       copy.site_capacity != 0,
					       copy.max_frames) ||
	    fsize != (uint64_t)st.st_size ||
	    copy.data_offset != PA_HEADER_SIZE ||
	    copy.live_offset != PA_HEADER_SIZE + copy.data_size ||
	    copy.stack_offset != pa_stack_offset(copy.data_size,
						 copy.live_capacity) ||
	    copy.stack_capacity != pa_stack_capacity(copy.live_capacity,
						     copy.site_capacity != 0,
						     copy.max_frames) ||
	    !copy.sample_rate || !copy.max_frames ||
	    copy.max_frames > PA_MAX_FRAMES) {
		*why = "the memfd header's sizes do not agree with its layout";
		return -EPROTO;
	}
	/* not populated: the pages the agent has not touched stay holes */
	map = mmap(NULL, fsize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		*why = "cannot map the memfd";
		return -errno;
	}
	rf->fd = fd;
	rf->hdr = map;
	rf->file_size = fsize;
	rf->data_size = copy.data_size;
	rf->live_capacity = copy.live_capacity;
	rf->stack_capacity = copy.stack_capacity;
	rf->site_capacity = copy.site_capacity;
	rf->sample_rate = copy.sample_rate;
	rf->max_frames = copy.max_frames;
	rf->in_memory = false;
	rf->losses_bad = NULL;
	rf->born_ns = 0;
	memset(&rf->losses_seen, 0, sizeof(rf->losses_seen));
	return 0;
}

void ringfile__wrap(struct ringfile *rf, void *mem, const struct pa_header *h)
{
	*rf = (struct ringfile){
		.fd = -1, .hdr = mem, .file_size = h->file_size,
		.data_size = h->data_size, .live_capacity = h->live_capacity,
		.stack_capacity = h->stack_capacity,
		.site_capacity = h->site_capacity,
		.sample_rate = h->sample_rate, .max_frames = h->max_frames,
		.in_memory = true,
	};
}

void ringfile__close(struct ringfile *rf)
{
	if (rf->hdr && rf->in_memory)
		free(rf->hdr);
	else if (rf->hdr)
		munmap(rf->hdr, rf->file_size);
	if (rf->fd >= 0)
		close(rf->fd);
	rf->hdr = NULL;
	rf->fd = -1;
	rf->in_memory = false;
	rf->losses_bad = NULL;
	rf->born_ns = 0;
	memset(&rf->losses_seen, 0, sizeof(rf->losses_seen));
}

/* One address space's worth, with five-level paging (2^57 bytes): no
 * allocation is larger. */
#define LOSS_BYTES_PER_SAMPLE	(1ull << 57)

/* Raise *p to v if it is below (readers on several threads: serve's). */
static void raise_to(uint64_t *p, uint64_t v)
{
	uint64_t old = __atomic_load_n(p, __ATOMIC_ACQUIRE);

	while (old < v && !__atomic_compare_exchange_n(p, &old, v, false,
						       __ATOMIC_RELEASE,
						       __ATOMIC_ACQUIRE))
		;
}

static int losses_bad(struct ringfile *rf, const char *why_bad,
		      const char **why)
{
	const char *none = NULL;

	/* the first reason found stays */
	__atomic_compare_exchange_n(&rf->losses_bad, &none, why_bad, false,
				    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	if (why)
		*why = __atomic_load_n(&rf->losses_bad, __ATOMIC_ACQUIRE);
	return -EBADMSG;
}

int ringfile__losses(struct ringfile *rf, struct ringfile_losses *l,
		     const char **why)
{
	struct ringfile_losses seen, now;
	static long cpus;
	struct timespec ts;
	uint64_t most, lived;

	memset(l, 0, sizeof(*l));
	if (__atomic_load_n(&rf->losses_bad, __ATOMIC_ACQUIRE))
		return losses_bad(rf, NULL, why);
	/* what was seen, before the header is read again: an honest
	 * agent's counters are at least that by now, whichever thread saw
	 * them */
	seen.records = __atomic_load_n(&rf->losses_seen.records, __ATOMIC_ACQUIRE);
	seen.bytes = __atomic_load_n(&rf->losses_seen.bytes, __ATOMIC_ACQUIRE);
	seen.samples = __atomic_load_n(&rf->losses_seen.samples, __ATOMIC_ACQUIRE);
	seen.live_overflow = __atomic_load_n(&rf->losses_seen.live_overflow,
					     __ATOMIC_ACQUIRE);
	/* the agent adds to lost_records, then lost_samples, then
	 * lost_bytes: read in the other order, each is at least what the
	 * one read before it implies */
	now.bytes = __atomic_load_n(&rf->hdr->lost_bytes, __ATOMIC_ACQUIRE);
	now.samples = __atomic_load_n(&rf->hdr->lost_samples, __ATOMIC_ACQUIRE);
	now.records = __atomic_load_n(&rf->hdr->lost_records, __ATOMIC_ACQUIRE);
	now.live_overflow = __atomic_load_n(&rf->hdr->live_overflow,
					    __ATOMIC_ACQUIRE);
	/* one event a nanosecond on every CPU since the target started (or
	 * the boot), at most */
	if (!cpus)
		cpus = sysconf(_SC_NPROCESSORS_CONF);
	clock_gettime(CLOCK_BOOTTIME, &ts);
	lived = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (rf->born_ns && rf->born_ns < lived)
		lived -= rf->born_ns;
	most = (lived + 1000000000ull) * (uint64_t)(cpus > 0 ? cpus : 1);
	if (now.records < seen.records || now.bytes < seen.bytes ||
	    now.samples < seen.samples ||
	    now.live_overflow < seen.live_overflow)
		return losses_bad(rf, "a loss counter went backwards", why);
	if (now.records > most || now.live_overflow > most)
		return losses_bad(rf, "a loss counter is more than the process could have counted since it started", why);
	if (now.samples > now.records)
		return losses_bad(rf, "more lost samples than lost records", why);
	if (now.bytes / LOSS_BYTES_PER_SAMPLE > now.samples)
		return losses_bad(rf, "more lost bytes than the lost samples could hold", why);
	raise_to(&rf->losses_seen.records, now.records);
	raise_to(&rf->losses_seen.bytes, now.bytes);
	raise_to(&rf->losses_seen.samples, now.samples);
	raise_to(&rf->losses_seen.live_overflow, now.live_overflow);
	*l = now;
	return 0;
}

void ringfile__set_born(struct ringfile *rf, pid_t pid)
{
	uint64_t ticks = proc_stat__start_time(pid);
	long hz = sysconf(_SC_CLK_TCK);

	if (!ticks || hz <= 0)
		return;
	rf->born_ns = ticks * (1000000000ull / (uint64_t)hz);
}

int ringfile__peak(const struct ringfile *rf, struct ringfile_peak *p,
		   const char **why)
{
	const struct pa_header *h = rf->hdr;
	uint64_t peak, one, at, overflow;
	uint32_t threads, most, chunk;

	memset(p, 0, sizeof(*p));
	if (!h || rf->sample_rate != 1 || !rf->site_capacity)
		return -ENOENT;
	/* one before peak: the agent raises peak first */
	one = __atomic_load_n(&h->inuse_peak_one, __ATOMIC_ACQUIRE);
	peak = __atomic_load_n(&h->inuse_peak, __ATOMIC_ACQUIRE);
	at = __atomic_load_n(&h->inuse_peak_ns, __ATOMIC_RELAXED);
	threads = __atomic_load_n(&h->inuse_threads, __ATOMIC_RELAXED);
	most = __atomic_load_n(&h->inuse_live_max, __ATOMIC_RELAXED);
	chunk = __atomic_load_n(&h->inuse_chunk, __ATOMIC_RELAXED);
	overflow = __atomic_load_n(&h->live_overflow, __ATOMIC_RELAXED);
	/* blocks the agent could not keep are in no count */
	if (!peak || overflow)
		return -ENOENT;
	if (!threads || !chunk || chunk > (1u << 24) || most > threads ||
	    peak > PA_USER_ADDR_LIMIT || one > peak) {
		*why = "the agent's count of bytes in use is not one it could have made";
		return -EBADMSG;
	}
	p->threads = threads;
	p->at_ns = at;
	/* one thread's own high, published at each: the shared count can
	 * be at most 2 chunks above it, or one is stale */
	if (threads == 1 && one && peak <= one + 2ull * chunk) {
		p->exact = true;
		p->bytes = one;
		return 0;
	}
	p->bytes = peak;
	p->slack = 2ull * chunk * (most ? most : 1);
	return 0;
}

unsigned char *ringfile__pages(const struct ringfile *rf, uint64_t off,
			       uint64_t len)
{
	uint64_t npages = (len + PA_PAGE_SIZE - 1) / PA_PAGE_SIZE, at = off;
	uint64_t end = off + len;
	unsigned char *v;

	if (rf->fd < 0 || rf->in_memory || (off % PA_PAGE_SIZE) ||
	    end > rf->file_size)
		return NULL;
	v = calloc(npages ? npages : 1, 1);
	if (!v)
		return NULL;
	while (at < end) {
		off_t data = lseek(rf->fd, (off_t)at, SEEK_DATA), hole;
		uint64_t p;

		if (data < 0) {
			if (errno == ENXIO)	/* no data past at */
				break;
			free(v);
			return NULL;
		}
		if ((uint64_t)data >= end)
			break;
		hole = lseek(rf->fd, data, SEEK_HOLE);
		if (hole < 0 || hole <= data) {
			free(v);
			return NULL;
		}
		for (p = ((uint64_t)data - off) / PA_PAGE_SIZE;
		     p < npages && off + p * PA_PAGE_SIZE < (uint64_t)hole; p++)
			v[p] = 1;
		at = (uint64_t)hole;
	}
	return v;
}

uint32_t ringfile__stats_state(const struct pa_header *hdr, uint64_t deadline)
{
	uint32_t state = __atomic_load_n(&hdr->stats_thread, __ATOMIC_ACQUIRE);

	while (state == PA_STATS_STARTING && pa_now_ns() < deadline) {
		nanosleep(&(struct timespec){ 0, PA_NSEC_PER_MSEC }, NULL);
		state = __atomic_load_n(&hdr->stats_thread, __ATOMIC_ACQUIRE);
	}
	return state;
}
