/* SPDX-License-Identifier: MIT */
/*
 * debuginfod.h - fetch debug files and executables from debuginfod servers
 * by build ID, with a bounded wait.
 */
#ifndef PA_ELF_DEBUGINFOD_H
#define PA_ELF_DEBUGINFOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct debuginfod_conn;

/*
 * A client for the space-separated server urls; each fetch waits at most
 * timeout_s seconds.  NULL with *why set (libdebuginfod missing, no
 * memory).
 */
struct debuginfod_conn *debuginfod_conn__new(const char *urls,
					     unsigned int timeout_s,
					     const char **why);
void debuginfod_conn__free(struct debuginfod_conn *c);

/*
 * Fetch the debuginfo (debug) or the executable of this build.  Returns an
 * fd on the file in the client's cache, its path in *path (malloc'd), or
 * -errno: -ETIME when the wait passed the timeout, -ENOENT when no server
 * has it.
 */
int debuginfod_conn__fetch(struct debuginfod_conn *c, const uint8_t *build_id,
			   size_t build_id_len, bool debug, char **path);

#endif /* PA_ELF_DEBUGINFOD_H */
