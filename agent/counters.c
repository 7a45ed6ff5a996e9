// SPDX-License-Identifier: MIT
/*
 * counters.c - calls and bytes per hook, moved from threads to the header.
 *
 * Every hook counts into its thread's own counters (agent.h: count_call,
 * count_free), so the fast path touches no shared cache line.  A thread
 * adds what it counted to the header's hook_counts:
 *   - at each sampled allocation while recording (sampler__take), that is
 *     about once per sampling interval of bytes (at --rate 1, where every
 *     allocation is sampled, once per 256);
 *   - every 2^16 frees (a thread that only frees never takes a slow path);
 *   - when it exits (a pthread key destructor, registered on its first
 *     slow path; pthread_setspecific allocates nothing for the first 32
 *     keys, and at worst passes through our hooks like any allocation).
 *     An injected agent turned off (pprof_alloc_off) deletes the key
 *     first: glibc would otherwise call into the agent at every thread's
 *     exit, after it is unloaded.
 *     The key functions are the ones dynsym.c found at start; a process
 *     without them (glibc < 2.34, no libpthread: one thread, or threads
 *     made without glibc) flushes only on the other occasions;
 *   - and the thread that runs the library destructors at exit (usually
 *     main, whose TLS destructors never run) in the agent's destructor.
 * So the header lags each thread by at most one sampling interval.
 *
 * At --rate 1 the samples taken and the live table's occupancy go the
 * same way (agent__count_sample, agent__count_live): every call changes
 * them, and two threads adding to one header line at every call spend
 * more time bouncing it between their cores than allocating.  When
 * sampling, they are added to the header at once.
 *
 * A counter is moved with an exchange on the thread's own word, so a
 * signal handler's flush cannot count the same calls twice; an increment
 * a handler interrupts (count_call is a plain add) may lose that handler's
 * flush of the same word - a few counts, never a wrong size.  Counting goes on whatever the agent's state; the counts
 * reach the header only once there is one (and never in a forked child,
 * whose header mapping is gone or is its parent's).
 */
#include <errno.h>
#include <pthread.h>
#include "agent.h"
#include "blockmap.h"
#include "dynsym.h"

static pthread_key_t exit_key;
static int key_state;		/* 0 not yet, 1 creating, 2 made, 3 failed,
				   4 off (counters__stop) */
static int key_users;		/* threads between reading key_state and
				   their setspecific: the key is deleted
				   only once none is (its index may be the
				   program's own key next) */
static int key_kept;		/* off, the key not deleted yet */

void agent__flush_counts(void)
{
	struct pa_thread *t = &pa_thread;
	struct pa_header *hdr = pa_agent.hdr;
	uint64_t v;
	int i;

	if (!hdr || agent__forked())
		return;
	for (i = 0; i < PA_HOOK_COUNT; i++) {
		if (t->calls[i]) {
			v = __atomic_exchange_n(&t->calls[i], 0,
						__ATOMIC_RELAXED);
			__atomic_add_fetch(&hdr->hook_counts[i].calls, v,
					   __ATOMIC_RELAXED);
		}
		if (t->bytes[i]) {
			v = __atomic_exchange_n(&t->bytes[i], 0,
						__ATOMIC_RELAXED);
			__atomic_add_fetch(&hdr->hook_counts[i].bytes, v,
					   __ATOMIC_RELAXED);
		}
	}
	if (t->samples) {
		v = __atomic_exchange_n(&t->samples, 0, __ATOMIC_RELAXED);
		__atomic_add_fetch(&hdr->samples, v, __ATOMIC_RELAXED);
	}
	if (t->live_delta) {
		v = __atomic_exchange_n(&t->live_delta, 0, __ATOMIC_RELAXED);
		__atomic_add_fetch(&hdr->live_entries, v, __ATOMIC_RELAXED);
	}
	agent__flush_inuse(false);
	if (pa_agent.rate == 1)
		__atomic_store_n(&hdr->blockmap_bytes, (uint64_t)blockmap__bytes(),
				 __ATOMIC_RELAXED);
}

void agent__count_sample(void)
{
	if (pa_agent.rate == 1)
		pa_thread.samples++;
	else
		__atomic_add_fetch(&pa_agent.hdr->samples, 1,
				   __ATOMIC_RELAXED);
}

void agent__count_live(int64_t delta)
{
	if (pa_agent.rate == 1)
		pa_thread.live_delta += (uint64_t)delta;
	else
		__atomic_add_fetch(&pa_agent.hdr->live_entries,
				   (uint64_t)delta, __ATOMIC_RELAXED);
}

static void thread_exit(void *unused)
{
	(void)unused;
	agent__flush_counts();
	agent__flush_inuse(true);
	agent__release_lane();
}

void agent__register_counts(void)
{
	const struct dynsym_threads *fn = dynsym__threads();
	struct pa_thread *t = &pa_thread;
	int expected = 0;

	/* (no pthread keys in this process: asked again next time, a load) */
	if (t->counts_registered || !fn)
		return;
	t->counts_registered = 1;
	__atomic_add_fetch(&key_users, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&key_state, __ATOMIC_SEQ_CST) != 2) {
		if (!__atomic_compare_exchange_n(&key_state, &expected, 1, 0,
						 __ATOMIC_SEQ_CST,
						 __ATOMIC_SEQ_CST))
			goto out_users;	/* being made, failed or off:
					   flush on the way */
		__atomic_store_n(&key_state,
				 fn->key_create(&exit_key, thread_exit) ?
					 3 : 2,
				 __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&key_state, __ATOMIC_SEQ_CST) != 2)
			goto out_users;
	}
	fn->setspecific(exit_key, (void *)1);
out_users:
	__atomic_sub_fetch(&key_users, 1, __ATOMIC_SEQ_CST);
}

/*
 * Off for good (until counters__restart): the key is deleted and none is
 * made again - a thread that looked at the state before the agent was
 * detached may be about to make it, and its CAS from 0 now fails.  One
 * being made is waited for (a few system calls away), and so is a thread
 * that read the state as made and has yet to call setspecific with the
 * key (key_users): deleted under it, the key's index could be the
 * program's next, and that thread would write into the program's key.
 * 0, or -EBUSY (the state is off then, and the key kept until a stop
 * that finds no user).
 */
int counters__stop(void)
{
	const struct dynsym_threads *fn = dynsym__threads();
	unsigned int i;
	int state;

	for (i = 0; i < 1000; i++) {
		state = __atomic_load_n(&key_state, __ATOMIC_SEQ_CST);
		if (state == 1) {
			agent__pause_ms(1);
			continue;
		}
		if (__atomic_compare_exchange_n(&key_state, &state, 4, 0,
						__ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
			break;
	}
	if (i == 1000)
		return -EBUSY;
	if (state == 2)
		key_kept = 1;
	if (!key_kept || !fn)
		return 0;
	for (; i < 1000; i++) {
		if (!__atomic_load_n(&key_users, __ATOMIC_SEQ_CST)) {
			fn->key_delete(exit_key);
			key_kept = 0;
			return 0;
		}
		agent__pause_ms(1);
	}
	return -EBUSY;
}

void counters__restart(void)
{
	int off = 4;

	/* a key a stop could not delete is still the one to use */
	__atomic_compare_exchange_n(&key_state, &off, key_kept ? 2 : 0, 0,
				    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	key_kept = 0;
}
