// SPDX-License-Identifier: MIT
/*
 * readings_cgroup.c - what a process's memory cgroup is charged, v1 or v2.
 *
 * /proc/PID/cgroup has one line per hierarchy: "0::/path" for cgroup v2,
 * "N:ctrl,ctrl:/path" for each v1 hierarchy.  The path is relative to the
 * reader's cgroup namespace, so it is joined to the mount points the
 * tracer itself sees (its /proc/self/mountinfo; a mount whose root is not
 * "/" has that prefix taken off the path).  Machines have one, the other,
 * or both (a "hybrid" systemd layout with cgroup2 at /sys/fs/cgroup/unified
 * and no controllers in it): the memory controller lives in exactly one
 * hierarchy, and that one is read: v2 when the process's v2 cgroup has
 * the memory files (its parent enabled the controller), else v1's.
 *
 * The two versions name things differently; both are mapped onto common
 * names where the meaning is the same (usage, limit, anon, file...), and
 * the raw files are reported as well, every memory.stat key included.  v1
 * figures are the hierarchical ones (total_*), like v2's.  Whatever a
 * kernel does not have (memory.peak before 5.19, "kernel" in memory.stat
 * before 5.18, slab in v1) is absent, never zero.
 *
 * oom_kill counts the processes of the cgroup that the OOM killer killed:
 * v2's memory.events (this cgroup and those below it), v1's
 * memory.oom_control (the victim's own cgroup; since 4.13).  The kernel
 * raises it before it sends the SIGKILL, so a reading taken after a
 * process's death sees its kill.  cgroup__reread reads a cgroup found
 * before once more, from its directory: after the death /proc no longer
 * says which cgroup it was.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "readings_cgroup.h"

/* v1's "no limit": PAGE_COUNTER_MAX pages, LONG_MAX rounded down to a
 * page (9223372036854771712 with 4 KiB pages; less with arm64's 64 KiB) */
static uint64_t v1_unlimited(void)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t p = page > 0 ? (uint64_t)page : 4096;

	return (INT64_MAX / p) * p;
}

const char *const cgroup_common_names[CG_COMMON_COUNT] = {
	"usage", "limit", "high", "peak", "anon", "file", "kernel", "slab",
	"shmem", "workingset_refaults", "page_faults", "major_page_faults",
	"oom_kill",
};

const bool cgroup_common_is_counter[CG_COMMON_COUNT] = {
	[CG_WORKINGSET_REFAULTS] = true, [CG_PAGE_FAULTS] = true,
	[CG_MAJOR_PAGE_FAULTS] = true, [CG_OOM_KILL] = true,
};

static void say(struct cgroup_reading *cg, const char *fmt, const char *arg)
{
	if (snprintf(cg->why, sizeof(cg->why), fmt, arg) >= (int)sizeof(cg->why))
		strcpy(cg->why + sizeof(cg->why) - 4, "...");
}

/* dir/file into out; false if it does not fit. */
static bool path_of(char *out, size_t size, const char *dir, const char *file)
{
	int n = snprintf(out, size, "%s/%s", dir, file);

	return n >= 0 && (size_t)n < size;
}

/* Does the comma-separated list hold name? */
static bool in_list(const char *list, size_t len, const char *name)
{
	size_t n = strlen(name);
	const char *p = list, *end = list + len, *c;

	while (p < end) {
		c = memchr(p, ',', (size_t)(end - p));
		if (!c)
			c = end;
		if ((size_t)(c - p) == n && !memcmp(p, name, n))
			return true;
		p = c + 1;
	}
	return false;
}

/* The v1 memory line's and the v2 line's paths ("" when none). */
static int read_proc_cgroup(const char *proc_root, pid_t pid, char *v1,
			    char *v2, size_t size)
{
	char file[PATH_MAX], *text, *line, *next, *c1, *c2;
	size_t len;
	int err;

	v1[0] = v2[0] = 0;
	if (snprintf(file, sizeof(file), "%s/%d/cgroup", proc_root,
		     (int)pid) >= (int)sizeof(file))
		return -ENAMETOOLONG;
	err = kvfile__read(file, &text, &len);
	if (err)
		return err;
	for (line = text; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		c1 = strchr(line, ':');
		c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2 || c2[1] != '/')
			continue;
		if (strlen(c2 + 1) >= size)
			continue;
		if (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1)
			strcpy(v2, c2 + 1);
		else if (in_list(c1 + 1, (size_t)(c2 - c1 - 1), "memory"))
			strcpy(v1, c2 + 1);
	}
	free(text);
	return 0;
}

/* mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = 0;
}

struct mount_point {
	char dir[PATH_MAX];
	char root[PATH_MAX];
	bool found;
};

/* The cgroup2 mount and the v1 mount with the memory controller. */
static void find_mounts(struct mount_point *v1, struct mount_point *v2)
{
	char *text, *line, *next, *f[10], *dash, *save;
	size_t len;
	int n;

	if (kvfile__read("/proc/self/mountinfo", &text, &len))
		return;
	for (line = text; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		/* id parent maj:min root mountpoint opts [tags] - type src super */
		dash = strstr(line, " - ");
		if (!dash)
			continue;
		*dash = 0;
		for (n = 0, save = NULL; n < 5; n++)
			if (!(f[n] = strtok_r(n ? NULL : line, " ", &save)))
				break;
		if (n < 5)
			continue;
		for (n = 5, save = NULL; n < 8; n++)
			if (!(f[n] = strtok_r(n > 5 ? NULL : dash + 3, " ",
					      &save)))
				break;
		if (n < 8)
			continue;
		unescape(f[3]);
		unescape(f[4]);
		if (strlen(f[3]) >= PATH_MAX || strlen(f[4]) >= PATH_MAX)
			continue;
		if (!strcmp(f[5], "cgroup2") && !v2->found) {
			strcpy(v2->dir, f[4]);
			strcpy(v2->root, f[3]);
			v2->found = true;
		} else if (!strcmp(f[5], "cgroup") && !v1->found &&
			   in_list(f[7], strlen(f[7]), "memory")) {
			strcpy(v1->dir, f[4]);
			strcpy(v1->root, f[3]);
			v1->found = true;
		}
	}
	free(text);
}

static bool exists(const char *dir, const char *file)
{
	char path[PATH_MAX];

	return path_of(path, sizeof(path), dir, file) && !access(path, F_OK);
}

/* SYS_ROOT/fs/cgroup laid out as on most machines. */
static void conventional_mounts(const char *sys_root, struct mount_point *v1,
				struct mount_point *v2)
{
	strcpy(v2->root, "/");
	strcpy(v1->root, "/");
	if (!path_of(v2->dir, sizeof(v2->dir), sys_root, "fs/cgroup/unified") ||
	    access(v2->dir, F_OK))
		path_of(v2->dir, sizeof(v2->dir), sys_root, "fs/cgroup");
	v2->found = !access(v2->dir, F_OK);
	v1->found = path_of(v1->dir, sizeof(v1->dir), sys_root,
			    "fs/cgroup/memory");
}

/* mount dir + (path without the mount's root).  false if path is not
 * under that root (another namespace's view) or is too long. */
static bool join(const struct mount_point *m, const char *path, char *out,
		 size_t size)
{
	size_t rl = strlen(m->root);

	if (strcmp(m->root, "/")) {
		if (strncmp(path, m->root, rl) || (path[rl] && path[rl] != '/'))
			return false;
		path += rl;
	}
	if (strstr(path, "/../") || !strcmp(path, "/..") ||
	    (strlen(path) >= 3 && !strcmp(path + strlen(path) - 3, "/..")))
		return false;
	return snprintf(out, size, "%s%s", m->dir, strcmp(path, "/") ? path : "") <
	       (int)size;
}

/* Does the v2 cgroup at dir have the memory controller's files?  (Its
 * parent enabled it: memory.stat is there, in the root cgroup too.) */
static bool v2_has_memory(const char *dir)
{
	return exists(dir, "memory.stat") || exists(dir, "memory.current");
}

static void add_file(struct cgroup_reading *cg, const char *name,
		     uint64_t unlimited_at, struct cg_value *common)
{
	char path[PATH_MAX];
	struct cg_value v = { 0 };

	if (cg->nfiles >= CG_MAX_FILES)
		return;
	if (path_of(path, sizeof(path), cg->dir, name)) {
		int err = kvfile__read_u64(path, &v.value, &v.unlimited);
		size_t at = strlen(cg->problems);

		v.present = !err;
		if (err && err != -ENOENT && at < sizeof(cg->problems) - 1)
			snprintf(cg->problems + at, sizeof(cg->problems) - at,
				 "%s%s: %s", at ? "; " : "", name,
				 err == -EPIPE ? "truncated" :
				 err == -EINVAL ? "not a number" :
				 err == -ERANGE ? "more than 64 bits" :
				 strerror(-err));
	}
	if (v.present && unlimited_at && v.value >= unlimited_at) {
		v.unlimited = true;
		v.value = 0;
	}
	if (!v.present)
		v.value = 0;
	cg->files[cg->nfiles].name = name;
	cg->files[cg->nfiles].v = v;
	cg->nfiles++;
	if (common)
		*common = v;
}

static int read_kv(struct cgroup_reading *cg, const char *name,
		   struct kvset *into, bool *has)
{
	char path[PATH_MAX], *text;
	size_t len;
	int err;

	*has = false;
	if (!path_of(path, sizeof(path), cg->dir, name))
		return 0;
	err = kvfile__read(path, &text, &len);
	if (err)
		return 0;	/* absent */
	err = kvset__parse(into, text, len, KV_SPACE, false, 0);
	free(text);
	if (err)
		return err;
	*has = true;
	return 0;
}

/* Sum of the keys of set that are there; absent if none is. */
static struct cg_value from_set(const struct kvset *set, bool has,
				const char *a, const char *b)
{
	struct cg_value v = { 0 };
	uint64_t x;

	if (!has)
		return v;
	if (kvset__value(set, a, &x)) {
		v.value += x;
		v.present = true;
	}
	if (b && kvset__value(set, b, &x)) {
		v.value += x;
		v.present = true;
	}
	return v;
}

static struct cg_value from_stat(const struct cgroup_reading *cg,
				 const char *a, const char *b)
{
	return from_set(&cg->stat, cg->has_stat, a, b);
}

/* "some avg10=0.00 avg60=0.00 avg300=0.00 total=0" */
static void parse_psi_line(const char *line, struct cg_pressure *p)
{
	p->present = sscanf(line, "%*s avg10=%lf avg60=%lf avg300=%lf total=%lu",
			    &p->avg10, &p->avg60, &p->avg300,
			    &p->total_us) == 4;
}

static void read_pressure(struct cgroup_reading *cg)
{
	char path[PATH_MAX], *text, *line, *next;
	size_t len;

	if (!path_of(path, sizeof(path), cg->dir, "memory.pressure") ||
	    kvfile__read(path, &text, &len))
		return;
	for (line = text; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (!strncmp(line, "some ", 5))
			parse_psi_line(line, &cg->some);
		else if (!strncmp(line, "full ", 5))
			parse_psi_line(line, &cg->full);
	}
	free(text);
}

static int read_v2(struct cgroup_reading *cg)
{
	struct cg_value *c = cg->common;
	int err;

	add_file(cg, "memory.current", 0, &c[CG_USAGE]);
	add_file(cg, "memory.max", 0, &c[CG_LIMIT]);
	add_file(cg, "memory.high", 0, &c[CG_HIGH]);
	add_file(cg, "memory.peak", 0, &c[CG_PEAK]);
	add_file(cg, "memory.swap.current", 0, NULL);
	err = read_kv(cg, "memory.stat", &cg->stat, &cg->has_stat);
	if (!err)
		err = read_kv(cg, "memory.events", &cg->events,
			      &cg->has_events);
	if (err)
		return err;
	read_pressure(cg);
	c[CG_ANON] = from_stat(cg, "anon", NULL);
	c[CG_FILE] = from_stat(cg, "file", NULL);
	c[CG_KERNEL] = from_stat(cg, "kernel", NULL);
	c[CG_SLAB] = from_stat(cg, "slab", NULL);
	c[CG_SHMEM] = from_stat(cg, "shmem", NULL);
	c[CG_WORKINGSET_REFAULTS] = from_stat(cg, "workingset_refault_anon",
					      "workingset_refault_file");
	if (!c[CG_WORKINGSET_REFAULTS].present)
		c[CG_WORKINGSET_REFAULTS] = from_stat(cg, "workingset_refault",
						      NULL);
	c[CG_PAGE_FAULTS] = from_stat(cg, "pgfault", NULL);
	c[CG_MAJOR_PAGE_FAULTS] = from_stat(cg, "pgmajfault", NULL);
	c[CG_OOM_KILL] = from_set(&cg->events, cg->has_events, "oom_kill",
				  NULL);
	return 0;
}

static int read_v1(struct cgroup_reading *cg)
{
	struct cg_value *c = cg->common;
	int err;

	add_file(cg, "memory.usage_in_bytes", 0, &c[CG_USAGE]);
	add_file(cg, "memory.limit_in_bytes", v1_unlimited(), &c[CG_LIMIT]);
	add_file(cg, "memory.max_usage_in_bytes", 0, &c[CG_PEAK]);
	add_file(cg, "memory.failcnt", 0, NULL);
	add_file(cg, "memory.kmem.usage_in_bytes", 0, &c[CG_KERNEL]);
	add_file(cg, "memory.memsw.usage_in_bytes", 0, NULL);
	err = read_kv(cg, "memory.stat", &cg->stat, &cg->has_stat);
	if (!err)
		err = read_kv(cg, "memory.oom_control", &cg->oom_control,
			      &cg->has_oom_control);
	if (err)
		return err;
	c[CG_ANON] = from_stat(cg, "total_rss", NULL);
	c[CG_FILE] = from_stat(cg, "total_cache", NULL);
	c[CG_SHMEM] = from_stat(cg, "total_shmem", NULL);
	c[CG_WORKINGSET_REFAULTS] = from_stat(cg,
					      "total_workingset_refault_anon",
					      "total_workingset_refault_file");
	if (!c[CG_WORKINGSET_REFAULTS].present)
		c[CG_WORKINGSET_REFAULTS] = from_stat(cg,
						      "total_workingset_refault",
						      NULL);
	c[CG_PAGE_FAULTS] = from_stat(cg, "total_pgfault", NULL);
	c[CG_MAJOR_PAGE_FAULTS] = from_stat(cg, "total_pgmajfault", NULL);
	c[CG_OOM_KILL] = from_set(&cg->oom_control, cg->has_oom_control,
				  "oom_kill", NULL);
	return 0;
}

int cgroup__read(struct cgroup_reading *cg, const char *proc_root,
		 const char *sys_root, pid_t pid)
{
	struct mount_point m1 = { .found = false }, m2 = { .found = false };
	char v1[PATH_MAX], v2[PATH_MAX];
	int err;

	memset(cg, 0, sizeof(*cg));
	err = read_proc_cgroup(proc_root, pid, v1, v2, sizeof(v1));
	if (err == -ENOMEM)
		return err;
	if (err) {
		snprintf(cg->why, sizeof(cg->why),
			 "cannot read %s/%d/cgroup: %s", proc_root, (int)pid,
			 strerror(-err));
		return -ESRCH;
	}
	if (sys_root)
		conventional_mounts(sys_root, &m1, &m2);
	else
		find_mounts(&m1, &m2);
	if (v2[0] && m2.found && join(&m2, v2, cg->dir, sizeof(cg->dir)) &&
	    v2_has_memory(cg->dir)) {
		cg->version = 2;
		strcpy(cg->path, v2);
		return read_v2(cg);
	}
	if (v1[0] && m1.found) {
		if (!join(&m1, v1, cg->dir, sizeof(cg->dir))) {
			say(cg, "the cgroup v1 memory path %s is outside the memory mount this tracer sees",
			    v1);
			return 0;
		}
		if (access(cg->dir, F_OK)) {
			say(cg, "the memory cgroup directory %s is not there",
			    cg->dir);
			cg->dir[0] = 0;
			return 0;
		}
		cg->version = 1;
		strcpy(cg->path, v1);
		return read_v1(cg);
	}
	cg->dir[0] = 0;
	say(cg, "%s", v1[0] ? "the cgroup v1 memory hierarchy is not mounted" :
		      v2[0] ? "no memory controller: none in the process's cgroup v2 (no memory.stat there) and no v1 memory hierarchy" :
			      "the process is in no cgroup hierarchy");
	return 0;
}

int cgroup__reread(struct cgroup_reading *cg,
		   const struct cgroup_reading *found)
{
	memset(cg, 0, sizeof(*cg));
	if (!found->version) {
		snprintf(cg->why, sizeof(cg->why), "%s", found->why);
		return 0;
	}
	strcpy(cg->path, found->path);
	strcpy(cg->dir, found->dir);
	if (access(cg->dir, F_OK)) {
		say(cg, "the memory cgroup directory %s is no longer there",
		    found->dir);
		cg->dir[0] = 0;
		return 0;
	}
	cg->version = found->version;
	return cg->version == 2 ? read_v2(cg) : read_v1(cg);
}

void cgroup__fini(struct cgroup_reading *cg)
{
	kvset__fini(&cg->stat);
	kvset__fini(&cg->events);
	kvset__fini(&cg->oom_control);
}
