// SPDX-License-Identifier: MIT
/*
 * symbolize_jobs.c - resolve a batch of addresses with several threads.
 *
 * Resolving is most of `pprof-alloc symbolize`, and it is embarrassingly
 * parallel but for one thing: a Dwfl (and so a symbolizer) is not
 * thread-safe.  So each extra thread gets a clone of the caller's
 * symbolizer (symbolizer__clone(): the same modules, its own libdw handles,
 * indexes and interned names; made before any thread starts, since it
 * reads the original), and the caller's thread works with the original.
 *
 * The addresses are sorted (a radix sort of (address, item) pairs) and
 * made unique, then grouped by compile unit (symbolizer__units()): a CU's
 * line table and scope index are what a first address in it costs, so
 * each CU goes whole to one thread.  Contiguous address runs would not
 * do: GCC spreads a CU's code over the whole .text (hot and cold parts,
 * template instances), so every thread would read most CUs.  Addresses in
 * no known CU go in runs of consecutive ones.  Groups are handed out as
 * threads ask for them, heaviest first (weight: its addresses plus
 * UNIT_WEIGHT): what a CU costs depends on its size more than on its
 * addresses, so a split made in advance would leave one thread working
 * long after the others.  Each group's addresses are the
 * plan of the symbolizer resolving them (symbolizer__plan()), so its CU's
 * scope index covers only their functions.  Fewer threads than asked are
 * used when there are few addresses (at least MIN_PER_THREAD each): a
 * clone still reads its own symbol table, line tables and scopes, so tiny
 * batches stay in one thread, as one group.
 *
 * Modules' symbol indexes are built before the clones are made, which
 * share them: a module without DWARF, named by its symbol table alone,
 * would otherwise have its table read and sorted by every thread.
 *
 * Each thread writes frames into an array of its own and, for each unique
 * address it resolved, where they are and which thread it was; nothing is
 * shared while they run but the input and the queue of groups.  After the
 * join the arrays are put end to end and every item gets its address's
 * frames, so the result is the same whatever the number of threads and
 * whichever thread took which group: the frames of an address do not
 * depend on what else its symbolizer had resolved, and names are pointers
 * to equal strings (callers that need one identity per string match them
 * by content, names__hash()).
 */
#include "symbolize_jobs.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elf/array.h"
#include "u64map.h"

#define MIN_PER_THREAD	512

/* uworker[] records a worker in a byte. */
_Static_assert(SYM_JOBS_MAX <= 256, "worker ids must fit uint8_t");

/*
 * What reading a compile unit's lines and scopes costs, in addresses
 * resolved (about 0.2 ms against 2 us on libstdc++): the weight a unit's
 * group gets on top of its addresses.
 */
#define UNIT_WEIGHT	100

struct item {
	uint64_t addr;
	size_t index;		/* in the caller's addrs */
};

/* A compile unit's addresses (or a run of addresses in none). */
struct group {
	uint64_t weight;
	size_t first, count;		/* in groups' order[] */
};

/* The groups, heaviest first, taken by the threads one at a time. */
struct group_queue {
	struct group *groups;
	size_t ngroups;
	size_t *order;			/* unique indices, by group */
	uint64_t *plans;		/* their addresses: each group's plan */
	size_t next;			/* under lock */
	pthread_mutex_t lock;
};

/* One thread. */
struct worker {
	unsigned int id;
	const uint64_t *unique;
	struct group_queue *queue;
	uint32_t *ufirst, *ucount;	/* by unique index, shared, disjoint */
	uint8_t *uworker;		/* by unique index: who resolved it */
	struct symbolizer *sym;		/* the caller's, or a clone */
	struct sym_frame *frames;
	size_t nframes, frames_cap;
	pthread_t thread;
	bool started;
	int err;
};

/*
 * Sort items by address, keeping index order among equal addresses: a
 * least-significant-digit radix sort, a byte at a time, skipping the bytes
 * all addresses share (most of them: addresses of one process).  Sorts
 * between items[n] and tmp[n]; returns whichever holds the result.
 */
static struct item *sort_items(struct item *items, struct item *tmp, size_t n)
{
	uint64_t all_or = 0, all_and = UINT64_MAX;

	for (size_t i = 0; i < n; i++) {
		all_or |= items[i].addr;
		all_and &= items[i].addr;
	}
	for (unsigned int shift = 0; shift < 64; shift += 8) {
		size_t count[256] = { 0 }, pos = 0;
		struct item *swap;

		if (!((all_or ^ all_and) >> shift & 0xff))
			continue;	/* the same byte everywhere */
		for (size_t i = 0; i < n; i++)
			count[items[i].addr >> shift & 0xff]++;
		for (unsigned int d = 0; d < 256; d++) {
			size_t c = count[d];

			count[d] = pos;
			pos += c;
		}
		for (size_t i = 0; i < n; i++)
			tmp[count[items[i].addr >> shift & 0xff]++] = items[i];
		swap = items;
		items = tmp;
		tmp = swap;
	}
	return items;
}

/* Resolve group g's addresses (ascending) with w's symbolizer. */
static int resolve_group(struct worker *w, const struct group *g)
{
	const size_t *order = w->queue->order + g->first;

	symbolizer__plan(w->sym, w->queue->plans + g->first, g->count);
	for (size_t k = 0; k < g->count; k++) {
		size_t u = order[k];
		int n, err;

		err = array__grow((void **)&w->frames, &w->frames_cap,
				  w->nframes + SYM_JOBS_MAX_FRAMES,
				  sizeof(*w->frames));
		if (err)
			return err;
		n = symbolizer__resolve(w->sym, w->unique[u],
					&w->frames[w->nframes],
					SYM_JOBS_MAX_FRAMES);
		if (n == -ENOMEM)
			return n;
		if (n <= 0)
			continue;	/* unknown, or unreadable DWARF */
		if (w->nframes > UINT32_MAX - (size_t)n)
			return -ENOMEM;
		w->ufirst[u] = (uint32_t)w->nframes;
		w->ucount[u] = (uint32_t)n;
		w->uworker[u] = (uint8_t)w->id;
		w->nframes += (size_t)n;
	}
	return 0;
}

/* Take groups until none is left (or one fails). */
static int run_worker(struct worker *w)
{
	struct group_queue *q = w->queue;
	int err = 0;

	while (!err) {
		const struct group *g = NULL;

		pthread_mutex_lock(&q->lock);
		if (q->next < q->ngroups)
			g = &q->groups[q->next++];
		pthread_mutex_unlock(&q->lock);
		if (!g)
			break;
		err = resolve_group(w, g);
	}
	symbolizer__plan(w->sym, NULL, 0);
	return err;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	w->err = run_worker(w);
	return NULL;
}

unsigned int sym_jobs__default(unsigned int cap)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (cpus < 1)
		return 1;
	return (unsigned long)cpus > cap ? cap : (unsigned int)cpus;
}

static int group_cmp(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

/*
 * Group the unique addresses, whole compile units at a time (units[u]),
 * addresses in no known unit in runs of consecutive ones, heaviest group
 * first; with one worker, all in one group.  Fills q (groups, order,
 * plans).
 * 0 or -ENOMEM.
 */
static int make_groups(struct group_queue *q, unsigned int nw,
		       const uint64_t *unique, const uint64_t *units,
		       size_t nunique)
{
	size_t loose = nunique / (8 * nw) + 1, ngroups = 0, *group_of, *at;
	struct group *groups;
	struct u64map unit_group;
	int err = -ENOMEM;

	u64map__init(&unit_group);
	group_of = malloc((nunique + 1) * sizeof(*group_of));
	groups = malloc((nunique + 1) * sizeof(*groups));
	q->order = malloc((nunique + 1) * sizeof(*q->order));
	q->plans = malloc((nunique + 1) * sizeof(*q->plans));
	at = malloc((nunique + 1) * sizeof(*at));
	if (!group_of || !groups || !q->order || !q->plans || !at)
		goto out_free;
	for (size_t u = 0; u < nunique; u++) {
		uint64_t *known = NULL;
		size_t g = ngroups;

		if (nw == 1 && ngroups) {
			g = 0;
		} else if (units[u] != SYM_NO_UNIT) {
			known = u64map__find(&unit_group, units[u]);
			if (known)
				g = *known;
		} else if (u && units[u - 1] == SYM_NO_UNIT &&
			   groups[group_of[u - 1]].count < loose) {
			g = group_of[u - 1];
		}
		if (g < ngroups) {
			group_of[u] = g;
			groups[g].count++;
			groups[g].weight++;
			continue;
		}
		if (nw > 1 && units[u] != SYM_NO_UNIT &&
		    u64map__put(&unit_group, units[u], ngroups))
			goto out_free;
		groups[ngroups] = (struct group){
			.count = 1,
			.weight = 1 + (units[u] != SYM_NO_UNIT ? UNIT_WEIGHT : 0),
		};
		group_of[u] = ngroups++;
	}
	/* Each group's slice of order[], then its addresses, ascending. */
	for (size_t g = 0, pos = 0; g < ngroups; g++) {
		groups[g].first = pos;
		at[g] = pos;
		pos += groups[g].count;
	}
	for (size_t u = 0; u < nunique; u++)
		q->order[at[group_of[u]]++] = u;
	for (size_t k = 0; k < nunique; k++)
		q->plans[k] = unique[q->order[k]];
	qsort(groups, ngroups, sizeof(*groups), group_cmp);
	q->groups = groups;
	q->ngroups = ngroups;
	groups = NULL;
	err = 0;
out_free:
	u64map__fini(&unit_group);
	free(group_of);
	free(groups);
	free(at);
	return err;
}

/* Put the workers' frames end to end; fill each item's first and count. */
static int merge(struct sym_batch *b, struct worker *w, unsigned int nw,
		 const struct item *items, size_t n, const size_t *unique_of,
		 size_t nunique)
{
	size_t total = 0, base[SYM_JOBS_MAX] = { 0 };

	for (unsigned int k = 0; k < nw; k++) {
		if (w[k].nframes > UINT32_MAX - total)
			return -ENOMEM;
		base[k] = total;
		total += w[k].nframes;
	}
	b->frames = malloc((total ? total : 1) * sizeof(*b->frames));
	if (!b->frames)
		return -ENOMEM;
	for (unsigned int k = 0; k < nw; k++)
		if (w[k].nframes)
			memcpy(&b->frames[base[k]], w[k].frames,
			       w[k].nframes * sizeof(*b->frames));
	for (size_t u = 0; u < nunique; u++)
		if (w[0].ucount[u])
			w[0].ufirst[u] += (uint32_t)base[w[0].uworker[u]];
	b->nframes = total;
	for (size_t k = 0; k < n; k++) {
		size_t u = unique_of[k], i = items[k].index;

		b->first[i] = w[0].ufirst[u];
		b->count[i] = w[0].ucount[u];
		if (b->count[i])
			b->hits++;
	}
	return 0;
}

int sym_batch__resolve(struct sym_batch *b, struct symbolizer *sym,
		       const uint64_t *addrs, size_t n, unsigned int jobs)
{
	struct worker workers[SYM_JOBS_MAX];
	struct item *items = NULL, *items_tmp = NULL, *sorted;
	size_t *unique_of = NULL, nunique = 0;
	uint64_t *unique = NULL;
	uint32_t *ufirst = NULL, *ucount = NULL;
	uint8_t *uworker = NULL;
	uint64_t *units = NULL;
	struct group_queue queue = { .lock = PTHREAD_MUTEX_INITIALIZER };
	unsigned int nw = 0;
	int err = 0;

	memset(b, 0, sizeof(*b));
	memset(workers, 0, sizeof(workers));
	if (n > SIZE_MAX / sizeof(*items) - 1)
		return -ENOMEM;
	b->first = calloc(n + 1, sizeof(*b->first));
	b->count = calloc(n + 1, sizeof(*b->count));
	items = malloc((n + 1) * sizeof(*items));
	items_tmp = malloc((n + 1) * sizeof(*items_tmp));
	unique_of = malloc((n + 1) * sizeof(*unique_of));
	unique = malloc((n + 1) * sizeof(*unique));
	ufirst = calloc(n + 1, sizeof(*ufirst));
	ucount = calloc(n + 1, sizeof(*ucount));
	uworker = calloc(n + 1, sizeof(*uworker));
	if (!b->first || !b->count || !items || !items_tmp || !unique_of ||
	    !unique || !ufirst || !ucount || !uworker) {
		err = -ENOMEM;
		goto out_free;
	}
	for (size_t i = 0; i < n; i++)
		items[i] = (struct item){ .addr = addrs[i], .index = i };
	sorted = sort_items(items, items_tmp, n);
	for (size_t k = 0; k < n; k++) {
		if (!nunique || unique[nunique - 1] != sorted[k].addr)
			unique[nunique++] = sorted[k].addr;
		unique_of[k] = nunique - 1;
	}

	if (jobs < 1)
		jobs = 1;
	if (jobs > SYM_JOBS_MAX)
		jobs = SYM_JOBS_MAX;
	nw = nunique / MIN_PER_THREAD < jobs ?
		(unsigned int)(nunique / MIN_PER_THREAD) : jobs;
	if (nw < 1)
		nw = 1;
	b->clones = calloc(nw, sizeof(*b->clones));
	units = malloc((nunique + 1) * sizeof(*units));
	if (!b->clones || !units) {
		err = -ENOMEM;
		goto out_free;
	}
	err = nw > 1 ? symbolizer__units(sym, unique, nunique, units) : 0;
	/* built once here, shared by the clones */
	if (!err && nw > 1)
		err = symbolizer__index_symbols(sym, unique, nunique);
	for (size_t u = 0; nw == 1 && u < nunique; u++)
		units[u] = SYM_NO_UNIT;
	if (!err)
		err = make_groups(&queue, nw, unique, units, nunique);
	if (err)
		goto out_free;
	for (unsigned int k = 0; k < nw; k++)
		workers[k] = (struct worker){
			.id = k, .unique = unique, .queue = &queue,
			.ufirst = ufirst, .ucount = ucount, .uworker = uworker,
			.sym = sym,
		};
	/*
	 * Clones are made here, before any thread runs: cloning reads the
	 * caller's symbolizer, which worker 0 then changes.  Cloning is
	 * cheap (no DWARF is read until the first lookup).  Without a clone
	 * (out of memory) or a thread, a worker runs after the others, on the
	 * caller's symbolizer, and finds the queue empty.
	 */
	for (unsigned int k = 1; k < nw; k++) {
		struct symbolizer *clone = symbolizer__clone(sym);

		if (!clone)
			continue;
		b->clones[b->nclones++] = clone;
		workers[k].sym = clone;
		workers[k].started = pthread_create(&workers[k].thread, NULL,
						    worker_main,
						    &workers[k]) == 0;
	}
	workers[0].err = run_worker(&workers[0]);
	b->threads = 1;
	for (unsigned int k = 1; k < nw; k++) {
		if (workers[k].started) {
			pthread_join(workers[k].thread, NULL);
			b->threads++;
		} else {
			workers[k].sym = sym;
			workers[k].err = run_worker(&workers[k]);
		}
	}
	for (unsigned int k = 0; k < nw && !err; k++)
		err = workers[k].err;
	if (!err)
		err = merge(b, workers, nw, sorted, n, unique_of, nunique);

out_free:
	for (unsigned int k = 0; k < nw; k++)
		free(workers[k].frames);
	free(queue.groups);
	free(queue.order);
	free(queue.plans);
	free(uworker);
	free(units);
	free(items);
	free(items_tmp);
	free(unique_of);
	free(unique);
	free(ufirst);
	free(ucount);
	return err;
}

void sym_batch__fini(struct sym_batch *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->nclones; i++)
		symbolizer__free(b->clones[i]);
	free(b->clones);
	free(b->first);
	free(b->count);
	free(b->frames);
	memset(b, 0, sizeof(*b));
}
