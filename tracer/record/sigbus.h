/* SPDX-License-Identifier: MIT */
/*
 * sigbus.h - keep the tracer alive when a mapped file shrinks under it.
 */
#ifndef PA_TRACER_SIGBUS_H
#define PA_TRACER_SIGBUS_H

#include <stdint.h>

/* Install the process-wide SIGBUS handler.  0 or -errno. */
int sigbus__guard(void);
/* Pages replaced so far (each a read past the end of a shrunken file). */
uint64_t sigbus__pages(void);

#endif /* PA_TRACER_SIGBUS_H */
