/* SPDX-License-Identifier: MIT */
/*
 * exitwatch.h - a descriptor that becomes readable when the target's exit()
 * waits for its last reading.
 */
#ifndef PA_TRACER_EXITWATCH_H
#define PA_TRACER_EXITWATCH_H

#include <pthread.h>
#include <stdbool.h>
#include "pprof_alloc_abi.h"

struct exit_watch {
	struct pa_header *hdr;
	int fd;			/* an eventfd for poll, -1: not watching */
	pthread_t thread;
	int stop;
};

/* Watch hdr's exit_state (w->fd: -1 on failure, then poll as before).
 * 0 or -errno. */
int exit_watch__start(struct exit_watch *w, struct pa_header *hdr);
/* w->fd was readable: empty it. */
void exit_watch__ack(struct exit_watch *w);
void exit_watch__stop(struct exit_watch *w);

#endif /* PA_TRACER_EXITWATCH_H */
