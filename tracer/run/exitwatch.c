// SPDX-License-Identifier: MIT
/*
 * exitwatch.c - a descriptor that becomes readable when the target's exit()
 * waits for its last reading.
 *
 * The agent holds exit() for the tracer's last reading (agent/exitwait.c)
 * and wakes the futex on the header's exit_state.  The tracer's loop
 * sleeps in poll() for up to 50 ms between drains, and a program's exit
 * should not wait that long for it to look: so a thread of ours sleeps on
 * that futex (shared: the kernel keys it by the memfd and offset, whoever
 * maps it) and turns the wake-up into an eventfd the loop polls.  The
 * thread only reads the word; it looks again at least every 100 ms, and
 * stops when told (a FUTEX_WAKE of its own ends its sleep).  A target
 * that writes the word for nothing gets one early reading, once: the loop
 * decides, not this thread.  The memfd is sealed against shrinking, so
 * the header page cannot go away under the thread.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include "exitwatch.h"

static void *watch(void *arg)
{
	struct exit_watch *w = arg;
	/* short: a stop's wake-up that comes just before our wait is
	 * seen this much later */
	const struct timespec tick = { 0, 100 * 1000 * 1000 };
	uint64_t one = 1;

	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		uint32_t st = __atomic_load_n(&w->hdr->exit_state,
					      __ATOMIC_ACQUIRE);

		if (st == PA_EXIT_WAITING) {
			if (write(w->fd, &one, sizeof(one)) < 0) {
				/* full: the loop has it to read already */
			}
			break;
		}
		syscall(SYS_futex, &w->hdr->exit_state, FUTEX_WAIT, st,
			&tick, NULL, 0);
	}
	return NULL;
}

int exit_watch__start(struct exit_watch *w, struct pa_header *hdr)
{
	int err;

	w->hdr = hdr;
	w->stop = 0;
	w->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->fd < 0)
		return -errno;
	err = pthread_create(&w->thread, NULL, watch, w);
	if (err) {
		close(w->fd);
		w->fd = -1;
		return -err;
	}
	return 0;
}

void exit_watch__ack(struct exit_watch *w)
{
	uint64_t n;

	if (w->fd >= 0 && read(w->fd, &n, sizeof(n)) < 0) {
		/* nothing there: a spurious readiness */
	}
}

void exit_watch__stop(struct exit_watch *w)
{
	if (w->fd < 0)
		return;
	__atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
	/* ends its sleep; an agent waiting on the word looks again and
	 * sleeps on */
	syscall(SYS_futex, &w->hdr->exit_state, FUTEX_WAKE, INT_MAX, NULL,
		NULL, 0);
	pthread_join(w->thread, NULL);
	close(w->fd);
	w->fd = -1;
}
