// SPDX-License-Identifier: MIT
/*
 * test-readings.c - unit test of the telemetry readers (tracer/readings/kvfile.c,
 * readings_procmem.c, readings_cgroup.c) and of malloc_info's parser
 * (readings_alloc.c).
 *
 * The good trees under tests/fixtures/telemetry/ are files copied from real
 * systems (see its README: this machine's cgroup v1, cgroup v2 from a 6.x
 * and a 5.x kernel, an old v1 kernel without max_usage_in_bytes and an old
 * smaps_rollup without Pss_Anon); each has an "expect" file of KEY VALUE
 * lines written from the files by hand, and every line is checked against
 * what the readers return.  The malformed trees (huge, negative and
 * 2^64-sized numbers, truncated files, unknown keys and binary garbage,
 * empty files, no cgroup file) must give the specific absences and
 * problems listed below, and never a wrong number.  The malloc_info parser
 * gets glibc's real output shape and then damaged copies.
 *
 * The OOM pieces: oom_kill from each tree's memory.oom_control (v1) or
 * memory.events (v2), absent where the kernel had none; a cgroup read
 * again from its directory (cgroup__reread) sees a counter that moved and
 * says when the directory is gone; the verdict (readings__oom_verdict) is
 * a kill only for a SIGKILL while the counter moved, falls back to
 * /proc/vmstat only when the cgroup's counter was not read both times;
 * a zombie's reading is refused; PROFILE.json carries "end" and "final".
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "tracer/readings/readings_alloc.h"
#include "tracer/readings/readings_cgroup.h"
#include "tracer/readings/readings_procmem.h"
#include "tracer/readings/readings.h"

static char fixtures[PATH_MAX];

struct tree {
	struct procmem pm;
	struct cgroup_reading cg;
	int pm_err, cg_err;
};

static void read_tree(struct tree *t, const char *name)
{
	char proc[PATH_MAX + 64], sys[PATH_MAX + 64];

	snprintf(proc, sizeof(proc), "%s/%s/proc", fixtures, name);
	snprintf(sys, sizeof(sys), "%s/%s/sys", fixtures, name);
	t->pm_err = procmem__read(&t->pm, proc, 4242);
	t->cg_err = cgroup__read(&t->cg, proc, sys, 4242);
}

static void free_tree(struct tree *t)
{
	procmem__fini(&t->pm);
	cgroup__fini(&t->cg);
}

/* "absent", "unlimited" or the number, as the expect files write them */
static void show_kv(const struct kvset *s, const char *key, char *out,
		    size_t len)
{
	uint64_t v;

	if (!kvset__value(s, key, &v))
		snprintf(out, len, "absent");
	else
		snprintf(out, len, "%" PRIu64, v);
}

static void show_cg(const struct cg_value *v, char *out, size_t len)
{
	if (!v->present)
		snprintf(out, len, "absent");
	else if (v->unlimited)
		snprintf(out, len, "unlimited");
	else
		snprintf(out, len, "%" PRIu64, v->value);
}

static unsigned int check_expect(const char *name)
{
	char path[PATH_MAX + 64], line[512], got[PATH_MAX];
	unsigned int n = 0;
	struct tree t;
	FILE *f;

	read_tree(&t, name);
	CHECK_EQ_INT(t.pm_err, 0);
	CHECK_EQ_INT(t.cg_err, 0);
	CHECK_EQ_INT(t.pm.smaps.bad_lines, 0);
	snprintf(path, sizeof(path), "%s/%s/expect", fixtures, name);
	f = fopen(path, "r");
	CHECK(f);
	while (fgets(line, sizeof(line), f)) {
		char *key = strtok(line, " \n"), *want = strtok(NULL, " \n");

		if (!key || !want)
			continue;
		if (!strcmp(key, "cgroup.version"))
			snprintf(got, sizeof(got), "%d", t.cg.version);
		else if (!strcmp(key, "cgroup.path"))
			snprintf(got, sizeof(got), "%s", t.cg.path);
		else if (!strcmp(key, "cgroup.usage"))
			show_cg(&t.cg.common[CG_USAGE], got, sizeof(got));
		else if (!strcmp(key, "cgroup.limit"))
			show_cg(&t.cg.common[CG_LIMIT], got, sizeof(got));
		else if (!strcmp(key, "cgroup.peak"))
			show_cg(&t.cg.common[CG_PEAK], got, sizeof(got));
		else if (!strcmp(key, "cgroup.anon"))
			show_cg(&t.cg.common[CG_ANON], got, sizeof(got));
		else if (!strcmp(key, "cgroup.file"))
			show_cg(&t.cg.common[CG_FILE], got, sizeof(got));
		else if (!strncmp(key, "cgroup.stat.", 12))
			show_kv(&t.cg.stat, key + 12, got, sizeof(got));
		else if (!strncmp(key, "smaps.", 6))
			show_kv(&t.pm.smaps, key + 6, got, sizeof(got));
		else if (!strncmp(key, "status.", 7))
			show_kv(&t.pm.status, key + 7, got, sizeof(got));
		else {
			fprintf(stderr, "%s: unknown key %s\n", path, key);
			CHECK(0);
		}
		if (strcmp(got, want))
			fprintf(stderr, "%s: %s is %s, want %s\n", name, key,
				got, want);
		CHECK_EQ_STR(got, want);
		n++;
	}
	fclose(f);
	free_tree(&t);
	return n;
}

static void check_malformed(void)
{
	const struct kv *kv;
	struct tree t;
	uint64_t v;

	/* huge: 2^64-1 kB does not fit in bytes, 2^54-1 kB does, -5 is no
	 * number, 10^23 is too big; status VmRSS and Threads too big */
	read_tree(&t, "malformed/huge");
	CHECK_EQ_INT(t.pm_err, 0);
	kv = kvset__get(&t.pm.smaps, "Rss");
	CHECK(kv && !kv->valid);
	CHECK(kvset__value(&t.pm.smaps, "Pss", &v));
	CHECK(v == 18014398509481983ull * 1024);
	CHECK(!kvset__get(&t.pm.smaps, "Pss_Anon"));
	kv = kvset__get(&t.pm.smaps, "Swap");
	CHECK(kv && !kv->valid);
	CHECK(t.pm.smaps.bad_lines >= 3);
	CHECK(strstr(t.pm.smaps.first_error, "line 2: number too big"));
	CHECK(!kvset__value(&t.pm.status, "VmRSS", &v));
	CHECK(!kvset__value(&t.pm.status, "Threads", &v));
	CHECK(!kvset__get(&t.pm.status, "VmHWM"));	/* "-1 kB" */
	CHECK_EQ_INT(t.cg.version, 2);
	CHECK(!t.cg.common[CG_LIMIT].present);		/* 2^64 */
	CHECK(strstr(t.cg.problems, "memory.max: more than 64 bits"));
	free_tree(&t);

	/* truncated: the cut lines and files are dropped, the rest kept */
	read_tree(&t, "malformed/truncated");
	CHECK_EQ_INT(t.pm_err, 0);
	CHECK(kvset__value(&t.pm.smaps, "Rss", &v) && v == 38172ull * 1024);
	CHECK(!kvset__get(&t.pm.smaps, "Pss_Anon"));	/* "314" cut */
	CHECK(strstr(t.pm.smaps.first_error, "truncated"));
	CHECK_EQ_INT(t.cg.version, 2);
	CHECK(!t.cg.common[CG_USAGE].present);
	CHECK(strstr(t.cg.problems, "memory.current: truncated"));
	CHECK(t.cg.has_stat && t.cg.stat.bad_lines == 1);
	CHECK(kvset__value(&t.cg.stat, "anon", &v) && v == 860160);
	CHECK(!kvset__get(&t.cg.stat, "file"));
	free_tree(&t);

	/* unknown keys are kept, garbage lines counted */
	read_tree(&t, "malformed/unknown-keys");
	CHECK_EQ_INT(t.pm_err, 0);
	CHECK(kvset__value(&t.pm.smaps, "Pss_Future", &v) && v == 12 * 1024);
	CHECK(kvset__value(&t.pm.smaps, "THPeligible", &v) && v == 0);
	CHECK(kvset__value(&t.pm.smaps, "Locked", &v) && v == 0);
	CHECK(!kvset__get(&t.pm.smaps, "ProtectionKey"));
	CHECK(t.pm.smaps.bad_lines >= 2);
	CHECK(kvset__get(&t.pm.status, "VmRSSX") != NULL);
	CHECK(kvset__value(&t.pm.status, "VmRSS", &v));
	CHECK(kvset__get(&t.pm.status, "VmRSSX") != kvset__get(&t.pm.status, "VmRSS"));
	free_tree(&t);

	/* empty files: absent, with the reason */
	read_tree(&t, "malformed/empty");
	CHECK_EQ_INT(t.pm_err, -ESRCH);
	CHECK_EQ_INT(t.pm.smaps_err, -ENODATA);
	CHECK_EQ_INT(t.pm.status_err, -ENODATA);
	CHECK(!t.cg.common[CG_USAGE].present);
	free_tree(&t);

	/* no cgroup file: said, and not read from the root instead */
	read_tree(&t, "malformed/no-cgroup");
	CHECK_EQ_INT(t.cg_err, -ESRCH);
	CHECK_EQ_INT(t.cg.version, 0);
	CHECK(strstr(t.cg.why, "cannot read"));
	free_tree(&t);
	read_tree(&t, "malformed/empty-cgroup");
	CHECK_EQ_INT(t.cg_err, 0);
	CHECK_EQ_INT(t.cg.version, 0);
	CHECK(!t.cg.common[CG_USAGE].present);
	free_tree(&t);
}

/* oom_kill of each tree, as its files say */
static void check_oom_fixtures(void)
{
	static const struct {
		const char *tree;
		bool present;
		uint64_t value;
	} want[] = {
		{ "v1-debian12", true, 0 },
		{ "v1-old-kernel", false, 0 },	/* before 4.13: no field */
		{ "v2-kernel5-limited", true, 0 },
		{ "v2-kernel6-unlimited", true, 0 },
		{ "malformed/huge", true, UINT64_MAX },
		{ "malformed/truncated", false, 0 },	/* cut before it */
	};
	struct tree t;
	size_t i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		read_tree(&t, want[i].tree);
		if (t.cg.common[CG_OOM_KILL].present != want[i].present ||
		    t.cg.common[CG_OOM_KILL].value != want[i].value)
			fprintf(stderr, "%s: oom_kill %d %" PRIu64 "\n",
				want[i].tree,
				t.cg.common[CG_OOM_KILL].present,
				t.cg.common[CG_OOM_KILL].value);
		CHECK(t.cg.common[CG_OOM_KILL].present == want[i].present);
		CHECK(t.cg.common[CG_OOM_KILL].value == want[i].value);
		free_tree(&t);
	}
	read_tree(&t, "v1-debian12");
	CHECK(t.cg.has_oom_control);
	CHECK(kvset__get(&t.cg.oom_control, "under_oom"));
	free_tree(&t);
}

static void put(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	CHECK(f);
	CHECK(fputs(text, f) >= 0);
	CHECK(!fclose(f));
}

/* A v1 and a v2 cgroup directory of our own, read again as they change. */
static void check_reread(void)
{
	char dir[] = "/tmp/test-readings.XXXXXX";
	struct cgroup_reading found = { .version = 1 }, cg;
	const char *const files[] = {
		"memory.oom_control", "memory.usage_in_bytes",
		"memory.max_usage_in_bytes", "memory.limit_in_bytes",
		"memory.events", "memory.current", NULL,
	};
	size_t i;

	CHECK(mkdtemp(dir));
	put(dir, "memory.oom_control",
	    "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
	put(dir, "memory.usage_in_bytes", "4096\n");
	put(dir, "memory.max_usage_in_bytes", "209715200\n");
	put(dir, "memory.limit_in_bytes", "209715200\n");
	strcpy(found.dir, dir);
	strcpy(found.path, "/test");
	CHECK_EQ_INT(cgroup__reread(&cg, &found), 0);
	CHECK_EQ_INT(cg.version, 1);
	CHECK_EQ_STR(cg.path, "/test");
	CHECK(cg.common[CG_OOM_KILL].present && !cg.common[CG_OOM_KILL].value);
	CHECK(cg.common[CG_PEAK].value == 209715200);
	cgroup__fini(&cg);
	/* the kernel counts a kill */
	put(dir, "memory.oom_control",
	    "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
	CHECK_EQ_INT(cgroup__reread(&cg, &found), 0);
	CHECK(cg.common[CG_OOM_KILL].present);
	CHECK_EQ_INT(cg.common[CG_OOM_KILL].value, 1);
	cgroup__fini(&cg);
	/* v2: memory.events */
	found.version = 2;
	put(dir, "memory.events", "low 0\nhigh 0\nmax 9\noom 2\noom_kill 2\n");
	put(dir, "memory.current", "8192\n");
	CHECK_EQ_INT(cgroup__reread(&cg, &found), 0);
	CHECK_EQ_INT(cg.version, 2);
	CHECK_EQ_INT(cg.common[CG_OOM_KILL].value, 2);
	CHECK_EQ_INT(cg.common[CG_USAGE].value, 8192);
	cgroup__fini(&cg);
	/* gone: said, nothing read */
	for (i = 0; files[i]; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	CHECK(!rmdir(dir));
	CHECK_EQ_INT(cgroup__reread(&cg, &found), 0);
	CHECK_EQ_INT(cg.version, 0);
	CHECK(strstr(cg.why, "no longer there"));
	CHECK(!cg.common[CG_OOM_KILL].present);
	cgroup__fini(&cg);
	/* nothing found at the start: nothing to read again */
	found.version = 0;
	strcpy(found.why, "no memory controller");
	CHECK_EQ_INT(cgroup__reread(&cg, &found), 0);
	CHECK_EQ_INT(cg.version, 0);
	CHECK_EQ_STR(cg.why, "no memory controller");
	cgroup__fini(&cg);
}

static void counter(struct cgroup_reading *cg, int version, const char *dir,
		    bool present, uint64_t v)
{
	memset(cg, 0, sizeof(*cg));
	cg->version = version;
	strcpy(cg->dir, dir);
	strcpy(cg->path, "/x");
	cg->common[CG_OOM_KILL].present = present;
	cg->common[CG_OOM_KILL].value = v;
}

static void check_verdict(void)
{
	struct cgroup_reading a, b;
	struct readings_oom v;
	struct readings_end end = { .ended = "was killed by signal 9" };
	char text[256];

	/* SIGKILL as the cgroup's counter moved: OOM-killed */
	counter(&a, 1, "/cg/x", true, 3);
	counter(&b, 1, "/cg/x", true, 4);
	readings__oom_verdict(&v, &a, &b, true, 10, 10, true);
	CHECK(v.known && v.killed);
	CHECK_EQ_STR(v.counter, "memory.oom_control oom_kill");
	CHECK(v.before == 3 && v.after == 4);
	end.final = b;
	readings__oom_describe(&v, &end, text, sizeof(text));
	CHECK_EQ_STR(text, "OOM-killed (memory cgroup /x: memory.oom_control oom_kill went from 3 to 4)");
	/* the same counter, another death: not a kill of the target */
	readings__oom_verdict(&v, &a, &b, true, 10, 10, false);
	CHECK(v.known && !v.killed);
	readings__oom_describe(&v, &end, text, sizeof(text));
	CHECK_EQ_STR(text, "");
	/* SIGKILL, counter still: a kill -9, not the OOM killer */
	counter(&b, 1, "/cg/x", true, 3);
	readings__oom_verdict(&v, &a, &b, true, 10, 11, true);
	CHECK(v.known && !v.killed);
	CHECK_EQ_STR(v.counter, "memory.oom_control oom_kill");
	/* v2's name */
	counter(&a, 2, "/cg/x", true, 0);
	counter(&b, 2, "/cg/x", true, 1);
	readings__oom_verdict(&v, &a, &b, false, 0, 0, true);
	CHECK(v.killed);
	CHECK_EQ_STR(v.counter, "memory.events oom_kill");
	/* another cgroup at the end: its counter says nothing; vmstat does */
	counter(&b, 2, "/cg/y", true, 5);
	readings__oom_verdict(&v, &a, &b, true, 7, 8, true);
	CHECK(v.known && v.killed);
	CHECK_EQ_STR(v.counter, "/proc/vmstat oom_kill");
	readings__oom_describe(&v, &end, text, sizeof(text));
	CHECK(strstr(text, "OOM-killed (the kernel's OOM kills, /proc/vmstat oom_kill, went from 7 to 8"));
	/* no counter in the cgroup (old kernel), none in vmstat: unknown */
	counter(&a, 1, "/cg/x", false, 0);
	counter(&b, 1, "/cg/x", false, 0);
	readings__oom_verdict(&v, &a, &b, false, 0, 0, true);
	CHECK(!v.known && !v.killed);
	/* no cgroup at all */
	counter(&a, 0, "", false, 0);
	readings__oom_verdict(&v, &a, &a, true, 1, 1, true);
	CHECK(v.known && !v.killed);
	/* a counter that went down (another cgroup by the same name) */
	counter(&a, 1, "/cg/x", true, 5);
	counter(&b, 1, "/cg/x", true, 0);
	readings__oom_verdict(&v, &a, &b, false, 0, 0, true);
	CHECK(v.known && !v.killed);
}

/* A zombie's reading is refused; the state and vmstat readers. */
static void check_zombie_vmstat(void)
{
	char root[] = "/tmp/test-readings.XXXXXX", dir[PATH_MAX];
	struct readings_source src = { .pid = 4242 };
	struct readings r;
	uint64_t kills;
	char state;

	CHECK(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/4242", root);
	CHECK(!mkdir(dir, 0755));
	/* a comm with ") " in it must not fool the parser */
	put(dir, "stat", "4242 (a) R b) Z 1 4242 4242 0 -1\n");
	put(dir, "status", "Name:\tz\nState:\tZ (zombie)\nThreads:\t1\n");
	put(dir, "cgroup", "0::/\n");
	CHECK_EQ_INT(procmem__state(root, 4242, &state), 0);
	CHECK_EQ_INT(state, 'Z');
	src.proc_root = root;
	src.sys_root = root;
	CHECK_EQ_INT(readings__take(&r, &src), -ECHILD);
	readings__fini(&r);
	/* exiting: not a zombie yet, but its memory is going (no VmSize) */
	put(dir, "stat", "4242 (a) R 1 4242 4242 0 -1\n");
	put(dir, "status", "Name:\tz\nState:\tR (running)\nThreads:\t1\n");
	CHECK_EQ_INT(readings__take(&r, &src), -ECHILD);
	readings__fini(&r);
	put(dir, "stat", "4242 (a) S 1 4242 4242 0 -1\n");
	put(dir, "status", "Name:\tz\nState:\tS (sleeping)\nVmSize:\t   1000 kB\nThreads:\t1\n");
	CHECK_EQ_INT(readings__take(&r, &src), 0);
	CHECK(!r.agent.present);
	readings__fini(&r);
	put(dir, "stat", "4242 (truncated");
	CHECK_EQ_INT(procmem__state(root, 4242, &state), -EPROTO);
	CHECK_EQ_INT(procmem__state(root, 4243, &state), -ENOENT);
	CHECK_EQ_INT(procmem__state("/proc", (pid_t)getpid(), &state), 0);
	CHECK_EQ_INT(state, 'R');

	CHECK_EQ_INT(procmem__vmstat_oom_kill(root, &kills), -ENOENT);
	put(root, "vmstat", "nr_free_pages 12\noom_kill 3\nnr_foo 1\n");
	CHECK_EQ_INT(procmem__vmstat_oom_kill(root, &kills), 0);
	CHECK_EQ_INT(kills, 3);
	put(root, "vmstat", "nr_free_pages 12\n");
	CHECK_EQ_INT(procmem__vmstat_oom_kill(root, &kills), -ENOENT);
	CHECK_EQ_INT(procmem__vmstat_oom_kill("/proc", &kills), 0);

	snprintf(dir, sizeof(dir), "%s/4242/stat", root);
	unlink(dir);
	snprintf(dir, sizeof(dir), "%s/4242/status", root);
	unlink(dir);
	snprintf(dir, sizeof(dir), "%s/4242/cgroup", root);
	unlink(dir);
	snprintf(dir, sizeof(dir), "%s/4242", root);
	CHECK(!rmdir(dir));
	snprintf(dir, sizeof(dir), "%s/vmstat", root);
	unlink(dir);
	CHECK(!rmdir(root));
}

/* PROFILE.json: the reading, then "end" and "final". */
static void check_json_end(void)
{
	struct readings r;
	struct readings_end end = {
		.ended = "was killed by signal 9 (Killed); OOM-killed (x)",
		.has_final = true, .after_exit = true,
		.final_unix_ns = 2000000000ll,
	};
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	memset(&r, 0, sizeof(r));
	r.unix_ns = 1000000000ll;
	r.pid = 7;
	strcpy(r.agent_why, "cannot list /proc/7/fd: Permission denied");
	r.agent_unreadable = true;
	counter(&end.final, 1, "/cg/x", true, 1);
	end.oom.known = end.oom.killed = end.oom.sigkilled = true;
	end.oom.counter = "memory.oom_control oom_kill";
	end.oom.after = 1;
	f = open_memstream(&text, &len);
	CHECK(f);
	readings__json_end(&r, &end, f, false);
	CHECK(!fclose(f));
	CHECK(strstr(text, "\"agent\":null"));
	CHECK(strstr(text, "\"agent_unreadable\":true"));
	CHECK(strstr(text, "\"end\":{\"target\":\"was killed by signal 9 (Killed); OOM-killed (x)\",\"oom_killed\":true,\"oom_kill\":{\"counter\":\"memory.oom_control oom_kill\",\"before\":0,\"after\":1},\"reading\":null,\"peak_rss\":null,\"peak_heap\":null}"));
	CHECK(strstr(text, "\"final\":{\"time\":\"1970-01-01T00:00:02.000Z\",\"unix_ns\":2000000000,\"after_exit\":true,\"cgroup\":{\"version\":1,"));
	CHECK(strstr(text, "\"oom_kill\":1"));
	free(text);
	/* the reading's kind and the peaks */
	end.reading = "at exit";
	end.reading_unix_ns = 1500000000ll;
	end.has_peak_rss = true;
	end.peak_rss = 4096;
	end.peak_rss_from = "wait4 ru_maxrss";
	end.has_peak_heap = end.peak_exact = true;
	end.peak_bytes = 268435456.4;
	end.peak_objects = 65536;
	end.peak_unix_ns = 1250000000ll;
	end.peak_after_s = 0.25;
	text = NULL;
	f = open_memstream(&text, &len);
	CHECK(f);
	readings__json_end(&r, &end, f, false);
	CHECK(!fclose(f));
	CHECK(strstr(text, "\"reading\":{\"taken\":\"at exit\",\"time\":\"1970-01-01T00:00:01.500Z\",\"held_at_exit\":true},\"peak_rss\":{\"bytes\":4096,\"from\":\"wait4 ru_maxrss\"},\"peak_heap\":{\"bytes\":268435456,\"objects\":65536,\"exact\":true,\"snapshot_stale\":false,\"counted_by_agent\":false,\"time\":\"1970-01-01T00:00:01.250Z\",\"unix_ns\":1250000000,\"after_start_s\":0.25,\"rss_then\":null}}"));
	free(text);
	/* the agent's count, above the highest read: its slack and the read */
	end.peak_counted = true;
	end.peak_slack = 98304;
	end.peak_read_bytes = 4096;
	text = NULL;
	f = open_memstream(&text, &len);
	CHECK(f);
	readings__json_end(&r, &end, f, false);
	CHECK(!fclose(f));
	CHECK(strstr(text, "\"peak_heap\":{\"bytes\":268435456,\"objects\":null,\"exact\":true,\"snapshot_stale\":false,\"counted_by_agent\":true,\"slack_bytes\":98304,\"highest_read_bytes\":4096,\"time\":"));
	free(text);
	end.peak_counted = false;
	/* without an end: none of it */
	text = NULL;
	f = open_memstream(&text, &len);
	CHECK(f);
	readings__json(&r, f, false);
	CHECK(!fclose(f));
	CHECK(!strstr(text, "\"end\""));
	CHECK(!strstr(text, "\"final\""));
	free(text);
}

static const char info_xml[] =
	"<malloc version=\"1\">\n"
	"<heap nr=\"0\">\n<sizes>\n"
	"  <size from=\"17\" to=\"32\" total=\"64\" count=\"2\"/>\n"
	"  <unsorted from=\"1\" to=\"2\" total=\"3\" count=\"4\"/>\n"
	"</sizes>\n"
	"<total type=\"fast\" count=\"2\" size=\"64\"/>\n"
	"<total type=\"rest\" count=\"1\" size=\"134208\"/>\n"
	"<system type=\"current\" size=\"135168\"/>\n"
	"<system type=\"max\" size=\"139264\"/>\n"
	"<aspace type=\"total\" size=\"135168\"/>\n"
	"<aspace type=\"mprotect\" size=\"135168\"/>\n"
	"</heap>\n"
	"<heap nr=\"1\">\n<sizes>\n</sizes>\n"
	"<total type=\"fast\" count=\"0\" size=\"0\"/>\n"
	"<total type=\"rest\" count=\"1\" size=\"123600\"/>\n"
	"<system type=\"current\" size=\"135168\"/>\n"
	"<system type=\"max\" size=\"135168\"/>\n"
	"<aspace type=\"total\" size=\"135168\"/>\n"
	"<aspace type=\"mprotect\" size=\"135168\"/>\n"
	"<aspace type=\"subheaps\" size=\"1\"/>\n"
	"</heap>\n"
	"<total type=\"fast\" count=\"2\" size=\"64\"/>\n"
	"<total type=\"rest\" count=\"2\" size=\"257808\"/>\n"
	"<total type=\"mmap\" count=\"200\" size=\"210534400\"/>\n"
	"<system type=\"current\" size=\"270336\"/>\n"
	"<system type=\"max\" size=\"274432\"/>\n"
	"<aspace type=\"total\" size=\"270336\"/>\n"
	"<aspace type=\"mprotect\" size=\"270336\"/>\n"
	"</malloc>\n";

static int parse(const char *xml, size_t len, struct alloc_reading *r)
{
	memset(r, 0, sizeof(*r));
	return allocstats__parse_info(r, xml, len);
}

static void check_malloc_info(void)
{
	struct alloc_reading r;
	char *bad;
	size_t len = strlen(info_xml), i;

	CHECK_EQ_INT(parse(info_xml, len, &r), 0);
	CHECK(r.has_arenas);
	CHECK_EQ_INT(r.narenas, 2);
	CHECK_EQ_INT(r.arenas[0].nr, 0);
	CHECK_EQ_INT(r.arenas[0].fast_count, 2);
	CHECK_EQ_INT(r.arenas[0].fast_size, 64);
	CHECK_EQ_INT(r.arenas[0].rest_size, 134208);
	CHECK_EQ_INT(r.arenas[0].system_max, 139264);
	CHECK_EQ_INT(r.arenas[1].nr, 1);
	CHECK_EQ_INT(r.arenas[1].rest_size, 123600);
	CHECK_EQ_INT(r.total.nr, -1);
	CHECK_EQ_INT(r.total.mmap_count, 200);
	CHECK_EQ_INT(r.total.mmap_size, 210534400);
	CHECK_EQ_INT(r.total.system_current, 270336);
	CHECK_EQ_INT(r.total.aspace_total, 270336);
	allocstats__fini(&r);

	/* every prefix: cut short, never a crash; only the whole passes */
	for (i = 0; i < len - 1; i++) {
		CHECK(parse(info_xml, i, &r) == -EINVAL || i >= len - 2);
		allocstats__fini(&r);
	}
	/* ... unless the agent said it cut it (the area was full) */
	memset(&r, 0, sizeof(r));
	r.arenas_truncated = true;
	CHECK_EQ_INT(allocstats__parse_info(&r, info_xml, len / 2), 0);
	CHECK(r.narenas >= 1 && r.arenas[0].rest_size == 134208);
	allocstats__fini(&r);

	CHECK_EQ_INT(parse("", 0, &r), -EINVAL);
	CHECK(strstr(r.why, "no <malloc>"));
	CHECK_EQ_INT(parse("<heap nr=\"0\">", 13, &r), -EINVAL);
	CHECK_EQ_INT(parse("<malloc><heap nr=\"x\"></heap></malloc>", 37, &r),
		     -EINVAL);
	CHECK(strstr(r.why, "without a number"));
	CHECK_EQ_INT(parse("<malloc><heap nr=\"0\"><heap nr=\"1\"></malloc>",
			   43, &r), -EINVAL);
	CHECK_EQ_INT(parse("<malloc><total type=\"fast\" count=\"1\"/></malloc>",
			   47, &r), -EINVAL);
	CHECK(strstr(r.why, "without its size"));
	CHECK_EQ_INT(parse("<malloc><system type=\"max\" size=\"99999999999999999999999\"/></malloc>",
			   69, &r), -EINVAL);
	/* binary garbage in the middle */
	bad = strdup(info_xml);
	CHECK(bad);
	for (i = 100; i < 140; i++)
		bad[i] = (char)(i * 37);
	bad[120] = 0;
	(void)parse(bad, len, &r);	/* any answer, no crash */
	allocstats__fini(&r);
	free(bad);
}

/* mimalloc 2.0.9's mi_stats_print_out, 64 1 MiB blocks held (release) */
static const char mi_text[] =
	"heap stats:    peak      total      freed    current       unit      count   \n"
	"  reserved:   96.0 MiB   96.0 MiB      0       96.0 MiB                        \n"
	" committed:   96.0 MiB   96.0 MiB      0       96.0 MiB                        \n"
	"     reset:      0          0          0          0                            ok\n"
	"   touched:  192.7 KiB  192.7 KiB      0      192.7 KiB                        not all freed!\n"
	"  segments:      3          3          0          3                            not all freed!\n"
	"-abandoned:      0          0          0          0                            ok\n"
	"     pages:      0          0          0          0                            ok\n"
	"-abandoned:      0          0          0          0                            ok\n"
	"   commits:     1.5 Ki \n"
	"   threads:      2          3          1          2                            ok\n"
	"  searches:     0.0 avg\n"
	"numa nodes:       1\n"
	"   elapsed:       0.079 s\n"
	"   process: user: 0.003 s, system: 0.040 s, faults: 0, rss: 65.6 MiB, commit: 96.0 MiB\n";

static int parse_mi(const char *text, size_t len, struct alloc_reading *r)
{
	memset(r, 0, sizeof(*r));
	return allocstats__parse_mi_text(r, text, len);
}

static void check_mi_text(void)
{
	struct alloc_reading r;
	char *bad;
	size_t len = strlen(mi_text), i;

	CHECK_EQ_INT(parse_mi(mi_text, len, &r), 0);
	CHECK(r.has_mi_text);
	CHECK(r.mi_rows[MI_RESERVED].present);
	CHECK_EQ_INT(r.mi_rows[MI_RESERVED].current, 96ll << 20);
	CHECK_EQ_INT(r.mi_rows[MI_COMMITTED].peak, 96ll << 20);
	CHECK_EQ_INT(r.mi_rows[MI_COMMITTED].freed, 0);
	CHECK_EQ_INT(r.mi_rows[MI_RESET].current, 0);
	CHECK_EQ_INT(r.mi_rows[MI_THREADS].total, 3);
	CHECK_EQ_INT(r.mi_rows[MI_THREADS].current, 2);
	CHECK(r.has_mi_commits);
	CHECK_EQ_INT(r.mi_commits, 1536);	/* "1.5 Ki": the lower end */

	/* cut short: refused, unless the agent said the area cut it */
	for (i = 0; i < len - 1; i++)
		CHECK(parse_mi(mi_text, i, &r) == -EINVAL);
	memset(&r, 0, sizeof(r));
	r.arenas_truncated = true;
	CHECK_EQ_INT(allocstats__parse_mi_text(&r, mi_text, 300), 0);
	CHECK(r.mi_rows[MI_RESERVED].present);
	CHECK(!r.mi_rows[MI_THREADS].present);

	CHECK_EQ_INT(parse_mi("", 0, &r), -EINVAL);
	CHECK(strstr(r.why, "header"));
	bad = strdup(mi_text);
	CHECK(bad);
	/* a column that is not an amount */
	memcpy(strstr(bad, "96.0 MiB"), "96.0 XiB", 8);
	CHECK_EQ_INT(parse_mi(bad, len, &r), -EINVAL);
	CHECK(strstr(r.why, "not an amount"));
	CHECK(!r.mi_rows[MI_RESERVED].present);
	/* a byte that is not text */
	strcpy(bad, mi_text);
	bad[200] = 1;
	CHECK_EQ_INT(parse_mi(bad, len, &r), -EINVAL);
	/* a row twice */
	strcpy(bad, mi_text);
	memcpy(strstr(bad, "     reset:"), " committed:", 11);
	CHECK_EQ_INT(parse_mi(bad, len, &r), -EINVAL);
	CHECK(strstr(r.why, "twice"));
	free(bad);
	/* an amount beyond any process */
	CHECK(asprintf(&bad, "%.*s   commits: 999999999 Gi\n%s",
		       (int)(strstr(mi_text, "   commits") - mi_text), mi_text,
		       strstr(mi_text, "   threads")) > 0);
	CHECK_EQ_INT(parse_mi(bad, strlen(bad), &r), -EINVAL);
	CHECK(strstr(r.why, "commits"));
	free(bad);
}

int main(void)
{
	static const char *const good[] = {
		"v1-debian12", "v2-kernel6-unlimited", "v2-kernel5-limited",
		"v1-old-kernel",
	};
	const char *top = getenv("TOP");
	unsigned int i, n;

	snprintf(fixtures, sizeof(fixtures), "%s/tests/fixtures/telemetry",
		 top ? top : ".");
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		n = check_expect(good[i]);
		CHECK(n >= 15);
	}
	check_malformed();
	check_oom_fixtures();
	check_reread();
	check_verdict();
	check_zombie_vmstat();
	check_json_end();
	check_malloc_info();
	check_mi_text();
	CHECK_SUMMARY("test-readings");
	return 0;
}
