// SPDX-License-Identifier: MIT
/*
 * mappings.c - which file is mapped where in the target.
 *
 * The tracer needs, for every code address in a stack, the file it came
 * from, that file's build ID and its load bias.  It reads /proc/PID/maps
 * (parsed defensively in elf/maps.c), keeps only executable mappings of
 * files, and opens each new file through /proc/PID/map_files/START-END, so
 * that it holds the very inode the target mapped - not whatever a path
 * names now, and not a path the target chose (falling back to
 * /proc/PID/root/PATH only when map_files is not permitted).  The fd stays
 * open so that symbolization works after the target has exited.
 *
 * The set only grows: a library that was dlclosed keeps its entry, because
 * samples taken while it was loaded still point into it.  A new mapping
 * that overlaps an older one of a different file is ignored (the older one
 * wins); that is rare enough to accept.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "elf/maps.h"
#include "elf/unwind.h"
#include "mappings.h"

#define DELETED_SUFFIX " (deleted)"
/* Bounds on what agent records may add (they are the target's words). */
#define MAX_MODULES		4096
#define MAX_SEGMENT_BYTES	(1ull << 34)

void mapping_set__init(struct mapping_set *ms, pid_t pid)
{
	memset(ms, 0, sizeof(*ms));
	ms->pid = pid;
}

void mapping_set__fini(struct mapping_set *ms)
{
	size_t i;

	for (i = 0; i < ms->nmods; i++) {
		free(ms->mods[i].path);
		if (ms->mods[i].fd >= 0)
			close(ms->mods[i].fd);
	}
	free(ms->mods);
	free(ms->maps);
	free(ms->exe);
	memset(ms, 0, sizeof(*ms));
}

const struct mapping *mapping_set__find(const struct mapping_set *ms,
					uint64_t addr)
{
	size_t lo = 0, hi = ms->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct mapping *m = &ms->maps[mid];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

static char *clean_path(const char *path)
{
	size_t n = strlen(path), s = strlen(DELETED_SUFFIX);

	if (n > s && !strcmp(path + n - s, DELETED_SUFFIX))
		n -= s;
	return strndup(path, n);
}

static int open_mapped_file(pid_t pid, const struct maps_entry *e)
{
	int fd = maps_entry__open(pid, e);

	return fd < 0 ? -1 : fd;
}

/*
 * Room for one more module at ms->mods[ms->nmods], zeroed, with path (which
 * it takes; NULL means out of memory) and no fd.  The caller increments
 * nmods once the module is complete.  NULL on failure (path freed).
 */
static struct module *new_module(struct mapping_set *ms, char *path)
{
	struct module *m;
	void *p;

	if (!path || ms->nmods + 1 > SIZE_MAX / sizeof(*ms->mods))
		goto out_free;
	p = realloc(ms->mods, (ms->nmods + 1) * sizeof(*ms->mods));
	if (!p)
		goto out_free;
	ms->mods = p;
	m = &ms->mods[ms->nmods];
	memset(m, 0, sizeof(*m));
	m->path = path;
	m->fd = -1;
	return m;
out_free:
	free(path);
	return NULL;
}

static int module_for(struct mapping_set *ms, const struct maps_entry *e,
		      size_t *index)
{
	uint64_t dev = (uint64_t)e->dev_major << 32 | e->dev_minor;
	struct module *m;
	size_t i;

	for (i = 0; i < ms->nmods; i++) {
		m = &ms->mods[i];
		if (m->dev == dev && m->inode == e->inode) {
			*index = i;
			return 0;
		}
	}
	m = new_module(ms, clean_path(e->path));
	if (!m)
		return -ENOMEM;
	m->dev = dev;
	m->inode = e->inode;
	m->fd = open_mapped_file(ms->pid, e);
	if (m->fd >= 0) {
		m->has_info = !elfinfo__read(m->fd, &m->info);
		m->has_bias = !elfinfo__load_bias(m->fd, e->start, e->offset,
						  &m->bias);
	}
	m->is_exe = ms->exe && !strcmp(ms->exe, m->path);
	*index = ms->nmods++;
	return 0;
}

/* The first known mapping overlapping [start, end), or NULL. */
static struct mapping *overlapping(const struct mapping_set *ms,
				   uint64_t start, uint64_t end)
{
	size_t i;

	for (i = 0; i < ms->nmaps; i++) {
		struct mapping *m = &ms->maps[i];

		if (m->start < end && start < m->end)
			return m;
	}
	return NULL;
}

/*
 * A module first known from an agent record is now seen in /proc: take
 * the file through map_files instead of by path, if it is the same file.
 */
static void upgrade_reported(struct mapping_set *ms, struct mapping *m,
			     const struct maps_entry *e)
{
	struct module *mod = &ms->mods[m->module];
	struct elfinfo info;
	int fd;

	if (!mod->from_agent || m->start != e->start || m->end != e->end)
		return;
	fd = open_mapped_file(ms->pid, e);
	if (fd < 0)
		return;
	if (elfinfo__read(fd, &info) ||
	    info.build_id_len != mod->info.build_id_len ||
	    memcmp(info.build_id, mod->info.build_id, info.build_id_len)) {
		close(fd);
		return;
	}
	if (mod->fd >= 0)
		close(mod->fd);
	mod->fd = fd;
	mod->info = info;
	mod->from_agent = false;
	mod->is_exe = ms->exe && !strcmp(ms->exe, mod->path);
	mod->dev = (uint64_t)e->dev_major << 32 | e->dev_minor;
	mod->inode = e->inode;
}

static int add_mapping(struct mapping_set *ms, uint64_t start, uint64_t end,
		       uint64_t offset, size_t mod)
{
	void *p;

	if (ms->nmaps + 1 > SIZE_MAX / sizeof(*ms->maps))
		return -ENOMEM;
	p = realloc(ms->maps, (ms->nmaps + 1) * sizeof(*ms->maps));
	if (!p)
		return -ENOMEM;
	ms->maps = p;
	ms->maps[ms->nmaps++] = (struct mapping){
		.start = start, .end = end, .offset = offset, .module = mod,
	};
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct mapping *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int mapping_set__refresh(struct mapping_set *ms)
{
	struct proc_maps *pm;
	char link[64], target[PATH_MAX];
	size_t i, added = 0;
	int err;

	{
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/%d/exe", (int)ms->pid);
		n = readlink(link, target, sizeof(target) - 1);
		if (n > 0) {
			char *exe;

			target[n] = 0;
			exe = clean_path(target);
			if (!exe)
				return -ENOMEM;
			if (ms->exe && strcmp(exe, ms->exe)) {
				/* exec'd: another image, whose mappings must
				 * not mix with the ones our samples need */
				free(exe);
				return -ECHILD;
			}
			free(ms->exe);
			ms->exe = exe;
		}
	}
	err = proc_maps__read(ms->pid, &pm);
	if (err)
		return err;
	for (i = 0; i < pm->count; i++) {
		const struct maps_entry *e = &pm->entries[i];
		struct mapping *old;
		size_t mod;

		if ((e->prot & MAPS_PROT_EXEC) && !strcmp(e->path, "[vdso]")) {
			/* compared now, while the process lives: the
			 * unwinding may come after it is gone */
			if (e->start != ms->vdso_start &&
			    unwinder__vdso_is_own(ms->pid, e->start, e->end)) {
				ms->vdso_start = e->start;
				ms->vdso_end = e->end;
			}
			continue;
		}
		if (!(e->prot & MAPS_PROT_EXEC) || e->path[0] != '/' ||
		    !e->inode)
			continue;
		old = overlapping(ms, e->start, e->end);
		if (old) {
			upgrade_reported(ms, old, e);
			continue;
		}
		err = module_for(ms, e, &mod);
		if (err)
			goto out_free;
		err = add_mapping(ms, e->start, e->end, e->offset, mod);
		if (err)
			goto out_free;
		added++;
	}
	if (added)
		qsort(ms->maps, ms->nmaps, sizeof(*ms->maps), by_start);
	ms->refreshes++;
out_free:
	proc_maps__free(pm);
	return err;
}

int mapping_set__note(struct mapping_set *ms, uint64_t start, uint64_t end,
		      uint64_t offset, uint64_t bias, const char *path,
		      size_t path_len, const uint8_t *build_id,
		      size_t build_id_len)
{
	struct module *m;
	int err;

	if (overlapping(ms, start, end))
		return 0;
	if (!path_len || path[0] != '/' || memchr(path, 0, path_len) ||
	    build_id_len > ELFINFO_BUILD_ID_MAX ||
	    end - start > MAX_SEGMENT_BYTES)
		return -EINVAL;
	if (ms->nmods >= MAX_MODULES)
		return -ENOSPC;		/* a flood: keep what we have */
	m = new_module(ms, strndup(path, path_len));
	if (!m)
		return -ENOMEM;
	m->from_agent = true;
	m->is_exe = ms->exe && !strcmp(ms->exe, m->path);
	m->has_info = true;
	memcpy(m->info.build_id, build_id, build_id_len);
	m->info.build_id_len = build_id_len;
	m->has_bias = true;
	m->bias = bias;
	err = add_mapping(ms, start, end, offset, ms->nmods);
	if (err) {
		free(m->path);
		return err;
	}
	ms->nmods++;
	qsort(ms->maps, ms->nmaps, sizeof(*ms->maps), by_start);
	return 0;
}

int mapping_set__open_reported(struct mapping_set *ms)
{
	int failed = 0;
	size_t i;

	for (i = 0; i < ms->nmods; i++) {
		struct module *m = &ms->mods[i];
		char under[PATH_MAX];
		const char *path = m->path;
		struct elfinfo info;
		struct stat st;
		int fd;

		if (!m->from_agent || m->fd >= 0)
			continue;
		if (ms->root) {
			if ((size_t)snprintf(under, sizeof(under), "%s%s",
					     ms->root, m->path) >= sizeof(under)) {
				failed++;
				continue;
			}
			path = under;
		}
		/* The path is the target's to choose: never block on it (a
		 * FIFO), never take a terminal, follow no final symlink, and
		 * read only a regular file. */
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
				   O_NONBLOCK | O_NOCTTY);
		if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
		    elfinfo__read(fd, &info) ||
		    info.build_id_len != m->info.build_id_len ||
		    memcmp(info.build_id, m->info.build_id,
			   info.build_id_len)) {
			if (fd >= 0)
				close(fd);
			failed++;
			continue;
		}
		m->fd = fd;
		m->info.type = info.type;
	}
	return failed;
}
