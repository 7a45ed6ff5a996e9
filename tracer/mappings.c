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
#include <unistd.h>
#include "elf/maps.h"
#include "mappings.h"

#define DELETED_SUFFIX " (deleted)"

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
	char name[PATH_MAX];
	int fd;

	snprintf(name, sizeof(name), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)e->start, (unsigned long long)e->end);
	fd = open(name, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (e->path[0] != '/')
		return -1;
	if ((size_t)snprintf(name, sizeof(name), "/proc/%d/root%s", (int)pid,
			     e->path) >= sizeof(name))
		return -1;
	return open(name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
}

static int module_for(struct mapping_set *ms, const struct maps_entry *e,
		      size_t *index)
{
	uint64_t dev = (uint64_t)e->dev_major << 32 | e->dev_minor;
	struct module *m;
	size_t i;
	void *p;

	for (i = 0; i < ms->nmods; i++) {
		m = &ms->mods[i];
		if (m->dev == dev && m->inode == e->inode) {
			*index = i;
			return 0;
		}
	}
	if (ms->nmods + 1 > SIZE_MAX / sizeof(*ms->mods))
		return -ENOMEM;
	p = realloc(ms->mods, (ms->nmods + 1) * sizeof(*ms->mods));
	if (!p)
		return -ENOMEM;
	ms->mods = p;
	m = &ms->mods[ms->nmods];
	memset(m, 0, sizeof(*m));
	m->path = clean_path(e->path);
	if (!m->path)
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

static bool overlaps(const struct mapping_set *ms, uint64_t start,
		     uint64_t end, bool *same, size_t module)
{
	size_t i;

	*same = false;
	for (i = 0; i < ms->nmaps; i++) {
		const struct mapping *m = &ms->maps[i];

		if (m->start < end && start < m->end) {
			*same = m->start == start && m->end == end &&
				m->module == module;
			return true;
		}
	}
	return false;
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

	if (!ms->exe) {
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/%d/exe", (int)ms->pid);
		n = readlink(link, target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = 0;
			ms->exe = clean_path(target);
		}
	}
	err = proc_maps__read(ms->pid, &pm);
	if (err)
		return err;
	for (i = 0; i < pm->count; i++) {
		const struct maps_entry *e = &pm->entries[i];
		size_t mod;
		bool same;
		void *p;

		if (!(e->prot & MAPS_PROT_EXEC) || e->path[0] != '/' ||
		    !e->inode)
			continue;
		err = module_for(ms, e, &mod);
		if (err)
			goto out_free;
		if (overlaps(ms, e->start, e->end, &same, mod))
			continue;
		if (ms->nmaps + 1 > SIZE_MAX / sizeof(*ms->maps)) {
			err = -ENOMEM;
			goto out_free;
		}
		p = realloc(ms->maps, (ms->nmaps + 1) * sizeof(*ms->maps));
		if (!p) {
			err = -ENOMEM;
			goto out_free;
		}
		ms->maps = p;
		ms->maps[ms->nmaps++] = (struct mapping){
			.start = e->start, .end = e->end,
			.offset = e->offset, .module = mod,
		};
		added++;
	}
	if (added)
		qsort(ms->maps, ms->nmaps, sizeof(*ms->maps), by_start);
	ms->refreshes++;
out_free:
	proc_maps__free(pm);
	return err;
}
