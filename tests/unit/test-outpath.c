// SPDX-License-Identifier: MIT
/*
 * test-outpath.c - unit test of tracer/output/outpath.c: which output paths are
 * refused before a run, and where a file goes when its place fails.
 *
 * In a directory of its own: a missing directory, a file where the
 * directory should be, a directory or a FIFO as the path, a trailing
 * slash, and a good path (also one that exists, to be replaced).  Then
 * outpath__write with a writer that fails for the first place: the file
 * goes to the working directory under the same name, or under NAME.PID.EXT
 * (then NAME.PID-2.EXT) when that is taken, never over what is there;
 * then to $TMPDIR when the working directory is the failed place or is
 * gone; and nowhere (the first error returned) when every place fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "tracer/output/outpath.h"

static char top[256];

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK(f);
	CHECK(fputs(text, f) >= 0);
	CHECK(!fclose(f));
}

static void at(char *out, size_t len, const char *rel)
{
	CHECK((size_t)snprintf(out, len, "%s/%s", top, rel) < len);
}

static void check_refusals(void)
{
	char p[PATH_MAX], why[PATH_MAX + 64];

	at(p, sizeof(p), "missing/x.pb.gz");
	CHECK_EQ_INT(outpath__check(p, why, sizeof(why)), -ENOENT);
	CHECK(strstr(why, "missing: No such file or directory"));
	at(p, sizeof(p), "file");
	put(p, "x");
	at(p, sizeof(p), "file/x.pb.gz");
	CHECK_EQ_INT(outpath__check(p, why, sizeof(why)), -ENOTDIR);
	CHECK(strstr(why, "is not a directory"));
	CHECK_EQ_INT(outpath__check(top, why, sizeof(why)), -EISDIR);
	CHECK_EQ_STR(why, "it is a directory; give a file name");
	at(p, sizeof(p), "newdir/");
	CHECK_EQ_INT(outpath__check(p, why, sizeof(why)), -EISDIR);
	at(p, sizeof(p), "fifo");
	CHECK(!mkfifo(p, 0600));
	CHECK_EQ_INT(outpath__check(p, why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "not a regular file"));
	at(p, sizeof(p), "good.pb.gz");
	CHECK_EQ_INT(outpath__check(p, why, sizeof(why)), 0);
	put(p, "old");
	CHECK_EQ_INT(outpath__check(p, why, sizeof(why)), 0);
	CHECK(!unlink(p));
	CHECK_EQ_INT(outpath__check("relative.pb.gz", why, sizeof(why)), 0);
}

/* The writer: fails for every path under a directory named "bad", and
 * everywhere with fail_all; writes "profile" otherwise. */
static int fail_all;

static int writer(const char *path, void *ctx)
{
	int *calls = ctx;

	(*calls)++;
	if (fail_all || strstr(path, "/bad/"))
		return -ENOSPC;
	put(path, "profile");
	return 0;
}

static void check_fallbacks(void)
{
	char bad[512], cwd[512], tmp[512], p[PATH_MAX];
	char written[PATH_MAX], want[PATH_MAX], old[PATH_MAX];
	int calls = 0;

	CHECK(getcwd(old, sizeof(old)));
	at(bad, sizeof(bad), "bad");
	at(cwd, sizeof(cwd), "cwd");
	at(tmp, sizeof(tmp), "tmp");
	CHECK(!mkdir(bad, 0755) && !mkdir(cwd, 0755) && !mkdir(tmp, 0755));
	CHECK(!setenv("TMPDIR", tmp, 1));
	CHECK(!chdir(cwd));

	/* where asked */
	at(p, sizeof(p), "ok.pb.gz");
	CHECK_EQ_INT(outpath__write(p, writer, &calls, "the profile", written,
				    sizeof(written)), 0);
	CHECK_EQ_STR(written, p);
	/* the working directory, same name */
	snprintf(p, sizeof(p), "%s/heap.pb.gz", bad);
	CHECK_EQ_INT(outpath__write(p, writer, &calls, "the profile", written,
				    sizeof(written)), 1);
	snprintf(want, sizeof(want), "%s/heap.pb.gz", cwd);
	CHECK_EQ_STR(written, want);
	/* taken: NAME.PID.EXT, then NAME.PID-2.EXT; the old files stay */
	CHECK_EQ_INT(outpath__write(p, writer, &calls, "the profile", written,
				    sizeof(written)), 1);
	snprintf(want, sizeof(want), "%s/heap.%d.pb.gz", cwd, (int)getpid());
	CHECK_EQ_STR(written, want);
	CHECK_EQ_INT(outpath__write(p, writer, &calls, "the profile", written,
				    sizeof(written)), 1);
	snprintf(want, sizeof(want), "%s/heap.%d-2.pb.gz", cwd, (int)getpid());
	CHECK_EQ_STR(written, want);
	/* a name without an extension */
	snprintf(p, sizeof(p), "%s/plain", bad);
	CHECK_EQ_INT(outpath__write(p, writer, &calls, "the file", written,
				    sizeof(written)), 1);
	snprintf(want, sizeof(want), "%s/plain", cwd);
	CHECK_EQ_STR(written, want);
	/* the working directory is the failed place: $TMPDIR */
	CHECK(!chdir(bad));
	snprintf(p, sizeof(p), "%s/x.json", bad);
	CHECK_EQ_INT(outpath__fallback(p, 0, written, sizeof(written)), 1);
	snprintf(want, sizeof(want), "%s/x.json", tmp);
	CHECK_EQ_STR(written, want);
	/* ... or gone */
	CHECK(!mkdir("gone", 0755));
	CHECK(!chdir("gone"));
	CHECK(!rmdir("../gone"));
	snprintf(p, sizeof(p), "%s/y.json", bad);
	CHECK_EQ_INT(outpath__write(p, writer, &calls, "the readings", written,
				    sizeof(written)), 1);
	snprintf(want, sizeof(want), "%s/y.json", tmp);
	CHECK_EQ_STR(written, want);
	/* a $TMPDIR that is not absolute is not used: /tmp */
	CHECK(!setenv("TMPDIR", "relative", 1));
	CHECK_EQ_INT(outpath__fallback(p, 1, written, sizeof(written)), 1);
	CHECK(!strncmp(written, "/tmp/y", 6));
	CHECK(!setenv("TMPDIR", tmp, 1));
	/* nowhere: every place failed, the first error comes back */
	fail_all = 1;
	calls = 0;
	CHECK(!chdir(cwd));
	CHECK_EQ_INT(outpath__write(p, writer, &calls, "the profile", written,
				    sizeof(written)), -ENOSPC);
	CHECK_EQ_STR(written, "");
	CHECK_EQ_INT(calls, 3);		/* asked, cwd, $TMPDIR */
	fail_all = 0;
	/* fallback after both: none left */
	CHECK_EQ_INT(outpath__fallback(p, 2, written, sizeof(written)), -ENOENT);
	CHECK(!chdir(old));
}

int main(void)
{
	char cmd[300];

	snprintf(top, sizeof(top), "/tmp/test-outpath.XXXXXX");
	CHECK(mkdtemp(top));
	check_refusals();
	check_fallbacks();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	CHECK(!system(cmd));
	CHECK_SUMMARY("test-outpath");
	return 0;
}
