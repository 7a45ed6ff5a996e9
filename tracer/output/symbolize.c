// SPDX-License-Identifier: MIT
/*
 * symbolize.c - functions, source files and lines for a profile that has
 * addresses only (`pprof-alloc symbolize`'s engine; cmd_symbolize.c is its
 * front-end).
 *
 * A profile recorded with --no-symbolize (or by any other tool that keeps
 * addresses, mappings and build IDs) is read - from a file, a pipe, or
 * standard input for "-" - and checked whole, each
 * mapping's module is located by build ID and loaded (elf/symbols.c,
 * elf/debuginfo.c), every location of a located mapping gets
 * its Lines - inline frames leaf first - and the profile is written back
 * atomically.  Each module gets one line on stderr saying where its
 * symbols came from or why there are none.  Nothing else in the profile
 * changes: samples, labels, unknown fields and the locations of mappings
 * that could not be symbolized are written as they were read, so `go tool
 * pprof` may still try those itself.  Mappings that already say they have
 * functions are left alone unless forced.
 *
 * A profile pprof-alloc wrote is read by pprof_splice.c: everything but
 * its samples is unpacked, and its samples, kept as bytes, are read and
 * checked by other threads while the modules load and the addresses
 * resolve; pprof_splice__finish() waits for them before anything is
 * written or said.  If they show that the file must be read the usual way
 * after all (a member not as pprof-alloc cuts them, a sample encoded
 * another way, a damaged file), it is, and symbolizing starts again on
 * what that gives - or on nothing, with its reason.  So the lines about
 * modules are kept until then (report_say()), and said once.  Any other
 * profile is read whole by pprof_file.c.
 *
 * The unpacked message lives in the arena it was read into
 * (pprof_file.c), so it is edited in place: the string table, function
 * list, comments and each changed location's line list are replaced by
 * arrays of ours for the pack, and the arena releases everything at the
 * end.  New strings are the symbolizers' interned ones, matched by
 * pointer and, since each thread interns its own (symbolize_jobs.c), by
 * content too: each distinct string gets one index, and a (name, system
 * name, file) triple of indices one function id.  Indices and ids are
 * handed out in location order, frames leaf first, so the output is the
 * same byte for byte whatever the number of jobs.
 *
 * Unique addresses are resolved once each, in address order, split among
 * the jobs' threads (elf/symbolize_jobs.c).
 *
 * The new message needs no sample: it is made, packed and its new part
 * gzipped (pprof_splice__prepare()) before pprof_splice__finish() waits
 * for the samples, in the time their reading takes anyway.
 *
 * The output is fsynced before its rename only when it replaces the
 * input (the same file): there a power cut could otherwise leave an empty
 * file where the profile was.  Written anywhere else, the input it is
 * made from is left alone, so nothing is lost that running the command
 * again does not give back, and the wait is not worth it (a few ms of a
 * run of tens).
 */
#include "symbolize.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "elf/array.h"
#include "elf/elfinfo.h"
#include "pprof_file.h"
#include "pprof_splice.h"
#include "elf/arena.h"
#include "common/untrusted.h"
#include "elf/names.h"
#include "tracer/record/sigbus.h"
#include "elf/symbolize_jobs.h"
#include "elf/symbols.h"
#include "elf/u64map.h"
#include "common/log.h"

#define MAX_JOBS	8	/* the default's cap: more rarely pays */

typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Function pb_function;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Line pb_line;

/* The arrays that replace parts of the message for the pack. */
struct rewrite {
	pprof_profile *p;
	struct arena *arena;		/* the message's */
	struct symbols *syms;

	char **strings;			/* old entries, then new ones */
	size_t nstrings, strings_cap;
	struct u64map string_ids;	/* interned pointer -> index */
	struct u64map string_content;	/* content hash (+ probe) -> index */
	int64_t unknown_id;		/* "??", 0 until needed */

	pb_function *functions;		/* new ones */
	size_t nfunctions, functions_cap;
	struct u64map function_ids;	/* hash of the triple -> index */
	uint64_t next_function_id;

	bool built;		/* build_message() done */

	/* By location: where its frames are in the batch (count 0: none). */
	struct sym_batch batch;
	size_t *located;		/* batch item -> location index */
	size_t nlocated;

	char **report;		/* a line per module, said at the end */
	size_t nreport, report_cap;

	bool *mapping_on;	/* by mapping index: symbolize its locations */
	bool *mapping_dwarf;	/* ... and it has debug info */
	bool *mapping_hit;	/* ... and some location got a line */
	struct u64map mapping_index;	/* id -> index */
};

/*
 * String index of s (NULL and "" are 0), whose content hash is hash: one
 * index per distinct string, whichever symbolizer interned it.  -ENOMEM.
 */
static int64_t string_index(struct rewrite *rw, const char *s, uint64_t hash)
{
	struct u64map_slot *slot;
	uint64_t key;
	int64_t index;
	int err;

	for (key = hash;; key++) {
		slot = u64map__slot(&rw->string_content, key);
		if (!slot)
			break;
		if (!strcmp(rw->strings[slot->value], s))
			return (int64_t)slot->value;
	}
	err = array__grow((void **)&rw->strings, &rw->strings_cap,
			  rw->nstrings + 1, sizeof(*rw->strings));
	if (err)
		return err;
	index = (int64_t)rw->nstrings;
	rw->strings[rw->nstrings++] = (char *)s;
	if (u64map__put(&rw->string_content, key, (uint64_t)index))
		return -ENOMEM;
	return index;
}

/* What a run whose caller exits at once leaves (symbolize_opts.exiting). */
static struct pprof_file *left_file;
static struct pprof_splice *left_splice;
static struct rewrite left_rw;

/* String index of an interned string (NULL and "" are 0), or -ENOMEM. */
static int64_t string_id(struct rewrite *rw, const char *s)
{
	uint64_t *known;
	int64_t index;

	const char *as = s;

	if (!s || !*s)
		return 0;
	known = u64map__find(&rw->string_ids, (uintptr_t)s);
	if (known)
		return (int64_t)*known;
	/* names from the target's binaries: the table holds them cleaned */
	if (!untrusted__is_clean(s, UNTRUSTED_MAX)) {
		size_t len = strnlen(s, UNTRUSTED_MAX + 1);
		size_t size = len * 4 + 1 > UNTRUSTED_MAX + 1 ?
			      UNTRUSTED_MAX + 1 : len * 4 + 1;
		char *copy = arena__alloc(rw->arena, size);

		if (!copy)
			return -ENOMEM;
		untrusted__clean(copy, size, s, len);
		as = copy;
	}
	index = string_index(rw, as, names__hash(as));
	if (index < 0)
		return index;
	if (u64map__put(&rw->string_ids, (uintptr_t)s, (uint64_t)index))
		return -ENOMEM;
	return index;
}

/* Function id for a frame, added the first time.  > 0 or -ENOMEM. */
static int64_t function_id(struct rewrite *rw, const struct sym_frame *f)
{
	int64_t n, r, file = string_id(rw, f->file);
	uint64_t key;
	pb_function *fn;
	int err;

	if (f->function) {
		n = string_id(rw, f->function);
		r = f->system_name ? string_id(rw, f->system_name) : n;
	} else {
		if (!rw->unknown_id)
			rw->unknown_id = string_index(rw, "??",
						      names__hash_str("??"));
		n = r = rw->unknown_id;
	}
	if (n < 0 || r < 0 || file < 0)
		return -ENOMEM;
	key = u64_hash((uint64_t)n * 0x9e3779b97f4a7c15ULL ^
		       (uint64_t)r * 0xc2b2ae3d27d4eb4fULL ^ (uint64_t)file);
	for (;; key++) {
		struct u64map_slot *slot = u64map__slot(&rw->function_ids, key);

		if (!slot)
			break;
		fn = &rw->functions[slot->value];
		if (fn->name == n && fn->system_name == r &&
		    fn->filename == file)
			return (int64_t)fn->id;
	}
	err = array__grow((void **)&rw->functions, &rw->functions_cap,
		   rw->nfunctions + 1, sizeof(*rw->functions));
	if (err)
		return err;
	fn = &rw->functions[rw->nfunctions];
	perftools__profiles__function__init(fn);
	fn->id = rw->next_function_id++;
	fn->name = n;
	fn->system_name = r;
	fn->filename = file;
	if (u64map__put(&rw->function_ids, key, rw->nfunctions))
		return -ENOMEM;
	rw->nfunctions++;
	return (int64_t)fn->id;
}

static bool parse_build_id(const char *hex, uint8_t *out, size_t *len)
{
	size_t n = strlen(hex);

	if (n == 0 || n % 2 || n / 2 > ELFINFO_BUILD_ID_MAX)
		return false;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned int byte;

		if (sscanf(hex + 2 * i, "%2x", &byte) != 1 ||
		    !strchr("0123456789abcdefABCDEF", hex[2 * i]) ||
		    !strchr("0123456789abcdefABCDEF", hex[2 * i + 1]))
			return false;
		out[i] = (uint8_t)byte;
	}
	*len = n / 2;
	return true;
}

/* A line for the report on stderr (said by report_say()).  -ENOMEM. */
static int report(struct rewrite *rw, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int report(struct rewrite *rw, const char *fmt, ...)
{
	va_list ap;
	char *line;
	int n, err;

	err = array__grow((void **)&rw->report, &rw->report_cap,
			  rw->nreport + 1, sizeof(*rw->report));
	if (err)
		return err;
	va_start(ap, fmt);
	n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	rw->report[rw->nreport++] = line;
	return 0;
}

static void report_say(const struct rewrite *rw)
{
	for (size_t i = 0; i < rw->nreport; i++)
		pr_info("%s", rw->report[i]);
}

/* Locate and load each mapping's module; report once per module. */
static int load_mappings(struct rewrite *rw, const struct symbolize_opts *o,
			 size_t *unsymbolized)
{
	const pprof_profile *p = rw->p;
	const struct debuginfo_found **reported;
	size_t nreported = 0, *lookups;
	int err = 0;

	reported = calloc(p->n_mapping + 1, sizeof(*reported));
	lookups = calloc(p->n_mapping + 1, sizeof(*lookups));
	if (!reported || !lookups) {
		free(reported);
		free(lookups);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->n_mapping && !err; i++)
		err = u64map__put(&rw->mapping_index, p->mapping[i]->id, i);
	/* Only mappings some location points into are worth a lookup. */
	for (size_t i = 0; i < p->n_location && !err; i++) {
		uint64_t *mi = u64map__find(&rw->mapping_index,
					    p->location[i]->mapping_id);

		if (mi && (!p->location[i]->n_line || o->force)) {
			rw->mapping_hit[*mi] = true;
			lookups[*mi]++;
		}
	}
	for (size_t i = 0; i < p->n_mapping && !err; i++) {
		const pb_mapping *m = p->mapping[i];
		const char *path = p->string_table[m->filename];
		const char *path_to_open = path;
		const char *bid_hex = p->string_table[m->build_id];
		const struct debuginfo_found *found = NULL;
		uint8_t bid[ELFINFO_BUILD_ID_MAX];
		size_t bid_len = 0;
		bool registered = false, seen = false;
		char line[2048];

		if (!rw->mapping_hit[i] || (m->has_functions && !o->force))
			continue;
		if (*bid_hex && !parse_build_id(bid_hex, bid, &bid_len)) {
			err = report(rw, "%s [%s]: no symbols: the build ID is not hex\n",
				     path, bid_hex);
			(*unsymbolized)++;
			continue;
		}
		char raw[PATH_MAX];

		/* the path as the profile holds it, cleaned: a file whose
		 * name had control bytes is found by what they were */
		if (access(path, F_OK) && strstr(path, "\\x") &&
		    !untrusted__decode(raw, sizeof(raw), path) &&
		    !access(raw, F_OK))
			path_to_open = raw;
		struct symbols_module sm = {
			.path = path_to_open, .fd = -1,
			.build_id = bid, .build_id_len = bid_len,
			.start = m->memory_start, .end = m->memory_limit,
			.offset = m->file_offset, .lookups = lookups[i],
		};
		err = symbols__add(rw->syms, &sm, &found, &registered);
		if (err)
			break;
		rw->mapping_on[i] = registered;
		rw->mapping_dwarf[i] = registered && found->has_debug_info;
		for (size_t j = 0; j < nreported; j++)
			seen |= reported[j] == found;
		if (seen)
			continue;
		reported[nreported++] = found;
		if (!registered)
			(*unsymbolized)++;
		err = report(rw, "%s [%s]: %s\n", path,
			     *bid_hex ? bid_hex : "no build ID",
			     symbols__describe(found, registered, line,
					       sizeof(line)));
	}
	free(reported);
	free(lookups);
	memset(rw->mapping_hit, 0, p->n_mapping * sizeof(bool));
	return err;
}

/* Resolve every eligible location; *hits says how many got frames. */
static int resolve_locations(struct rewrite *rw, bool force,
			     unsigned int jobs, size_t *hits)
{
	const pprof_profile *p = rw->p;
	size_t neligible = 0;
	uint64_t *addrs;
	int err;

	addrs = malloc((p->n_location + 1) * sizeof(*addrs));
	rw->located = malloc((p->n_location + 1) * sizeof(*rw->located));
	if (!addrs || !rw->located) {
		free(addrs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->n_location; i++) {
		const pb_location *l = p->location[i];
		uint64_t *mi = l->mapping_id ?
			u64map__find(&rw->mapping_index, l->mapping_id) : NULL;

		if (!mi || !rw->mapping_on[*mi] || (l->n_line && !force))
			continue;
		rw->located[neligible] = i;
		addrs[neligible++] = l->address;
	}
	rw->nlocated = neligible;
	err = sym_batch__resolve(&rw->batch, symbols__symbolizer(rw->syms),
				 addrs, neligible, jobs);
	free(addrs);
	if (err)
		return err;
	*hits = rw->batch.hits;
	for (size_t k = 0; k < neligible; k++) {
		const pb_location *l = p->location[rw->located[k]];

		if (rw->batch.count[k])
			rw->mapping_hit[*u64map__find(&rw->mapping_index,
						      l->mapping_id)] = true;
	}
	return 0;
}

/* Build the replacement arrays (in the message's arena) and put them in. */
static int build_message(struct rewrite *rw, size_t hits)
{
	pprof_profile *p = rw->p;
	const struct sym_batch *b = &rw->batch;
	size_t used = 0, nfn_old = p->n_function, nfn;
	pb_function **function_ptrs;
	pb_line *lines, **line_ptrs;
	int64_t id, *comments;
	char comment[128];

	/* The batch counts frames in uint32_t: these products fit. */
	lines = arena__alloc(rw->arena, (b->nframes + 1) * sizeof(*lines));
	line_ptrs = arena__alloc(rw->arena,
				 (b->nframes + 1) * sizeof(*line_ptrs));
	if (!lines || !line_ptrs)
		return -ENOMEM;
	/* In location order (batch items are), so ids do not depend on
	 * which thread resolved what. */
	for (size_t k = 0; k < rw->nlocated; k++) {
		pb_location *l = p->location[rw->located[k]];

		if (!b->count[k])
			continue;
		for (uint32_t j = 0; j < b->count[k]; j++) {
			const struct sym_frame *f = &b->frames[b->first[k] + j];
			pb_line *line = &lines[used + j];

			id = function_id(rw, f);
			if (id < 0)
				return (int)id;
			perftools__profiles__line__init(line);
			line->function_id = (uint64_t)id;
			line->line = f->line;
			line_ptrs[used + j] = line;
		}
		l->line = &line_ptrs[used];
		l->n_line = b->count[k];
		used += b->count[k];
	}
	for (size_t i = 0; i < p->n_mapping; i++) {
		pb_mapping *m = p->mapping[i];

		if (!rw->mapping_hit[i])
			continue;
		m->has_functions = true;
		m->has_filenames = rw->mapping_dwarf[i];
		m->has_line_numbers = rw->mapping_dwarf[i];
		m->has_inline_frames = rw->mapping_dwarf[i];
	}

	nfn = nfn_old + rw->nfunctions;
	function_ptrs = arena__alloc(rw->arena,
				     (nfn + 1) * sizeof(*function_ptrs));
	if (!function_ptrs)
		return -ENOMEM;
	if (nfn_old)	/* p->function is NULL when there are none */
		memcpy(function_ptrs, p->function,
		       nfn_old * sizeof(*function_ptrs));
	for (size_t i = 0; i < rw->nfunctions; i++)
		function_ptrs[nfn_old + i] = &rw->functions[i];

	/* The comment is not interned: it gets an index of its own. */
	snprintf(comment, sizeof(comment),
		 "symbolized by pprof-alloc symbolize: %zu of %zu locations",
		 hits, p->n_location);
	comments = arena__alloc(rw->arena,
				(p->n_comment + 1) * sizeof(*comments));
	if (!comments || array__grow((void **)&rw->strings, &rw->strings_cap,
				     rw->nstrings + 1, sizeof(*rw->strings)))
		return -ENOMEM;
	rw->strings[rw->nstrings] = arena__alloc(rw->arena, strlen(comment) + 1);
	if (!rw->strings[rw->nstrings])
		return -ENOMEM;
	strcpy(rw->strings[rw->nstrings], comment);
	if (p->n_comment)
		memcpy(comments, p->comment, p->n_comment * sizeof(*comments));
	comments[p->n_comment] = (int64_t)rw->nstrings++;

	p->string_table = rw->strings;
	p->n_string_table = rw->nstrings;
	p->function = function_ptrs;
	p->n_function = nfn;
	p->comment = comments;
	p->n_comment++;
	rw->built = true;
	return 0;
}

/*
 * Should the output be fsynced?  When it replaces the input (see the
 * top), or when which file the input was is not known.
 */
static bool output_sync(const struct stat *input, bool input_known,
			const char *output)
{
	struct stat st;

	if (!input_known)
		return true;
	if (stat(output, &st) < 0)
		return errno != ENOENT;
	return st.st_dev == input->st_dev && st.st_ino == input->st_ino;
}

static int write_output(struct rewrite *rw, const struct pprof_splice *splice,
			const char *output, size_t hits, bool sync)
{
	int err = rw->built ? 0 : build_message(rw, hits);

	if (err)
		return err;
	return splice ? pprof_splice__write(splice, rw->p, output, sync) :
			pprof_file__write_profile_sync(rw->p, output, sync);
}

static void rewrite_fini(struct rewrite *rw)
{
	u64map__fini(&rw->string_ids);
	u64map__fini(&rw->string_content);
	u64map__fini(&rw->function_ids);
	u64map__fini(&rw->mapping_index);
	sym_batch__fini(&rw->batch);
	free(rw->located);
	free(rw->strings);
	free(rw->functions);
	free(rw->mapping_on);
	free(rw->mapping_dwarf);
	free(rw->mapping_hit);
	for (size_t i = 0; i < rw->nreport; i++)
		free(rw->report[i]);
	free(rw->report);
}

static int rewrite_init(struct rewrite *rw, struct pprof_file *f)
{
	pprof_profile *p = f->profile;
	size_t nmap = p->n_mapping + 1;
	uint64_t max_id = 0;

	memset(rw, 0, sizeof(*rw));
	rw->p = p;
	rw->arena = f->arena;
	u64map__init(&rw->string_ids);
	u64map__init(&rw->string_content);
	u64map__init(&rw->function_ids);
	u64map__init(&rw->mapping_index);
	rw->mapping_on = calloc(nmap, sizeof(bool));
	rw->mapping_dwarf = calloc(nmap, sizeof(bool));
	rw->mapping_hit = calloc(nmap, sizeof(bool));
	if (!rw->mapping_on || !rw->mapping_dwarf || !rw->mapping_hit)
		return -ENOMEM;
	if (array__grow((void **)&rw->strings, &rw->strings_cap,
			p->n_string_table, sizeof(*rw->strings)))
		return -ENOMEM;
	memcpy(rw->strings, p->string_table,
	       p->n_string_table * sizeof(*rw->strings));
	rw->nstrings = p->n_string_table;
	for (size_t i = 0; i < p->n_function; i++)
		if (p->function[i]->id > max_id)
			max_id = p->function[i]->id;
	rw->next_function_id = max_id + 1;
	return 0;
}

/* Load f's modules and resolve its locations into rw (made from f). */
static int symbolize_file(struct rewrite *rw, struct pprof_file *f,
			  const struct symbolize_opts *o, unsigned int jobs,
			  size_t *unsymbolized, size_t *hits)
{
	int err = rewrite_init(rw, f);

	*unsymbolized = *hits = 0;
	if (!err) {
		rw->syms = symbols__new(o->debug);
		if (!rw->syms)
			err = -ENOMEM;
		else	/* decompressed once for all --jobs threads */
			symbolizer__inflate(symbols__symbolizer(rw->syms), jobs);
	}
	if (!err)
		err = load_mappings(rw, o, unsymbolized);
	if (!err)
		err = resolve_locations(rw, o->force, jobs, hits);
	return err;
}

/* The message may point into the symbolizers' names: it goes first. */
static void release(struct pprof_file *f, struct rewrite *rw)
{
	pprof_file__free(f);
	rewrite_fini(rw);
	symbols__free(rw->syms);
}

int symbolize__profile(const struct symbolize_opts *o)
{
	struct pprof_splice *splice = NULL;
	struct pprof_file *f;
	struct rewrite rw;
	size_t unsymbolized, hits;
	unsigned int jobs = o->jobs ? o->jobs : sym_jobs__default(MAX_JOBS);
	bool stdin_input = !strcmp(o->input, "-");
	const char *input = stdin_input ? "standard input" : o->input;
	struct stat input_st;
	bool input_known, sync;
	char why[512];
	int err;

	input_known = !(stdin_input ? fstat(STDIN_FILENO, &input_st) :
				      stat(o->input, &input_st));
	err = stdin_input ?
		pprof_splice__read_fd(STDIN_FILENO, jobs, &f, &splice, why,
				      sizeof(why)) :
		pprof_splice__read(o->input, jobs, &f, &splice, why,
				   sizeof(why));
	if (err) {
		pr_warn("cannot read %s: %s\n", input, why);
		return err;
	}
	/* samples read meanwhile (pprof_splice.c) are checked here */
	err = symbolize_file(&rw, f, o, jobs, &unsymbolized, &hits);
	if (!err && splice)	/* made while the samples are read */
		err = build_message(&rw, hits);
	if (!err && splice)
		err = pprof_splice__prepare(splice, rw.p);
	if (!err && splice)
		err = pprof_splice__finish(splice);
	if (err == -EBADMSG) {
		/* they were not what the rest said: all of it the usual way */
		release(f, &rw);
		err = pprof_splice__read_plain(splice, &f, why, sizeof(why));
		pprof_splice__free(splice);
		splice = NULL;
		if (err) {
			pr_warn("cannot read %s: %s\n", input, why);
			return err;
		}
		err = symbolize_file(&rw, f, o, jobs, &unsymbolized, &hits);
	}
	if (err) {
		pr_warn("%s: %s\n", input, strerror(-err));
		goto out_free;
	}
	report_say(&rw);
	sync = output_sync(&input_st, input_known, o->output);
	err = write_output(&rw, splice, o->output, hits, sync);
	if (err) {
		pr_warn("cannot write %s: %s\n", o->output,
			strerror(-err));
		goto out_free;
	}
	pr_info("%zu of %zu locations symbolized (modules without symbols: %zu); wrote %s\n",
		hits, rw.p->n_location, unsymbolized, o->output);
	if (sigbus__pages())
		pr_warn("warning: %" PRIu64 " pages of debug files were cut off while they were read (a file was truncated meanwhile); symbols from it may be missing\n",
			sigbus__pages());
	if (o->exiting) {
		/* the caller ends the process: no teardown, and what is left
		 * stays reachable, so that a leak checker finds nothing lost */
		left_file = f;
		left_splice = splice;
		left_rw = rw;
		return 0;
	}
out_free:
	release(f, &rw);
	pprof_splice__free(splice);
	return err;
}
