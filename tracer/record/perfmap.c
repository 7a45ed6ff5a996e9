// SPDX-License-Identifier: MIT
/*
 * perfmap.c - names for JIT-compiled code, from the perf map convention.
 *
 * A runtime that compiles code at run time can say where it put it in
 * /tmp/perf-PID.map, one line per function: "START SIZE NAME", START and
 * SIZE in hex (an "0x" is allowed), NAME the rest of the line.  perf, the
 * eBPF profilers and we read the same file: node writes it with
 * --perf-basic-prof, the JVM with -XX:+DumpPerfMapAtExit or `jcmd PID
 * Compiler.perfmap`.
 *
 * The file is the target's, so nothing in it is trusted: only a regular
 * file owned by the process's user (or root) is read, of at most
 * PERFMAP_MAX_BYTES and PERFMAP_MAX_ENTRIES lines (the table costs about
 * 40 bytes a line); a line that does not parse is skipped, and so is a
 * last one without its newline (still being written); a name is cut at
 * PERFMAP_MAX_NAME bytes (its control bytes are escaped where it is
 * shown, untrusted.c, like every string of the target's).
 * Runtimes append as they compile and may reuse addresses, so a later
 * line for the same start wins; lookups take the closest start at or
 * below the address whose range holds it.
 */
#include "perfmap.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PERFMAP_MAX_BYTES	(64u << 20)
#define PERFMAP_MAX_ENTRIES	(2u << 20)
#define PERFMAP_MAX_NAME	512
#define PERFMAP_SCAN_BACK	16

struct perfmap_entry {
	uint64_t start, end;
	size_t name;		/* offset into names */
	size_t line;		/* file order, for ties */
};

struct perfmap {
	struct perfmap_entry *entries;
	size_t n;
	char *names;
};

static bool parse_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end; s++, digits++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (digits >= 16)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	if (!digits)
		return false;
	*p = s;
	*out = v;
	return true;
}

static int by_start(const void *a, const void *b)
{
	const struct perfmap_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

struct perfmap *perfmap__parse(const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	struct perfmap *pm = calloc(1, sizeof(*pm));
	size_t cap = 0, names_len = 0, names_cap = 0, line = 0, out, i;

	if (!pm)
		return NULL;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *q = p, *name;
		uint64_t start, size;
		size_t nlen;

		if (!eol)
			break;	/* a line still being written */
		line++;
		if (!parse_hex(&q, eol, &start) || q >= eol || *q != ' ')
			goto next;
		q++;
		if (!parse_hex(&q, eol, &size) || q >= eol || *q != ' ' ||
		    !size || start + size < start)
			goto next;
		name = q + 1;
		nlen = (size_t)(eol - name);
		if (nlen && name[nlen - 1] == '\r')
			nlen--;
		if (!nlen)
			goto next;
		if (nlen > PERFMAP_MAX_NAME)
			nlen = PERFMAP_MAX_NAME;
		if (pm->n == PERFMAP_MAX_ENTRIES)
			break;
		if (pm->n == cap) {
			size_t ncap = cap ? cap * 2 : 1024;
			void *e = realloc(pm->entries, ncap * sizeof(*pm->entries));

			if (!e)
				goto out_free;
			pm->entries = e;
			cap = ncap;
		}
		if (names_len + nlen + 1 > names_cap) {
			size_t ncap = names_cap ? names_cap * 2 : 65536;
			char *s;

			while (ncap < names_len + nlen + 1)
				ncap *= 2;
			s = realloc(pm->names, ncap);
			if (!s)
				goto out_free;
			pm->names = s;
			names_cap = ncap;
		}
		memcpy(pm->names + names_len, name, nlen);
		pm->names[names_len + nlen] = 0;
		pm->entries[pm->n++] = (struct perfmap_entry){
			.start = start, .end = start + size,
			.name = names_len, .line = line,
		};
		names_len += nlen + 1;
next:
		p = eol + 1;
	}
	if (pm->n)
		qsort(pm->entries, pm->n, sizeof(*pm->entries), by_start);
	/* the last line for a start wins */
	for (i = 0, out = 0; i < pm->n; i++) {
		if (out && pm->entries[out - 1].start == pm->entries[i].start)
			out--;
		pm->entries[out++] = pm->entries[i];
	}
	pm->n = out;
	return pm;

out_free:
	perfmap__free(pm);
	errno = ENOMEM;
	return NULL;
}

/* The user the process runs as, from /proc; -1 if it is gone. */
static long process_uid(pid_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return stat(path, &st) ? -1 : (long)st.st_uid;
}

/* The process's PID in its own namespace (NSpid's last field), or pid. */
static pid_t ns_pid(pid_t pid)
{
	char path[64], line[256];
	pid_t ns = pid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return pid;
	while (fgets(line, sizeof(line), f)) {
		char *s, *last = NULL, *save;

		if (strncmp(line, "NSpid:", 6))
			continue;
		for (s = strtok_r(line + 6, " \t\n", &save); s;
		     s = strtok_r(NULL, " \t\n", &save))
			last = s;
		if (last && atoi(last) > 0)
			ns = (pid_t)atoi(last);
		break;
	}
	fclose(f);
	return ns;
}

struct perfmap *perfmap__load(pid_t pid, char *why, size_t why_size)
{
	long uid = process_uid(pid);
	struct perfmap *pm = NULL;
	char path[128];
	struct stat st;
	char *text;
	ssize_t got;
	size_t len = 0;
	int fd, err;

	if (why && why_size)
		*why = 0;
	if (uid >= 0)
		snprintf(path, sizeof(path), "/proc/%d/root/tmp/perf-%d.map",
			 (int)pid, (int)ns_pid(pid));
	else
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		err = errno;
		goto out_close;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > PERFMAP_MAX_BYTES ||
	    (st.st_uid != 0 && st.st_uid != (uid >= 0 ? (uid_t)uid : getuid()))) {
		if (why && why_size)
			snprintf(why, why_size,
				 "%s is not used: %s", path,
				 !S_ISREG(st.st_mode) ? "not a regular file" :
				 st.st_size > PERFMAP_MAX_BYTES ?
				 "larger than 64 MiB" :
				 "owned by neither the process's user nor root");
		err = EPERM;
		goto out_close;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		err = ENOMEM;
		goto out_close;
	}
	while (len < (size_t)st.st_size &&
	       (got = read(fd, text + len, (size_t)st.st_size - len)) > 0)
		len += (size_t)got;
	pm = perfmap__parse(text, len);
	err = pm ? 0 : errno;
	free(text);
out_close:
	close(fd);
	if (!pm)
		errno = err;
	return pm;
}

const char *perfmap__lookup(const struct perfmap *pm, uint64_t addr)
{
	size_t lo = 0, hi, i, k;

	if (!pm || !pm->n)
		return NULL;
	hi = pm->n;
	while (lo < hi) {		/* the first start above addr */
		size_t mid = lo + (hi - lo) / 2;

		if (pm->entries[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo, k = 0; i > 0 && k < PERFMAP_SCAN_BACK; i--, k++) {
		const struct perfmap_entry *e = &pm->entries[i - 1];

		if (addr < e->end)
			return pm->names + e->name;
	}
	return NULL;
}

size_t perfmap__count(const struct perfmap *pm)
{
	return pm ? pm->n : 0;
}

void perfmap__free(struct perfmap *pm)
{
	if (!pm)
		return;
	free(pm->entries);
	free(pm->names);
	free(pm);
}
