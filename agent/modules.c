// SPDX-License-Identifier: MIT
/*
 * modules.c - tell the tracer which ELF modules are mapped where.
 *
 * The tracer learns the target's mappings from /proc/PID/maps, but only
 * while the target lives; a library that is dlopened, used and followed by
 * the process's death before the tracer's next look would leave its
 * samples unsymbolized.  So the agent reports each executable segment of
 * each module (path, build ID, range, bias) in PA_REC_MODULE records: all
 * of them at start, and new ones after dlopen.
 *
 * Finding out about a dlopen without wrapping it: glibc's dlopen looks at
 * its caller's address to choose the namespace and the RUNPATH to search,
 * so a hook that called the real dlopen would change what it loads.  The
 * agent's dlopen hook only bumps the header's dlopen_calls and jumps to the
 * real one
 * (the caller's address is untouched).  The next sampled allocations see
 * the counter move and rescan with dl_iterate_phdr for DLOPEN_WINDOW_NS - a scan
 * that costs one callback when dlpi_adds shows that nothing was added -
 * so the new module is reported before or right after its first sample.
 *
 * Scans never allocate; one runs at a time (a signal handler that
 * interrupts its own thread's scan skips it).  A thread that finds another
 * thread scanning does not wait for it, but hooks what is loaded itself
 * (got.c lets two threads patch at once): the other scan may have looked
 * at the new module while the loader was still relocating it and left it
 * for a later scan, and this sample - the dlopening thread's first after
 * dlopen returned - may be the last before the program calls into it.
 * Already reported segments are remembered by start address
 * in a fixed table; when it is full, segments may be reported twice, which
 * the tracer ignores.
 *
 * In --unwind auto the scans also have fp_trust.c judge each new module's
 * frame pointers; modules__rescan_all() looks at every module again, for
 * a tracer that asks for auto after they were loaded.
 */
#include <elf.h>
#include <link.h>
#include <string.h>
#include "agent.h"
#include "unwind_cfi.h"
#include "pa_clock.h"

#define RESCAN_NS	(20 * PA_NSEC_PER_MSEC)
/* After a dlopen call, until the new module is in dl_iterate_phdr's list
 * (mapped; the loader may still be relocating it: got.c then keeps the
 * scans coming).  20 ms was once too short for a dlopen on a loaded
 * machine (run-attach-dlopen under the sanitized suite). */
#define DLOPEN_WINDOW_NS	(100 * PA_NSEC_PER_MSEC)
#define MAX_REPORTED	1024
#define PAGE		4096ull

static uint64_t reported[MAX_REPORTED];
static unsigned int nreported;
static unsigned long long seen_adds = ~0ull;
static int scanned_calls;
static uint64_t rescan_until;
static int scanning;
/* dlpi_adds when a hook_beside last hooked every module loaded: another
 * one then has nothing to do until something is loaded */
static unsigned long long hooked_adds = ~0ull;
static int want_full;
static uint64_t next_unknown_scan;

static bool was_reported(uint64_t start)
{
	unsigned int i;

	for (i = 0; i < nreported; i++)
		if (reported[i] == start)
			return true;
	return false;
}

/* The GNU build ID from the module's PT_NOTE segments, in memory. */
static size_t build_id(const struct dl_phdr_info *info, uint8_t *out)
{
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const uint8_t *p, *end;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			size_t name = (n->n_namesz + 3) & ~3u;
			size_t desc = (n->n_descsz + 3) & ~3u;

			p += sizeof(*n);
			if (name > (size_t)(end - p) ||
			    desc > (size_t)(end - p) - name)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    !memcmp(p, "GNU", 4) && n->n_descsz &&
			    n->n_descsz <= PA_BUILD_ID_MAX) {
				memcpy(out, p + name, n->n_descsz);
				return n->n_descsz;
			}
			p += name + desc;
		}
	}
	return 0;
}

/* False when the ring had no room: the segment is then reported again
 * at the next scan. */
static bool emit(const struct dl_phdr_info *info, const ElfW(Phdr) *ph,
		 const uint8_t *id, size_t id_len)
{
	uint64_t vaddr = info->dlpi_addr + ph->p_vaddr;
	size_t path_len = strnlen(info->dlpi_name, PA_PATH_MAX);
	struct pa_rec_module *rec;
	struct pa_rec_hdr *h;

	h = ring__reserve(&pa_agent.ring, sizeof(*rec) + path_len,
			  PA_REC_MODULE);
	if (!h)
		return false;
	rec = (struct pa_rec_module *)h;
	rec->bias = info->dlpi_addr;
	rec->start = vaddr & ~(PAGE - 1);
	rec->end = (vaddr + ph->p_memsz + PAGE - 1) & ~(PAGE - 1);
	rec->offset = ph->p_offset & ~(PAGE - 1);
	rec->path_len = (uint32_t)path_len;
	rec->build_id_len = (uint8_t)id_len;
	memset(rec->reserved, 0, sizeof(rec->reserved));
	memset(rec->build_id, 0, sizeof(rec->build_id));
	memcpy(rec->build_id, id, id_len);
	memcpy(rec->path, info->dlpi_name, path_len);
	ring__commit(&pa_agent.ring, h);
	return true;
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *data)
{
	bool *first = data;
	uint8_t id[PA_BUILD_ID_MAX];
	size_t id_len = 0;
	bool have_id = false;
	int i;

	if (size < offsetof(struct dl_phdr_info, dlpi_subs))
		return 1;
	if (*first) {
		*first = false;
		if (info->dlpi_adds == seen_adds)
			return 1;	/* nothing loaded since the last scan */
		seen_adds = info->dlpi_adds;
	}
	if ((uint32_t)__atomic_load_n(&pa_agent.unwind_cfg, __ATOMIC_RELAXED) ==
	    PA_UNWIND_AUTO)
		fp_trust__note(info);
	/* the main program ("") and the vDSO have no path to report; the
	 * tracer knows the program from /proc at start */
	if (info->dlpi_name[0] != '/')
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t start = (info->dlpi_addr + ph->p_vaddr) & ~(PAGE - 1);

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) ||
		    was_reported(start))
			continue;
		if (!have_id) {
			id_len = build_id(info, id);
			have_id = true;
		}
		if (!emit(info, ph, id, id_len)) {
			seen_adds = ~0ull;	/* scan again next time */
			continue;
		}
		if (nreported < MAX_REPORTED)
			reported[nreported++] = start;
	}
	return 0;
}

static int read_adds(struct dl_phdr_info *info, size_t size, void *data)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs))
		*(unsigned long long *)data = info->dlpi_adds;
	return 1;
}

/* Another thread is scanning: hook what is loaded now from here, rather
 * than trust a scan that may have started before our dlopen returned.
 * One callback when nothing was loaded since the last that hooked all. */
static void hook_beside(void)
{
	unsigned long long adds = ~0ull;

	dl_iterate_phdr(read_adds, &adds);
	if (adds == __atomic_load_n(&hooked_adds, __ATOMIC_RELAXED))
		return;
	if (agent__hook_new_modules()) {
		/* one is still being relocated: scan again, all of it */
		__atomic_store_n(&want_full, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&rescan_until, UINT64_MAX, __ATOMIC_RELAXED);
	} else {
		__atomic_store_n(&hooked_adds, adds, __ATOMIC_RELAXED);
	}
}

void modules__scan(void)
{
	struct pa_thread *t = &pa_thread;
	unsigned long long adds_before = seen_adds;
	bool first = true;

	if (t->in_scan)
		return;		/* a signal handler interrupting our scan */
	t->in_scan = 1;
	if (__atomic_exchange_n(&scanning, 1, __ATOMIC_ACQUIRE)) {
		hook_beside();
		t->in_scan = 0;
		return;
	}
	if (__atomic_exchange_n(&want_full, 0, __ATOMIC_ACQUIRE))
		seen_adds = ~0ull;
	dl_iterate_phdr(scan_one, &first);
	unwind_cfi__loader_usable();	/* it returned: the lock is free */
	if (seen_adds != adds_before)
		unwind_cfi__modules_added();
	/* something was loaded: an attached agent hooks it too; a module
	 * still being relocated keeps the scans coming */
	if (seen_adds != adds_before && agent__hook_new_modules()) {
		seen_adds = ~0ull;
		__atomic_store_n(&rescan_until, UINT64_MAX, __ATOMIC_RELAXED);
	} else if (rescan_until == UINT64_MAX) {
		__atomic_store_n(&rescan_until, 0, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&scanning, 0, __ATOMIC_RELEASE);
	t->in_scan = 0;
}

void modules__forget(void)
{
	nreported = 0;
	seen_adds = ~0ull;
	scanned_calls = 0;
	rescan_until = 0;
	scanning = 0;		/* a thread of the parent's may have been */
	pa_thread.in_scan = 0;
	hooked_adds = ~0ull;
	want_full = 0;
	next_unknown_scan = 0;
}

void modules__rescan_all(void)
{
	__atomic_store_n(&want_full, 1, __ATOMIC_RELEASE);
	modules__scan();
}

void modules__after_sample(uint64_t now_ns)
{
	int calls = (int)__atomic_load_n(&pa_agent.hdr->dlopen_calls,
					 __ATOMIC_RELAXED);
	uint64_t until = __atomic_load_n(&rescan_until, __ATOMIC_RELAXED);

	if (unlikely(fp_trust__take_rescan()) &&
	    now_ns >= __atomic_load_n(&next_unknown_scan, __ATOMIC_RELAXED)) {
		/* at most every RESCAN_NS: JIT code stays unknown */
		__atomic_store_n(&next_unknown_scan, now_ns + RESCAN_NS,
				 __ATOMIC_RELAXED);
		modules__rescan_all();
		return;
	}
	if (likely(calls == __atomic_load_n(&scanned_calls, __ATOMIC_RELAXED) &&
		   now_ns >= until)) {
		/* the window is over: modules__after_count needs no clock */
		if (until && until != UINT64_MAX)
			__atomic_compare_exchange_n(&rescan_until, &until, 0, 0,
						    __ATOMIC_RELAXED,
						    __ATOMIC_RELAXED);
		return;
	}
	if (calls != scanned_calls) {
		__atomic_store_n(&scanned_calls, calls, __ATOMIC_RELAXED);
		__atomic_store_n(&rescan_until, now_ns + DLOPEN_WINDOW_NS,
				 __ATOMIC_RELAXED);
	}
	modules__scan();
}

void modules__after_count(void)
{
	/* nothing loaded since the last scan, no window open, no rescan
	 * asked for: nothing to do, and no clock read to know it */
	if (likely((int)__atomic_load_n(&pa_agent.hdr->dlopen_calls,
					__ATOMIC_RELAXED) ==
		   __atomic_load_n(&scanned_calls, __ATOMIC_RELAXED) &&
		   !__atomic_load_n(&rescan_until, __ATOMIC_RELAXED) &&
		   !fp_trust__rescan_wanted()))
		return;
	modules__after_sample(pa_coarse_ns());
}
