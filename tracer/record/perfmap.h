/* SPDX-License-Identifier: MIT */
#ifndef PA_TRACER_PERFMAP_H
#define PA_TRACER_PERFMAP_H

#include <stdint.h>
#include <sys/types.h>

/*
 * Names of JIT-compiled code from a perf map (/tmp/perf-PID.map, written
 * by `node --perf-basic-prof`, the JVM's Compiler.perfmap, LuaJIT...).
 */
struct perfmap;

/*
 * The perf map of process pid: /proc/PID/root/tmp/perf-NSPID.map while it
 * runs (its own /tmp and PID in a container), else /tmp/perf-PID.map.
 * NULL with errno set when there is none (ENOENT) or it is refused: not
 * owned by the process's user or root, not a regular file, too large.
 * why, if not NULL, gets a reason for a refusal worth telling.
 */
struct perfmap *perfmap__load(pid_t pid, char *why, size_t why_size);

/* Load from an open file (the file's checks are the caller's). */
struct perfmap *perfmap__parse(const char *text, size_t len);

/* The name of the code at addr, or NULL. */
const char *perfmap__lookup(const struct perfmap *pm, uint64_t addr);

size_t perfmap__count(const struct perfmap *pm);

void perfmap__free(struct perfmap *pm);

#endif /* PA_TRACER_PERFMAP_H */
