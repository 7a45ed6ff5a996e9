/* SPDX-License-Identifier: MIT */
/*
 * debuginfo.c - find a module's ELF file and debug information by build ID.
 *
 * The lookup order is the one gdb and elfutils use, made strict:
 *
 *   1. the recorded file: the fd the tracer holds on the target's own file
 *      (live path), else the recorded path - under --sysroot, when the
 *      paths are another root's, as a container's core names them - if
 *      its build ID matches;
 *   2. DIR/.build-id/xx/rest.debug for each --debug-dir, then the default
 *      /usr/lib/debug (the sysroot's, then ours);
 *   3. the .gnu_debuglink of the ELF from step 1: next to it, in .debug/
 *      beside it, and under each debug directory + the ELF's directory;
 *   4. debuginfod (libdebuginfod, with its cache): the debug file, or the
 *      executable when nothing at all was found locally.
 *
 * Steps 2-4 run only while DWARF is still missing.  Every candidate is
 * opened as a regular file (O_NONBLOCK, so a FIFO planted at a debug path
 * cannot hang us), read with libelf, and used only if it is ELF and has the
 * recorded build ID - a .gnu_debuglink file without one must match the
 * link's CRC-32 instead.  A file without the recorded build ID is refused
 * whatever its name says: stale debug files are the usual way symbolizers
 * lie.  Without a recorded build ID nothing is verifiable, so only the
 * target's own file (given_fd) is used.
 *
 * Every refusal and miss is written down in `why`, so the caller can tell
 * the user, per module, why there are no symbols.
 *
 * debuginfod queries go through elf/debuginfod.c, which bounds the wait.
 *
 * Results are cached by build ID (or path, without one), so each module is
 * looked up once however many mappings name it.  Not thread-safe.
 */
#include "elf/debuginfo.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "elf/debuginfod.h"
#include "elf/elfinfo.h"

#define DEFAULT_DEBUG_DIR	"/usr/lib/debug"
#define DEFAULT_TIMEOUT_S	10

struct entry {
	char *key;
	struct debuginfo_found found;
};

struct debuginfo {
	char **dirs;		/* user's, then the default */
	size_t ndirs;
	char *sysroot;		/* NULL: recorded paths are ours */
	char *urls;		/* NULL or "": no debuginfod */
	unsigned int timeout_s;
	struct debuginfod_conn *client;	/* started on first use */

	struct entry *entries;
	size_t nentries, entries_cap;
};

/* A growing "; "-separated message. */
struct why {
	char *text;
	size_t len;
	int err;
};

static void why_add(struct why *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void why_add(struct why *w, const char *fmt, ...)
{
	va_list ap;
	char *part, *grown;
	int n;

	if (w->err)
		return;
	va_start(ap, fmt);
	n = vasprintf(&part, fmt, ap);
	va_end(ap);
	if (n < 0) {
		w->err = -ENOMEM;
		return;
	}
	grown = realloc(w->text, w->len + (size_t)n + 3);
	if (!grown) {
		free(part);
		w->err = -ENOMEM;
		return;
	}
	w->text = grown;
	if (w->len) {
		memcpy(w->text + w->len, "; ", 2);
		w->len += 2;
	}
	memcpy(w->text + w->len, part, (size_t)n + 1);
	w->len += (size_t)n;
	free(part);
}

const char *debuginfo__source_name(enum debuginfo_source source)
{
	switch (source) {
	case DEBUGINFO_RECORDED:	return "recorded path";
	case DEBUGINFO_DEBUG_DIR:	return "debug dir";
	case DEBUGINFO_DEBUGLINK:	return "debuglink";
	case DEBUGINFO_DEBUGINFOD:	return "debuginfod";
	case DEBUGINFO_NONE:		break;
	}
	return "none";
}

struct debuginfo *debuginfo__new(const struct debuginfo_opts *opts)
{
	const char *def = opts->default_debug_dir ? opts->default_debug_dir :
						    DEFAULT_DEBUG_DIR;
	const char *urls = opts->debuginfod_urls ? opts->debuginfod_urls :
						   getenv("DEBUGINFOD_URLS");
	struct debuginfo *d;

	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->dirs = calloc(opts->ndebug_dirs + 2, sizeof(*d->dirs));
	if (!d->dirs)
		goto out_free;
	if (opts->sysroot && *opts->sysroot) {
		d->sysroot = strdup(opts->sysroot);
		if (!d->sysroot)
			goto out_free;
	}
	for (size_t i = 0; i < opts->ndebug_dirs; i++) {
		d->dirs[d->ndirs] = strdup(opts->debug_dirs[i]);
		if (!d->dirs[d->ndirs++])
			goto out_free;
	}
	if (*def && d->sysroot) {
		if (asprintf(&d->dirs[d->ndirs], "%s%s", d->sysroot, def) < 0) {
			d->dirs[d->ndirs] = NULL;
			goto out_free;
		}
		d->ndirs++;
	}
	if (*def) {
		d->dirs[d->ndirs] = strdup(def);
		if (!d->dirs[d->ndirs++])
			goto out_free;
	}
	if (urls && urls[strspn(urls, " \t")]) {
		d->urls = strdup(urls);
		if (!d->urls)
			goto out_free;
	}
	d->timeout_s = opts->debuginfod_timeout_s ? opts->debuginfod_timeout_s :
						    DEFAULT_TIMEOUT_S;
	return d;

out_free:
	debuginfo__free(d);
	errno = ENOMEM;
	return NULL;
}

static void found_release(struct debuginfo_found *f)
{
	if (f->elf_fd >= 0)
		close(f->elf_fd);
	if (f->debug_fd >= 0 && f->debug_fd != f->elf_fd)
		close(f->debug_fd);
	free(f->elf_path);
	free(f->debug_path);
	free(f->why);
}

void debuginfo__free(struct debuginfo *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nentries; i++) {
		free(d->entries[i].key);
		found_release(&d->entries[i].found);
	}
	free(d->entries);
	for (size_t i = 0; i < d->ndirs; i++)
		free(d->dirs[i]);
	free(d->dirs);
	free(d->sysroot);
	free(d->urls);
	debuginfod_conn__free(d->client);
	free(d);
}

/* What a lookup knows while it runs. */
struct lookup {
	const char *path;
	const uint8_t *build_id;
	size_t build_id_len;
	char hex[2 * ELFINFO_BUILD_ID_MAX + 1];
	struct debuginfo_found *found;
	struct elfinfo elf_info;	/* of found->elf_fd */
	struct why why;
};

/* GNU debuglink CRC-32 (zlib's) of the whole file on fd. */
static int file_crc(int fd, uint32_t *crc)
{
	struct stat st;
	void *map;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size == 0) {
		*crc = (uint32_t)crc32(0, Z_NULL, 0);
		return 0;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	*crc = (uint32_t)crc32_z(0, map, (size_t)st.st_size);
	munmap(map, (size_t)st.st_size);
	return 0;
}

/*
 * Open path as a candidate: a regular ELF file with the recorded build ID
 * (or, when want_crc, no build ID but this CRC).  Returns the fd, or -1
 * with the reason noted (a missing file is noted only if note_missing).
 */
static int open_candidate(struct lookup *l, const char *path,
			  struct elfinfo *info, bool note_missing,
			  const uint32_t *want_crc)
{
	char hex[2 * ELFINFO_BUILD_ID_MAX + 1];
	struct stat st;
	uint32_t crc = 0;
	int fd, err;

	/* a path from the target or a core may name a device whose opening
	 * acts (a watchdog): looked at before it is opened */
	if (stat(path, &st) < 0) {
		if (errno != ENOENT || note_missing)
			why_add(&l->why, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		why_add(&l->why, "%s: not a regular file", path);
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		if (errno != ENOENT || note_missing)
			why_add(&l->why, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		why_add(&l->why, "%s: not a regular file", path);
		goto out_close;
	}
	err = elfinfo__read(fd, info);
	if (err == -ENOEXEC) {
		why_add(&l->why, "%s: not an ELF file, or truncated or corrupt",
			path);
		goto out_close;
	}
	if (err) {
		why_add(&l->why, "%s: %s", path, strerror(-err));
		goto out_close;
	}
	if (elfinfo__same_build_id(info->build_id, info->build_id_len,
				   l->build_id, l->build_id_len))
		return fd;
	if (info->build_id_len && l->build_id_len) {
		why_add(&l->why, "%s: build ID %s does not match", path,
			elfinfo__build_id_hex(info->build_id,
					      info->build_id_len, hex));
		goto out_close;
	}
	if (want_crc && !info->build_id_len) {
		if (file_crc(fd, &crc) == 0 && crc == *want_crc)
			return fd;
		why_add(&l->why, "%s: CRC does not match the debuglink", path);
		goto out_close;
	}
	why_add(&l->why, "%s: has no build ID to check", path);
out_close:
	close(fd);
	return -1;
}

/* Take fd (from path, found by source) as the debug file, if it has DWARF. */
static bool take_debug(struct lookup *l, int fd, const struct elfinfo *info,
		       const char *path, enum debuginfo_source source)
{
	struct debuginfo_found *f = l->found;

	if (!info->has_debug_info) {
		why_add(&l->why, "%s: no debug info in it", path);
		close(fd);
		return false;
	}
	f->debug_path = strdup(path);
	if (!f->debug_path) {
		l->why.err = -ENOMEM;
		close(fd);
		return false;
	}
	f->debug_fd = fd;
	f->debug_source = source;
	f->has_debug_info = true;
	f->has_symtab = f->has_symtab || info->has_symtab;
	if (f->elf_fd < 0) {
		/* The debug file alone: its symbols and program headers. */
		f->elf_fd = fd;
		f->elf_source = source;
		f->elf_path = strdup(path);
		if (!f->elf_path)
			l->why.err = -ENOMEM;
	}
	return true;
}

static bool try_build_id_dirs(struct debuginfo *d, struct lookup *l)
{
	struct elfinfo info;
	char *path, *missing = NULL;
	size_t missing_len = 0;
	bool done = false;
	FILE *list;
	int fd;

	if (!l->build_id_len || !d->ndirs)
		return false;
	list = open_memstream(&missing, &missing_len);
	if (!list) {
		l->why.err = -ENOMEM;
		return false;
	}
	for (size_t i = 0; i < d->ndirs && !done && !l->why.err; i++) {
		if (asprintf(&path, "%s/.build-id/%.2s/%s.debug", d->dirs[i],
			     l->hex, l->hex + 2) < 0) {
			l->why.err = -ENOMEM;
			break;
		}
		if (access(path, F_OK) < 0 && errno == ENOENT) {
			fprintf(list, "%s%s", ftell(list) ? ", " : "",
				d->dirs[i]);
			free(path);
			continue;
		}
		fd = open_candidate(l, path, &info, true, NULL);
		if (fd >= 0)
			done = take_debug(l, fd, &info, path,
					  DEBUGINFO_DEBUG_DIR);
		free(path);
	}
	fclose(list);
	if (!done && missing && *missing)
		why_add(&l->why, "no .build-id/%.2s/%s.debug in %s", l->hex,
			l->hex + 2, missing);
	free(missing);
	return done;
}

static bool try_debuglink(struct debuginfo *d, struct lookup *l)
{
	const struct debuginfo_found *f = l->found;
	const char *link = l->elf_info.debuglink;
	struct stat elf_st, st;
	char *dir, *slash, *path;
	const char *rel;
	struct elfinfo info;
	bool done = false;
	size_t ncand;
	int fd;

	if (f->elf_fd < 0 || f->elf_source != DEBUGINFO_RECORDED)
		return false;
	if (!*link) {
		why_add(&l->why, "%s: no .gnu_debuglink", f->elf_path);
		return false;
	}
	if (fstat(f->elf_fd, &elf_st) < 0)
		return false;
	dir = strdup(f->elf_path);
	if (!dir) {
		l->why.err = -ENOMEM;
		return false;
	}
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		strcpy(dir, ".");

	/* beside the file: under the sysroot (elf_path is there already when
	 * the recorded path was opened; a file the caller gave is named as
	 * the target named it); under a debug dir: the directory as the
	 * target named it */
	rel = dir;
	if (d->sysroot && !strncmp(dir, d->sysroot, strlen(d->sysroot)) &&
	    dir[strlen(d->sysroot)] == '/') {
		rel = dir + strlen(d->sysroot);
	} else if (d->sysroot && *dir == '/') {
		char *under;

		if (asprintf(&under, "%s%s", d->sysroot, dir) < 0) {
			free(dir);
			l->why.err = -ENOMEM;
			return false;
		}
		free(dir);
		dir = under;
		rel = dir + strlen(d->sysroot);
	}
	ncand = 2 + d->ndirs;
	for (size_t i = 0; i < ncand && !done && !l->why.err; i++) {
		int n;

		if (i == 0)
			n = asprintf(&path, "%s/%s", dir, link);
		else if (i == 1)
			n = asprintf(&path, "%s/.debug/%s", dir, link);
		else
			n = asprintf(&path, "%s%s%s/%s", d->dirs[i - 2],
				     *rel == '/' ? "" : "/", rel, link);
		if (n < 0) {
			l->why.err = -ENOMEM;
			break;
		}
		/* The ELF may link to its own name: never take it again. */
		if (stat(path, &st) == 0 && st.st_dev == elf_st.st_dev &&
		    st.st_ino == elf_st.st_ino) {
			free(path);
			continue;
		}
		fd = open_candidate(l, path, &info, false,
				    &l->elf_info.debuglink_crc);
		if (fd >= 0)
			done = take_debug(l, fd, &info, path,
					  DEBUGINFO_DEBUGLINK);
		free(path);
	}
	if (!done && !l->why.err)
		why_add(&l->why, "debuglink %s: not found beside %s, in its .debug/ or under the debug dirs",
			link, f->elf_path);
	free(dir);
	return done;
}

/* Ask the servers for the debug file (want_debug) or the executable. */
static bool try_debuginfod(struct debuginfo *d, struct lookup *l,
			   bool want_debug)
{
	const char *kind = want_debug ? "debuginfo" : "executable";
	struct debuginfo_found *f = l->found;
	char *path = NULL;
	const char *why = NULL;
	struct elfinfo info;
	int fd;

	if (!d->urls || !l->build_id_len)
		return false;
	if (!d->client) {
		d->client = debuginfod_conn__new(d->urls, d->timeout_s, &why);
		if (!d->client) {
			why_add(&l->why, "debuginfod: cannot start its client: %s",
				why);
			free(d->urls);	/* do not try again for every module */
			d->urls = NULL;
			return false;
		}
	}
	fd = debuginfod_conn__fetch(d->client, l->build_id, l->build_id_len,
				    want_debug, &path);
	if (fd == -ETIME) {
		why_add(&l->why, "debuginfod %s: no %s after %u s, gave up",
			d->urls, kind, d->timeout_s);
		return false;
	}
	if (fd == -ENOENT) {
		why_add(&l->why, "debuginfod %s: no %s for this build ID",
			d->urls, kind);
		return false;
	}
	if (fd < 0) {
		why_add(&l->why, "debuginfod %s: %s: %s", d->urls, kind,
			strerror(-fd));
		return false;
	}
	/* Never trust the server (or its cache): check what came back. */
	close(fd);
	fd = open_candidate(l, path, &info, true, NULL);
	if (fd < 0) {
		free(path);
		return false;
	}
	if (want_debug) {
		bool ok = take_debug(l, fd, &info, path, DEBUGINFO_DEBUGINFOD);

		free(path);
		return ok;
	}
	f->elf_fd = fd;
	f->elf_source = DEBUGINFO_DEBUGINFOD;
	f->elf_path = path;
	f->has_symtab = info.has_symtab;
	f->has_debug_info = info.has_debug_info;
	l->elf_info = info;
	return true;
}

/* Step 1: the target's file or the recorded path (under sysroot). */
static void find_elf(struct lookup *l, int given_fd, const char *sysroot)
{
	struct debuginfo_found *f = l->found;
	char *under = NULL;
	int fd;

	if (given_fd >= 0) {
		fd = fcntl(given_fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0 || elfinfo__read(fd, &l->elf_info) != 0) {
			if (fd >= 0)
				close(fd);
			why_add(&l->why, "%s: not an ELF file, or truncated or corrupt",
				l->path);
			return;
		}
	} else if (!l->build_id_len) {
		why_add(&l->why, "no build ID recorded, so no file can be checked");
		return;
	} else if (!l->path || l->path[0] != '/') {
		why_add(&l->why, "no file path recorded");
		return;
	} else if (sysroot) {
		if (asprintf(&under, "%s%s", sysroot, l->path) < 0) {
			l->why.err = -ENOMEM;
			return;
		}
		fd = open_candidate(l, under, &l->elf_info, true, NULL);
		if (fd < 0) {
			free(under);
			return;
		}
	} else {
		fd = open_candidate(l, l->path, &l->elf_info, true, NULL);
		if (fd < 0)
			return;
	}
	f->elf_fd = fd;
	f->elf_source = DEBUGINFO_RECORDED;
	/* the file's own path (under the sysroot): its debuglink is
	 * looked for beside it */
	f->elf_path = under ? under : strdup(l->path ? l->path : "?");
	if (!f->elf_path)
		l->why.err = -ENOMEM;
	f->has_debug_info = l->elf_info.has_debug_info;
	f->has_symtab = l->elf_info.has_symtab;
}

static int locate(struct debuginfo *d, struct lookup *l, int given_fd)
{
	struct debuginfo_found *f = l->found;

	find_elf(l, given_fd, d->sysroot);
	if (!f->has_debug_info && !l->why.err)
		if (!try_build_id_dirs(d, l) && !l->why.err)
			if (!try_debuglink(d, l) && !l->why.err)
				try_debuginfod(d, l, true);
	if (f->elf_fd < 0 && !l->why.err)
		try_debuginfod(d, l, false);
	return l->why.err;
}

const struct debuginfo_found *debuginfo__find(struct debuginfo *d,
					      const char *path, int given_fd,
					      const uint8_t *build_id,
					      size_t build_id_len)
{
	struct lookup l = {
		.path = path,
		.build_id = build_id,
		.build_id_len = build_id_len > ELFINFO_BUILD_ID_MAX ?
			0 : build_id_len,
	};
	struct entry *e;
	char *key;
	int err;

	if (l.build_id_len)
		elfinfo__build_id_hex(build_id, l.build_id_len, l.hex);
	if (asprintf(&key, "%s%s", l.build_id_len ? "id:" : "path:",
		     l.build_id_len ? l.hex : (path ? path : "")) < 0) {
		errno = ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < d->nentries; i++) {
		if (!strcmp(d->entries[i].key, key)) {
			free(key);
			return &d->entries[i].found;
		}
	}
	if (d->nentries == d->entries_cap) {
		size_t cap = d->entries_cap ? d->entries_cap * 2 : 16;
		struct entry *grown = realloc(d->entries, cap * sizeof(*grown));

		if (!grown) {
			free(key);
			errno = ENOMEM;
			return NULL;
		}
		d->entries = grown;
		d->entries_cap = cap;
	}
	e = &d->entries[d->nentries];
	*e = (struct entry){
		.key = key,
		.found = { .elf_fd = -1, .debug_fd = -1 },
	};
	l.found = &e->found;
	err = locate(d, &l, given_fd);
	if (!err && !l.why.text)
		l.why.text = strdup("");
	if (err || !l.why.text) {
		free(l.why.text);
		free(key);
		found_release(&e->found);
		errno = err ? -err : ENOMEM;
		return NULL;
	}
	e->found.why = l.why.text;
	d->nentries++;
	return &e->found;
}
