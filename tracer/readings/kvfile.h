/* SPDX-License-Identifier: MIT */
/*
 * kvfile.h - read the small "key value" files of procfs and cgroupfs.
 */
#ifndef PA_TRACER_KVFILE_H
#define PA_TRACER_KVFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KVFILE_MAX	(1u << 20)	/* bigger files are refused */

enum kv_format {
	KV_COLON,	/* "Key:   123 kB" (smaps_rollup, status): kB -> bytes */
	KV_SPACE,	/* "key 123" (memory.stat, memory.events) */
};

struct kv {
	char *key;
	uint64_t value;
	bool valid;		/* false: the value was malformed or too big */
	bool kb;		/* KV_COLON: it had the "kB" unit (bytes now) */
};

struct kvset {
	struct kv *v;
	size_t n, cap;
	unsigned int bad_lines;	/* lines that were not "key value" */
	char first_error[160];	/* what was wrong with the first one */
};

/*
 * Read the whole file at path (at most KVFILE_MAX bytes) into a new
 * NUL-terminated buffer the caller frees.  0 or -errno (-EFBIG: too big).
 */
int kvfile__read(const char *path, char **text, size_t *len);

/*
 * Parse text into s (emptied first).  Lines that are not of the format
 * are counted in bad_lines (skip_other: not counted, for files such as
 * status whose other lines are not numbers).  A number that does not fit
 * in 64 bits, after the kB scaling, gives an entry with valid false.
 * lines_before: lines of the file before text (for the line numbers).
 * 0 or -ENOMEM.
 */
int kvset__parse(struct kvset *s, const char *text, size_t len,
		 enum kv_format fmt, bool skip_other, unsigned int lines_before);

/* The entry for key, or NULL. */
const struct kv *kvset__get(const struct kvset *s, const char *key);
/* value of key when present and valid: true and *out set. */
bool kvset__value(const struct kvset *s, const char *key, uint64_t *out);

void kvset__fini(struct kvset *s);

/* A file holding one number ("123\n"), or "max" (*unlimited set).
 * 0, -ENOENT and other -errno, -EINVAL (not a number), -ERANGE (more
 * than 64 bits), -EPIPE (no newline at the end: cut short), -ENODATA
 * (empty). */
int kvfile__read_u64(const char *path, uint64_t *out, bool *unlimited);

#endif /* PA_TRACER_KVFILE_H */
