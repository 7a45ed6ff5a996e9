// SPDX-License-Identifier: MIT
/*
 * outpath.c - the files a run writes, before and after the run.
 *
 * Before: a run can last hours, so a profile that cannot be written is
 * found out before the target is launched or attached to, not after.  The
 * directory is tried the exact way - an unnamed file (O_TMPFILE) is made
 * in it and dropped, which answers for permissions, ACLs, read-only
 * mounts and missing directories at once; where a filesystem has no
 * O_TMPFILE, access(2) answers instead.  The path itself must not be a
 * directory, and not a device, FIFO or socket either: files are written
 * beside it and renamed over it, which would replace such a node.
 *
 * After: the place can still fail (the directory removed meanwhile, the
 * disk full).  The run's result is not thrown away for that: the same
 * file name is tried in the current directory, then in $TMPDIR or /tmp,
 * under a name nothing holds there (NAME, else STEM.PID.EXT, STEM.PID-N.EXT),
 * and stderr says loudly where it went.  The caller keeps the target's
 * exit status whatever happens here.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "outpath.h"
#include "common/log.h"


/* The directory part of path into dir ("." when there is none). */
static int dir_of(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');
	size_t n;

	if (!slash)
		return snprintf(dir, len, ".") < (int)len ? 0 : -ENAMETOOLONG;
	n = slash == path ? 1 : (size_t)(slash - path);
	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(dir, path, n);
	dir[n] = 0;
	return 0;
}

/* Can we make files in dir?  0 or -errno. */
static int dir_writable(const char *dir)
{
	int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return -errno;
	/* no O_TMPFILE on this filesystem */
	return faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) ? -errno : 0;
}

int outpath__check(const char *path, char *why, size_t len)
{
	char dir[PATH_MAX];
	struct stat st;
	int err;

	if (path[0] && path[strlen(path) - 1] == '/') {
		snprintf(why, len, "it names a directory; give a file name");
		return -EISDIR;
	}
	if (!stat(path, &st)) {
		if (S_ISDIR(st.st_mode)) {
			snprintf(why, len, "it is a directory; give a file name");
			return -EISDIR;
		}
		if (!S_ISREG(st.st_mode)) {
			snprintf(why, len,
				 "it is not a regular file (the output would replace it)");
			return -EINVAL;
		}
	}
	err = dir_of(path, dir, sizeof(dir));
	if (err) {
		snprintf(why, len, "%s", strerror(-err));
		return err;
	}
	if (stat(dir, &st)) {
		err = -errno;
		snprintf(why, len, "directory %s: %s", dir, strerror(-err));
		return err;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, len, "%s is not a directory", dir);
		return -ENOTDIR;
	}
	err = dir_writable(dir);
	if (err) {
		snprintf(why, len, "cannot create files in %s: %s", dir,
			 strerror(-err));
		return err;
	}
	return 0;
}

/* Same directory (device and inode)?  false if either is not there. */
static bool same_dir(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* A name in dir, from path's base name, that nothing holds yet. */
static int free_name(const char *dir, const char *path, char *out,
		     size_t len)
{
	const char *base = strrchr(path, '/');
	const char *dot;
	struct stat st;
	size_t stem;
	int i, n;

	base = base ? base + 1 : path;
	if (!*base)
		return -EINVAL;
	/* STEM.PID.EXT: the extension is all from the first dot on */
	dot = strchr(base + 1, '.');
	stem = dot ? (size_t)(dot - base) : strlen(base);
	for (i = 0; i < 100; i++) {
		if (!i)
			n = snprintf(out, len, "%s/%s", dir, base);
		else if (i == 1)
			n = snprintf(out, len, "%s/%.*s.%d%s", dir, (int)stem,
				     base, (int)getpid(), dot ? dot : "");
		else
			n = snprintf(out, len, "%s/%.*s.%d-%d%s", dir,
				     (int)stem, base, (int)getpid(), i,
				     dot ? dot : "");
		if (n < 0 || (size_t)n >= len)
			return -ENAMETOOLONG;
		if (lstat(out, &st) && errno == ENOENT)
			return 0;
	}
	return -EEXIST;
}

int outpath__fallback(const char *path, int skip, char *out, size_t len)
{
	char dir[PATH_MAX], cwd[PATH_MAX];
	const char *tmp = getenv("TMPDIR");
	int at;

	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	if (dir_of(path, dir, sizeof(dir)))
		dir[0] = 0;
	for (at = skip; at < 2; at++) {
		const char *cand;

		if (at == 0) {
			/* a removed working directory has no name */
			if (!getcwd(cwd, sizeof(cwd)) || cwd[0] != '/')
				continue;
			cand = cwd;
		} else {
			cand = tmp;
		}
		if ((dir[0] && same_dir(dir, cand)) || dir_writable(cand))
			continue;
		if (!free_name(cand, path, out, len))
			return at;
	}
	return -ENOENT;
}

int outpath__write(const char *path, outpath_write_fn write, void *ctx,
		   const char *what, char *written, size_t len)
{
	char fb[PATH_MAX];
	int err, first, at = 0;

	first = write(path, ctx);
	if (!first) {
		snprintf(written, len, "%s", path);
		return 0;
	}
	pr_warn("WARNING: cannot write %s to %s: %s\n", what,
		path, strerror(-first));
	for (;;) {
		at = outpath__fallback(path, at, fb, sizeof(fb));
		if (at < 0)
			break;
		at++;
		err = write(fb, ctx);
		if (!err) {
			pr_warn("WARNING: wrote %s to %s instead\n",
				what, fb);
			snprintf(written, len, "%s", fb);
			return 1;
		}
		pr_warn("WARNING: cannot write %s to %s either: %s\n",
			what, fb, strerror(-err));
	}
	pr_warn("WARNING: %s was not written anywhere: it is lost\n",
		what);
	written[0] = 0;
	return first;
}
