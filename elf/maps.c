/* SPDX-License-Identifier: MIT */
/*
 * maps.c - parse /proc/PID/maps.
 *
 * The kernel prints one line per VMA:
 *
 *	start-end perms offset major:minor inode<blanks>path\n
 *
 * with start, end, offset, major and minor in hex, inode in decimal, and
 * perms exactly four characters [r-][w-][x-][ps].  For an anonymous
 * mapping the line ends after the inode (the kernel leaves a blank there);
 * otherwise the path is padded to a column and runs to the end of the line.
 * A path is the target's to choose: it may contain blanks (kept as they
 * are) and ends in " (deleted)" when the file was unlinked; the kernel
 * escapes a newline in it as \012, so a path never spans lines; the
 * parsed path has the newline back (a name that held the four characters
 * \012 itself cannot be told apart, and is read as a newline too).
 *
 * Every field is checked: hex and decimal numbers must fit their types,
 * start < end, and the entries must come sorted and not overlap (the
 * kernel's order; lookups by binary search rely on it).  Anything else
 * fails the whole parse with -EINVAL instead of skipping a line, because a
 * half-read maps file (the target changed its mappings while we read it)
 * is better retried than trusted: proc_maps__read() reads it again, a few
 * times.  The last line's newline is optional.
 *
 * The result is one allocation: the struct, then the entries, then the
 * path strings, so proc_maps__free() is a single free().  Nothing here
 * keeps state; all of it is thread-safe, none of it async-signal-safe.
 *
 * /proc files report a size of 0, so proc_maps__read() reads until EOF
 * into a buffer that doubles, up to MAPS_READ_MAX.
 */
#include "elf/maps.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define MAPS_READ_INITIAL	(64u * 1024)
#define MAPS_READ_MAX		(64u * 1024 * 1024)

struct maps_block {
	struct proc_maps maps;
	struct maps_entry entries[];
};

/* A cursor over one line: [pos, end). */
struct cursor {
	const char *pos, *end;
};

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* At least one hex digit, value <= max. */
static int parse_hex(struct cursor *c, uint64_t max, uint64_t *out)
{
	uint64_t value = 0;
	const char *start = c->pos;
	int digit;

	while (c->pos < c->end && (digit = hex_digit(*c->pos)) >= 0) {
		if (value > (max - (uint64_t)digit) / 16)
			return -EINVAL;
		value = value * 16 + (uint64_t)digit;
		c->pos++;
	}
	if (c->pos == start)
		return -EINVAL;
	*out = value;
	return 0;
}

/* At least one decimal digit, no overflow of uint64_t. */
static int parse_dec(struct cursor *c, uint64_t *out)
{
	uint64_t value = 0;
	const char *start = c->pos;

	while (c->pos < c->end && *c->pos >= '0' && *c->pos <= '9') {
		uint64_t digit = (uint64_t)(*c->pos - '0');

		if (value > (UINT64_MAX - digit) / 10)
			return -EINVAL;
		value = value * 10 + digit;
		c->pos++;
	}
	if (c->pos == start)
		return -EINVAL;
	*out = value;
	return 0;
}

static int expect_char(struct cursor *c, char want)
{
	if (c->pos == c->end || *c->pos != want)
		return -EINVAL;
	c->pos++;
	return 0;
}

/* One or more blanks: the separator between header fields. */
static int skip_blanks(struct cursor *c)
{
	const char *start = c->pos;

	while (c->pos < c->end && (*c->pos == ' ' || *c->pos == '\t'))
		c->pos++;
	return c->pos == start ? -EINVAL : 0;
}

static int parse_perms(struct cursor *c, uint32_t *prot)
{
	static const char allowed[4][2] = {
		{ 'r', '-' }, { 'w', '-' }, { 'x', '-' }, { 's', 'p' },
	};
	static const uint32_t flag[4] = {
		MAPS_PROT_READ, MAPS_PROT_WRITE, MAPS_PROT_EXEC, MAPS_SHARED,
	};
	uint32_t bits = 0;

	if (c->end - c->pos < 4)
		return -EINVAL;
	for (int i = 0; i < 4; i++) {
		char ch = c->pos[i];

		if (ch == allowed[i][0])
			bits |= flag[i];
		else if (ch != allowed[i][1])
			return -EINVAL;
	}
	c->pos += 4;
	*prot = bits;
	return 0;
}

/* Lines in text: newlines, plus a last line without one. */
static size_t count_lines(const char *text, size_t len)
{
	const char *pos = text, *end, *nl;
	size_t n = 0;

	if (!len)
		return 0;
	end = text + len;
	while ((nl = memchr(pos, '\n', (size_t)(end - pos)))) {
		n++;
		pos = nl + 1;
	}
	return pos < end ? n + 1 : n;
}

/* Copy the n bytes of src to dst with the kernel's \012 (a newline in a
 * path) made a newline again, NUL-terminated; the length copied. */
static size_t unescape_newlines(char *dst, const char *src, size_t n)
{
	size_t i, at = 0;

	for (i = 0; i < n; i++) {
		if (src[i] == '\\' && i + 3 < n && src[i + 1] == '0' &&
		    src[i + 2] == '1' && src[i + 3] == '2') {
			dst[at++] = '\n';
			i += 3;
		} else {
			dst[at++] = src[i];
		}
	}
	dst[at] = '\0';
	return at;
}

/*
 * Parse the line [line, line_end) (no newline) into e, copying the path to
 * *strings and advancing it past the NUL.
 */
static int parse_line(const char *line, const char *line_end,
		      struct maps_entry *e, char **strings)
{
	struct cursor c = { line, line_end };
	uint64_t major, minor;
	size_t path_len;
	int err;

	if (memchr(line, '\0', (size_t)(line_end - line)))
		return -EINVAL;

	if ((err = parse_hex(&c, UINT64_MAX, &e->start)) ||
	    (err = expect_char(&c, '-')) ||
	    (err = parse_hex(&c, UINT64_MAX, &e->end)) ||
	    (err = skip_blanks(&c)) ||
	    (err = parse_perms(&c, &e->prot)) ||
	    (err = skip_blanks(&c)) ||
	    (err = parse_hex(&c, UINT64_MAX, &e->offset)) ||
	    (err = skip_blanks(&c)) ||
	    (err = parse_hex(&c, UINT32_MAX, &major)) ||
	    (err = expect_char(&c, ':')) ||
	    (err = parse_hex(&c, UINT32_MAX, &minor)) ||
	    (err = skip_blanks(&c)) ||
	    (err = parse_dec(&c, &e->inode)))
		return err;
	if (e->start >= e->end)
		return -EINVAL;
	e->dev_major = (uint32_t)major;
	e->dev_minor = (uint32_t)minor;

	/* The inode ends the header: a blank run or the end of the line. */
	if (c.pos < c.end && skip_blanks(&c))
		return -EINVAL;

	path_len = unescape_newlines(*strings, c.pos, (size_t)(c.end - c.pos));
	e->path = *strings;
	*strings += path_len + 1;
	return 0;
}

int proc_maps__parse(const char *text, size_t len, struct proc_maps **out)
{
	struct maps_block *block;
	const char *pos, *text_end;
	size_t nlines, header, size, i;
	char *strings;
	int err;

	if (!out || (!text && len))
		return -EINVAL;

	nlines = count_lines(text, len);

	/*
	 * Each path with its NUL fits in its line with that line's newline
	 * (or, for the last line, in the one extra byte), so len + 1 bytes
	 * hold all strings.
	 */
	if (nlines > (SIZE_MAX - sizeof(*block)) / sizeof(block->entries[0]))
		return -ENOMEM;
	header = sizeof(*block) + nlines * sizeof(block->entries[0]);
	if (len > SIZE_MAX - header - 1)
		return -ENOMEM;
	size = header + len + 1;

	block = calloc(1, size);
	if (!block)
		return -ENOMEM;
	block->maps.entries = nlines ? block->entries : NULL;
	strings = (char *)block + header;

	text_end = text ? text + len : NULL;
	for (pos = text, i = 0; pos != text_end; i++) {
		const char *nl = memchr(pos, '\n', (size_t)(text_end - pos));
		const char *line_end = nl ? nl : text_end;
		struct maps_entry *e = &block->entries[i];

		err = parse_line(pos, line_end, e, &strings);
		if (err)
			goto out_free;
		if (i > 0 && e->start < block->entries[i - 1].end) {
			err = -EINVAL;
			goto out_free;
		}
		pos = nl ? nl + 1 : text_end;
	}
	block->maps.count = i;
	*out = &block->maps;
	return 0;

out_free:
	free(block);
	return err;
}

/* Read all of fd into a malloc'ed buffer.  -EFBIG past MAPS_READ_MAX. */
static int read_all(int fd, char **out, size_t *out_len)
{
	size_t cap = MAPS_READ_INITIAL, len = 0;
	char *buf, *grown;
	ssize_t n;
	int err;

	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			if (cap >= MAPS_READ_MAX) {
				err = -EFBIG;
				goto out_free;
			}
			cap *= 2;
			grown = realloc(buf, cap);
			if (!grown) {
				err = -ENOMEM;
				goto out_free;
			}
			buf = grown;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto out_free;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*out = buf;
	*out_len = len;
	return 0;

out_free:
	free(buf);
	return err;
}

/* Reads of a maps file that came out inconsistent before giving up: the
 * process was changing its mappings meanwhile (a busy one, or one
 * being attached to, can keep doing so). */
#define MAPS_READ_TRIES	4

int proc_maps__read(pid_t pid, struct proc_maps **out)
{
	char path[64];
	char *text;
	size_t len;
	int fd, err = -EINVAL, tries;

	if (pid <= 0 || !out)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	for (tries = 0; tries < MAPS_READ_TRIES && err == -EINVAL; tries++) {
		text = NULL;
		len = 0;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		err = read_all(fd, &text, &len);
		if (!err)
			err = proc_maps__parse(text, len, out);
		free(text);
		close(fd);
	}
	return err;
}

void proc_maps__free(struct proc_maps *maps)
{
	/* maps is the first member of the block that was allocated. */
	free(maps);
}

const struct maps_entry *proc_maps__at(const struct proc_maps *pm,
				       uint64_t addr)
{
	size_t lo = 0, hi = pm->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct maps_entry *m = &pm->entries[mid];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

#define GUARD_MAX	(1u << 20)
#define ARENA_ALIGN	(64ull << 20)

bool proc_maps__own_stack(const struct proc_maps *pm,
			  const struct maps_entry *e)
{
	const struct maps_entry *g;

	if (!strcmp(e->path, "[stack]"))
		return true;
	if (e->path[0] || e == pm->entries || !(e->prot & MAPS_PROT_WRITE) ||
	    (e->prot & MAPS_SHARED))
		return false;
	g = e - 1;
	return g->end == e->start &&
	       !(g->prot & (MAPS_PROT_READ | MAPS_PROT_WRITE |
			    MAPS_PROT_EXEC)) &&
	       g->end - g->start <= GUARD_MAX && !g->path[0] &&
	       e->start % ARENA_ALIGN;
}

int maps_entry__open(pid_t pid, const struct maps_entry *e)
{
	static const char deleted[] = " (deleted)";
	char name[PATH_MAX + 64];
	size_t n = strlen(e->path), s = sizeof(deleted) - 1;
	struct stat st;
	int fd, err;

	snprintf(name, sizeof(name), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)e->start, (unsigned long long)e->end);
	fd = open(name, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	err = -errno;
	if (err == -ENOENT && kill(pid, 0) && errno == ESRCH)
		return -ESRCH;
	if (err != -EPERM && err != -EACCES)
		return err;
	/* map_files wants CAP_SYS_ADMIN: the path, in the target's root,
	 * if it is still the very file mapped */
	if (e->path[0] != '/' || (n > s && !strcmp(e->path + n - s, deleted)))
		return err;
	if ((size_t)snprintf(name, sizeof(name), "/proc/%d/root%s", (int)pid,
			     e->path) >= sizeof(name))
		return -ENAMETOOLONG;
	/* non-blocking: a path the target swapped for a FIFO must not hang
	 * us; it is then not the file mapped anyway */
	fd = open(name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_ino != e->inode ||
	    major(st.st_dev) != e->dev_major ||
	    minor(st.st_dev) != e->dev_minor) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

char *proc_stat__fields(pid_t pid, char *buf, size_t size)
{
	char path[64], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p + 2 : NULL;
}

uint64_t proc_stat__start_time(pid_t pid)
{
	char buf[1024], *p = proc_stat__fields(pid, buf, sizeof(buf));
	int i;

	for (i = 3; i < 22 && p; i++)	/* fields 3..22 */
		if ((p = strchr(p, ' ')))
			p++;
	return p ? strtoull(p, NULL, 10) : 0;
}
