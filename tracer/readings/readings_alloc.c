// SPDX-License-Identifier: MIT
/*
 * readings_alloc.c - the allocator's own statistics, asked of the agent.
 *
 * The agent's stats thread answers PA_CMD_STATS (agent/stats.c has the
 * protocol): we write the command with a compare-and-swap from NONE (a
 * pending DETACH is never overwritten), wake the futex on it, and sleep on
 * the futex of stats_seq until it moves or the timeout passes.  Both are
 * shared futexes on the memfd, which works across processes because the
 * kernel keys them by the file and offset, not by the address.
 *
 * The reply is the target's memory: it is copied out once, then checked -
 * the allocator kind against the enum, the text's length against the area,
 * the path up to its first NUL, every number against ALLOCSTATS_MAX_VALUE
 * (a part with one beyond it is left out, and why says so) - and
 * mimalloc's table is parsed strictly (readings_mimalloc.c), malloc_info's
 * XML with a
 * bounded tag reader that accepts only the handful of elements glibc
 * writes (<heap nr>, <total type count size>, <system type size>, <aspace
 * type size>) and skips the per-size-class <size> lines.  An answer that
 * does not parse leaves the arenas out and says why; the mallinfo2
 * figures, which are plain numbers, are kept.
 *
 * Every allocator's figures are then mapped onto common names
 * (allocstats__common), where it has them, its own kept beside them.
 * An agent that does not
 * answer in time (it exec'd, or its allocator is busy) is not asked again
 * for QUIET_NS, so it cannot hold the tracer's loop up every interval,
 * unless its late answer comes meanwhile.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "elf/array.h"
#include "readings_alloc.h"
#include "tracer/record/ringfile.h"
#include "pa_clock.h"
#include "pa_futex.h"

const char *const allocstats_mallinfo_names[10] = {
	"arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
	"fsmblks", "uordblks", "fordblks", "keepcost",
};

const char *const allocstats_jemalloc_names[7] = {
	"allocated", "active", "metadata", "resident", "mapped", "retained",
	"narenas",
};

const char *const allocstats_mimalloc_names[8] = {
	"elapsed_ms", "user_ms", "system_ms", "current_rss", "peak_rss",
	"current_commit", "peak_commit", "page_faults",
};

const char *const allocstats_tcmalloc_names[PA_TCMALLOC_PROPERTIES] = {
	PA_TCMALLOC_PROPERTY_NAMES
};

const char *const allocstats_common_names[ALLOC_COMMON_COUNT] = {
	"in_use", "free", "metadata", "resident", "mapped", "retained",
};

/* After a request that timed out, that agent is left alone this long,
 * unless it answers it meanwhile (stats_seq moves past quiet_seq): an
 * agent that was late, its process descheduled on a busy machine, is
 * asked again at the next reading, not 10 s later. */
#define QUIET_NS	(10 * PA_NSEC_PER_SEC)
static const struct pa_header *quiet_hdr;	/* one tracer thread */
static uint64_t quiet_until;
static uint32_t quiet_seq;

static void say(struct alloc_reading *r, const char *why)
{
	snprintf(r->why, sizeof(r->why), "%s", why);
}

/* ---- malloc_info's XML ----------------------------------------------- */

/* The value of attribute name in the tag [p, end), or false. */
static bool attr_u64(const char *p, const char *end, const char *name,
		     uint64_t *out)
{
	size_t n = strlen(name);
	char *stop;

	for (; p + n + 2 < end; p++) {
		if (p[-1] != ' ' || memcmp(p, name, n) || p[n] != '=' ||
		    p[n + 1] != '"')
			continue;
		p += n + 2;
		if (*p < '0' || *p > '9')
			return false;
		errno = 0;
		*out = strtoull(p, &stop, 10);
		return !errno && stop < end && *stop == '"';
	}
	return false;
}

static bool attr_is(const char *p, const char *end, const char *name,
		    const char *value)
{
	size_t n = strlen(name), v = strlen(value);

	for (; p + n + v + 3 <= end; p++)
		if (p[-1] == ' ' && !memcmp(p, name, n) && p[n] == '=' &&
		    p[n + 1] == '"' && !memcmp(p + n + 2, value, v) &&
		    p[n + 2 + v] == '"')
			return true;
	return false;
}

static bool tag_is(const char *tag, const char *end, const char *name)
{
	size_t n = strlen(name);

	return (size_t)(end - tag) >= n && !memcmp(tag, name, n) &&
	       (tag + n == end || tag[n] == ' ' || tag[n] == '/');
}

/* One <total|system|aspace ...> into a. */
static bool arena_field(struct malloc_arena *a, const char *tag,
			const char *end)
{
	uint64_t count = 0, size = 0;

	if (!attr_u64(tag, end, "size", &size))
		return false;
	if (tag_is(tag, end, "total")) {
		if (!attr_u64(tag, end, "count", &count))
			return false;
		if (attr_is(tag, end, "type", "fast"))
			a->fast_count = count, a->fast_size = size;
		else if (attr_is(tag, end, "type", "rest"))
			a->rest_count = count, a->rest_size = size;
		else if (attr_is(tag, end, "type", "mmap"))
			a->mmap_count = count, a->mmap_size = size;
	} else if (tag_is(tag, end, "system")) {
		if (attr_is(tag, end, "type", "current"))
			a->system_current = size;
		else if (attr_is(tag, end, "type", "max"))
			a->system_max = size;
	} else if (tag_is(tag, end, "aspace")) {
		if (attr_is(tag, end, "type", "total"))
			a->aspace_total = size;
		else if (attr_is(tag, end, "type", "mprotect"))
			a->aspace_mprotect = size;
	}
	return true;
}

static int bad_xml(struct alloc_reading *r, const char *what, size_t at)
{
	snprintf(r->why, sizeof(r->why),
		 "malloc_info's answer is not understood: %s at byte %zu",
		 what, at);
	free(r->arenas);
	r->arenas = NULL;
	r->narenas = 0;
	r->has_arenas = false;
	return -EINVAL;
}

int allocstats__parse_info(struct alloc_reading *r, const char *xml,
			   size_t len)
{
	const char *p = xml, *end = xml + len, *lt, *gt;
	struct malloc_arena *cur = NULL;
	size_t cap = 0;
	bool seen_malloc = false, closed = false;
	uint64_t nr;

	r->total = (struct malloc_arena){ .nr = -1 };
	while (p < end) {
		lt = memchr(p, '<', (size_t)(end - p));
		if (!lt)
			break;
		gt = memchr(lt, '>', (size_t)(end - lt));
		if (!gt) {
			if (r->arenas_truncated)
				break;
			return bad_xml(r, "a tag without its end",
				       (size_t)(lt - xml));
		}
		lt++;
		p = gt + 1;
		if (tag_is(lt, gt, "malloc")) {
			seen_malloc = true;
		} else if (tag_is(lt, gt, "/malloc")) {
			closed = true;
			break;
		} else if (!seen_malloc) {
			return bad_xml(r, "no <malloc> element first",
				       (size_t)(lt - xml));
		} else if (tag_is(lt, gt, "heap")) {
			if (cur)
				return bad_xml(r, "a <heap> inside a <heap>",
					       (size_t)(lt - xml));
			if (!attr_u64(lt, gt, "nr", &nr) || nr > INT_MAX)
				return bad_xml(r, "a <heap> without a number",
					       (size_t)(lt - xml));
			if (r->narenas >= ALLOCSTATS_MAX_ARENAS)
				return bad_xml(r, "too many heaps",
					       (size_t)(lt - xml));
			if (array__grow((void **)&r->arenas, &cap,
					r->narenas + 1, sizeof(*r->arenas)))
				return -ENOMEM;
			cur = &r->arenas[r->narenas++];
			*cur = (struct malloc_arena){ .nr = (int)nr };
		} else if (tag_is(lt, gt, "/heap")) {
			if (!cur)
				return bad_xml(r, "a </heap> without its <heap>",
					       (size_t)(lt - xml));
			cur = NULL;
		} else if (tag_is(lt, gt, "total") ||
			   tag_is(lt, gt, "system") ||
			   tag_is(lt, gt, "aspace")) {
			if (!arena_field(cur ? cur : &r->total, lt, gt))
				return bad_xml(r, "a figure without its size or count",
					       (size_t)(lt - xml));
		}
		/* <sizes>, <size>, <unsorted>: per size class, not kept */
	}
	if (!seen_malloc)
		return bad_xml(r, "no <malloc> element", 0);
	if (!closed && !r->arenas_truncated)
		return bad_xml(r, "no </malloc> at the end", len);
	r->has_arenas = true;
	r->has_total = closed;
	if (!closed)
		snprintf(r->why, sizeof(r->why),
			 "malloc_info's answer did not fit the stats area: %zu arenas read, no totals",
			 r->narenas);
	return 0;
}

/* ---- asking ----------------------------------------------------------- */


/* Whether each of the n values masked in is below ALLOCSTATS_MAX_VALUE;
 * if not, why says which. */
static bool plausible(struct alloc_reading *r, const char *part,
		      const uint64_t *v, unsigned int n, uint32_t mask)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (!(mask & (1u << i)) || v[i] <= ALLOCSTATS_MAX_VALUE)
			continue;
		snprintf(r->why, sizeof(r->why),
			 "the agent's %s answer is left out: value %u is %llu, beyond any process",
			 part, i, (unsigned long long)v[i]);
		return false;
	}
	return true;
}

/*
 * Copy the reply out of shared memory, then check it.  Another tracer may
 * have asked too and the agent be writing the next reply: the copy counts
 * only if the sequence number is the same before and after it.
 */
static int take_reply(struct alloc_reading *r, struct pa_header *hdr,
		      const uint8_t *area)
{
	struct pa_stats st;
	uint32_t cap = PA_STATS_SIZE - PA_STATS_INFO_OFFSET, seq;
	char *xml = NULL;
	int err, tries;

	for (tries = 0;; tries++) {
		seq = __atomic_load_n(&hdr->stats_seq, __ATOMIC_ACQUIRE);
		memcpy(&st, area, sizeof(st));
		if (st.info_len && st.info_len < cap) {
			free(xml);
			xml = malloc(st.info_len);
			if (!xml)
				return -ENOMEM;
			memcpy(xml, area + PA_STATS_INFO_OFFSET, st.info_len);
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (st.seq == seq &&
		    __atomic_load_n(&hdr->stats_seq, __ATOMIC_ACQUIRE) == seq)
			break;
		if (tries == 3) {
			free(xml);
			say(r, "the agent's reply kept changing while it was read (another tracer asking)");
			return 0;
		}
	}
	if (st.allocator > PA_ALLOCATOR_TCMALLOC) {
		free(xml);
		say(r, "the agent's reply names an unknown allocator");
		return 0;
	}
	r->allocator = st.allocator;
	memcpy(r->path, st.allocator_path, sizeof(r->path) - 1);
	r->path[sizeof(r->path) - 1] = 0;
	r->in_program = (st.flags & PA_STATS_IN_PROGRAM) != 0;
	r->ok = true;
	if ((st.flags & PA_STATS_MALLINFO2) &&
	    plausible(r, "mallinfo2", st.mallinfo2, 10, ~0u)) {
		r->has_mallinfo = true;
		memcpy(r->mallinfo, st.mallinfo2, sizeof(r->mallinfo));
	}
	if ((st.flags & PA_STATS_JEMALLOC) &&
	    plausible(r, "jemalloc", st.jemalloc, 7, (uint32_t)st.jemalloc[7])) {
		r->has_jemalloc = true;
		memcpy(r->jemalloc, st.jemalloc, sizeof(r->jemalloc));
		r->jemalloc_mask = (uint32_t)(st.jemalloc[7] & 0x7f);
	}
	if ((st.flags & PA_STATS_MIMALLOC) &&
	    plausible(r, "mi_process_info", st.mimalloc, 8, ~0u)) {
		r->has_mimalloc = true;
		memcpy(r->mimalloc, st.mimalloc, sizeof(r->mimalloc));
	}
	if ((st.flags & PA_STATS_TCMALLOC) &&
	    plausible(r, "MallocExtension", st.tcmalloc,
		      PA_TCMALLOC_PROPERTIES, st.tcmalloc_mask)) {
		r->has_tcmalloc = true;
		memcpy(r->tcmalloc, st.tcmalloc, sizeof(r->tcmalloc));
		r->tcmalloc_mask = st.tcmalloc_mask &
				   ((1u << PA_TCMALLOC_PROPERTIES) - 1);
	}
	err = 0;
	if (!(st.flags & (PA_STATS_MALLOC_INFO | PA_STATS_MI_TEXT)) ||
	    !st.info_len || !xml) {
		if (st.info_len >= cap)
			say(r, "the agent's statistics text is longer than its area");
	} else {
		r->arenas_truncated = (st.flags & PA_STATS_INFO_TRUNC) != 0;
		if (st.flags & PA_STATS_MALLOC_INFO)
			err = allocstats__parse_info(r, xml, st.info_len);
		else
			err = allocstats__parse_mi_text(r, xml, st.info_len);
	}
	free(xml);
	allocstats__common(r);
	return err == -ENOMEM ? err : 0;
}

/* ---- common names ------------------------------------------------------ */

static void common(struct alloc_reading *r, enum alloc_common c, uint64_t v)
{
	r->has_common[c] = true;
	r->common[c] = v;
}

static bool tc_has(const struct alloc_reading *r, unsigned int i)
{
	return r->has_tcmalloc && (r->tcmalloc_mask & (1u << i));
}

/* tcmalloc[]'s indices, in PA_TCMALLOC_PROPERTY_NAMES's order */
enum { TC_ALLOCATED, TC_HEAP, TC_PHYSICAL, TC_PAGEHEAP_FREE,
       TC_UNMAPPED, TC_CENTRAL_FREE, TC_TRANSFER_FREE, TC_THREAD_FREE };

static void common_tcmalloc(struct alloc_reading *r)
{
	const uint64_t *t = r->tcmalloc;
	uint64_t mapped;
	unsigned int i;

	if (tc_has(r, TC_ALLOCATED))
		common(r, ALLOC_IN_USE, t[TC_ALLOCATED]);
	for (i = TC_PAGEHEAP_FREE; i <= TC_THREAD_FREE; i++)
		if (i != TC_UNMAPPED && !tc_has(r, i))
			break;
	if (i > TC_THREAD_FREE)
		common(r, ALLOC_FREE, t[TC_PAGEHEAP_FREE] + t[TC_CENTRAL_FREE] +
				      t[TC_TRANSFER_FREE] + t[TC_THREAD_FREE]);
	if (tc_has(r, TC_UNMAPPED))
		common(r, ALLOC_RETAINED, t[TC_UNMAPPED]);
	/* heap_size counts the unmapped pages too; total_physical_bytes is
	 * heap_size - unmapped + metadata */
	if (!tc_has(r, TC_HEAP) || !tc_has(r, TC_UNMAPPED) ||
	    t[TC_UNMAPPED] > t[TC_HEAP])
		return;
	mapped = t[TC_HEAP] - t[TC_UNMAPPED];
	common(r, ALLOC_MAPPED, mapped);
	if (tc_has(r, TC_PHYSICAL) && t[TC_PHYSICAL] >= mapped)
		common(r, ALLOC_METADATA, t[TC_PHYSICAL] - mapped);
}

void allocstats__common(struct alloc_reading *r)
{
	const uint64_t *m = r->mallinfo, *j = r->jemalloc;
	unsigned int i;

	memset(r->has_common, 0, sizeof(r->has_common));
	if (r->has_mallinfo) {
		/* uordblks + hblkhd in use, fordblks free, arena + hblkhd
		 * from the system */
		common(r, ALLOC_IN_USE, m[7] + m[4]);
		common(r, ALLOC_FREE, m[8]);
		common(r, ALLOC_MAPPED, m[0] + m[4]);
	}
	if (r->has_jemalloc) {
		/* stats.allocated, active, metadata, resident, mapped,
		 * retained: all but active have a common name */
		static const int je[6] = {
			ALLOC_IN_USE, -1, ALLOC_METADATA, ALLOC_RESIDENT,
			ALLOC_MAPPED, ALLOC_RETAINED,
		};

		for (i = 0; i < 6; i++)
			if (je[i] >= 0 && (r->jemalloc_mask & (1u << i)))
				common(r, (enum alloc_common)je[i], j[i]);
		/* active pages less what is allocated in them */
		if ((r->jemalloc_mask & 3) == 3 && j[1] >= j[0])
			common(r, ALLOC_FREE, j[1] - j[0]);
	}
	/* mimalloc's current_rss is its committed bytes again on Linux (an
	 * estimate), so not resident; in use it does not count process-wide */
	if (r->has_mimalloc)
		common(r, ALLOC_MAPPED, r->mimalloc[5]);
	common_tcmalloc(r);
}

void allocstats__forget_quiet(void)
{
	quiet_hdr = NULL;
}

int allocstats__ask(struct alloc_reading *r, struct pa_header *hdr,
		    uint64_t file_size, int timeout_ms)
{
	uint64_t deadline = pa_now_ns() + (uint64_t)timeout_ms * PA_NSEC_PER_MSEC, now;
	uint32_t expected = PA_CMD_NONE, seq, state;

	memset(r, 0, sizeof(*r));
	if (quiet_hdr == hdr && pa_now_ns() < quiet_until &&
	    __atomic_load_n(&hdr->stats_seq, __ATOMIC_ACQUIRE) == quiet_seq) {
		say(r, "not asked: the agent did not answer lately");
		return 0;
	}
	state = ringfile__stats_state(hdr, deadline);
	if (state != PA_STATS_READY) {
		if (state == PA_STATS_STARTING) {
			/* not asked again at once: it may never run */
			quiet_hdr = hdr;
			quiet_until = pa_now_ns() + QUIET_NS;
			quiet_seq = __atomic_load_n(&hdr->stats_seq,
						    __ATOMIC_ACQUIRE);
		}
		say(r, state == PA_STATS_STARTING ?
			       "the agent's stats thread did not start in time" :
		       state == PA_STATS_FAILED ?
			       "the agent could not start its stats thread" :
		       state == PA_STATS_NO_PTHREAD ?
			       "the agent has no stats thread: the process has no pthread_create (glibc before 2.34, libpthread.so.0 not loaded)" :
			       "the agent has no stats thread (it was preloaded without a tracer); attach with --pid to start one");
		return 0;
	}
	if (file_size < PA_HEADER_SIZE + PA_STATS_SIZE) {
		say(r, "the agent's memfd has no stats area");
		return 0;
	}
	seq = __atomic_load_n(&hdr->stats_seq, __ATOMIC_ACQUIRE);
	if (!__atomic_compare_exchange_n(&hdr->command, &expected,
					 PA_CMD_STATS, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE) &&
	    expected != PA_CMD_STATS) {
		say(r, "the agent is busy with another command");
		return 0;
	}
	pa_futex_wake(&hdr->command);
	for (;;) {
		if (__atomic_load_n(&hdr->stats_seq, __ATOMIC_ACQUIRE) != seq)
			break;
		now = pa_now_ns();
		if (now >= deadline) {
			/* gone (exec'd) or stuck: do not hold the tracer's
			 * loop up again for a while */
			quiet_hdr = hdr;
			quiet_until = now + QUIET_NS;
			quiet_seq = seq;
			say(r, "the agent did not answer in time");
			return 0;
		}
		pa_futex_wait(&hdr->stats_seq, seq, deadline - now);
	}
	quiet_hdr = NULL;
	return take_reply(r, hdr, (const uint8_t *)hdr +
			       pa_stats_offset(file_size));
}

void allocstats__fini(struct alloc_reading *r)
{
	free(r->arenas);
	r->arenas = NULL;
	r->narenas = 0;
}
