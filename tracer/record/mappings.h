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
	bool from_agent;	/* known only from the agent's record: fd is
				   opened by path, and only if the build ID
				   matches (mapping_set__open_reported) */
};

struct mapping {
	uint64_t start, end, offset;
	size_t module;		/* index into mapping_set.mods */
	bool symbolized;	/* registered with the report's symbolizer */
};

struct mapping_set {
	pid_t pid;
	char *exe;		/* readlink of /proc/PID/exe */
	struct module *mods;
	size_t nmods;
	struct mapping *maps;	/* sorted by start, non-overlapping */
	size_t nmaps;
	unsigned int refreshes;
	uint64_t vdso_start, vdso_end;	/* its [vdso], if it is the tracer's
					   own image; 0, 0 if not */
	const char *root;	/* mapping_set__open_reported opens paths
				   under it (--sysroot); NULL: ours */
};

void mapping_set__init(struct mapping_set *ms, pid_t pid);
void mapping_set__fini(struct mapping_set *ms);

/*
 * Read /proc/PID/maps and add executable file mappings not seen before,
 * opening each new file through /proc/PID/map_files.  Mappings that have
 * gone are kept (their samples still need them).  0 or -errno; -ECHILD
 * when the process has exec'd another program since the first refresh
 * (nothing is added then: the samples are the first image's).
 */
int mapping_set__refresh(struct mapping_set *ms);

/*
 * Note an executable segment the agent reported (PA_REC_MODULE).  Ignored
 * when it overlaps a mapping already known.  0 or -errno.
 */
int mapping_set__note(struct mapping_set *ms, uint64_t start, uint64_t end,
		      uint64_t offset, uint64_t bias, const char *path,
		      size_t path_len, const uint8_t *build_id,
		      size_t build_id_len);

/*
 * Open the files of modules known only from agent records, by path, with
 * O_NOFOLLOW, keeping each only if its build ID is the one recorded.
 * Returns how many could not be opened or did not match.
 */
int mapping_set__open_reported(struct mapping_set *ms);

/* The mapping holding addr, or NULL. */
const struct mapping *mapping_set__find(const struct mapping_set *ms,
					uint64_t addr);

#endif /* PA_TRACER_MAPPINGS_H */
