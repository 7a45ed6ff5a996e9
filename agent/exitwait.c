// SPDX-License-Identifier: MIT
/*
 * exitwait.c - the process's last moment, held for the tracer's last
 * reading.
 *
 * A launched program has exited by the time its tracer learns it, and a
 * dead process has no smaps and no allocator left to ask, so without help
 * the readings "at the end" are the last periodic ones, up to a second
 * old - for a short program, the ones taken at its start.  The library
 * destructor runs in exit(), after the program's atexit handlers and
 * static destructors, with every thread still there (the allocator's
 * stats thread too): the last moment at which the process can be read
 * as it ends.  So, after moving this thread's counters to the header, it
 * holds the exit for a tracer that asked (exit_wanted):
 *
 *   agent:  exit_state = WAITING, FUTEX_WAKE, FUTEX_WAIT while WAITING
 *   tracer: (its loop looks at the word at least every 50 ms) drains the
 *           ring, reads the sites, takes the reading, exit_state = READ,
 *           FUTEX_WAKE
 *
 * The wait is bounded (PA_EXIT_WAIT_MS in all), and lasts only while
 * the tracer's loop is seen to run (it bumps tracer_beat at each pass, at
 * least every 50 ms): a tracer that is stopped or stuck costs the program
 * PA_EXIT_BEAT_MS, once - and nothing in exact mode once the agent has
 * given up waiting for it to make room.  Only the
 * thread that calls exit() waits; a forked child (the header is its
 * parent's), an agent that is not recording, and a process that ends by
 * a signal or _exit() - no destructors - never do, and the tracer keeps
 * its last periodic reading for them.  glibc runs the library destructors
 * once, in the first thread to call exit(): another thread's exit()
 * meanwhile ends the process at once, with the same result; and libraries
 * loaded before the agent are finalized after it.  Nothing is allocated.
 */
#include <errno.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "agent.h"
#include "pa_clock.h"
#include "pa_futex.h"
#include "unwind_cfi.h"

static void wait_for_reading(struct pa_header *hdr)
{
	uint64_t start = pa_now_ns(), end, beat_at = start;
	uint32_t expected = PA_EXIT_NONE, beat;

	end = start + PA_EXIT_WAIT_MS * PA_NSEC_PER_MSEC;
	beat = __atomic_load_n(&hdr->tracer_beat, __ATOMIC_RELAXED);

	/* sequentially consistent, as the tracer's store of exit_wanted = 0
	 * and load of exit_state when it stops (tracer/run/trace.c): either it
	 * sees WAITING and wakes us, or we see exit_wanted 0 below */
	if (!__atomic_compare_exchange_n(&hdr->exit_state, &expected,
					 PA_EXIT_WAITING, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return;		/* not ours to wait for (a hostile value) */
	pa_futex_wake(&hdr->exit_state);
	for (;;) {
		uint64_t now = pa_now_ns(), until;
		uint32_t b = __atomic_load_n(&hdr->tracer_beat,
					     __ATOMIC_RELAXED);

		if (b != beat) {
			beat = b;
			beat_at = now;
		}
		/* a tracer whose loop does not run (stopped, stuck) is not
		 * waited for long */
		if (__atomic_load_n(&hdr->exit_state, __ATOMIC_SEQ_CST) !=
			    PA_EXIT_WAITING ||
		    !__atomic_load_n(&hdr->exit_wanted, __ATOMIC_SEQ_CST) ||
		    now >= end ||
		    now - beat_at >= PA_EXIT_BEAT_MS * PA_NSEC_PER_MSEC)
			return;
		/* look at the beat again at least every 50 ms */
		until = now + 50 * PA_NSEC_PER_MSEC < end ?
			now + 50 * PA_NSEC_PER_MSEC : end;
		/* EINTR (a signal handler ran), EAGAIN (already moved) and
		 * spurious wake-ups all look again */
		pa_futex_wait(&hdr->exit_state, PA_EXIT_WAITING, until - now);
	}
}

__attribute__((destructor)) static void at_exit(void)
{
	struct pa_header *hdr = pa_agent.hdr;
	uint32_t token;

	/* the stats thread answers the last reading, not a build; only in
	 * the process that recorded (a vfork child's exit() shares its
	 * memory with a parent that goes on) */
	if (hdr && !agent__forked() &&
	    __atomic_load_n(&hdr->agent_pid, __ATOMIC_RELAXED) ==
		    (uint32_t)getpid())
		unwind_cfi__cancel_builds();
	agent__flush_counts();
	if (!hdr || agent__forked() ||
	    __atomic_load_n(&pa_agent.state, __ATOMIC_ACQUIRE) !=
		    AGENT_RUNNING ||
	    __atomic_load_n(&hdr->agent_pid, __ATOMIC_RELAXED) !=
		    (uint32_t)getpid() ||
	    !__atomic_load_n(&hdr->exit_wanted, __ATOMIC_ACQUIRE))
		return;
	/* exact mode: a tracer we already stopped waiting for room for
	 * (agent/ring.c) is not reading; not waited for again */
	token = __atomic_load_n(&hdr->draining, __ATOMIC_ACQUIRE);
	if (token && token == __atomic_load_n(&hdr->gave_up_on,
					      __ATOMIC_ACQUIRE))
		return;
	wait_for_reading(hdr);
}
