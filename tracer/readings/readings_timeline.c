// SPDX-License-Identifier: MIT
/*
 * readings_timeline.c - readings while a profile is recorded.
 *
 * The tracer's loop calls timeline__tick on every pass; a reading is taken
 * when one is due (every --interval, or every second just to have a
 * recent one at the end), and with --interval appended as one compact
 * JSON line to PROFILE.timeline.jsonl and flushed, so a run that is killed
 * keeps every line written so far.  The sampled heap in each line is the
 * tracer's aggregate at that moment (what the ring has delivered).
 *
 * At the end the JSON file holds the last reading: a fresh one when the
 * target still lives (attached and detaching), else the one taken while
 * its exit() waited for us (timeline__take_at_exit, agent/exitwait.c), or
 * when it died without one (a signal, _exit) the latest taken while it
 * lived - a dead process has no smaps; the file's "time" says when it
 * was, its "end" which it is.
 * Beside it go how the run ended and the memory cgroup read after the end
 * (struct readings_end).  It is written atomically (a temporary file
 * renamed).
 *
 * Neither file is lost with its place (tracer/output/outpath.c): a timeline line
 * that cannot be written (disk full) moves the timeline to a fallback file
 * from that line on, a timeline whose directory was removed meanwhile is
 * copied out of its still-open file at the end, and PROFILE.json goes to a
 * fallback when its own place fails; each is said on stderr.
 *
 * Cost: a reading is a dozen small procfs/cgroupfs reads, smaps_rollup
 * (the kernel walks the page tables) and one futex round trip to the
 * agent's stats thread.  The tracer's own CPU time for them is measured
 * here (CLOCK_THREAD_CPUTIME_ID) for the benchmark.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "tracer/output/outpath.h"
#include "tracer/output/pprof_file.h"
#include "readings_timeline.h"
#include "pa_clock.h"
#include "common/log.h"


char *timeline__sibling(const char *path, const char *suffix)
{
	static const char *const ext[] = { ".pb.gz", ".gz", ".pb" };
	size_t len = strlen(path), i, n;
	char *out;

	for (i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		n = strlen(ext[i]);
		if (len > n && !strcmp(path + len - n, ext[i])) {
			len -= n;
			break;
		}
	}
	if (asprintf(&out, "%.*s%s", (int)len, path, suffix) < 0)
		return NULL;
	return out;
}

int timeline__open(struct timeline *t, const char *profile_path,
		   uint64_t interval_ns)
{
	memset(t, 0, sizeof(*t));
	t->interval_ns = interval_ns ? interval_ns : TIMELINE_DEFAULT_NS;
	t->json_path = timeline__sibling(profile_path, ".json");
	if (!t->json_path)
		return -ENOMEM;
	if (!interval_ns)
		return 0;
	t->timeline_path = timeline__sibling(profile_path, ".timeline.jsonl");
	if (!t->timeline_path)
		return -ENOMEM;
	/* readable too: copied out at the end if its directory is removed */
	t->timeline = fopen(t->timeline_path, "w+e");
	if (!t->timeline) {
		int err = -errno;

		pr_warn("cannot write %s: %s\n",
			t->timeline_path, strerror(-err));
		return err;
	}
	return 0;
}

/*
 * A line could not be written to the timeline: go on in a fallback file
 * (once), from that line.  false when there is none.
 */
static bool move_timeline(struct timeline *t, int err)
{
	char fb[PATH_MAX];
	FILE *f = NULL;
	char *name;

	if (!t->moved && outpath__fallback(t->timeline_path, 0, fb,
					   sizeof(fb)) >= 0)
		f = fopen(fb, "w+e");
	t->moved = true;
	if (!f || !(name = strdup(fb))) {
		if (f)
			fclose(f);
		pr_warn("WARNING: cannot write %s: %s; no more timeline lines (it stops at line %lu)\n",
			t->timeline_path, strerror(err), t->lines);
		return false;
	}
	pr_warn("WARNING: cannot write %s: %s; its lines from line %lu on go to %s\n",
		t->timeline_path, strerror(err), t->lines + 1, fb);
	fclose(t->timeline);
	free(t->timeline_path);
	t->timeline = f;
	t->timeline_path = name;
	return true;
}

static void write_line(struct timeline *t, const struct readings *r)
{
	for (;;) {
		readings__json(r, t->timeline, false);
		if (!fflush(t->timeline) && !ferror(t->timeline)) {
			t->lines++;
			return;
		}
		if (!move_timeline(t, errno ? errno : EIO)) {
			t->failed = true;
			return;
		}
	}
}

/* 0, or -errno: none was taken (a zombie, out of memory). */
static int take(struct timeline *t, const struct readings_source *src)
{
	struct readings r;
	uint64_t cpu0 = pa_thread_cpu_ns();
	int err;

	err = readings__take(&r, src);
	if (err) {
		readings__fini(&r);
		goto out_cpu;
	}
	if (t->timeline && !t->failed)
		write_line(t, &r);
	if (t->have_last) {
		/* a reading without the allocator keeps the last one's */
		if (!r.alloc.ok && t->last.alloc.ok && src->skip_allocator) {
			struct alloc_reading keep = t->last.alloc;

			t->last.alloc = r.alloc;
			r.alloc = keep;
		}
		readings__fini(&t->last);
	}
	t->last = r;
	t->have_last = true;
out_cpu:
	t->readings++;
	t->cpu_ns += pa_thread_cpu_ns() - cpu0;
	return err;
}

void timeline__tick(struct timeline *t, uint64_t now,
		    const struct readings_source *src)
{
	if (now < t->next_ns)
		return;
	/* on the grid, not drifting by the loop's lateness */
	t->next_ns = t->next_ns ? t->next_ns + t->interval_ns :
				  now + t->interval_ns;
	if (t->next_ns <= now)
		t->next_ns = now + t->interval_ns;
	if (!t->timeline) {
		/* without --interval the allocator's statistics (glibc walks
		 * each arena's free lists under its lock) are read every
		 * tenth reading only, and at the end */
		struct readings_source s = *src;

		s.skip_allocator = t->readings % 10 != 0;
		take(t, &s);
		return;
	}
	take(t, src);
}

void timeline__take_at_exit(struct timeline *t,
			    const struct readings_source *src)
{
	t->last_at_exit = !take(t, src);
}

struct buffer {
	const char *data;
	size_t len;
};

static int write_buffer(const char *path, void *ctx)
{
	const struct buffer *b = ctx;

	return pprof_file__write(path, (const uint8_t *)b->data, b->len);
}

/* A copy of the open file fd (from its start) at path, made new. */
static int copy_out(const char *path, void *ctx)
{
	int in = *(const int *)ctx, out, err = 0;
	struct stat st;
	off_t at = 0;

	if (fstat(in, &st))
		return -errno;
	out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (out < 0)
		return -errno;
	while (at < st.st_size) {
		ssize_t n = sendfile(out, in, &at, (size_t)(st.st_size - at));

		if (n <= 0) {
			err = n ? -errno : -EIO;
			break;
		}
	}
	if (!err && fsync(out))
		err = -errno;
	if (close(out) && !err)
		err = -errno;
	if (err)
		unlink(path);
	return err;
}

/* Close the timeline; if its name is gone (its directory was removed
 * meanwhile), copy what it holds to a fallback. */
static void close_timeline(struct timeline *t)
{
	char written[PATH_MAX], what[PATH_MAX + 32];
	struct stat st;
	int fd;

	if (fflush(t->timeline) && !t->failed)
		pr_warn("cannot write %s: %s\n",
			t->timeline_path, strerror(errno));
	fd = fileno(t->timeline);
	if (!fstat(fd, &st) && !st.st_nlink && t->lines) {
		snprintf(what, sizeof(what), "the timeline (%lu lines)",
			 t->lines);
		if (outpath__write(t->timeline_path, copy_out, &fd, what,
				   written, sizeof(written)) == 1) {
			char *name = strdup(written);

			if (name) {
				free(t->timeline_path);
				t->timeline_path = name;
			}
		}
	}
	if (fclose(t->timeline) && !t->failed)
		pr_warn("cannot write %s: %s\n",
			t->timeline_path, strerror(errno));
	t->timeline = NULL;
}

const struct readings *timeline__finish(struct timeline *t,
					const struct readings_source *src,
					bool alive, struct readings_end *end)
{
	char written[PATH_MAX];
	char *json = NULL;
	size_t len = 0;
	uint64_t hwm;
	FILE *mem;

	if (alive)
		take(t, src);
	if (t->timeline)
		close_timeline(t);
	if (!t->have_last) {
		if (!t->quiet_none)
			pr_warn("no reading of the process was taken; %s not written\n",
				t->json_path);
		return NULL;
	}
	if (end) {
		end->reading = alive ? "at the end" :
			       t->last_at_exit ? "at exit" : "periodic";
		end->reading_not_held = t->not_held;
		end->reading_unix_ns = t->last.unix_ns;
		/* the process's own high-water mark, read at its exit (or
		 * now): wait4's ru_maxrss (end's, when launched) counts the
		 * children it waited for too, so it is only for a process
		 * that died without that last reading */
		if (kvset__value(&t->last.proc.status, "VmHWM", &hwm) &&
		    (alive || t->last_at_exit || !end->has_peak_rss)) {
			end->has_peak_rss = true;
			end->peak_rss = hwm;
			end->peak_rss_from = alive || t->last_at_exit ?
				"status VmHWM" :
				"status VmHWM, at the last reading";
		}
		readings__peak_rss_floor(end);
	}
	mem = open_memstream(&json, &len);
	if (!mem) {
		pr_warn("out of memory writing %s\n",
			t->json_path);
		return &t->last;
	}
	readings__json_end(&t->last, end, mem, true);
	if (fclose(mem)) {
		pr_warn("out of memory writing %s\n",
			t->json_path);
		free(json);
		return &t->last;
	}
	{
		struct buffer b = { json, len };

		outpath__write(t->json_path, write_buffer, &b, "the readings",
			       written, sizeof(written));
	}
	free(json);
	return &t->last;
}

void timeline__close(struct timeline *t)
{
	if (t->timeline)
		fclose(t->timeline);
	if (t->have_last)
		readings__fini(&t->last);
	free(t->json_path);
	free(t->timeline_path);
	memset(t, 0, sizeof(*t));
}
