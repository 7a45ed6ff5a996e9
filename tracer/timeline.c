// SPDX-License-Identifier: MIT
/*
 * timeline.c - readings while a profile is recorded.
 *
 * The tracer's loop calls timeline__tick on every pass; a reading is taken
 * when one is due (every --interval, or every second just to have a
 * recent one at the end), and with --interval appended as one compact
 * JSON line to PROFILE.timeline.jsonl and flushed, so a run that is killed
 * keeps every line written so far.  The sampled heap in each line is the
 * tracer's aggregate at that moment (what the ring has delivered).
 *
 * At the end the JSON file holds the last reading: a fresh one when the
 * target still lives (attached and detaching), else the latest taken while
 * it lived - a launched program has exited by the time the tracer knows,
 * and a dead process has no smaps; the file's "time" says when it was.
 * It is written atomically (a temporary file renamed).
 *
 * Cost: a reading is a dozen small procfs/cgroupfs reads, smaps_rollup
 * (the kernel walks the page tables) and one futex round trip to the
 * agent's stats thread.  The tracer's own CPU time for them is measured
 * here (CLOCK_THREAD_CPUTIME_ID) for the benchmark.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "pprof_file.h"
#include "timeline.h"

static const char *prog = "pprof-alloc";

static uint64_t cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* path without its .pb.gz, .gz or .pb, plus suffix */
static char *sibling(const char *path, const char *suffix)
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
	t->json_path = sibling(profile_path, ".json");
	if (!t->json_path)
		return -ENOMEM;
	if (!interval_ns)
		return 0;
	t->timeline_path = sibling(profile_path, ".timeline.jsonl");
	if (!t->timeline_path)
		return -ENOMEM;
	t->timeline = fopen(t->timeline_path, "we");
	if (!t->timeline) {
		int err = -errno;

		fprintf(stderr, "%s: cannot write %s: %s\n", prog,
			t->timeline_path, strerror(-err));
		return err;
	}
	return 0;
}

static void take(struct timeline *t, const struct readings_source *src)
{
	struct readings r;
	uint64_t cpu0 = cpu_now();
	int err;

	err = readings__take(&r, src);
	if (err) {
		readings__fini(&r);
		goto out_cpu;
	}
	if (t->timeline && !t->failed) {
		readings__json(&r, t->timeline, false);
		if (fflush(t->timeline) || ferror(t->timeline)) {
			fprintf(stderr, "%s: cannot write %s: %s; no more timeline lines\n",
				prog, t->timeline_path, strerror(errno));
			t->failed = true;
		} else {
			t->lines++;
		}
	}
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
	t->cpu_ns += cpu_now() - cpu0;
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

const struct readings *timeline__finish(struct timeline *t,
					const struct readings_source *src,
					bool alive)
{
	char *json = NULL;
	size_t len = 0;
	FILE *mem;
	int err;

	if (alive)
		take(t, src);
	if (t->timeline) {
		if (fclose(t->timeline) && !t->failed)
			fprintf(stderr, "%s: cannot write %s: %s\n", prog,
				t->timeline_path, strerror(errno));
		t->timeline = NULL;
	}
	if (!t->have_last) {
		fprintf(stderr, "%s: no reading of the process was taken; %s not written\n",
			prog, t->json_path);
		return NULL;
	}
	mem = open_memstream(&json, &len);
	if (!mem) {
		fprintf(stderr, "%s: out of memory writing %s\n", prog,
			t->json_path);
		return &t->last;
	}
	readings__json(&t->last, mem, true);
	if (fclose(mem)) {
		fprintf(stderr, "%s: out of memory writing %s\n", prog,
			t->json_path);
		free(json);
		return &t->last;
	}
	err = pprof_file__write(t->json_path, (const uint8_t *)json, len);
	if (err)
		fprintf(stderr, "%s: cannot write %s: %s\n", prog,
			t->json_path, strerror(-err));
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
