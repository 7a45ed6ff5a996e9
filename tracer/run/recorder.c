// SPDX-License-Identifier: MIT
/*
 * recorder.c - one target's recording: memfd, consumer, session.
 *
 * Whatever the way in (launch, follow, attach, serve, core), a recording
 * is the same three steps: get the agent's memfd validated and mapped
 * (ringfile.c), read its ring through the consumer, which checks every
 * record before the session aggregates it (consumer.c, session.c), and
 * at the end make the in-use set agree with the agent's live table if
 * anything was lost on the way.  An agent that was recording before us
 * has its live samples in that table with their stacks: they seed the
 * heap, so a late attach sees what is already live.
 *
 * serve reads profiles from HTTP threads while its main thread drains:
 * with r->lock set, every change to the aggregate is made under it, and
 * nothing that waits on the target (ptrace, its stats thread) ever is.
 *
 * Each drain also keeps the books for the loss advice: when more records
 * were lost since the last drain, the stretch between the two counts
 * towards what the tracer was doing meanwhile - on a CPU (it cannot keep
 * up: a larger ring only postpones the loss, fewer records help), waiting
 * for records (a burst filled the ring between drains: a larger ring
 * helps), or neither (waiting for a CPU the program's threads held).
 */
#include "recorder.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include "tracer/attach/inject.h"
#include "common/log.h"
#include "tracer/attach/owner.h"
#include "pa_clock.h"
#include "tracer/record/sigbus.h"
#include "tracer/record/stackwalk.h"

/* Records lost while the tracer waited for records less than this share
 * of the time: it could not keep up (see recorder__loss_advice). */
#define LOSS_WAIT_SHARE		0.2
/* After a dlopen: ask again this soon while a module is still being
 * relocated, or this late when no thread could be borrowed. */
#define RESCAN_AGAIN_NS		(10 * PA_NSEC_PER_MSEC)
#define RESCAN_BUSY_NS		(100 * PA_NSEC_PER_MSEC)
/* Exact mode: the agent's sites are read at most this often (and at the
 * end): a scan of the whole table, a few MB. */
#define SITE_READ_NS		(50 * PA_NSEC_PER_MSEC)
/* serve: records copied aside while a profile is built, at most. */
#define STAGE_MAX		(256u << 20)
/* Each remote call of an attach or detach may take this long. */
#define ATTACH_TIMEOUT_MS	5000

static void stop_reader(struct recorder *r);

static void lock(struct recorder *r)
{
	if (r->lock)
		pthread_mutex_lock(r->lock);
}

static void unlock(struct recorder *r)
{
	if (r->lock)
		pthread_mutex_unlock(r->lock);
}

void recorder__init(struct recorder *r)
{
	memset(r, 0, sizeof(*r));
	r->rf.fd = -1;
	r->pid = -1;
}

void recorder__fini(struct recorder *r)
{
	stop_reader(r);
	if (r->stage_lock_ok)
		pthread_mutex_destroy(&r->stage_lock);
	recorder__stop_draining(r);
	site_reader__fini(&r->sr);
	free(r->stage);
	free(r->spare);
	session__fini(&r->s);
	ring_consumer__fini(&r->rc);
	ringfile__close(&r->rf);
}

void recorder__attach_config(struct attach_config *cfg,
			     const struct rec_options *rec, const char *agent,
			     bool stats)
{
	*cfg = (struct attach_config){
		.agent = agent, .rate = rec->rate,
		.ring_size = rec->ring_size, .live_size = rec->live_size,
		.max_frames = rec->max_frames,
		.timeout_ms = ATTACH_TIMEOUT_MS, .stats = stats,
		.unwind = rec->unwind, .stack_bytes = rec->stack_bytes,
	};
}

int recorder__create(struct recorder *r, const struct rec_options *rec,
		     bool stats)
{
	char why[ATTACH_WHY_SIZE];
	int err;

	err = ringfile__create(&r->rf, rec->ring_size, rec->live_size,
			       rec->rate, rec->max_frames);
	if (err) {
		pr_warn("cannot create the ring memfd: %s\n", strerror(-err));
		return err;
	}
	/* ours from the start: a --pid or serve on the program refuses */
	owner__claim(r->rf.hdr, 0, NULL, why, sizeof(why));
	/* the agent starts its stats thread only if we will ask */
	r->rf.hdr->stats_wanted = stats;
	r->rf.hdr->unwind_mode = rec->unwind;
	r->rf.hdr->stack_bytes = rec->stack_bytes;
	return 0;
}

int recorder__open(struct recorder *r, pid_t pid, int fd, const char **why)
{
	r->pid = pid;
	return ringfile__open(&r->rf, fd, why);
}

/*
 * Exact mode, a live target: tell its producers we read the ring, so that
 * they wait for room rather than drop (agent/ring.c).  The token is new
 * each time, so one the agent gave up on is never waited for again.
 */
static void start_draining(struct recorder *r)
{
	uint32_t token = 0, old;

	if (r->rf.in_memory || r->rf.sample_rate != 1 || !r->ring_ok)
		return;
	old = __atomic_load_n(&r->rf.hdr->gave_up_on, __ATOMIC_ACQUIRE);
	/* random: another tracer's, or one the agent gave up on, is never
	 * taken for ours */
	while (!token || token == old || token == r->draining)
		if (getrandom(&token, sizeof(token), 0) != sizeof(token))
			token = (uint32_t)(pa_now_ns() ^ (uint64_t)getpid() << 16);
	r->draining = token;
	__atomic_store_n(&r->rf.hdr->draining, token, __ATOMIC_RELEASE);
}

void recorder__stop_draining(struct recorder *r)
{
	uint32_t token = r->draining;

	if (!token || !r->rf.hdr)
		return;
	/* only ours: a later tracer's token stays */
	__atomic_compare_exchange_n(&r->rf.hdr->draining, &token, 0, 0,
				    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	r->draining = 0;
}

int recorder__start(struct recorder *r, pid_t pid,
		    const struct rec_options *rec)
{
	int err;

	lock(r);	/* serve's /metrics may look meanwhile */
	err = ring_consumer__init(&r->rc, r->rf.hdr,
				  (uint8_t *)r->rf.hdr + PA_HEADER_SIZE,
				  r->rf.data_size, r->rf.max_frames);
	r->pid = pid;
	if (!err && session__init(&r->s, pid, r->rf.sample_rate,
				  r->rf.max_frames))
		err = -ENOMEM;
	if (!err && rec)
		session__set_limits(&r->s, rec->max_stacks,
				    r->rf.live_capacity, rec->live_size);
	if (!err)
		err = site_reader__init(&r->sr, r->rf.site_capacity);
	unlock(r);
	if (err) {
		pr_warn("%s\n", strerror(-err));
		return err;
	}
	r->ring_ok = true;
	{
		struct ringfile_losses l;

		if (pid > 0)
			ringfile__set_born(&r->rf, pid);
		recorder__losses(r, &l);
		r->lost_seen = l.records;
	}
	start_draining(r);
	return 0;
}

const struct pa_live_entry *recorder__live_table(const struct recorder *r)
{
	return (const struct pa_live_entry *)((const uint8_t *)r->rf.hdr +
					      PA_HEADER_SIZE +
					      r->rf.data_size);
}

/* The live table's pages that hold anything (ringfile__pages), or NULL. */
static unsigned char *live_pages(const struct recorder *r)
{
	return ringfile__pages(&r->rf, PA_HEADER_SIZE + r->rf.data_size,
			       r->rf.live_capacity *
				       sizeof(struct pa_live_entry));
}

int recorder__seed(struct recorder *r)
{
	const uint8_t *base = (const uint8_t *)r->rf.hdr;
	unsigned char *pages = live_pages(r);
	int err;

	lock(r);
	err = heap__seed(&r->s.heap, recorder__live_table(r),
			 r->rf.live_capacity, pages,
			 base + pa_stack_offset(r->rf.data_size,
						r->rf.live_capacity),
			 r->rf.stack_capacity, r->rf.max_frames,
			 r->rf.site_capacity);
	unlock(r);
	free(pages);
	return err;
}

int recorder__attach(struct recorder *r, pid_t pid,
		     const struct attach_config *cfg,
		     const struct rec_options *rec)
{
	char why[ATTACH_WHY_SIZE];
	int err;

	r->acfg = *cfg;
	err = attach__check(pid, why);
	if (!err)
		err = attach__connect(pid, &r->acfg, &r->rf, &r->ast, why);
	if (err) {
		pr_warn("%s\n", why);
		return err;
	}
	r->attached = true;
	err = recorder__start(r, pid, rec);
	if (err) {
		/* the hooks are in: take them out before giving up */
		pr_warn("detaching from process %d\n", (int)pid);
		if (attach__detach(pid, &r->acfg, &r->rf, &r->ast, why))
			pr_warn("%s\n", why);
		else
			attach__leave(pid, &r->acfg, &r->rf, &r->ast);
		r->attached = false;
		return err;
	}
	lock(r);
	mapping_set__refresh(&r->s.maps);
	unlock(r);
	r->seen_dlopens = __atomic_load_n(&r->rf.hdr->dlopen_calls,
					  __ATOMIC_ACQUIRE);
	/* it was recording before us: take what is live from its tables */
	if (r->ast.existing && recorder__seed(r))
		pr_warn("out of memory reading the live table\n");
	else if (r->ast.existing)
		pr_info("%" PRIu64 " live samples from before we came (%" PRIu64 " skipped: no stack, or an impossible address or size)\n",
			r->s.heap.seeded, r->s.heap.unseeded);
	return 0;
}

int recorder__detach(struct recorder *r)
{
	char why[ATTACH_WHY_SIZE];
	int err, i;

	recorder__drain(r, pa_now_ns(), false);
	err = attach__detach(r->pid, &r->acfg, &r->rf, &r->ast, why);
	if (err)
		pr_warn("%s\n", why);
	/* a thread let go before it stopped is detached at its stop, not
	 * after the symbolization that follows (at most 1 s) */
	for (i = 0; i < 100 && remote__settle(); i++)
		nanosleep(&(struct timespec){ 0, 10 * PA_NSEC_PER_MSEC }, NULL);
	r->sites_now = true;	/* the last read, whatever the time */
	recorder__drain(r, pa_now_ns(), err == 0 || kill(r->pid, 0) != 0);
	recorder__stop_draining(r);
	if (!err)
		recorder__reconcile(r);
	r->attached = false;
	r->to_leave = !err;
	return err;
}

void recorder__leave(struct recorder *r)
{
	if (!r->to_leave)
		return;
	r->to_leave = false;
	attach__leave(r->pid, &r->acfg, &r->rf, &r->ast);
}

/* After each drain: did the agent lose records since the last one? */
void recorder__losses(struct recorder *r, struct ringfile_losses *l)
{
	const char *why;

	if (ringfile__losses(&r->rf, l, &why) &&
	    !__atomic_exchange_n(&r->losses_warned, 1, __ATOMIC_ACQ_REL))
		pr_warn("the agent's header is corrupt: %s; its loss counters are ignored\n",
			why);
}

static void note_losses(struct recorder *r, uint64_t wall, uint64_t cpu)
{
	struct ringfile_losses l;
	uint64_t lost;

	recorder__losses(r, &l);
	lost = l.records;

	if (lost > r->lost_seen && r->last_wall_ns && wall > r->last_wall_ns) {
		r->loss_cpu_ns += cpu - r->last_cpu_ns;
		r->loss_wait_ns += r->wait_ns - r->last_wait_ns;
		r->loss_wall_ns += wall - r->last_wall_ns;
	}
	r->lost_seen = lost;
	r->last_cpu_ns = cpu;
	r->last_wait_ns = r->wait_ns;
	r->last_wall_ns = wall;
}

/* Lock held: the records, then the books.  0 or the consumer's error. */
static int drain_locked(struct recorder *r, uint64_t now, bool final)
{
	uint64_t cpu0, cpu1;
	int err;

	cpu0 = pa_thread_cpu_ns();
	err = r->ring_ok && !r->reader_on ?
		      ring_consumer__drain(&r->rc, session__on_record, &r->s,
					   now, final) : 0;
	/* the sites even after a ring error: a core whose ring is corrupt
	 * still has them */
	if (r->sr.capacity &&
	    (final || r->sites_now || now - r->sr.last_ns >= SITE_READ_NS)) {
		const uint8_t *base = (const uint8_t *)r->rf.hdr;
		uint64_t site_off = pa_site_offset(r->rf.data_size,
						   r->rf.live_capacity, 1,
						   r->rf.max_frames);
		uint64_t lanes_off = site_off +
				     pa_site_lanes_offset(r->rf.site_capacity);
		unsigned char *pages;
		struct site_lanes lanes = {
			.base = (const struct pa_site_lane *)(base + lanes_off),
			.used = __atomic_load_n(&r->rf.hdr->site_lanes_used,
						__ATOMIC_ACQUIRE),
		};
		int serr;

		r->sr.last_ns = now;
		/* the lanes' pages with data (a hole is not read: that
		 * would make it); none known: read them all */
		pages = lanes.used ?
			ringfile__pages(&r->rf, lanes_off,
					(uint64_t)(lanes.used < PA_SITE_LANES ?
						   lanes.used : PA_SITE_LANES) *
					r->sr.lane_sites *
					sizeof(struct pa_site_lane)) : NULL;
		lanes.pages = pages;
		heap__batch_begin(&r->s.heap);
		serr = site_reader__read(&r->sr, &r->s,
					 (const struct pa_site *)(base + site_off),
					 __atomic_load_n(&r->rf.hdr->sites_used,
							 __ATOMIC_ACQUIRE),
					 &lanes,
					 base + pa_stack_offset(r->rf.data_size,
								r->rf.live_capacity),
					 r->rf.stack_capacity, r->rf.max_frames);
		heap__batch_end(&r->s.heap, now);
		free(pages);
		r->sites_now = false;
		if (serr < 0)
			pr_warn("out of memory reading the agent's sites\n");
	}
	/* the agent stopped waiting for us (we did not read for
	 * PA_PRESSURE_MAX_MS): reading again, we say so with a new token */
	if (r->draining && __atomic_load_n(&r->rf.hdr->gave_up_on,
					   __ATOMIC_ACQUIRE) == r->draining) {
		r->gave_up++;
		start_draining(r);
	}
	cpu1 = pa_thread_cpu_ns();
	r->drain_cpu_ns += cpu1 - cpu0;
	note_losses(r, pa_now_ns(), cpu1);
	/* exact mode counts in the agent's sites, not in records */
	if (!r->first_record_ns && (r->rc.records || r->s.heap.allocs))
		r->first_record_ns = pa_now_ns();
	if (err < 0) {
		r->ring_ok = false;
		recorder__stop_draining(r);	/* nobody will make room */
	}
	return err < 0 ? err : 0;
}

/* After a drain, the lock released: a record unfinished for too long. */
static void warn_stall(struct recorder *r, uint64_t now)
{
	uint64_t stall_ns = ring_consumer__stall_warn_ns();

	if (r->ring_ok && ring_consumer__stalled(&r->rc, now, stall_ns))
		pr_warn(RING_STALL_WARNING, (double)stall_ns / PA_NSEC_PER_SEC,
			(int)r->pid);
}

/*
 * serve: while an HTTP thread holds the lock building a profile (which may
 * symbolize for seconds), the ring is still emptied - its records are
 * copied aside (at most STAGE_MAX bytes) and aggregated at the next drain
 * that gets the lock - so that an exact agent's producers, waiting for
 * room, are not held up by a profile being written.  In exact mode serve
 * has a reader thread do this all the time (below).
 */
static int stage_record(void *ctx, const struct pa_rec_hdr *rec)
{
	struct recorder *r = ctx;
	size_t need = r->staged + rec->len;

	if (need > STAGE_MAX)
		return -EAGAIN;		/* left in the ring: not consumed */
	if (need > r->stage_cap) {
		size_t cap = r->stage_cap ? r->stage_cap : 1 << 20;
		uint8_t *p;

		while (cap < need)
			cap *= 2;
		p = realloc(r->stage, cap);
		if (!p)
			return -EAGAIN;
		r->stage = p;
		r->stage_cap = cap;
	}
	memcpy(r->stage + r->staged, rec, rec->len);
	r->staged += rec->len;
	return 0;
}

/* Lock held: n bytes of records copied aside, into the aggregate.  0 or
 * < 0; records not taken then are counted (staged_lost). */
static int replay_buf(struct recorder *r, const uint8_t *buf, size_t n)
{
	size_t at = 0;
	int err = 0;

	while (at < n) {
		const struct pa_rec_hdr *rec = (const void *)(buf + at);

		if (err >= 0)
			err = session__on_record(&r->s, rec);
		else
			r->staged_lost++;
		at += rec->len;
	}
	return err < 0 ? err : 0;
}

/*
 * The reader thread (serve, exact mode): it alone reads the ring while it
 * runs, into the stage under stage_lock; a drain swaps the stage for the
 * spare buffer and aggregates what it holds.  It reads again at once
 * while there are records, else every READER_IDLE_NS; a full stage
 * (STAGE_MAX) leaves the records in the ring, whose producers then wait
 * for the main thread, as they would without a reader.
 */
#define READER_IDLE_NS		(200 * PA_NSEC_PER_USEC)

static void *reader_main(void *arg)
{
	struct recorder *r = arg;
	struct timespec idle = { 0, READER_IDLE_NS };
	int n;

	while (!__atomic_load_n(&r->reader_stop, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&r->stage_lock);
		n = ring_consumer__drain(&r->rc, stage_record, r, pa_now_ns(),
					 false);
		if (n < 0 && n != -EAGAIN)
			r->reader_err = n;
		pthread_mutex_unlock(&r->stage_lock);
		if (n < 0 && n != -EAGAIN)
			break;		/* the ring is corrupt: said by a drain */
		if (n <= 0)
			nanosleep(&idle, NULL);
	}
	return NULL;
}

int recorder__start_reader(struct recorder *r)
{
	int err;

	if (r->reader_on || r->rf.in_memory || r->rf.sample_rate != 1 ||
	    !r->ring_ok)
		return 0;
	if (!r->stage_lock_ok) {
		err = pthread_mutex_init(&r->stage_lock, NULL);
		if (err)
			return -err;
		r->stage_lock_ok = true;
	}
	__atomic_store_n(&r->reader_stop, 0, __ATOMIC_RELEASE);
	err = pthread_create(&r->reader, NULL, reader_main, r);
	if (err)
		return -err;
	r->reader_on = true;
	return 0;
}

/* The reader stops; what it read stays staged for the next catch-up. */
static void stop_reader(struct recorder *r)
{
	if (!r->reader_on)
		return;
	__atomic_store_n(&r->reader_stop, 1, __ATOMIC_RELEASE);
	pthread_join(r->reader, NULL);
	r->reader_on = false;
}

/*
 * Lock held: everything read from the ring but not yet aggregated - by
 * the reader thread, or while the lock was busy - into the aggregate.
 * 0 or < 0 (a record the session could not take, or the reader's ring
 * error).
 */
static int catch_up_locked(struct recorder *r)
{
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;
	int err = 0, rerr;

	if (r->stage_lock_ok)
		pthread_mutex_lock(&r->stage_lock);
	if (r->staged) {
		/* the stage goes to the spare buffer, the spare becomes the
		 * stage: the reader fills it meanwhile */
		buf = r->stage;
		n = r->staged;
		cap = r->stage_cap;
		r->stage = r->spare;
		r->stage_cap = r->spare_cap;
		r->staged = 0;
		r->spare = NULL;
		r->spare_cap = 0;
	}
	err = r->reader_err;
	r->reader_err = 0;
	if (r->stage_lock_ok)
		pthread_mutex_unlock(&r->stage_lock);
	rerr = replay_buf(r, buf, n);
	if (buf) {
		free(r->spare);		/* never set meanwhile: main thread */
		r->spare = buf;
		r->spare_cap = cap;
	}
	if (err < 0) {
		r->ring_ok = false;
		recorder__stop_draining(r);	/* nobody will make room */
		stop_reader(r);
		return err;
	}
	return rerr;
}

int recorder__drain_quiet(struct recorder *r, uint64_t now, bool final)
{
	int err;

	if (final)
		stop_reader(r);		/* the last records: read here */
	if (r->lock && !r->reader_on && !final && r->ring_ok) {
		if (pthread_mutex_trylock(r->lock)) {
			/* busy: copy the records aside, aggregate later */
			err = ring_consumer__drain(&r->rc, stage_record, r,
						   now, false);
			if (err == -EAGAIN)
				err = 0;	/* the stage is full: later */
			if (err < 0) {
				r->ring_ok = false;
				recorder__stop_draining(r);
			}
			return err < 0 ? err : 0;
		}
		/* held now */
	} else {
		lock(r);
	}
	err = catch_up_locked(r);
	if (!err)
		err = drain_locked(r, now, final);
	unlock(r);
	if (!err)
		warn_stall(r, now);
	return err;
}

/* A drain's error, said. */
static void say_drain_error(const struct recorder *r, int err)
{
	if (err == -EPROTO)
		pr_warn("the target's ring is corrupt (%s); no longer reading it\n",
			r->rc.error);
	else if (err < 0)
		pr_warn("cannot keep up with the ring: %s\n", strerror(-err));
}

void recorder__drain(struct recorder *r, uint64_t now, bool final)
{
	say_drain_error(r, recorder__drain_quiet(r, now, final));
}

void recorder__last_drain(struct recorder *r)
{
	r->sites_now = true;
	recorder__drain(r, pa_now_ns(), false);
	recorder__stop_draining(r);
}

void recorder__refresh(struct recorder *r, uint64_t now)
{
	lock(r);
	session__refresh(&r->s, now);
	unlock(r);
}

void recorder__rescan(struct recorder *r, uint64_t now)
{
	uint32_t calls;
	int rc;

	if (!r->attached)
		return;
	remote__settle();	/* threads let go before they stopped */
	calls = __atomic_load_n(&r->rf.hdr->dlopen_calls, __ATOMIC_ACQUIRE);
	/* the target dlopened something: its allocations may not reach a
	 * hooked module soon, so ask now */
	if (calls == r->seen_dlopens || now < r->rescan_at)
		return;
	rc = attach__rescan(r->pid, &r->acfg, &r->ast);
	if (!rc)
		r->seen_dlopens = calls;
	r->rescan_at = now + (rc < 0 ? RESCAN_BUSY_NS : RESCAN_AGAIN_NS);
}

/* Lock held.  0, 1 when there was nothing to do, or -ENOMEM. */
static int reconcile_locked(struct recorder *r)
{
	struct ringfile_losses l;
	unsigned char *pages;
	int err;

	recorder__losses(r, &l);
	if (!r->always_reconcile && !l.records &&
	    !r->rc.skipped_busy && !r->rc.resyncs)
		return 1;
	pages = live_pages(r);
	err = heap__reconcile(&r->s.heap, recorder__live_table(r),
			      r->rf.live_capacity, pages);
	free(pages);
	return err;
}

void recorder__reconcile(struct recorder *r)
{
	int err;

	lock(r);
	err = catch_up_locked(r);
	if (err >= 0)
		err = reconcile_locked(r);
	unlock(r);
	if (err < 0)
		pr_warn("out of memory reconciling with the live table\n");
}

void recorder__end(struct recorder *r)
{
	int err, rerr;

	r->s.alive = false;
	stop_reader(r);
	lock(r);
	err = catch_up_locked(r);
	if (!err)
		err = drain_locked(r, pa_now_ns(), true);
	rerr = reconcile_locked(r);
	unlock(r);
	say_drain_error(r, err);
	if (rerr < 0)
		pr_warn("out of memory reconciling with the live table\n");
}

/*
 * What the agent's stack and site tables hold of their bounds: the words
 * and entries claimed (the pages behind them are made as they are taken;
 * the indexes are touched all over).
 */
static int table_use(const struct recorder *r, char *buf, size_t size)
{
	const struct pa_header *hdr = r->rf.hdr;
	const double mib = 1024.0 * 1024;
	uint64_t cap = r->rf.stack_capacity, words = pa_stack_words(cap);
	uint64_t used = __atomic_load_n(&hdr->stack_words_used,
					__ATOMIC_RELAXED);
	uint64_t sites = __atomic_load_n(&hdr->sites_used, __ATOMIC_RELAXED);

	uint64_t map = __atomic_load_n(&hdr->blockmap_bytes, __ATOMIC_RELAXED);
	uint32_t lanes = __atomic_load_n(&hdr->site_lanes_used,
					 __ATOMIC_RELAXED);
	uint64_t lane_bytes, made = 0, off, i;
	unsigned char *pages;

	if (lanes > PA_SITE_LANES)
		lanes = PA_SITE_LANES;
	lane_bytes = (uint64_t)lanes * pa_lane_sites(r->rf.site_capacity) *
		     sizeof(struct pa_site_lane);
	off = pa_site_offset(r->rf.data_size, r->rf.live_capacity, 1,
			     r->rf.max_frames) +
	      pa_site_lanes_offset(r->rf.site_capacity);
	pages = lane_bytes ? ringfile__pages(&r->rf, off, lane_bytes) : NULL;
	for (i = 0; pages && i < lane_bytes / PA_PAGE_SIZE; i++)
		made += pages[i] ? PA_PAGE_SIZE : 0;
	if (!pages)
		made = lane_bytes;	/* not known: all of it */
	free(pages);
	if (used > words)
		used = words;
	if (sites > r->rf.site_capacity)
		sites = r->rf.site_capacity;
	if (map > (1ull << 40))
		map = 0;	/* not a size the agent can have */
	return snprintf(buf, size,
		"; the agent's tables: stacks %.1f MiB of %.1f, %" PRIu64
		" sites %.1f MiB of %.1f (their indexes %.1f MiB more), %" PRIu32
		" threads' lanes of site counts %.1f MiB made of %.1f; its block map %.1f MiB taken of its own memory (pages made as touched)",
		(double)(used * 8) / mib, (double)(words * 8) / mib, sites,
		(double)(sites * sizeof(struct pa_site)) / mib,
		(double)(r->rf.site_capacity * sizeof(struct pa_site)) / mib,
		(double)(pa_stack_arena_offset(cap) +
			 r->rf.site_capacity * 2 * sizeof(uint32_t)) / mib,
		lanes, (double)made / mib, (double)lane_bytes / mib,
		(double)map / mib);
}

void recorder__exact_summary(const struct recorder *r, char *buf,
			     size_t size)
{
	const struct pa_header *hdr = r->rf.hdr;
	const struct heap *h = &r->s.heap;
	uint64_t waits, wait_ns, calls = 0;
	int len, i;

	buf[0] = 0;
	if (!hdr || r->rf.sample_rate != 1)
		return;
	waits = __atomic_load_n(&hdr->pressure_waits, __ATOMIC_RELAXED);
	wait_ns = __atomic_load_n(&hdr->pressure_wait_ns, __ATOMIC_RELAXED);
	for (i = 0; i < PA_HOOK_COUNT; i++)
		if (i != PA_HOOK_FREE)
			calls += __atomic_load_n(&hdr->hook_counts[i].calls,
						 __ATOMIC_RELAXED);
	len = snprintf(buf, size,
		 "exact (--rate 1): %" PRIu64 " allocations and %" PRIu64
		 " frees counted by the agent at %" PRIu64 " sites, %" PRIu64
		 " allocations recorded through the ring (%" PRIu64
		 " found no site); the agent's hooks counted %" PRIu64
		 " calls that allocate, %" PRIu64 " to free",
		 h->counted_allocs, h->counted_frees, r->sr.sites,
		 h->allocs - h->counted_allocs,
		 __atomic_load_n(&hdr->site_misses, __ATOMIC_RELAXED), calls,
		 __atomic_load_n(&hdr->hook_counts[PA_HOOK_FREE].calls,
				 __ATOMIC_RELAXED));
	if (len < 0 || (size_t)len >= size)
		return;
	len += table_use(r, buf + len, size - (size_t)len);
	if (len < 0 || (size_t)len >= size)
		return;
	if (waits || r->gave_up)
		len += snprintf(buf + len, size - (size_t)len,
			 "; %" PRIu64 " records waited for room in the ring, %.1f ms in all",
			 waits, (double)wait_ns / PA_NSEC_PER_MSEC);
	if (len < 0 || (size_t)len >= size)
		return;
	if (r->gave_up)
		len += snprintf(buf + len, size - (size_t)len,
			 "; the tracer did not read for %u ms (%u time%s) and the agent stopped waiting: allocations that found the ring full then were counted at their frame-pointer stacks, other records lost (counted)",
			 PA_PRESSURE_MAX_MS, r->gave_up,
			 r->gave_up == 1 ? "" : "s");
	if (len < 0 || (size_t)len >= size)
		return;
	if (r->sr.refused || r->sr.backwards)
		snprintf(buf + len, size - (size_t)len,
			 "; %" PRIu64 " sites refused (impossible entries)",
			 r->sr.refused + r->sr.backwards);
}

/*
 * Waiting for records (asleep, the ring not yet an eighth full) a good
 * share of the time they were lost, the tracer let a burst fill the ring
 * between two drains, which a larger ring absorbs.  Hardly ever waiting -
 * draining, or ready to and waiting for a CPU the program's threads held -
 * it could not take records as fast as they came, and a larger ring only
 * postpones the loss: fewer records would help (sampling, or no stack
 * copies to unwind).
 */
void recorder__loss_advice(const struct recorder *r, char *buf, size_t len)
{
	double wall = (double)r->loss_wall_ns;
	double busy = wall > 0 ? (double)r->loss_cpu_ns / wall : 0;
	double waited = wall > 0 ? (double)r->loss_wait_ns / wall : 0;
	double per_ns = r->rc.records ? (double)r->drain_cpu_ns /
					(double)r->rc.records : 0;
	struct stackwalk_stats st = { 0 };
	char how[160];

	if (r->gave_up) {
		/* exact mode: producers wait for room, unless we stall */
		snprintf(buf, len,
			 "the tracer did not read the ring for more than %u ms (%u time%s: was it stopped?), and the agent stopped waiting for it rather than hold the program up (its allocations were counted, at frame-pointer stacks)",
			 PA_PRESSURE_MAX_MS, r->gave_up,
			 r->gave_up == 1 ? "" : "s");
		return;
	}
	if (!r->loss_wall_ns) {
		/* lost before we came, or not seen by a drain */
		snprintf(buf, len, "the ring was full");
		return;
	}
	if (waited >= LOSS_WAIT_SHARE) {
		snprintf(buf, len,
			 "the ring (%" PRIu64 " KiB) filled while the tracer waited between drains (%.0f%% of the time they were lost): try a larger --ring-size",
			 r->rf.data_size >> 10, waited * 100);
		return;
	}
	if (r->s.sw)
		stackwalk__stats(r->s.sw, &st);
	if (r->rf.sample_rate == 1)
		snprintf(how, sizeof(how),
			 "sample instead of recording every allocation (--rate 4096, say)");
	else
		snprintf(how, sizeof(how), "sample less often (a --rate above %" PRIu64 ")",
			 r->rf.sample_rate);
	snprintf(buf, len,
		 "the program made records faster than the tracer can take them (while they were lost it waited %.0f%% of the time, ran %.0f%%, at %.1f us of CPU per record, about %.0f records/s); a larger --ring-size would not help: %s%s",
		 waited * 100, busy * 100, per_ns / PA_NSEC_PER_USEC,
		 per_ns > 0 ? PA_NSEC_PER_SEC / per_ns : 0.0, how,
		 st.records ? ", or --unwind fp (no stack copies to unwind)" :
			      "");
}

/* A --max-stacks that would have kept what folded: what was kept and
 * what folded (each a new pair at most), and never less than 4 times. */
static size_t suggest_stacks(const struct heap *h)
{
	uint64_t n = h->max_buckets + h->folded + h->folded_sizes;

	if (n < 4 * (uint64_t)h->max_buckets)
		n = 4 * (uint64_t)h->max_buckets;
	return n > 100000000 ? 100000000 : (size_t)n;
}

void recorder__warn_limits(const struct recorder *r)
{
	const struct heap *h = &r->s.heap;

	if (r->staged_lost)
		pr_warn("warning: %" PRIu64 " records read from the ring could not be aggregated (out of memory)\n",
			r->staged_lost);

	if (r->rc.skipped_busy || r->rc.resyncs)
		pr_warn("warning: %" PRIu64 " records were left half-written by the target's threads and skipped; %" PRIu64 " times the ring had to be resynchronized\n",
			r->rc.skipped_busy, r->rc.resyncs);
	if (h->folded || h->folded_sizes) {
		double other = h->other >= 0 ?
			h->buckets[h->other].alloc_objects : 0, all = 0;
		size_t i;

		for (i = 0; i < h->nbuckets; i++)
			all += h->buckets[i].alloc_objects;
		pr_warn("warning: %.0f of %.0f allocations (%.1f%%) lost their stack to [other] (and %" PRIu64 " samples or sites their size label): more than --max-stacks %zu (stack, size) pairs, or %zu frames in them; run again with --max-stacks %zu to keep them\n",
			other, all, all > 0 ? 100.0 * other / all : 0.0,
			h->folded_sizes, h->max_buckets,
			h->max_buckets * (size_t)HEAP_FRAMES_PER_PAIR,
			suggest_stacks(h));
	}
	if (sigbus__pages())
		pr_warn("warning: %" PRIu64 " pages of files the target mapped were cut off while the tracer read them (the target truncated a module file); symbols from it may be missing\n",
			sigbus__pages());
	if (h->live_dropped)
		pr_warn("warning: more than %zu samples live at once (the agent's live table holds %" PRIu64 "; raise --live-size): %" PRIu64 " more count as allocated but not as in use\n",
			h->max_live, r->rf.live_capacity, h->live_dropped);
}

void recorder__unwind_summary(const struct recorder *r, uint32_t asked,
			      char *buf, size_t size)
{
	static const char *const modes[] = { "fp", "dwarf", "auto" };
	struct stackwalk_stats st = { 0 };
	/* the agent's, which may not be what was asked (an agent already
	 * there with a ring too small for the copy keeps its own) */
	uint32_t mode = r->rf.hdr ? r->rf.hdr->unwind_mode : asked;
	int len;

	buf[0] = 0;
	if (mode > PA_UNWIND_AUTO)
		mode = asked;
	if (r->s.sw)
		stackwalk__stats(r->s.sw, &st);
	if (mode == PA_UNWIND_FP && !st.records)
		return;
	len = snprintf(buf, size,
		 "unwind %s: %" PRIu64 " samples with a stack copy: %" PRIu64
		 " unwound to the outermost frame, %" PRIu64
		 " cut short ([truncated]), %" PRIu64
		 " left with frame-pointer frames; %.1f us of CPU each",
		 modes[mode],
		 st.records, st.outermost, st.cut, st.failed,
		 st.records ? (double)st.cpu_ns / (double)st.records /
				      PA_NSEC_PER_USEC : 0.0);
	if (len < 0 || (size_t)len >= size)
		return;
	if (st.checked) {
		int more = snprintf(buf + len, size - (size_t)len,
			 "; checked against libdwfl: %" PRIu64
			 " whole stacks, %" PRIu64 " disagreed, %" PRIu64
			 " where the copy ended first", st.checked,
			 st.check_differ, st.check_shorter);

		if (more < 0 || (size_t)more >= size - (size_t)len)
			return;
		len += more;
	}
	/* an agent that neither built a table nor fell back from one (or
	 * one older than the fields) says nothing of them */
	if (mode != PA_UNWIND_AUTO || !r->rf.hdr ||
	    (!__atomic_load_n(&r->rf.hdr->unwind_modules, __ATOMIC_RELAXED) &&
	     !__atomic_load_n(&r->rf.hdr->unwind_fallbacks, __ATOMIC_RELAXED)))
		return;
	snprintf(buf + len, size - (size_t)len,
		 "; the agent's unwind tables: %u modules, %.1f MiB; %" PRIu64
		 " of %" PRIu64 " samples fell back to frame pointers",
		 __atomic_load_n(&r->rf.hdr->unwind_modules, __ATOMIC_RELAXED),
		 (double)__atomic_load_n(&r->rf.hdr->unwind_table_bytes,
					 __ATOMIC_RELAXED) / (1 << 20),
		 __atomic_load_n(&r->rf.hdr->unwind_fallbacks, __ATOMIC_RELAXED),
		 __atomic_load_n(&r->rf.hdr->samples, __ATOMIC_RELAXED));
}
