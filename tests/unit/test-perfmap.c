// SPDX-License-Identifier: MIT
/*
 * test-perfmap.c - the perf map parser and lookups (tracer/record/perfmap.c):
 * hex with and without 0x, later lines for a start winning, ranges
 * (end exclusive), lines that do not parse skipped, names cut and their
 * control bytes kept for the sinks to clean, overlapping entries, and perfmap__load's
 * refusal of a map owned by another user.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "tracer/record/perfmap.h"

int main(void)
{
	static const char text[] =
		"1000 100 first\n"
		"0x2000 0x10 JS:^work /tmp/b.js:1:14\n"
		"1000 80 later wins\n"
		"not a line\n"
		"3000 10\n"			/* no name */
		"4000 0 zero size\n"
		"5000 10 \x1b]0;title\x07 end\r\n"
		"ffffffffffffffff 10 wraps\n"
		"6000 1000 outer\n"
		"6100 10 inner\n"
		"11112222333344445 10 too many digits\n";
	char name[700], buf[800];
	struct perfmap *pm = perfmap__parse(text, sizeof(text) - 1);
	const char *s;

	CHECK(pm);
	CHECK_EQ_INT(perfmap__count(pm), 5);
	CHECK(!strcmp(perfmap__lookup(pm, 0x1000), "later wins"));
	CHECK(!strcmp(perfmap__lookup(pm, 0x107f), "later wins"));
	CHECK(perfmap__lookup(pm, 0x1080) == NULL);
	CHECK(perfmap__lookup(pm, 0xfff) == NULL);
	CHECK(!strcmp(perfmap__lookup(pm, 0x200f), "JS:^work /tmp/b.js:1:14"));
	CHECK(perfmap__lookup(pm, 0x2010) == NULL);
	CHECK(perfmap__lookup(pm, 0x3000) == NULL);
	CHECK(perfmap__lookup(pm, 0x4000) == NULL);
	s = perfmap__lookup(pm, 0x5000);
	/* kept raw here: the sinks clean it (untrusted.c) */
	CHECK(s && !strcmp(s, "\x1b]0;title\x07 end"));
	CHECK(!strcmp(perfmap__lookup(pm, 0x6105), "inner"));
	CHECK(!strcmp(perfmap__lookup(pm, 0x6200), "outer"));
	CHECK(perfmap__lookup(pm, UINT64_MAX) == NULL);
	perfmap__free(pm);

	/* a long name is cut */
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	snprintf(buf, sizeof(buf), "10 10 %s\n", name);
	pm = perfmap__parse(buf, strlen(buf));
	CHECK(pm);
	CHECK_EQ_INT(strlen(perfmap__lookup(pm, 0x10)), 512);
	perfmap__free(pm);

	/* a last line without its newline is still being written */
	pm = perfmap__parse("10 10 done\n20 10 half", 22);
	CHECK(pm && perfmap__count(pm) == 1 && !perfmap__lookup(pm, 0x20));
	perfmap__free(pm);

	/* empty input */
	pm = perfmap__parse("", 0);
	CHECK(pm && !perfmap__count(pm) && !perfmap__lookup(pm, 1));
	perfmap__free(pm);

	/* this process's own map: read through /proc/self/root/tmp; one
	 * owned by another user (not root) is refused, saying why */
	{
		char path[64], why[256];
		int fd;

		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		CHECK(fd >= 0);
		CHECK(write(fd, "abc 10 mine\n", 12) == 12);
		close(fd);
		pm = perfmap__load(getpid(), why, sizeof(why));
		CHECK(pm && !strcmp(perfmap__lookup(pm, 0xabc), "mine"));
		perfmap__free(pm);
		if (getuid() == 0) {
			CHECK(!chown(path, 65534, 65534));
			pm = perfmap__load(getpid(), why, sizeof(why));
			CHECK(!pm);
			CHECK(strstr(why, "owned by neither"));
		}
		unlink(path);
		pm = perfmap__load(getpid(), why, sizeof(why));
		CHECK(!pm && !*why);
	}
	CHECK_SUMMARY("test-perfmap");
	return 0;
}
