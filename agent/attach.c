// SPDX-License-Identifier: MIT
/*
 * attach.c - an agent injected into a running process: attach and detach.
 *
 * A tracer dlopens the agent in the target (tracer/attach/inject.c) and calls
 * pprof_alloc_attach there; the agent starts recording and points every
 * module's GOT slots for the malloc family at its hooks (got.c).  Modules
 * loaded later are hooked when the next samples rescan the module list
 * after a dlopen (modules.c calls agent__hook_new_modules).
 *
 * Detach comes two ways: a call to pprof_alloc_detach made by the tracer,
 * or the header's command word, which any thread's slow path obeys - so a
 * target with no idle thread to borrow still detaches, at its next sample.
 * Hooks become pass-through first, then the slots are put back, and a
 * later attach starts over.
 *
 * An agent the tracer dlopened (PA_ATTACH_INJECTED at its first attach)
 * then leaves, in two more calls (tracer/attach/unload.c says when):
 * pprof_alloc_off, while the program runs - the stats thread ends, the
 * memfd is closed and its mapping replaced by zeroed memory of ours - and
 * pprof_alloc_release, while the tracer holds every other thread stopped
 * and has found none inside the agent - the rest of what it mapped goes;
 * then the tracer dlcloses it.  The agent cannot decide that on its own:
 * only a tracer can stop every thread and look at their stacks; a thread
 * may be inside a hook, and a hook's address may have been copied, which
 * the tracer looks for in the program's memory (unload.c).  A preloaded
 * agent refuses both (-EPERM): it is the program's malloc.
 */
#include <errno.h>
#include "agent.h"
#include "got.h"
#include "entry.h"

#define MAX_HOOKS 16

unsigned int (*pa_hook_table)(struct got_hook *hooks);

static unsigned int hooks(struct got_hook *h)
{
	return pa_hook_table ? pa_hook_table(h) : 0;
}

static int detaching;

/* Detach from wherever we are (an injected call, or a slow path that saw
 * the tracer's command): pass-through first, then the slots. */
static int do_detach(void)
{
	int err;

	if (__atomic_exchange_n(&detaching, 1, __ATOMIC_ACQUIRE))
		return 0;	/* another thread is at it */
	err = agent__detach();
	if (!err && pa_agent.attached)
		got__unpatch();
	if (!err)
		agent__detached();
	__atomic_store_n(&detaching, 0, __ATOMIC_RELEASE);
	return err;
}

void agent__command(void)
{
	struct pa_header *hdr = __atomic_load_n(&pa_agent.hdr,
						__ATOMIC_ACQUIRE);

	if (hdr && __atomic_load_n(&hdr->command, __ATOMIC_ACQUIRE) ==
		   PA_CMD_DETACH)
		do_detach();
}

/* After a dlopen, an attached agent hooks the new modules too. */
bool agent__hook_new_modules(void)
{
	struct got_hook h[MAX_HOOKS];

	if (!pa_agent.attached ||
	    __atomic_load_n(&pa_agent.state, __ATOMIC_ACQUIRE) != AGENT_RUNNING)
		return false;
	return got__patch(h, hooks(h));
}

__attribute__((visibility("default")))
int pprof_alloc_attach(uint64_t rate, uint64_t max_frames, uint64_t ring_size,
		       uint64_t live_size, uint64_t flags)
{
	struct got_hook h[MAX_HOOKS];
	int err, saved_errno = errno;

	if (!pa_hook_table)
		return -EAGAIN;		/* constructors have not run */
	if (flags & PA_ATTACH_INJECTED)
		pa_agent.injected = 1;	/* for good: later attaches reuse us */
	pa_thread.no_wait = 1;
	err = agent__attach(rate, max_frames, ring_size, live_size, flags);
	if (!err && pa_agent.attached)
		got__patch(h, hooks(h));
	/* the tracer patches the program's own allocator into a page we
	 * map near it; without one it says why */
	if (!err && (flags & PA_ATTACH_ENTRY))
		entry__map_page();
	pa_thread.no_wait = 0;
	errno = saved_errno;
	return err;
}

/*
 * The entry points run on a thread the tracer borrowed and waits for: such
 * a thread must never wait for the tracer to make room in the ring
 * (no_wait; it drops instead, counted), and finds its errno as it was.
 */
__attribute__((visibility("default")))
int pprof_alloc_rescan(void)
{
	int ret, saved_errno = errno;

	if (!pa_agent.attached ||
	    __atomic_load_n(&pa_agent.state, __ATOMIC_ACQUIRE) != AGENT_RUNNING)
		return 0;
	pa_thread.no_wait = 1;
	modules__scan();
	ret = agent__hook_new_modules() ? 1 : 0;
	pa_thread.no_wait = 0;
	errno = saved_errno;
	return ret;
}

__attribute__((visibility("default")))
int pprof_alloc_detach(void)
{
	int ret, saved_errno = errno;

	pa_thread.no_wait = 1;
	ret = do_detach();
	pa_thread.no_wait = 0;
	errno = saved_errno;
	return ret;
}

/* Turn off completely after a detach (agent__off).  The tracer's borrowed
 * thread, the program running. */
__attribute__((visibility("default")))
int pprof_alloc_off(void)
{
	int ret, saved_errno = errno;

	pa_thread.no_wait = 1;
	ret = agent__off();
	pa_thread.no_wait = 0;
	errno = saved_errno;
	return ret;
}

/* Let go of the rest (agent__release); flags: PA_RELEASE_UNLOADING.  The
 * tracer's borrowed thread, every other thread stopped. */
__attribute__((visibility("default")))
int pprof_alloc_release(uint64_t flags)
{
	int ret, saved_errno = errno;

	ret = agent__release(flags & PA_RELEASE_UNLOADING);
	errno = saved_errno;
	return ret;
}
