// SPDX-License-Identifier: MIT
/*
 * report_html.c - one self-contained HTML page from a profile and the
 * readings beside it.
 *
 * The page is the browser side built into the binary (report_assets.c:
 * style, skeleton, script) and one JSON document in a <script
 * type="application/json"> that the script draws from; the contract
 * between the two is at the top of report_page.js.  Everything is in the
 * file: no request leaves it, so it works offline and can be mailed.
 *
 * What goes into the document, all of it read as untrusted input (the
 * profile is checked whole by pprof_file.c; the readings are looked up
 * with json_read.c, which refuses what does not scan):
 *
 *   - the flame graph: the samples merged into a tree of frames, root
 *     first, one node per (parent, function), inline frames expanded,
 *     frames without a function named by their module and offset.  Each
 *     node carries one value per view: in use at the end, allocated, in
 *     use at the peak (a profile of another tool: its own sample types).
 *     Frames under REPORT_FOLD_DEFAULT of every view's total are folded
 *     into an "[other]" frame of their parent, and the share is doubled
 *     until at most REPORT_MAX_NODES are left, so that a profile of any
 *     size makes a page a browser opens in seconds; the page says how
 *     much was folded.
 *   - the chart: PROFILE.timeline.jsonl, each reading cut down to the
 *     handful of numbers charted (a reading is kilobytes of JSON), at most
 *     MAX_POINTS of them (every k-th when there are more, said), and the
 *     heap's peak from PROFILE.json.
 *   - the summary: how the run ended, the peaks, the final readings and
 *     where the anonymous memory went, from PROFILE.json (its "end" and
 *     the reading beside it) and the profile; what was lost or cut short;
 *     and every comment of the profile.
 *
 * The JSON writer escapes '<', '>' and '&' in every string (json.h's
 * script mode), so no name from the target can close the script element.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "elf/array.h"
#include "elf/u64map.h"
#include "tracer/output/json.h"
#include "tracer/output/json_read.h"
#include "tracer/readings/kvfile.h"
#include "tracer/output/pprof_file.h"
#include "tracer/readings/readings.h"
#include "tracer/readings/readings_timeline.h"
#include "report_assets.h"
#include "report_html.h"
#include "common/untrusted.h"

#define MAX_VIEWS	4
#define MAX_POINTS	4000		/* readings charted at most */
#define READINGS_MAX	(16 << 20)	/* PROFILE.json, at most */
#define TIMELINE_MAX	((off_t)1 << 32)	/* the timeline, at most */
#define LINE_MAX_BYTES	(1 << 20)	/* one reading; longer are skipped */
#define OTHER_NAME	"[other]"

typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Function pb_function;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Sample pb_sample;

struct view {
	int type;			/* index in the profile's sample types */
	const char *name, *label, *unit;
};

struct node {
	int32_t parent;			/* -1: the root */
	uint32_t name;
	int32_t out;			/* index in the page, -1: folded */
	int32_t other;			/* its [other] child's, -1: none */
	int32_t other_slot;		/* ... whose values are others[] */
	double v[MAX_VIEWS];
};

struct other_values {
	double v[MAX_VIEWS];
};

struct page {
	const pprof_profile *p;
	struct view views[MAX_VIEWS];
	int nviews;
	/* frame names, deduplicated by key (a function's string, or a
	 * location for an address) */
	char **names;
	size_t nnames, names_cap;
	struct u64map name_of;
	struct node *nodes;
	size_t nnodes, nodes_cap;
	struct u64map child_of;		/* parent << 32 | name -> node */
	struct u64map loc_of;		/* location id -> index */
	struct u64map fn_of;		/* function id -> index */
	struct u64map map_of;		/* mapping id -> index */
	size_t kept, folded;
	struct other_values *others;	/* the [other] frames' values */
	size_t nothers, others_cap;
	/* PROFILE.json, when there */
	char *readings;
	size_t readings_len;
	char readings_why[160];
};

static const char *str(const pprof_profile *p, int64_t i)
{
	return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] :
							 "";
}

/* ---- the views --------------------------------------------------------- */

static int type_index(const pprof_profile *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->n_sample_type; i++)
		if (!strcmp(str(p, p->sample_type[i]->type), name))
			return (int)i;
	return -1;
}

/* Ours (in use, allocated, peak), or whatever the profile has: its default
 * first, at most MAX_VIEWS. */
static void pick_views(struct page *pg)
{
	static const struct { const char *name, *label; } ours[] = {
		{ "inuse_space", "In use at the end" },
		{ "alloc_space", "Allocated" },
		{ "peak_inuse_space", "In use at the peak" },
	};
	const pprof_profile *p = pg->p;
	int i, t, first;

	for (i = 0; i < 3; i++) {
		t = type_index(p, ours[i].name);
		if (t < 0)
			continue;
		pg->views[pg->nviews++] = (struct view){
			t, ours[i].name, ours[i].label, "bytes",
		};
	}
	if (pg->nviews)
		return;
	first = type_index(p, str(p, p->default_sample_type));
	for (i = -1; i < (int)p->n_sample_type && pg->nviews < MAX_VIEWS;
	     i++) {
		t = i < 0 ? first : i;
		if (t < 0 || (i >= 0 && t == first))
			continue;
		pg->views[pg->nviews++] = (struct view){
			t, str(p, p->sample_type[t]->type),
			str(p, p->sample_type[t]->type),
			!strcmp(str(p, p->sample_type[t]->unit), "bytes") ?
				"bytes" : "count",
		};
	}
}

/* ---- the tree ---------------------------------------------------------- */

/* The index of name (copied), known by key.  -ENOMEM. */
static int64_t name_index(struct page *pg, uint64_t key, const char *name)
{
	uint64_t *known = u64map__find(&pg->name_of, key);
	char *copy;

	if (known)
		return (int64_t)*known;
	if (array__grow((void **)&pg->names, &pg->names_cap, pg->nnames + 1,
			sizeof(*pg->names)))
		return -ENOMEM;
	copy = strdup(name);
	if (!copy || u64map__put(&pg->name_of, key, pg->nnames)) {
		free(copy);
		return -ENOMEM;
	}
	pg->names[pg->nnames] = copy;
	return (int64_t)pg->nnames++;
}

static int64_t new_node(struct page *pg, int64_t parent, uint32_t name)
{
	struct node *n;

	if (pg->nnodes >= INT32_MAX ||
	    array__grow((void **)&pg->nodes, &pg->nodes_cap, pg->nnodes + 1,
			sizeof(*pg->nodes)))
		return -ENOMEM;
	n = &pg->nodes[pg->nnodes];
	memset(n, 0, sizeof(*n));
	n->parent = (int32_t)parent;
	n->name = name;
	n->out = -1;
	n->other = -1;
	return (int64_t)pg->nnodes++;
}

static int64_t child(struct page *pg, int64_t parent, uint32_t name)
{
	uint64_t key = (uint64_t)parent << 32 | name;
	uint64_t *known = u64map__find(&pg->child_of, key);
	int64_t i;

	if (known)
		return (int64_t)*known;
	i = new_node(pg, parent, name);
	if (i >= 0 && u64map__put(&pg->child_of, key, (uint64_t)i))
		return -ENOMEM;
	return i;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

/* A frame without a function: its module and offset. */
static int64_t address_name(struct page *pg, const pb_location *loc,
			    size_t li)
{
	const pprof_profile *p = pg->p;
	uint64_t *mi = loc->mapping_id ?
		       u64map__find(&pg->map_of, loc->mapping_id) : NULL;
	char buf[512];

	if (mi) {
		const pb_mapping *m = p->mapping[*mi];

		snprintf(buf, sizeof(buf), "%s+0x%" PRIx64,
			 base_name(str(p, m->filename)),
			 loc->address - m->memory_start + m->file_offset);
	} else {
		snprintf(buf, sizeof(buf), "0x%" PRIx64, loc->address);
	}
	return name_index(pg, 1ull << 63 | li, buf);
}

/* One sample's frames, root first, added to the tree. */
static int add_sample(struct page *pg, const pb_sample *s)
{
	const pprof_profile *p = pg->p;
	double v[MAX_VIEWS];
	int64_t at = 0, name;
	size_t i, j;
	int k;

	for (k = 0; k < pg->nviews; k++)
		v[k] = (double)s->value[pg->views[k].type];
	for (k = 0; k < pg->nviews; k++)
		pg->nodes[0].v[k] += v[k];
	for (i = s->n_location_id; i-- > 0;) {
		uint64_t *li = u64map__find(&pg->loc_of, s->location_id[i]);
		const pb_location *loc;

		if (!li)
			return -EBADMSG;	/* checked: cannot happen */
		loc = p->location[*li];
		for (j = loc->n_line; j-- > 0 || !loc->n_line;) {
			uint64_t *fi = loc->n_line && loc->line[j]->function_id ?
				u64map__find(&pg->fn_of,
					     loc->line[j]->function_id) : NULL;
			const char *fn = fi ? str(p, p->function[*fi]->name) :
					      "";

			name = fn[0] ? name_index(pg, (uint64_t)
					p->function[*fi]->name, fn) :
				       address_name(pg, loc, *li);
			if (name < 0)
				return (int)name;
			at = child(pg, at, (uint32_t)name);
			if (at < 0)
				return (int)at;
			for (k = 0; k < pg->nviews; k++)
				pg->nodes[at].v[k] += v[k];
			if (!loc->n_line)
				break;
		}
	}
	return 0;
}

static int build_tree(struct page *pg)
{
	const pprof_profile *p = pg->p;
	int64_t root;
	size_t i;
	int err;

	for (i = 0; i < p->n_location; i++)
		if (u64map__put(&pg->loc_of, p->location[i]->id, i))
			return -ENOMEM;
	for (i = 0; i < p->n_function; i++)
		if (u64map__put(&pg->fn_of, p->function[i]->id, i))
			return -ENOMEM;
	for (i = 0; i < p->n_mapping; i++)
		if (u64map__put(&pg->map_of, p->mapping[i]->id, i))
			return -ENOMEM;
	root = name_index(pg, 1ull << 62, "all");
	if (root < 0 || new_node(pg, -1, (uint32_t)root) < 0)
		return -ENOMEM;
	for (i = 0; i < p->n_sample; i++) {
		err = add_sample(pg, p->sample[i]);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Which frames the page draws: those at least share of some view's total
 * whose parent is drawn; the others' values go to an [other] frame of
 * their drawn parent.  Returns how many frames that makes, or -ENOMEM.
 */
static int64_t fold_at(struct page *pg, double share)
{
	double min[MAX_VIEWS];
	size_t i, kept = 0;
	int k;

	for (k = 0; k < pg->nviews; k++)
		min[k] = fabs(pg->nodes[0].v[k]) * share;
	pg->folded = 0;
	pg->nothers = 0;
	for (i = 0; i < pg->nnodes; i++) {
		struct node *n = &pg->nodes[i], *up;
		bool big = i == 0;

		n->out = n->other = n->other_slot = -1;
		for (k = 0; k < pg->nviews && !big; k++)
			big = n->v[k] != 0 && fabs(n->v[k]) >= min[k];
		if (i && pg->nodes[n->parent].out < 0)
			continue;		/* inside a folded frame */
		if (big) {
			n->out = (int32_t)kept++;
			continue;
		}
		pg->folded++;
		up = &pg->nodes[n->parent];
		if (up->other < 0) {
			if (array__grow((void **)&pg->others, &pg->others_cap,
					pg->nothers + 1, sizeof(*pg->others)))
				return -ENOMEM;
			memset(&pg->others[pg->nothers], 0,
			       sizeof(*pg->others));
			up->other = (int32_t)kept++;
			up->other_slot = (int32_t)pg->nothers++;
		}
		for (k = 0; k < pg->nviews; k++)
			pg->others[up->other_slot].v[k] += n->v[k];
	}
	pg->kept = kept;
	return (int64_t)kept;
}

/* ---- numbers out of the readings ------------------------------------- */

static bool num(const char *doc, size_t len, const char *path, double *out)
{
	return json_read__number(json_read__get(doc, len, path), out);
}

static bool text(const char *doc, size_t len, const char *path, char *buf,
		 size_t size)
{
	return json_read__string(json_read__get(doc, len, path), buf, size);
}

/* The peak's time after the start, when it is a plausible one. */
static bool after_start(const char *d, size_t len, double *s)
{
	return num(d, len, "end.peak_heap.after_start_s", s) && isfinite(*s) &&
	       *s >= 0 && *s < 1e9;
}

static const char *human(double bytes, char *buf, size_t size)
{
	return readings__human(bytes > 0 ? (uint64_t)llround(bytes) : 0, buf,
			       size);
}

/* ---- the summary ------------------------------------------------------- */

#define MAX_ROWS	16
#define MAX_NOTES	12

struct summary {
	char rows[MAX_ROWS][2][512];
	size_t nrows;
	char notes[MAX_NOTES][512];
	size_t nnotes;
};

static void row(struct summary *s, const char *label, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void row(struct summary *s, const char *label, const char *fmt, ...)
{
	va_list ap;

	if (s->nrows >= MAX_ROWS)
		return;
	snprintf(s->rows[s->nrows][0], sizeof(s->rows[0][0]), "%s", label);
	va_start(ap, fmt);
	vsnprintf(s->rows[s->nrows][1], sizeof(s->rows[0][1]), fmt, ap);
	va_end(ap);
	s->nrows++;
}

static void note(struct summary *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void note(struct summary *s, const char *fmt, ...)
{
	va_list ap;

	if (s->nnotes >= MAX_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(s->notes[s->nnotes], sizeof(s->notes[0]), fmt, ap);
	va_end(ap);
	s->nnotes++;
}

/* The number after "key " in the first comment holding it, or false. */
static bool comment_number(const pprof_profile *p, const char *key,
			   uint64_t *out)
{
	size_t i, n = strlen(key);

	for (i = 0; i < p->n_comment; i++) {
		const char *c = strstr(str(p, p->comment[i]), key);
		char *end;

		if (!c || c[n] < '0' || c[n] > '9')
			continue;
		errno = 0;
		*out = strtoull(c + n, &end, 10);
		return !errno;
	}
	return false;
}

static const char *comment_starting(const pprof_profile *p,
				    const char *prefix)
{
	size_t i, n = strlen(prefix);

	for (i = 0; i < p->n_comment; i++)
		if (!strncmp(str(p, p->comment[i]), prefix, n))
			return str(p, p->comment[i]) + n;
	return NULL;
}

static double view_total(const struct page *pg, const char *name)
{
	int k;

	for (k = 0; k < pg->nviews; k++)
		if (!strcmp(pg->views[k].name, name))
			return pg->nodes[0].v[k];
	return NAN;
}

/* Where the anonymous memory went: the allocator's view against the
 * kernel's. */
static void anon_rows(struct summary *s, const struct page *pg,
		      double heap_end)
{
	const char *d = pg->readings;
	size_t len = pg->readings_len;
	double anon, used = NAN, free_b = NAN, x, y;
	char b1[32], b2[32], b3[32], b4[32];

	if (!num(d, len, "process.status.RssAnon", &anon))
		return;
	if (num(d, len, "allocator.mallinfo2.uordblks", &x)) {
		used = x;
		if (num(d, len, "allocator.mallinfo2.hblkhd", &y))
			used += y;
		if (num(d, len, "allocator.mallinfo2.fordblks", &x))
			free_b = x;
	} else if (num(d, len, "allocator.jemalloc.allocated", &x)) {
		used = x;
		if (num(d, len, "allocator.jemalloc.active", &y))
			free_b = y - x;
	} else if (num(d, len, "allocator.common.in_use", &x)) {
		used = x;	/* tcmalloc's */
		if (num(d, len, "allocator.common.free", &y))
			free_b = y;
	}
	if (!isnan(used)) {
		double rest = anon - used - (isnan(free_b) ? 0 : free_b);

		row(s, "Anon RSS against the heap",
		    "anon RSS %s: the allocator holds %s in use (%.0f%%) and %s free%s; %s is other anonymous memory (thread stacks, mmap outside the allocator, its overhead, freed pages not yet returned)",
		    human(anon, b1, sizeof(b1)), human(used, b2, sizeof(b2)),
		    anon > 0 ? 100.0 * used / anon : 0,
		    isnan(free_b) ? "-" : human(free_b, b3, sizeof(b3)),
		    isnan(free_b) || used + free_b <= 0 ? "" :
			    free_b > 0.25 * (used + free_b) ?
				    " (much of it free: fragmentation, or memory kept after a peak)" :
				    "",
		    rest > 0 ? human(rest, b4, sizeof(b4)) : "nothing");
	} else if (!isnan(heap_end)) {
		row(s, "Anon RSS against the heap",
		    "anon RSS %s, heap in use %s (%.0f%%); the allocator's own statistics were not read",
		    human(anon, b1, sizeof(b1)), human(heap_end, b2, sizeof(b2)),
		    anon > 0 ? 100.0 * heap_end / anon : 0);
	}
}

static void summarize(struct summary *s, const struct page *pg,
		      const char *json_path)
{
	const pprof_profile *p = pg->p;
	const char *d = pg->readings, *c;
	size_t len = pg->readings_len;
	char b1[32], b2[32], b3[32], t[256], when[64];
	double x, y, z, heap_end = view_total(pg, "inuse_space");
	uint64_t n;
	bool exact = p->period == 1, b;

	if (d && text(d, len, "end.target", t, sizeof(t)))
		row(s, "Ended", "%s", t);
	else if ((c = comment_starting(p, "target ")))
		row(s, "Ended", "%s", c);
	if (exact)
		row(s, "Recorded", "every allocation (--rate 1: exact counts)%s",
		    "");
	else
		row(s, "Recorded",
		    "a sample every %s allocated on average; the values are estimates",
		    human((double)p->period, b1, sizeof(b1)));
	if (p->duration_nanos > 0)
		row(s, "Duration", "%.2f s", p->duration_nanos / 1e9);
	if (d && num(d, len, "end.peak_heap.bytes", &x)) {
		char then[96] = "", how[128];
		bool counted;

		if (num(d, len, "end.peak_heap.rss_then", &z) &&
		    num(d, len, "end.peak_heap.rss_then_after_ms", &y))
			snprintf(then, sizeof(then), "; RSS %s read %.0f ms after it",
				 human(z, b2, sizeof(b2)), y);
		when[0] = 0;
		if (after_start(d, len, &y))
			snprintf(when, sizeof(when), " at %.2f s", y);
		b = false;
		json_read__bool(json_read__get(d, len, "end.peak_heap.exact"),
				&b);
		counted = false;
		json_read__bool(json_read__get(d, len,
					       "end.peak_heap.counted_by_agent"),
				&counted);
		if (counted && !b && num(d, len, "end.peak_heap.slack_bytes", &z))
			snprintf(how, sizeof(how),
				 "counted by the agent at every call: at most %s above the peak",
				 human(z, b3, sizeof(b3)));
		else
			snprintf(how, sizeof(how), "%s",
				 counted ? "counted by the agent at every call, exactly" :
				 b ? "exact counts, read every 50 ms: a peak held for less may be seen in part" :
				 "estimated from samples");
		row(s, "Peak heap", "%s%s (%s)%s",
		    human(x, b1, sizeof(b1)), when, how, then);
		b = false;
		json_read__bool(json_read__get(d, len,
					       "end.peak_heap.snapshot_stale"),
				&b);
		if (b)
			note(s, "The tracer ran out of memory for the heap's last snapshot at its peak: the \"in use at the peak\" view is an earlier, lower one.");
	} else if (!isnan(x = view_total(pg, "peak_inuse_space"))) {
		row(s, "Peak heap", "%s", human(x, b1, sizeof(b1)));
	}
	if (d && num(d, len, "end.peak_rss.bytes", &x) &&
	    text(d, len, "end.peak_rss.from", t, sizeof(t)))
		row(s, "Peak RSS", "%s (%s)", human(x, b1, sizeof(b1)), t);
	if (d && num(d, len, "process.status.VmRSS", &x)) {
		char how[320] = "";

		if (text(d, len, "end.reading.taken", t, sizeof(t))) {
			if (!text(d, len, "time", when, sizeof(when)))
				snprintf(when, sizeof(when), "at an unknown time");
			if (!strcmp(t, "periodic")) {
				bool held = true;

				snprintf(how, sizeof(how),
					 " (the last periodic reading, %s)",
					 when);
				json_read__bool(json_read__get(d, len,
					"end.reading.held_at_exit"), &held);
				if (held)
					note(s, "The process ended without a last reading (a signal, or _exit): the final readings are the last periodic ones, taken at %s.",
					     when);
				else
					note(s, "A followed process is not held at its exit for a last reading: the final readings are the last periodic ones, taken at %s.",
					     when);
			} else {
				snprintf(how, sizeof(how), " (%s)", t);
			}
		}
		if (!num(d, len, "process.status.RssAnon", &y))
			y = NAN;
		if (!num(d, len, "process.status.RssShmem", &z))
			z = NAN;
		row(s, "Final RSS", "%s: anon %s, shared memory %s%s",
		    human(x, b1, sizeof(b1)),
		    isnan(y) ? "-" : human(y, b2, sizeof(b2)),
		    isnan(z) ? "-" : human(z, b3, sizeof(b3)), how);
	}
	if (!isnan(heap_end))
		row(s, "Heap in use at the end", "%s%s",
		    human(heap_end, b1, sizeof(b1)),
		    exact ? "" : " (estimated)");
	if (d)
		anon_rows(s, pg, heap_end);
	if (d && text(d, len, "cgroup.path", t, sizeof(t)) &&
	    num(d, len, "cgroup.common.usage", &x)) {
		char lim[32];

		if (num(d, len, "cgroup.common.limit", &y))
			human(y, lim, sizeof(lim));
		else if (!text(d, len, "cgroup.common.limit", lim, sizeof(lim)))
			snprintf(lim, sizeof(lim), "-");
		row(s, "Memory cgroup", "%s: usage %s, limit %s", t,
		    human(x, b1, sizeof(b1)), lim);
	}
	if (d && num(d, len, "agent.memfd_bytes", &x)) {
		char size[40] = "";

		if (num(d, len, "agent.memfd_size", &y))
			snprintf(size, sizeof(size), " (made as used, of %s)",
				 human(y, b2, sizeof(b2)));
		row(s, "pprof-alloc's own memory",
		    "%s of shared memory in the process%s, counted in its RSS",
		    human(x, b1, sizeof(b1)), size);
	}
	if (comment_number(p, "lost records ", &n) && n)
		note(s, "%" PRIu64 " records were lost (the ring was full): the profile holds less than the program did. See the profile's comments.",
		     n);
	if (comment_number(p, "stacks truncated ", &n) && n)
		note(s, "%" PRIu64 " stacks were longer than --max-frames and were cut short ([truncated] frames).",
		     n);
	if (d && num(d, len, "agent.lost_records", &x) && x > 0 &&
	    !comment_number(p, "lost records ", &n))
		note(s, "%.0f records were lost (the ring was full).", x);
	if (!d)
		note(s, "No readings: %s (%s). The summary and the chart have only what the profile holds.",
		     json_path ? json_path : "PROFILE.json",
		     pg->readings_why);
}

/* ---- the page ---------------------------------------------------------- */

/* One timeline reading, cut down to what the chart draws, as a string:
 * the same paths, nested as in the reading. */
static int small_reading(const char *line, size_t len, char **out)
{
	/* in order, so that paths sharing a prefix are next to each other */
	static const char *const paths[] = {
		"unix_ns",
		"process.smaps_rollup.Rss", "process.smaps_rollup.Anonymous",
		"process.status.VmRSS", "process.status.RssAnon",
		"heap.inuse_bytes",
		"allocator.mallinfo2.uordblks", "allocator.mallinfo2.hblkhd",
		"allocator.mallinfo2.fordblks",
		"allocator.jemalloc.allocated", "allocator.jemalloc.active",
		"allocator.common.in_use", "allocator.common.free",
		"cgroup.common.usage", "cgroup.common.limit",
	};
	char open[4][32];		/* the objects open now, outermost first */
	size_t olen = 0, i;
	int depth = 0;
	struct json j;
	FILE *f;

	*out = NULL;
	f = open_memstream(out, &olen);
	if (!f)
		return -ENOMEM;
	json__init(&j, f, false);
	json__begin_object(&j, NULL);
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		char key[64], *part[4], *save = NULL;
		int n = 0, k, same = 0;
		double v;

		if (!num(line, len, paths[i], &v))
			continue;
		snprintf(key, sizeof(key), "%s", paths[i]);
		for (part[n] = strtok_r(key, ".", &save); part[n] && n < 3;
		     part[++n] = strtok_r(NULL, ".", &save))
			;
		/* n parts: n - 1 objects, then the value */
		while (same < depth && same < n - 1 &&
		       !strcmp(open[same], part[same]))
			same++;
		for (; depth > same; depth--)
			json__end(&j);
		for (k = depth; k < n - 1; k++) {
			json__begin_object(&j, part[k]);
			snprintf(open[k], sizeof(open[k]), "%s", part[k]);
		}
		depth = n - 1;
		json__double(&j, part[n - 1], v);
	}
	for (; depth > 0; depth--)
		json__end(&j);
	json__end(&j);
	json__finish(&j);
	if (fclose(f)) {
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* A file of ours to read (the readings): a regular file, opened without
 * blocking (a FIFO put in its place would hang us), of at most max bytes.
 * The stream, or NULL with errno set. */
static FILE *open_regular(const char *path, off_t max)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	FILE *f;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > max) {
		int err = fstat(fd, &st) ? errno :
			  !S_ISREG(st.st_mode) ? EINVAL : EFBIG;

		close(fd);
		errno = err;
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f)
		close(fd);
	return f;
}

/* The next line of f into buf (size bytes, NUL-terminated, without its
 * newline): 1, 0 at the end, -1 for a line too long (skipped whole). */
static int next_line(FILE *f, char *buf, size_t size, size_t *len)
{
	bool cut = false;

	for (;;) {
		size_t n;

		if (!fgets(buf, (int)size, f))
			return cut ? -1 : 0;
		n = strlen(buf);
		if (n && buf[n - 1] == '\n') {
			if (cut)
				return -1;
			buf[--n] = 0;
			*len = n;
			return 1;
		}
		if (n + 1 < size) {	/* the last line, without a newline */
			if (cut)
				return -1;
			*len = n;
			return 1;
		}
		cut = true;		/* longer than buf: to its end */
	}
}

/* The timeline's readings, every k-th when there are more than
 * MAX_POINTS; how many are in the file.  Readings of another process than
 * pid (when not 0: a file left by another run) make -ESTALE. */
static int timeline(struct json *j, const char *path, double pid,
		    size_t *shown, size_t *in_file)
{
	size_t n = 0, stride, i = 0, len;
	char *line, *small;
	int err = 0, got;
	double p;
	FILE *f;

	*shown = *in_file = 0;
	f = open_regular(path, TIMELINE_MAX);
	if (!f)
		return -errno;
	line = malloc(LINE_MAX_BYTES);
	if (!line) {
		fclose(f);
		return -ENOMEM;
	}
	while ((got = next_line(f, line, LINE_MAX_BYTES, &len)) != 0) {
		if (got < 0)
			continue;
		if (pid && num(line, len, "pid", &p) && p != pid) {
			err = -ESTALE;
			goto out_free;
		}
		n++;
	}
	stride = n > MAX_POINTS ? (n + MAX_POINTS - 1) / MAX_POINTS : 1;
	rewind(f);
	json__begin_array(j, "lines");
	while ((got = next_line(f, line, LINE_MAX_BYTES, &len)) != 0) {
		if (got < 0 || i++ % stride)
			continue;
		err = small_reading(line, len, &small);
		if (err)
			break;
		if (strcmp(small, "{}\n")) {
			/* json__string wants no newline at its end */
			small[strcspn(small, "\n")] = 0;
			json__string(j, NULL, small);
			(*shown)++;
		}
		free(small);
	}
	json__end(j);
	*in_file = n;
out_free:
	free(line);
	fclose(f);
	return err;
}

static int write_flame(struct json *j, struct page *pg, double share)
{
	int64_t *name_out, *at, other_name = -1;
	size_t i, nout = 0;
	char folded[256];
	int k;

	name_out = calloc(pg->nnames + 1, sizeof(*name_out));
	/* page index -> node (>= 0), or the [other] of node -2 - it */
	at = malloc((pg->kept + 1) * sizeof(*at));
	if (!name_out || !at) {
		free(name_out);
		free(at);
		return -ENOMEM;
	}
	for (i = 0; i < pg->nnodes; i++) {
		if (pg->nodes[i].out >= 0)
			at[pg->nodes[i].out] = (int64_t)i;
		if (pg->nodes[i].other >= 0)
			at[pg->nodes[i].other] = -2 - (int64_t)i;
	}
	json__begin_object(j, "flame");
	json__begin_array(j, "types");
	for (k = 0; k < pg->nviews; k++) {
		json__begin_object(j, NULL);
		json__string(j, "name", pg->views[k].name);
		json__string(j, "label", pg->views[k].label);
		json__string(j, "unit", pg->views[k].unit);
		json__end(j);
	}
	json__end(j);
	/* the names the drawn frames use, in page order */
	json__begin_array(j, "names");
	for (i = 0; i < pg->kept; i++) {
		if (at[i] <= -2) {
			if (other_name < 0) {
				other_name = (int64_t)nout++;
				json__string(j, NULL, OTHER_NAME);
			}
			continue;
		}
		if (!name_out[pg->nodes[at[i]].name]) {
			name_out[pg->nodes[at[i]].name] = (int64_t)++nout;
			json__string(j, NULL, pg->names[pg->nodes[at[i]].name]);
		}
	}
	json__end(j);
	/* [parent, name, values...]: every parent before its children */
	json__begin_array(j, "nodes");
	for (i = 0; i < pg->kept; i++) {
		const struct node *n = &pg->nodes[at[i] <= -2 ? -2 - at[i] :
						  at[i]];

		json__begin_array(j, NULL);
		if (at[i] <= -2) {
			json__i64(j, NULL, n->out);
			json__i64(j, NULL, other_name);
			for (k = 0; k < pg->nviews; k++)
				json__double(j, NULL,
					     round(pg->others[n->other_slot].v[k]));
		} else {
			json__i64(j, NULL, n->parent < 0 ? -1 :
				  pg->nodes[n->parent].out);
			json__i64(j, NULL, name_out[n->name] - 1);
			for (k = 0; k < pg->nviews; k++)
				json__double(j, NULL, round(n->v[k]));
		}
		json__end(j);
	}
	json__end(j);
	if (pg->folded) {
		snprintf(folded, sizeof(folded),
			 "%zu frames under %.3g%% of every view were folded into %s frames; %zu frames are drawn.",
			 pg->folded, share * 100, OTHER_NAME, pg->kept);
		json__string(j, "folded", folded);
	} else {
		json__null(j, "folded");
	}
	json__end(j);
	free(name_out);
	free(at);
	return 0;
}

/* A run of cleaned text (untrusted.c) with the few characters HTML gives
 * meaning escaped. */
static void html_put(void *ctx, const char *s, size_t n)
{
	FILE *f = ctx;
	size_t i;

	for (i = 0; i < n; i++) {
		switch (s[i]) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(s[i], f);
		}
	}
}

/* Text for the page's <title> (the command, the target's). */
static void html_text(FILE *f, const char *s)
{
	untrusted__write(s, html_put, f);
}

static void write_summary(struct json *j, const struct summary *s,
			  const pprof_profile *p)
{
	size_t i;

	json__begin_object(j, "summary");
	json__begin_array(j, "rows");
	for (i = 0; i < s->nrows; i++) {
		json__begin_array(j, NULL);
		json__string(j, NULL, s->rows[i][0]);
		json__string(j, NULL, s->rows[i][1]);
		json__end(j);
	}
	json__end(j);
	json__begin_array(j, "notes");
	for (i = 0; i < s->nnotes; i++)
		json__string(j, NULL, s->notes[i]);
	json__end(j);
	json__begin_array(j, "comments");
	for (i = 0; i < p->n_comment; i++)
		json__string(j, NULL, str(p, p->comment[i]));
	json__end(j);
	json__end(j);
}

/* The chart's part: the readings and the heap's peak. */
static int write_timeline(struct json *j, const struct page *pg,
			  const char *path, struct summary *sum,
			  size_t *shown)
{
	const char *d = pg->readings;
	size_t len = pg->readings_len, in_file;
	double peak, at, after, pid;
	char b[32], label[96];
	int err;

	*shown = 0;
	if (access(path, F_OK)) {
		json__null(j, "timeline");
		return 0;
	}
	if (!d || !num(d, len, "pid", &pid))
		pid = 0;
	json__begin_object(j, "timeline");
	err = timeline(j, path, pid, shown, &in_file);
	if (err == -ENOMEM)
		return err;
	if (err) {			/* none charted */
		json__begin_array(j, "lines");
		json__end(j);
	}
	if (err == -ESTALE)
		note(sum, "The timeline %s is of another process than the readings beside the profile (a file left by another run): it is not charted.",
		     path);
	else if (err)
		note(sum, "The timeline %s cannot be read: %s.", path,
		     strerror(-err));
	else if (*shown < in_file)
		note(sum, "The chart shows %zu of the %zu readings in %s (evenly spaced).",
		     *shown, in_file, path);
	/* times the chart can draw: after 1970, before 2200 */
	if (d && num(d, len, "end.peak_heap.unix_ns", &at) &&
	    num(d, len, "end.peak_heap.bytes", &peak) && at > 0 && at < 7.3e18 &&
	    isfinite(peak) && peak >= 0) {
		if (after_start(d, len, &after) && at - after * 1e9 > 0)
			json__double(j, "start_unix_ns", at - after * 1e9);
		else
			json__null(j, "start_unix_ns");
		snprintf(label, sizeof(label), "peak heap %s",
			 human(peak, b, sizeof(b)));
		json__begin_object(j, "peak");
		json__double(j, "unix_ns", at);
		json__double(j, "bytes", round(peak));
		json__string(j, "label", label);
		json__end(j);
	} else {
		json__null(j, "start_unix_ns");
		json__null(j, "peak");
	}
	json__end(j);
	return 0;
}

static void read_readings(struct page *pg, const char *path)
{
	FILE *f = open_regular(path, READINGS_MAX);
	size_t n = 0;
	int err = 0;

	pg->readings = f ? malloc(READINGS_MAX + 1) : NULL;
	if (!f || !pg->readings) {
		err = f ? -ENOMEM : -errno;
	} else {
		n = fread(pg->readings, 1, READINGS_MAX, f);
		if (ferror(f))
			err = -EIO;
	}
	if (f)
		fclose(f);
	if (err) {
		snprintf(pg->readings_why, sizeof(pg->readings_why), "%s",
			 strerror(-err));
		free(pg->readings);
		pg->readings = NULL;
		return;
	}
	pg->readings[n] = 0;
	pg->readings_len = n;
	if (!json_read__valid(pg->readings, pg->readings_len)) {
		snprintf(pg->readings_why, sizeof(pg->readings_why),
			 "not valid JSON");
		free(pg->readings);
		pg->readings = NULL;
	}
}

static void page_fini(struct page *pg)
{
	size_t i;

	for (i = 0; i < pg->nnames; i++)
		free(pg->names[i]);
	free(pg->names);
	free(pg->nodes);
	free(pg->others);
	free(pg->readings);
	u64map__fini(&pg->name_of);
	u64map__fini(&pg->child_of);
	u64map__fini(&pg->loc_of);
	u64map__fini(&pg->fn_of);
	u64map__fini(&pg->map_of);
}

int report_html__write(const char *profile, const char *out,
		       struct report_html_stats *st, char *why,
		       size_t why_size)
{
	struct pprof_file *pf = NULL;
	struct summary *sum = NULL;
	struct page pg;
	char *json_path = NULL, *tl_path = NULL, *doc = NULL, when[40];
	const char *title;
	double share = REPORT_FOLD_DEFAULT;
	size_t doc_len = 0;
	struct json j;
	FILE *f;
	int err;

	memset(st, 0, sizeof(*st));
	memset(&pg, 0, sizeof(pg));
	u64map__init(&pg.name_of);
	u64map__init(&pg.child_of);
	u64map__init(&pg.loc_of);
	u64map__init(&pg.fn_of);
	u64map__init(&pg.map_of);
	err = pprof_file__read(profile, &pf, why, why_size);
	if (err)
		goto out_page;
	pg.p = pf->profile;
	pick_views(&pg);
	if (!pg.nviews) {
		snprintf(why, why_size, "the profile has no sample types");
		err = -EBADMSG;
		goto out_page;
	}
	err = build_tree(&pg);
	if (err)
		goto out_nomem;
	for (;;) {
		int64_t kept = fold_at(&pg, share);

		if (kept < 0) {
			err = (int)kept;
			goto out_nomem;
		}
		if ((size_t)kept <= REPORT_MAX_NODES || share >= 0.5)
			break;
		share *= 2;
	}
	json_path = timeline__sibling(profile, ".json");
	tl_path = timeline__sibling(profile, ".timeline.jsonl");
	sum = calloc(1, sizeof(*sum));
	if (!json_path || !tl_path || !sum) {
		err = -ENOMEM;
		goto out_nomem;
	}
	read_readings(&pg, json_path);
	summarize(sum, &pg, json_path);
	if (pg.folded)
		note(sum, "%zu small frames were folded into [other] frames to keep the page light (frames under %.3g%% of every view).",
		     pg.folded, share * 100);

	title = comment_starting(pg.p, "pprof-alloc: ");
	if (!title)
		title = profile;
	f = open_memstream(&doc, &doc_len);
	if (!f) {
		err = -ENOMEM;
		goto out_nomem;
	}
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	      "<meta name=\"viewport\" content=\"width=device-width\">"
	      "<title>pprof-alloc: ", f);
	html_text(f, title);
	fputs("</title><style>\n", f);
	fputs(report_page_css, f);
	fputs("</style></head><body>\n", f);
	fputs(report_page_html, f);
	fputs("<script type=\"application/json\" id=\"pa-data\">", f);
	json__init(&j, f, false);
	j.script = true;
	json__begin_object(&j, NULL);
	json__string(&j, "title", title);
	readings__iso_time((int64_t)time(NULL) * 1000000000ll, when,
			   sizeof(when));
	json__string(&j, "generated", when);
	err = write_timeline(&j, &pg, tl_path, sum, &st->timeline_lines);
	if (!err)
		err = write_flame(&j, &pg, share);
	write_summary(&j, sum, pg.p);
	json__end(&j);
	fputs("</script>\n<script>\n", f);
	fputs(report_page_js, f);
	fputs("</script>\n</body></html>\n", f);
	if (fclose(f) || err) {
		err = -ENOMEM;
		goto out_nomem;
	}
	st->stacks = pg.p->n_sample;
	st->nodes = pg.kept;
	st->folded = pg.folded;
	st->bytes = doc_len;
	err = pprof_file__write(out, (const uint8_t *)doc, doc_len);
	if (err)
		snprintf(why, why_size, "cannot write %s: %s", out,
			 strerror(-err));
	goto out_page;
out_nomem:
	if (err == -ENOMEM)
		snprintf(why, why_size, "out of memory");
	else if (err == -EBADMSG && !why[0])
		snprintf(why, why_size, "the profile refers to a location it does not have");
out_page:
	free(doc);
	free(sum);
	free(json_path);
	free(tl_path);
	page_fini(&pg);
	pprof_file__free(pf);
	return err;
}
