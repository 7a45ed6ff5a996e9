/* SPDX-License-Identifier: MIT */
/*
 * mappings.h - the executable file mappings of a target, as the tracer has
 * seen them over its life, each with an open fd on the very file mapped.
 */
#ifndef PA_TRACER_MAPPINGS_H
#define PA_TRACER_MAPPINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "elf/elfinfo.h"

struct module {
	char *path;		/* as the kernel printed it, minus " (deleted)" */
	uint64_t dev, inode;
	int fd;			/* -1 if the file could not be opened */
	bool has_info;
	struct elfinfo info;
	bool has_bias;
	uint64_t bias;
	bool is_exe;		/* the main executable */
};

struct mapping {
	uint64_t start, end, offset;
	size_t module;		/* index into mapping_set.mods */
};

struct mapping_set {
	pid_t pid;
	char *exe;		/* readlink of /proc/PID/exe */
	struct module *mods;
	size_t nmods;
	struct mapping *maps;	/* sorted by start, non-overlapping */
	size_t nmaps;
	unsigned int refreshes;
};

void mapping_set__init(struct mapping_set *ms, pid_t pid);
void mapping_set__fini(struct mapping_set *ms);

/*
 * Read /proc/PID/maps and add executable file mappings not seen before,
 * opening each new file through /proc/PID/map_files.  Mappings that have
 * gone are kept (their samples still need them).  0 or -errno.
 */
int mapping_set__refresh(struct mapping_set *ms);

/* The mapping holding addr, or NULL. */
const struct mapping *mapping_set__find(const struct mapping_set *ms,
					uint64_t addr);

#endif /* PA_TRACER_MAPPINGS_H */
