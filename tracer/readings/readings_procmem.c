// SPDX-License-Identifier: MIT
/*
 * readings_procmem.c - what the kernel says a process costs: smaps_rollup, status.
 *
 * smaps_rollup (Linux 4.14+) is the sum of smaps over every mapping, and
 * costs the kernel a walk of the page tables, which grows with the
 * resident size: that is why the tracer reads it once per interval and
 * never more.  Its first line names the range ("...[rollup]") and is
 * not a key.  status gives the peaks (VmHWM, VmPeak), the RSS split and the
 * thread count.  Only its memory lines (a number in kB) and Threads are
 * kept: the others are names, lists, or numbers in hex (SigCgt, CapEff)
 * or octal (Umask) that read as decimal would be wrong.
 * Older kernels lack keys (Pss_Anon/Pss_File/Pss_Shmem came in 5.0): they
 * are simply absent, and reported so.
 *
 * A zombie still has a /proc entry, with an empty smaps_rollup, a status
 * without memory lines and a cgroup file naming the root cgroup: the
 * state letter in stat tells it apart before anything is read as its.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "readings_procmem.h"

const char *const procmem_smaps_keys[] = {
	"Rss", "Pss", "Pss_Anon", "Pss_File", "Pss_Shmem", "Shared_Clean",
	"Shared_Dirty", "Private_Clean", "Private_Dirty", "Referenced",
	"Anonymous", "LazyFree", "AnonHugePages", "ShmemPmdMapped", "Swap",
	"SwapPss", "Locked", NULL,
};

const char *const procmem_status_keys[] = {
	"VmPeak", "VmSize", "VmHWM", "VmRSS", "RssAnon", "RssFile",
	"RssShmem", "VmSwap", "Threads", NULL,
};

static int read_one(const char *proc_root, pid_t pid, const char *name,
		    struct kvset *into, bool skip_other)
{
	char path[PATH_MAX], *text;
	size_t len;
	int err;

	if (snprintf(path, sizeof(path), "%s/%d/%s", proc_root, (int)pid,
		     name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	err = kvfile__read(path, &text, &len);
	if (err)
		return err;
	if (!len) {
		free(text);
		return -ENODATA;	/* a zombie's, or a kernel thread's */
	}
	{
		/* smaps_rollup's first line is the range, not a key */
		char *nl = memchr(text, '\n', len);
		size_t skip = nl && memmem(text, (size_t)(nl - text),
					   "[rollup]", 8) ?
				      (size_t)(nl - text) + 1 : 0;

		err = kvset__parse(into, text + skip, len - skip, KV_COLON,
				   skip_other, skip ? 1 : 0);
	}
	free(text);
	return err;
}

/* status: keep the lines in kB, and Threads (a count). */
static void keep_memory_lines(struct kvset *s)
{
	size_t i, n = 0;

	for (i = 0; i < s->n; i++) {
		if (s->v[i].kb || !strcmp(s->v[i].key, "Threads")) {
			s->v[n++] = s->v[i];
			continue;
		}
		free(s->v[i].key);
	}
	s->n = n;
}

int procmem__read(struct procmem *pm, const char *proc_root, pid_t pid)
{
	memset(pm, 0, sizeof(*pm));
	pm->smaps_err = read_one(proc_root, pid, "smaps_rollup", &pm->smaps,
				 false);
	if (pm->smaps_err == -ENOMEM)
		return -ENOMEM;
	pm->status_err = read_one(proc_root, pid, "status", &pm->status, true);
	if (pm->status_err == -ENOMEM)
		return -ENOMEM;
	keep_memory_lines(&pm->status);
	return pm->smaps_err && pm->status_err ? -ESRCH : 0;
}

void procmem__fini(struct procmem *pm)
{
	kvset__fini(&pm->smaps);
	kvset__fini(&pm->status);
}

int procmem__rss(const char *proc_root, pid_t pid, uint64_t *bytes)
{
	char path[PATH_MAX], *text, *end;
	unsigned long long size, resident;
	long page = sysconf(_SC_PAGESIZE);
	size_t len;
	int err;

	if (snprintf(path, sizeof(path), "%s/%d/statm", proc_root,
		     (int)pid) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	err = kvfile__read(path, &text, &len);
	if (err)
		return err;
	errno = 0;
	size = strtoull(text, &end, 10);
	resident = end != text && *end == ' ' ?
		   strtoull(end + 1, &end, 10) : 0;
	err = errno || *end != ' ' || page <= 0 || resident > size ||
	      resident > UINT64_MAX / (uint64_t)page ? -EPROTO : 0;
	if (!err)
		*bytes = resident * (uint64_t)page;
	free(text);
	return err;
}

int procmem__state(const char *proc_root, pid_t pid, char *state)
{
	char path[PATH_MAX], *text, *p;
	size_t len;
	int err;

	if (snprintf(path, sizeof(path), "%s/%d/stat", proc_root,
		     (int)pid) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	err = kvfile__read(path, &text, &len);
	if (err)
		return err;
	/* "pid (comm) S ...": comm may hold anything, ')' included */
	p = strrchr(text, ')');
	if (!p || p[1] != ' ' || !p[2] || p[3] != ' ') {
		free(text);
		return -EPROTO;
	}
	*state = p[2];
	free(text);
	return 0;
}

int procmem__vmstat_oom_kill(const char *proc_root, uint64_t *kills)
{
	struct kvset vm = { 0 };
	char path[PATH_MAX], *text;
	size_t len;
	int err;

	if (snprintf(path, sizeof(path), "%s/vmstat", proc_root) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	err = kvfile__read(path, &text, &len);
	if (err)
		return err;
	err = kvset__parse(&vm, text, len, KV_SPACE, false, 0);
	free(text);
	if (!err && !kvset__value(&vm, "oom_kill", kills))
		err = -ENOENT;
	kvset__fini(&vm);
	return err;
}
