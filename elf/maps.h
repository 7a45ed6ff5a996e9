/* SPDX-License-Identifier: MIT */
/*
 * maps.h - parse /proc/PID/maps.
 *
 * The text is the target's to shape (file names are arbitrary bytes, lines
 * may be cut short if the process changes its mappings while we read), so
 * the parser validates every field and skips nothing silently: a malformed
 * line makes the whole parse fail with -EINVAL.
 */
#ifndef PA_ELF_MAPS_H
#define PA_ELF_MAPS_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define MAPS_PROT_READ	 0x1
#define MAPS_PROT_WRITE	 0x2
#define MAPS_PROT_EXEC	 0x4
#define MAPS_SHARED	 0x8

struct maps_entry {
	uint64_t start, end;	/* [start, end) */
	uint64_t offset;	/* file offset of start */
	uint32_t prot;		/* MAPS_PROT_* | MAPS_SHARED */
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	char *path;		/* "" for anonymous; "[stack]" etc; may end
				   in " (deleted)" as the kernel prints it */
};

struct proc_maps {
	size_t count;
	struct maps_entry *entries;	/* sorted by start, as the kernel gives */
};

/* Parse maps text (not NUL-terminated; len bytes).  0 or -errno. */
int proc_maps__parse(const char *text, size_t len, struct proc_maps **out);
/* Read and parse /proc/PID/maps.  0 or -errno. */
int proc_maps__read(pid_t pid, struct proc_maps **out);
void proc_maps__free(struct proc_maps *maps);
/* The entry holding addr, or NULL. */
const struct maps_entry *proc_maps__at(const struct proc_maps *pm,
				       uint64_t addr);
/*
 * Is e (one of pm's entries) a stack of its own: the main thread's, or an
 * anonymous writable mapping right above a guard (an anonymous mapping
 * with no access, of at most 1 MiB), as glibc's thread stacks and
 * protected coroutine stacks are made?  Not the heap, nor a glibc arena
 * (64 MiB-aligned, its reserve above it): a stack carved out of those
 * has the program's data below it.
 */
bool proc_maps__own_stack(const struct proc_maps *pm,
			  const struct maps_entry *e);

/*
 * Open the file mapped at e in process pid: through /proc/PID/map_files,
 * or, where that is denied (it wants CAP_SYS_ADMIN), through the path in
 * the target's root when that is still the very file (same device and
 * inode).  An fd, or -errno: -ESRCH (the process is gone), -ESTALE (the
 * path names another file now), -EPERM/-EACCES.
 */
int maps_entry__open(pid_t pid, const struct maps_entry *e);

/*
 * Read /proc/PID/stat into buf and return where its third field (the
 * state) starts, past the command name (which may hold spaces and
 * parentheses), or NULL if it cannot be read.
 */
char *proc_stat__fields(pid_t pid, char *buf, size_t size);

/* Field 22 of /proc/PID/stat: the process's start, in clock ticks since
 * boot (the kernel's, not the process's to change); 0 if it is gone. */
uint64_t proc_stat__start_time(pid_t pid);

#endif /* PA_ELF_MAPS_H */
