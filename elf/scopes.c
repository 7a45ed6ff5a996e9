/* SPDX-License-Identifier: MIT */
/*
 * scopes.c - per compile unit, the code ranges of its functions and inlined
 * calls, indexed for lookups by address.
 *
 * dwarf_getscopes() answers "which scopes hold this address" by walking the
 * CU's DIE tree from the top, every time.  C++ compile units carry tens of
 * thousands of DIEs from their headers, so that walk is most of the cost of
 * symbolizing an address.  Here the tree is walked once per CU, the first time an
 * address falls in it, and only where code can be: into namespaces,
 * functions, inlined calls and blocks, never into types.  Each
 * DW_TAG_subprogram and DW_TAG_inlined_subroutine that has code becomes a
 * node (with its enclosing node), and each of its address ranges a piece.
 *
 * Pieces are sorted by (low ascending, high descending, depth ascending):
 * for properly nested ranges, the last piece starting at or below pc is
 * then the innermost candidate, and if it ends before pc the answer is
 * among its enclosing pieces, linked once by a sweep with a stack (`up`).
 * A lookup is a binary search and a short climb.  DWARF from a broken
 * compiler whose ranges do not nest still gets an answer, only perhaps not
 * the innermost one.
 *
 * A caller that knows which addresses it will ask about (a batch) can say
 * so: a function or inlined call whose ranges hold none of them is left
 * out.  Below a left-out inlined call nothing is visited (dwarf_siblingof()
 * steps over it by DW_AT_sibling); below a left-out function, only
 * functions nested in it are looked for, since their code is elsewhere.  Most functions of a big C++ CU are never asked about,
 * and their inlined calls are most of its pieces.  Such an index is
 * partial: it answers only for the addresses it was built for.
 *
 * Names are read lazily, per node, the first time a lookup lands on it:
 * most functions of a CU are never asked about.
 *
 * The walk is recursive, bounded by MAX_DEPTH so that hostile DWARF cannot
 * exhaust the stack.
 */
#include "elf/scopes.h"

#include <dwarf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "elf/array.h"
#include "elf/linetable.h"
#include "elf/names.h"
#include "elf/runsort.h"

#define MAX_DEPTH	128

struct piece {
	Dwarf_Addr low, high;
	int32_t node;
	int32_t up;		/* enclosing piece, -1 at the top */
	uint32_t depth;
};

struct cu_scopes {
	struct scope_node *nodes;
	size_t nnodes, nodes_cap;
	struct piece *pieces;
	size_t npieces, pieces_cap;
	const struct scope_want *want;	/* while building, or NULL */
};

/* Does [low, high) (DWARF addresses) hold a wanted address? */
static bool wanted(const struct scope_want *want, Dwarf_Addr low,
		   Dwarf_Addr high)
{
	size_t i = array__lower_bound_u64(want->addrs, want->n,
					  low + want->bias);

	return i < want->n && want->addrs[i] < high + want->bias;
}

#define NODE_NO_CODE	(-1)
#define NODE_UNWANTED	(-2)	/* has code, but no wanted address */

/* Add die as a node with its ranges.  Its index, NODE_NO_CODE,
 * NODE_UNWANTED, or -ENOMEM. */
static int64_t add_node(struct cu_scopes *cs, Dwarf_Die *die, int32_t parent,
			uint32_t depth, bool inlined)
{
	Dwarf_Addr base, low, high;
	size_t first = cs->npieces;
	ptrdiff_t off = 0;
	int32_t index = (int32_t)cs->nnodes;

	/*
	 * Declarations (most subprogram DIEs of a C++ CU) have neither:
	 * asking the abbreviation is cheaper than dwarf_ranges() reading
	 * the DIE's attributes three times to find that out.
	 */
	if (!dwarf_hasattr(die, DW_AT_low_pc) && !dwarf_hasattr(die, DW_AT_ranges))
		return NODE_NO_CODE;
	while ((off = dwarf_ranges(die, off, &base, &low, &high)) > 0) {
		if (low >= high)
			continue;
		if (cs->npieces >= INT32_MAX ||
		    array__grow((void **)&cs->pieces, &cs->pieces_cap,
				cs->npieces + 1, sizeof(*cs->pieces)))
			return -ENOMEM;
		cs->pieces[cs->npieces++] = (struct piece){
			.low = low, .high = high, .node = index,
			.depth = depth,
		};
	}
	if (cs->npieces == first)
		return NODE_NO_CODE;
	if (cs->want) {
		bool hit = false;

		for (size_t i = first; i < cs->npieces && !hit; i++)
			hit = wanted(cs->want, cs->pieces[i].low,
				     cs->pieces[i].high);
		if (!hit) {
			cs->npieces = first;
			return NODE_UNWANTED;
		}
	}
	/* Node and piece indices are int32_t. */
	if (cs->nnodes >= INT32_MAX ||
	    array__grow((void **)&cs->nodes, &cs->nodes_cap, cs->nnodes + 1,
			sizeof(*cs->nodes)))
		return -ENOMEM;
	cs->nodes[cs->nnodes++] = (struct scope_node){
		.die = *die, .parent = parent, .inlined = inlined,
	};
	return index;
}

/*
 * Index the children of die.  nested_only: die is a function left out of
 * a partial index, searched only for functions nested in it (GNU C nested
 * functions, OpenMP outlined regions, Fortran contained procedures),
 * whose code lies outside its own ranges; its inlined calls, all inside
 * them, are stepped over.  (A function nested inside an inlined call left
 * out is not found: no compiler we know emits one there.)
 */
static int walk(struct cu_scopes *cs, Dwarf_Die *die, int32_t parent,
		uint32_t depth, bool nested_only)
{
	Dwarf_Die child;
	int err;

	if (depth > MAX_DEPTH || dwarf_child(die, &child) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&child);
		int64_t node;

		switch (tag) {
		case DW_TAG_inlined_subroutine:
			if (nested_only)
				break;
			/* fall through */
		case DW_TAG_subprogram:
			node = add_node(cs, &child, parent, depth,
					tag == DW_TAG_inlined_subroutine);
			if (node == -ENOMEM)
				return -ENOMEM;
			/* No code (a declaration, an abstract instance):
			 * nothing below it has code either. */
			if (node == NODE_NO_CODE ||
			    (node == NODE_UNWANTED &&
			     tag == DW_TAG_inlined_subroutine))
				break;
			err = node == NODE_UNWANTED ?
			      walk(cs, &child, -1, depth + 1, true) :
			      walk(cs, &child, (int32_t)node, depth + 1, false);
			if (err)
				return err;
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
			err = walk(cs, &child, parent, depth + 1, nested_only);
			if (err)
				return err;
			break;
		default:
			break;	/* types, variables, parameters */
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

/* The order of pieces: low ascending, high descending, depth ascending. */
static inline bool piece_before(const struct piece *x, const struct piece *y)
{
	if (x->low != y->low)
		return x->low < y->low;
	if (x->high != y->high)
		return x->high > y->high;
	return x->depth < y->depth;
}

/* Pieces come in DIE order, in which a function's own pieces are mostly
 * in address order already: long runs, few passes. */
RUNSORT_DEFINE(sort_pieces, struct piece, piece_before)

/* Link each piece to the nearest earlier piece that encloses it. */
static int link_pieces(struct cu_scopes *cs)
{
	int32_t *stack;
	size_t top = 0;

	stack = malloc((cs->npieces + 1) * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	for (size_t i = 0; i < cs->npieces; i++) {
		struct piece *p = &cs->pieces[i];

		while (top && cs->pieces[stack[top - 1]].high <= p->low)
			top--;
		p->up = top ? stack[top - 1] : -1;
		stack[top++] = (int32_t)i;
	}
	free(stack);
	return 0;
}

struct cu_scopes *cu_scopes__build(Dwarf_Die *cudie,
				   const struct scope_want *want)
{
	struct cu_scopes *cs;
	int err;

	cs = calloc(1, sizeof(*cs));
	if (!cs)
		return NULL;
	cs->want = want;
	err = walk(cs, cudie, -1, 0, false);
	cs->want = NULL;
	if (!err && cs->npieces) {
		err = sort_pieces(cs->pieces, cs->npieces);
		if (!err)
			err = link_pieces(cs);
	}
	if (err) {
		cu_scopes__free(cs);
		errno = -err;
		return NULL;
	}
	return cs;
}

void cu_scopes__free(struct cu_scopes *cs)
{
	if (!cs)
		return;
	free(cs->nodes);
	free(cs->pieces);
	free(cs);
}

int32_t cu_scopes__find(const struct cu_scopes *cs, Dwarf_Addr pc)
{
	size_t lo = 0, hi = cs->npieces;
	int32_t i;

	/* The last piece with low <= pc. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cs->pieces[mid].low <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	i = (int32_t)lo - 1;
	while (i >= 0 && pc >= cs->pieces[i].high)
		i = cs->pieces[i].up;
	return i >= 0 ? cs->pieces[i].node : -1;
}

static const char *attr_string(Dwarf_Die *die, unsigned int name)
{
	Dwarf_Attribute attr;

	return dwarf_formstring(dwarf_attr_integrate(die, name, &attr));
}

/*
 * DW_AT_call_file of an inlined_subroutine as a path, or NULL.  lines,
 * where given, names it: libdw would decode the CU's whole line table for
 * its file table (0.188's dwarf_getsrcfiles() calls dwarf_getsrclines()).
 */
static const char *call_file(Dwarf_Die *die, const struct line_table *lines)
{
	Dwarf_Attribute attr;
	Dwarf_Files *files;
	Dwarf_Word index;
	Dwarf_Die cu;
	size_t nfiles;

	if (!dwarf_attr(die, DW_AT_call_file, &attr) ||
	    dwarf_formudata(&attr, &index) != 0)
		return NULL;
	if (lines)
		return line_table__file(lines, index);
	if (!dwarf_diecu(die, &cu, NULL, NULL) ||
	    dwarf_getsrcfiles(&cu, &files, &nfiles) != 0 || index >= nfiles)
		return NULL;
	return dwarf_filesrc(files, index, NULL, NULL);
}

const char *scopes__source_path(struct names *names, Dwarf_Die *cudie,
				const char *file)
{
	size_t dir_len, file_len;
	const char *dir, *interned;
	char stack_buf[512], *joined = stack_buf;

	if (!file || file[0] == '/' || !cudie)
		return names__intern(names, file);
	dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir,
					  &(Dwarf_Attribute){ 0 }));
	if (!dir || !*dir)
		return names__intern(names, file);
	dir_len = strlen(dir);
	file_len = strlen(file);
	/* Both lengths are of strings in memory: the sum cannot overflow. */
	if (dir_len + file_len + 2 > sizeof(stack_buf)) {
		joined = malloc(dir_len + file_len + 2);
		if (!joined)
			return NULL;
	}
	memcpy(joined, dir, dir_len);
	joined[dir_len] = '/';
	memcpy(joined + dir_len + 1, file, file_len);
	interned = names__intern_len(names, joined, dir_len + 1 + file_len);
	if (joined != stack_buf)
		free(joined);
	return interned;
}

static int call_line(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Word line;

	if (!dwarf_attr(die, DW_AT_call_line, &attr) ||
	    dwarf_formudata(&attr, &line) != 0 || line > INT_MAX)
		return 0;
	return (int)line;
}

const struct scope_node *cu_scopes__node(struct cu_scopes *cs, int32_t i,
					 struct names *names,
					 const struct line_table *lines)
{
	struct scope_node *node;
	const char *linkage, *plain, *raw, *shown;

	if (i < 0 || (size_t)i >= cs->nnodes)
		return NULL;
	node = &cs->nodes[i];
	if (node->resolved)
		return node;

	linkage = attr_string(&node->die, DW_AT_linkage_name);
	if (!linkage)
		linkage = attr_string(&node->die, DW_AT_MIPS_linkage_name);
	plain = attr_string(&node->die, DW_AT_name);
	raw = names__intern(names, linkage ? linkage : plain);
	if (!raw && (linkage || plain))
		return NULL;
	shown = raw ? names__demangled(names, raw) : NULL;
	/* A linkage name that is not mangled says less than DW_AT_name. */
	if (shown == raw && plain) {
		shown = names__intern(names, plain);
		if (!shown)
			return NULL;
	}
	node->system_name = raw;
	node->has_linkage_name = linkage != NULL;
	node->name = shown;
	if (node->inlined) {
		const char *file = call_file(&node->die, lines);
		Dwarf_Die cu;

		node->call_file = scopes__source_path(names,
			dwarf_diecu(&node->die, &cu, NULL, NULL), file);
		if (file && !node->call_file)
			return NULL;
		node->call_line = call_line(&node->die);
	}
	node->resolved = true;
	return node;
}
