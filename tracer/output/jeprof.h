/* SPDX-License-Identifier: MIT */
/*
 * jeprof.h - jemalloc's own heap profile of a process, asked of its agent
 * and turned into the aggregate every profile is written from.
 */
#ifndef PA_TRACER_JEPROF_H
#define PA_TRACER_JEPROF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "tracer/record/heap.h"
#include "jeprof_dump.h"
#include "tracer/record/mappings.h"
#include "pprof_alloc_abi.h"
#include "pprof_report.h"

struct symbols;

/* Longest wait for the agent's answer (jemalloc walks every sampled
 * stack under its profiling lock to write it). */
#define JEPROF_ANSWER_MS	30000

/* What the agent answered, besides the dump. */
struct jeprof_reply {
	uint64_t lg_sample;		/* prof.lg_sample */
	uint64_t mallctl;		/* the mallctl it called */
};

/*
 * Ask the agent of process pid (its memfd's header hdr, file_size bytes,
 * mapped) for jemalloc's dump, calling mallctl (0: the agent's own find)
 * on its stats thread, and read it: *dump (malloc'd, *len bytes, at most
 * JEPROF_MAX_BYTES).  0, or -errno with one line in why saying why not
 * and what to do (no jemalloc, prof:false, no stats thread...).
 */
int jeprof__ask(pid_t pid, struct pa_header *hdr, uint64_t file_size,
		uint64_t mallctl, char **dump, size_t *len,
		struct jeprof_reply *reply, char *why, size_t why_size);

/* jeprof__ask, then jeprof_dump__parse: d to be freed with
 * jeprof_dump__fini whatever is returned. */
int jeprof__fetch(pid_t pid, struct pa_header *hdr, uint64_t file_size,
		  uint64_t mallctl, struct jeprof_dump *d,
		  struct jeprof_reply *reply, char *why, size_t why_size);

/* What a profile of the dump says of itself: command, whose samples
 * these are (written into source, size bytes), no peak, taken now. */
struct report_info jeprof__report_info(const struct jeprof_dump *d, pid_t pid,
				       const char *command, char *source,
				       size_t size);

/* The run-time address of a mallctl, je_mallctl or _rjem_mallctl that
 * the main executable has in its .symtab (a jemalloc linked in), or 0. */
uint64_t jeprof__exe_mallctl(const struct mapping_set *ms);

/*
 * The dump's stacks into h (heap__init'ed with the dump's period, empty):
 * each stack less its leading frames in jemalloc itself and in the agent
 * (in jemalloc's module - the one holding mallctl, the function called -
 * or, with syms, named as jemalloc's functions are: a jemalloc linked into
 * the executable), its counts unbiased (jeprof__scale); no "bytes" label
 * (a stack's sizes are not in the dump).  0 or -ENOMEM.
 */
int jeprof__fill(struct heap *h, const struct jeprof_dump *d,
		 const struct mapping_set *ms, struct symbols *syms,
		 uint64_t mallctl);

#endif /* PA_TRACER_JEPROF_H */
