// SPDX-License-Identifier: MIT
/*
 * symbolize_cmd.c - `pprof-alloc symbolize PROFILE -o OUTPUT`.
 *
 * A profile recorded with --no-symbolize (or by any other tool that keeps
 * addresses, mappings and build IDs) is read and checked whole
 * (pprof_file.c), each mapping's module is located by build ID and loaded
 * (symbols.c, elf/debuginfo.c), every location of a located mapping gets
 * its Lines - inline frames leaf first - and the profile is written back
 * atomically.  Each module gets one line on stderr saying where its
 * symbols came from or why there are none.  Nothing else in the profile
 * changes: samples, labels, unknown fields and the locations of mappings
 * that could not be symbolized are written as they were read, so `go tool
 * pprof` may still try those itself.  Mappings that already say they have
 * functions are left alone unless --force.
 *
 * The unpacked message belongs to protobuf-c, so it is not edited in
 * place: the string table, function list, comments and each changed
 * location's line list are replaced by arrays of ours for the pack, and
 * the originals are put back before protobuf-c frees the message.  New
 * strings are the symbolizer's interned ones, so an interned pointer maps
 * to its string index, and a (name, system name, file) triple of pointers
 * to its function id.
 *
 * Unique addresses are resolved once each, in address order, which keeps
 * libdw's and the scope index's working set small.
 */
#include "symbolize_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "debugopts.h"
#include "elf/array.h"
#include "elf/elfinfo.h"
#include "pprof_file.h"
#include "symbols.h"
#include "u64map.h"

#define MAX_INLINE	32

typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Function pb_function;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Line pb_line;

static const char *prog = "pprof-alloc: symbolize";

struct cmd_options {
	const char *input, *output;
	struct debug_options debug;
	bool force, quiet;
};

static void usage(FILE *out)
{
	fprintf(out,
"Usage: pprof-alloc symbolize [OPTIONS] PROFILE -o OUTPUT\n"
"Add functions, source files and lines (with inlined calls) to a pprof\n"
"profile that has addresses only, such as one written with --no-symbolize.\n"
"Each mapping's ELF file and debug info are found by build ID, in order:\n"
"the recorded path if its build ID matches; DIR/.build-id/xx/rest.debug in\n"
"each --debug-dir and /usr/lib/debug; the ELF's .gnu_debuglink; debuginfod.\n"
"A file whose build ID does not match is never used.\n"
"\n"
"  -o, --output FILE      where to write the symbolized profile (may be\n"
"                         PROFILE itself; written atomically)\n"
DEBUG_OPTIONS_HELP
"  -f, --force            also re-symbolize mappings that already have\n"
"                         functions\n"
"  -q, --quiet            no per-mapping report on stderr\n"
"  -h, --help             this help\n"
"\n"
"Exit status: 0 when OUTPUT was written (even if some mappings have no\n"
"symbols: the report says why); 1 if PROFILE cannot be read or is not a\n"
"valid profile, or OUTPUT cannot be written; 2 for a usage error.\n");
}

static int parse_options(int argc, char **argv, struct cmd_options *o)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		DEBUG_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	int c, mine;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:fqh", longopts, NULL)) != -1) {
		mine = debug_options__parse(&o->debug, prog, c, optarg);
		if (mine < 0)
			return mine;
		if (mine)
			continue;
		switch (c) {
		case 'o':
			if (!*optarg) {
				fprintf(stderr, "%s: invalid --output '': empty\n",
					prog);
				return -EINVAL;
			}
			o->output = optarg;
			break;
		case 'f':
			o->force = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			fprintf(stderr, "Try 'pprof-alloc symbolize --help'.\n");
			return -EINVAL;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "%s: %s\n", prog, optind >= argc ?
			"no input profile given" : "give exactly one input profile");
		fprintf(stderr, "Usage: pprof-alloc symbolize [OPTIONS] PROFILE -o OUTPUT\n");
		return -EINVAL;
	}
	o->input = argv[optind];
	if (!o->output) {
		fprintf(stderr, "%s: no output file: give -o OUTPUT\n", prog);
		return -EINVAL;
	}
	return 0;
}

/* The arrays that replace parts of the message while it is packed. */
struct rewrite {
	pprof_profile *p;
	struct symbols *syms;

	char **strings;			/* old entries, then new ones */
	size_t nstrings, strings_cap;
	struct u64map string_ids;	/* interned pointer -> index */

	pb_function *functions;		/* new ones */
	size_t nfunctions, functions_cap;
	pb_function **function_ptrs;	/* old, then new */
	struct u64map function_ids;	/* hash of the triple -> index */
	uint64_t next_function_id;

	char **comments_strs;		/* unused by protobuf-c: indices */
	int64_t *comments;

	/* Per location: the frames found (offsets into frames). */
	uint32_t *first, *count;
	struct sym_frame *frames;
	size_t nframes, frames_cap;
	pb_line *lines;
	pb_line **line_ptrs;
	size_t *saved_n_line;
	pb_line ***saved_line;

	bool *mapping_on;	/* by mapping index: symbolize its locations */
	bool *mapping_dwarf;	/* ... and it has debug info */
	bool *mapping_hit;	/* ... and some location got a line */
	struct u64map mapping_index;	/* id -> index */
};

/* String index of an interned string (NULL and "" are 0), or -ENOMEM. */
static int64_t string_id(struct rewrite *rw, const char *s)
{
	uint64_t *known;
	int err;

	if (!s || !*s)
		return 0;
	known = u64map__find(&rw->string_ids, (uintptr_t)s);
	if (known)
		return (int64_t)*known;
	err = array__grow((void **)&rw->strings, &rw->strings_cap, rw->nstrings + 1,
		   sizeof(*rw->strings));
	if (err)
		return err;
	rw->strings[rw->nstrings] = (char *)s;
	if (u64map__put(&rw->string_ids, (uintptr_t)s, rw->nstrings))
		return -ENOMEM;
	return (int64_t)rw->nstrings++;
}

/* Function id for a frame, added the first time.  > 0 or -ENOMEM. */
static int64_t function_id(struct rewrite *rw, const struct sym_frame *f)
{
	const char *name = f->function ? f->function : "??";
	const char *raw = f->system_name ? f->system_name : name;
	int64_t n = string_id(rw, name), r = string_id(rw, raw);
	int64_t file = string_id(rw, f->file);
	uint64_t key;
	pb_function *fn;
	int err;

	if (n < 0 || r < 0 || file < 0)
		return -ENOMEM;
	if (!f->function)
		n = r = string_id(rw, "??");
	if (n < 0)
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

/* Locate and load each mapping's module; report once per module. */
static int load_mappings(struct rewrite *rw, const struct cmd_options *o,
			 size_t *unsymbolized)
{
	const pprof_profile *p = rw->p;
	const struct debuginfo_found **reported;
	size_t nreported = 0;
	int err = 0;

	reported = calloc(p->n_mapping + 1, sizeof(*reported));
	if (!reported)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_mapping && !err; i++)
		err = u64map__put(&rw->mapping_index, p->mapping[i]->id, i);
	/* Only mappings some location points into are worth a lookup. */
	for (size_t i = 0; i < p->n_location && !err; i++) {
		uint64_t *mi = u64map__find(&rw->mapping_index,
					    p->location[i]->mapping_id);

		if (mi && (!p->location[i]->n_line || o->force))
			rw->mapping_hit[*mi] = true;
	}
	for (size_t i = 0; i < p->n_mapping && !err; i++) {
		const pb_mapping *m = p->mapping[i];
		const char *path = p->string_table[m->filename];
		const char *bid_hex = p->string_table[m->build_id];
		const struct debuginfo_found *found = NULL;
		uint8_t bid[ELFINFO_BUILD_ID_MAX];
		size_t bid_len = 0;
		bool registered = false, seen = false;
		char line[2048];

		if (!rw->mapping_hit[i] || (m->has_functions && !o->force))
			continue;
		if (*bid_hex && !parse_build_id(bid_hex, bid, &bid_len)) {
			if (!o->quiet)
				fprintf(stderr, "%s: %s [%s]: no symbols: the build ID is not hex\n",
					prog, path, bid_hex);
			(*unsymbolized)++;
			continue;
		}
		struct symbols_module sm = {
			.path = path, .fd = -1,
			.build_id = bid, .build_id_len = bid_len,
			.start = m->memory_start, .end = m->memory_limit,
			.offset = m->file_offset,
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
		if (!o->quiet)
			fprintf(stderr, "%s: %s [%s]: %s\n", prog, path,
				*bid_hex ? bid_hex : "no build ID",
				symbols__describe(found, registered, line,
						  sizeof(line)));
	}
	free(reported);
	memset(rw->mapping_hit, 0, p->n_mapping * sizeof(bool));
	return err;
}

static int by_address(const void *a, const void *b, void *arg)
{
	const pprof_profile *p = arg;
	uint64_t x = p->location[*(const size_t *)a]->address;
	uint64_t y = p->location[*(const size_t *)b]->address;

	return x < y ? -1 : x > y;
}

/* Resolve every eligible location.  Returns how many got frames. */
static int resolve_locations(struct rewrite *rw, bool force, size_t *hits)
{
	const pprof_profile *p = rw->p;
	struct symbolizer *sym = symbols__symbolizer(rw->syms);
	size_t *order, norder = 0;
	int err = 0;

	order = calloc(p->n_location + 1, sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_location; i++) {
		const pb_location *l = p->location[i];
		uint64_t *mi = l->mapping_id ?
			u64map__find(&rw->mapping_index, l->mapping_id) : NULL;

		if (!mi || !rw->mapping_on[*mi] || (l->n_line && !force))
			continue;
		order[norder++] = i;
	}
	qsort_r(order, norder, sizeof(*order), by_address, (void *)p);

	for (size_t k = 0; k < norder && !err; k++) {
		size_t i = order[k];
		int n;

		err = array__grow((void **)&rw->frames, &rw->frames_cap,
			   rw->nframes + MAX_INLINE, sizeof(*rw->frames));
		if (err)
			break;
		n = symbolizer__lookup(sym, p->location[i]->address,
				       &rw->frames[rw->nframes], MAX_INLINE);
		if (n == -ENOMEM) {
			err = n;
			break;
		}
		if (n <= 0)
			continue;
		rw->first[i] = (uint32_t)rw->nframes;
		rw->count[i] = (uint32_t)n;
		rw->nframes += (size_t)n;
		(*hits)++;
		rw->mapping_hit[*u64map__find(&rw->mapping_index,
					      p->location[i]->mapping_id)] = true;
	}
	free(order);
	return err;
}

/* Build the replacement arrays and swap them in. */
static int build_message(struct rewrite *rw)
{
	pprof_profile *p = rw->p;
	size_t used = 0, nfn_old = p->n_function;
	int64_t id;

	rw->lines = calloc(rw->nframes + 1, sizeof(*rw->lines));
	rw->line_ptrs = calloc(rw->nframes + 1, sizeof(*rw->line_ptrs));
	if (!rw->lines || !rw->line_ptrs)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_location; i++) {
		rw->saved_n_line[i] = p->location[i]->n_line;
		rw->saved_line[i] = p->location[i]->line;
	}
	for (size_t i = 0; i < p->n_location; i++) {
		pb_location *l = p->location[i];

		if (!rw->count[i])
			continue;
		for (uint32_t j = 0; j < rw->count[i]; j++) {
			const struct sym_frame *f = &rw->frames[rw->first[i] + j];
			pb_line *line = &rw->lines[used + j];

			id = function_id(rw, f);
			if (id < 0)
				return (int)id;
			perftools__profiles__line__init(line);
			line->function_id = (uint64_t)id;
			line->line = f->line;
			rw->line_ptrs[used + j] = line;
		}
		l->line = &rw->line_ptrs[used];
		l->n_line = rw->count[i];
		used += rw->count[i];
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

	rw->function_ptrs = calloc(nfn_old + rw->nfunctions + 1,
				   sizeof(*rw->function_ptrs));
	if (!rw->function_ptrs)
		return -ENOMEM;
	if (nfn_old)	/* p->function is NULL when there are none */
		memcpy(rw->function_ptrs, p->function,
		       nfn_old * sizeof(*rw->function_ptrs));
	for (size_t i = 0; i < rw->nfunctions; i++)
		rw->function_ptrs[nfn_old + i] = &rw->functions[i];
	return 0;
}

/* Put protobuf-c's own arrays back so that it frees what it allocated. */
static void restore_message(struct rewrite *rw, char **strings,
			    size_t nstrings, pb_function **functions,
			    size_t nfunctions, int64_t *comments,
			    size_t ncomments)
{
	pprof_profile *p = rw->p;

	p->string_table = strings;
	p->n_string_table = nstrings;
	p->function = functions;
	p->n_function = nfunctions;
	p->comment = comments;
	p->n_comment = ncomments;
	/* build_message() saves every location before changing any. */
	if (rw->lines)
		for (size_t i = 0; i < p->n_location; i++) {
			p->location[i]->line = rw->saved_line[i];
			p->location[i]->n_line = rw->saved_n_line[i];
		}
}

static int write_output(struct rewrite *rw, const char *output,
			size_t hits)
{
	pprof_profile *p = rw->p;
	char **old_strings = p->string_table;
	size_t old_nstrings = p->n_string_table;
	pb_function **old_functions = p->function;
	size_t old_nfunctions = p->n_function;
	int64_t *old_comments = p->comment;
	size_t old_ncomments = p->n_comment;
	char comment[128];
	int64_t cid;
	int err;

	err = build_message(rw);
	if (err)
		goto out_restore;
	snprintf(comment, sizeof(comment),
		 "symbolized by pprof-alloc symbolize: %zu of %zu locations",
		 hits, p->n_location);
	/* The comment is ours, not interned: index it by its address. */
	cid = string_id(rw, comment);
	rw->comments = calloc(old_ncomments + 1, sizeof(*rw->comments));
	if (cid < 0 || !rw->comments) {
		err = -ENOMEM;
		goto out_restore;
	}
	if (old_ncomments)
		memcpy(rw->comments, old_comments,
		       old_ncomments * sizeof(int64_t));
	rw->comments[old_ncomments] = cid;

	p->string_table = rw->strings;
	p->n_string_table = rw->nstrings;
	p->function = rw->function_ptrs;
	p->n_function = old_nfunctions + rw->nfunctions;
	p->comment = rw->comments;
	p->n_comment = old_ncomments + 1;
	err = pprof_file__write_profile(p, output);
out_restore:
	restore_message(rw, old_strings, old_nstrings, old_functions,
			old_nfunctions, old_comments, old_ncomments);
	return err;
}

static void rewrite_fini(struct rewrite *rw)
{
	u64map__fini(&rw->string_ids);
	u64map__fini(&rw->function_ids);
	u64map__fini(&rw->mapping_index);
	free(rw->strings);
	free(rw->functions);
	free(rw->function_ptrs);
	free(rw->comments);
	free(rw->first);
	free(rw->count);
	free(rw->frames);
	free(rw->lines);
	free(rw->line_ptrs);
	free(rw->saved_n_line);
	free(rw->saved_line);
	free(rw->mapping_on);
	free(rw->mapping_dwarf);
	free(rw->mapping_hit);
}

static int rewrite_init(struct rewrite *rw, pprof_profile *p)
{
	size_t nloc = p->n_location + 1, nmap = p->n_mapping + 1;
	uint64_t max_id = 0;

	memset(rw, 0, sizeof(*rw));
	rw->p = p;
	u64map__init(&rw->string_ids);
	u64map__init(&rw->function_ids);
	u64map__init(&rw->mapping_index);
	rw->first = calloc(nloc, sizeof(*rw->first));
	rw->count = calloc(nloc, sizeof(*rw->count));
	rw->saved_n_line = calloc(nloc, sizeof(*rw->saved_n_line));
	rw->saved_line = calloc(nloc, sizeof(*rw->saved_line));
	rw->mapping_on = calloc(nmap, sizeof(bool));
	rw->mapping_dwarf = calloc(nmap, sizeof(bool));
	rw->mapping_hit = calloc(nmap, sizeof(bool));
	if (!rw->first || !rw->count || !rw->saved_n_line ||
	    !rw->saved_line || !rw->mapping_on || !rw->mapping_dwarf ||
	    !rw->mapping_hit)
		return -ENOMEM;
	if (array__grow((void **)&rw->strings, &rw->strings_cap, p->n_string_table,
		 sizeof(*rw->strings)))
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

static int run(const struct cmd_options *o)
{
	struct debuginfo_opts dopts;
	struct rewrite rw;
	pprof_profile *p;
	size_t unsymbolized = 0, hits = 0;
	char why[512];
	int err;

	err = pprof_file__read(o->input, &p, why, sizeof(why));
	if (err) {
		fprintf(stderr, "%s: cannot read %s: %s\n", prog, o->input,
			why);
		return 1;
	}
	debug_options__get(&o->debug, &dopts);
	err = rewrite_init(&rw, p);
	if (!err) {
		rw.syms = symbols__new(&dopts);
		if (!rw.syms)
			err = -ENOMEM;
	}
	if (!err)
		err = load_mappings(&rw, o, &unsymbolized);
	if (!err)
		err = resolve_locations(&rw, o->force, &hits);
	if (err) {
		fprintf(stderr, "%s: %s: %s\n", prog, o->input, strerror(-err));
		goto out_free;
	}
	err = write_output(&rw, o->output, hits);
	if (err) {
		fprintf(stderr, "%s: cannot write %s: %s\n", prog, o->output,
			strerror(-err));
		goto out_free;
	}
	if (!o->quiet)
		fprintf(stderr, "%s: %zu of %zu locations symbolized (modules without symbols: %zu); wrote %s\n",
			prog, hits, p->n_location, unsymbolized, o->output);
out_free:
	/* The message may point into the symbolizer's names: free it first. */
	pprof_file__free(p);
	symbols__free(rw.syms);
	rewrite_fini(&rw);
	return err ? 1 : 0;
}

int symbolize_cmd__main(int argc, char **argv)
{
	struct cmd_options o = { 0 };
	int code;

	argv[0] = (char *)prog;		/* what getopt's own messages say */
	if (parse_options(argc, argv, &o)) {
		debug_options__fini(&o.debug);
		return 2;
	}
	code = run(&o);
	debug_options__fini(&o.debug);
	return code;
}
