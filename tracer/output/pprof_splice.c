// SPDX-License-Identifier: MIT
/*
 * pprof_splice.c - a profile read for rewriting everything but its
 * samples (`pprof-alloc symbolize`).
 *
 * Symbolizing changes a profile's locations, functions, strings and
 * mappings, and never its samples - which, in a profile recorded at
 * --rate 1, are nearly all of it: hundreds of thousands of samples
 * holding millions of location ids, against thousands of locations.
 * Unpacking every sample with protobuf-c, packing it again and gzipping
 * it again was most of `symbolize`'s time and memory.  So the samples are
 * checked where they lie (pprof_samples.c), never unpacked, and written
 * out as the bytes they were; and where a gzip member held only samples,
 * as the compressed member it was.
 *
 * That takes a file pprof-alloc wrote (pprof_file__gzip()): its gzip
 * members carry their sizes (gzip.c), so they are found without
 * inflating, and they are cut between whole top-level fields, samples
 * apart, so each member is a message of its own.  A thread reads a member
 * by inflating it into a buffer of its own (libdeflate, whose checks of
 * CRC and length hold the member to its header), walking its fields and
 * checking its samples; then it drops what held samples alone and keeps
 * any other.  The fields other than samples, in their order, make one
 * smaller message that protobuf-c unpacks and pprof_file__check() checks;
 * what its checks would have said about the samples is said from the
 * tallies of the threads (pprof_samples__fit()).
 *
 * Reading the samples overlaps the symbolizing.  protobuf-c packs the
 * fields by number and the cuts put the samples in members of their own,
 * so the rest of the profile is in member 0 (the sample types) and in the
 * members after the last that holds samples alone: the threads read those
 * first, from the end backwards, and the read returns as soon as they are
 * done, the threads going on with the others at a lower priority
 * (POOL_NICE), in the time the symbolizer leaves (one thread inflating a
 * big DWARF section while the other has nothing to do, the wait for the
 * disk).  pprof_splice__finish(), before writing, waits for them and
 * checks that every member read after the return held samples alone
 * (else the rest taken was not the whole rest), and the samples against
 * the rest.
 *
 * Nothing is taken on trust: the profile is the one pprof_file__read_fd()
 * reads from the same bytes, and the file written is the protobuf that
 * packing it whole gives.  So a sample is taken only in the encoding that
 * protobuf-c packs (pprof_samples.c); the limits of that reader hold,
 * member by member (past PPROF_BOMB_FLOOR, no more than PPROF_BOMB_RATIO
 * times the compressed bytes before the member, so never past where its
 * streaming reader would refuse), and what protobuf-c would take to
 * unpack the whole is worked out the way it would be
 * (pprof_file__check_spliced_cost()).  Where anything does not fit -
 * another writer's gzip, a sample encoded another way, a broken or hostile
 * file - pprof_file__read_from() reads all of it the usual way and says
 * what is wrong with it, in the same words as for any file: at once, or,
 * when it shows in a member read in the background, from
 * pprof_splice__read_plain() after pprof_splice__finish() said so (the
 * caller starts again).
 *
 * Writing is pprof_splice_write.c's: the new message packed, the sample
 * bytes put where protobuf-c would have, members of samples alone copied
 * compressed.
 *
 * Memory: the compressed file (a regular file is mapped), one member's
 * worth of buffer per thread, and the members kept - not the inflated
 * samples.
 */
#include "pprof_splice_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <unistd.h>
#include "elf/array.h"
#include "gzip.h"
#include "pprof_samples.h"

/* A member inflating to more than this is read the usual way. */
#define MEMBER_MAX	(4u << 20)
#define READ_CHUNK	(1u << 20)

/* ---- reading ------------------------------------------------------------ */

static void *read_worker(void *arg);

/*
 * Inflate member m into scratch and check it (pprof_samples__scan()); keep
 * a copy of it if it holds other fields than samples.  0, -EBADMSG (read
 * the file the usual way) or -ENOMEM.
 */
static int read_member(struct member *m, uint8_t *scratch,
		       struct libdeflate_decompressor *d)
{
	int err;

	pprof_samples__init(&m->tally);
	if (gzip__inflate_member(d, m->gz, m->gz_size, scratch, m->len))
		return -EBADMSG;
	err = pprof_samples__scan(scratch, m->len, &m->tally, &m->other);
	if (err)
		return err;
	if (m->other) {
		m->kept = malloc(m->len);
		if (!m->kept)
			return -ENOMEM;
		memcpy(m->kept, scratch, m->len);
	}
	return 0;
}

/*
 * A thread of the pool, which reads beside the symbolizing: at a lower
 * priority (Linux's nice is per thread), so that it takes the time the
 * symbolizer's own threads leave - inflating one big DWARF section, say -
 * rather than slowing what they wait for.
 */
#define POOL_NICE	5
static void *pool_thread(void *arg)
{
	pid_t tid = gettid();
	int prio;

	errno = 0;
	prio = getpriority(PRIO_PROCESS, (id_t)tid);
	if (!errno)
		setpriority(PRIO_PROCESS, (id_t)tid, prio + POOL_NICE);
	return read_worker(arg);
}

static void *read_worker(void *arg)
{
	struct read_pool *pool = arg;
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	uint8_t *scratch = malloc(pool->scratch_size + PPROF_SAMPLES_PAD);
	int err = d && scratch ? 0 : -ENOMEM;

	pthread_mutex_lock(&pool->lock);
	if (err && !pool->err)
		pool->err = err;
	while (!pool->err && pool->next < pool->nmembers) {
		size_t k = pool->order[pool->next++];

		pthread_mutex_unlock(&pool->lock);
		err = read_member(&pool->members[k], scratch, d);
		pthread_mutex_lock(&pool->lock);
		/* a failure is known before the member is seen done */
		if (err && !pool->err)
			pool->err = err;
		pool->members[k].done = true;
		pthread_cond_broadcast(&pool->read);
	}
	pthread_cond_broadcast(&pool->read);
	pthread_mutex_unlock(&pool->lock);
	free(scratch);
	if (d)
		libdeflate_free_decompressor(d);
	return NULL;
}

/* Wait for the pool's threads (after telling them to stop, if stop).  Its
 * first failure, or 0. */
static int pool_join(struct pprof_splice *s, bool stop)
{
	struct read_pool *pool = &s->pool;

	if (!s->pool_started)
		return 0;
	s->pool_started = false;
	if (stop) {
		pthread_mutex_lock(&pool->lock);
		if (!pool->err)
			pool->err = -ECANCELED;
		pthread_mutex_unlock(&pool->lock);
	} else {
		read_worker(pool);	/* this thread too, to the end */
	}
	for (unsigned int i = 0; i < pool->nthreads; i++)
		pthread_join(pool->tids[i], NULL);
	pthread_cond_destroy(&pool->read);
	pthread_mutex_destroy(&pool->lock);
	return pool->err;
}

/*
 * Has the rest of the profile been read, presumably?  Member 0 (the sample
 * types) and each member from the last back to one that holds samples
 * alone, which *middle_end is then (1 when every member is read): the
 * fields other than samples come after the samples in a profile that
 * protobuf-c packed, and pprof_file__cuts() put them in members of their
 * own.  Under the pool's lock.
 */
static bool rest_read(const struct pprof_splice *s, size_t *middle_end)
{
	if (!s->members[0].done)
		return false;
	for (size_t k = s->nmembers - 1; k >= 1; k--) {
		const struct member *m = &s->members[k];

		if (!m->done)
			return false;
		if (!m->other && m->len) {
			*middle_end = k;
			return true;
		}
	}
	*middle_end = 1;
	return true;
}

/*
 * Start threads reading the members: member 0, then from the last
 * backwards, so that the rest of the profile is read first; wait until
 * it is (rest_read()).  With one thread, this one reads them all.  0,
 * -EBADMSG (a member is not as it should be: read the file the usual
 * way) or -ENOMEM.
 */
static int start_reading(struct pprof_splice *s, unsigned int threads)
{
	struct read_pool *pool = &s->pool;
	int err = 0;

	*pool = (struct read_pool){
		.members = s->members, .nmembers = s->nmembers,
	};
	pool->order = malloc(s->nmembers * sizeof(*pool->order));
	if (!pool->order)
		return -ENOMEM;
	pool->order[0] = 0;
	for (size_t k = 1; k < s->nmembers; k++)
		pool->order[k] = s->nmembers - k;
	for (size_t k = 0; k < s->nmembers; k++)
		if (s->members[k].len > pool->scratch_size)
			pool->scratch_size = s->members[k].len;
	if (pthread_mutex_init(&pool->lock, NULL))
		return -ENOMEM;
	if (pthread_cond_init(&pool->read, NULL)) {
		pthread_mutex_destroy(&pool->lock);
		return -ENOMEM;
	}
	s->pool_started = true;
	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	if (threads > s->nmembers)
		threads = (unsigned int)s->nmembers;
	while (threads > 1 && pool->nthreads < threads &&
	       pthread_create(&pool->tids[pool->nthreads], NULL, pool_thread,
			      pool) == 0)
		pool->nthreads++;
	if (!pool->nthreads)	/* one thread, or none could start */
		return pool_join(s, false);
	pthread_mutex_lock(&pool->lock);
	while (!pool->err && !rest_read(s, &s->middle_end))
		pthread_cond_wait(&pool->read, &pool->lock);
	err = pool->err;
	pthread_mutex_unlock(&pool->lock);
	return err;
}

/*
 * The members, found by their sizes, if each is small enough to be
 * inflated whole and none takes the total past the limits of the
 * streaming reader (see the top).  0 or -EBADMSG (read it the usual way)
 * or -ENOMEM.
 */
static int find_members(struct pprof_splice *s)
{
	struct gzip_member *gm;
	size_t n;
	uint64_t total = 0;
	int err;

	err = gzip__members(s->input, s->input_len, &gm, &n);
	if (err)
		return err == -ENOENT ? -EBADMSG : err;
	s->members = calloc(n + 1, sizeof(*s->members));
	if (!s->members) {
		free(gm);
		return -ENOMEM;
	}
	s->nmembers = n;
	for (size_t k = 0; k < n && !err; k++) {
		total += gm[k].isize;
		if (gm[k].isize > MEMBER_MAX || total > PPROF_MAX_PROFILE ||
		    (total > PPROF_BOMB_FLOOR &&
		     total > (uint64_t)PPROF_BOMB_RATIO * gm[k].offset))
			err = -EBADMSG;
		s->members[k] = (struct member){
			.gz = s->input + gm[k].offset, .gz_size = gm[k].size,
			.len = gm[k].isize,
		};
	}
	s->total = (size_t)total;
	free(gm);
	return err;
}

/* The fields other than samples of member 0 and of the members from
 * middle_end on, in their order, into s->rest.  0 or -ENOMEM. */
static int gather_rest(struct pprof_splice *s)
{
	size_t len = 0;

	for (size_t k = 0; k < s->nmembers; k++)
		if (s->members[k].kept && (k == 0 || k >= s->middle_end))
			len += s->members[k].len;
	s->rest = malloc(len ? len : 1);
	if (!s->rest)
		return -ENOMEM;
	for (size_t k = 0; k < s->nmembers; k++) {
		const struct member *m = &s->members[k];

		if (!m->kept || (k && k < s->middle_end))
			continue;
		for (size_t at = 0; at < m->len;) {
			struct pprof_field f;

			/* walked whole by read_member() */
			pprof_file__top_field(m->kept + at, m->len - at, &f);
			if (f.tag != PPROF_SAMPLE_FIELD) {
				memcpy(s->rest + s->rest_len, m->kept + at,
				       f.size);
				s->rest_len += f.size;
			}
			at += f.size;
		}
	}
	return 0;
}

/* What the samples are checked against, from the profile as read. */
static void note_profile(struct pprof_splice *s, const pprof_profile *p)
{
	uint64_t max_location = 0;

	/* ids are unique and not 0 (checked): N of them up to N are 1..N */
	for (size_t i = 0; i < p->n_location; i++)
		if (p->location[i]->id > max_location)
			max_location = p->location[i]->id;
	s->sample_types = p->n_sample_type;
	s->strings = p->n_string_table;
	s->locations = p->n_location;
	s->dense = max_location == p->n_location;
}

int pprof_splice__finish(struct pprof_splice *s)
{
	struct pprof_sample_tally t;
	int err;

	if (s->finished)
		return 0;
	err = pool_join(s, false);
	if (err)
		return err == -ENOMEM ? err : -EBADMSG;
	pprof_samples__init(&t);
	for (size_t k = 0; k < s->nmembers; k++) {
		/* the rest was taken without them: it was not all there */
		if (k && k < s->middle_end && s->members[k].other)
			return -EBADMSG;
		pprof_samples__add(&t, &s->members[k].tally);
	}
	if (pprof_file__check_spliced_cost(s->rest, s->rest_len, t.samples,
					   t.cost, s->total) ||
	    !pprof_samples__fit(&t, s->sample_types, s->strings,
				s->locations, s->dense))
		return -EBADMSG;
	s->finished = true;
	free(s->rest);
	s->rest = NULL;
	return 0;
}

int pprof_splice__read_plain(const struct pprof_splice *s,
			     struct pprof_file **file, char *why,
			     size_t why_size)
{
	return pprof_file__read_from(-1, s->input, s->input_len, file, why,
				     why_size);
}

/*
 * The fast way (see the top): 0 with *file, the samples still being read
 * unless there was one thread; -EBADMSG where the file must be read the
 * usual way; or -ENOMEM.
 */
static int splice_read(struct pprof_splice *s, unsigned int threads,
		       struct pprof_file **file)
{
	char why[256];
	int err;

	err = find_members(s);
	if (!err)
		err = start_reading(s, threads ? threads : 1);
	if (!err)
		err = gather_rest(s);
	if (!err)	/* the rest alone: the samples' part comes at the end */
		err = pprof_file__unpack(s->rest, s->rest_len, file, why,
					 sizeof(why));
	if (err) {
		pool_join(s, true);
		return err == -ENOMEM ? err : -EBADMSG;
	}
	note_profile(s, (*file)->profile);
	if (!s->pool_started)	/* read whole already */
		err = pprof_splice__finish(s);
	if (err) {
		pprof_file__free(*file);
		*file = NULL;
	}
	return err;
}

/* Read up to want bytes into buf, waiting on a descriptor left
 * non-blocking; fewer only at the end.  The count, or -errno. */
static ssize_t read_some(int fd, uint8_t *buf, size_t want)
{
	size_t got = 0;

	while (got < want) {
		ssize_t n = read(fd, buf + got, want - got);
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		if (n == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			return -errno;
	}
	return (ssize_t)got;
}

void pprof_splice__free(struct pprof_splice *s)
{
	if (!s)
		return;
	pool_join(s, true);
	free(s->pool.order);
	for (size_t k = 0; k < s->nmembers; k++)
		free(s->members[k].kept);
	free(s->members);
	free(s->rest);
	free(s->packed);
	gzip__free_pieces(s->tail, s->ntail);
	free(s->tail);
	if (s->mapped)
		munmap(s->input, s->input_len);
	else
		free(s->input);
	free(s);
}

/*
 * A regular file that pprof-alloc wrote, mapped whole into s->input (the
 * page cache's pages, without a copy: a file cut short meanwhile raises
 * SIGBUS, which the tracer's guard turns into zeros, which no member's
 * CRC passes).  1 if so, 0 if it is not such a file (fd not read from).
 */
static int map_file(struct pprof_splice *s, int fd, const struct stat *st)
{
	void *map;

	/* from where fd is, as a read would be: the start, as a rule */
	if (!S_ISREG(st->st_mode) || st->st_size < 20 ||
	    (uint64_t)st->st_size > PPROF_MAX_PROFILE ||
	    lseek(fd, 0, SEEK_CUR) != 0)
		return 0;
	map = mmap(NULL, (size_t)st->st_size, PROT_READ,
		   MAP_PRIVATE | MAP_POPULATE, fd, 0);
	if (map == MAP_FAILED)
		return 0;
	if (!gzip__sized(map, (size_t)st->st_size)) {
		munmap(map, (size_t)st->st_size);
		return 0;
	}
	s->input = map;
	s->input_len = (size_t)st->st_size;
	s->mapped = true;
	return 1;
}

/*
 * Anything else that pprof-alloc wrote (a pipe), read whole into s->input.
 * 1 if so, 0 if it is not (*file then holds what
 * pprof_file__read_from() made of it, or *why says why not, with the
 * error in *err).
 */
static int read_stream(struct pprof_splice *s, int fd,
		       struct pprof_file **file, char *why, size_t why_size,
		       int *err)
{
	size_t cap = READ_CHUNK;
	ssize_t n;

	s->input = malloc(cap);
	if (!s->input) {
		snprintf(why, why_size, "out of memory");
		*err = -ENOMEM;
		return 0;
	}
	/* A file that pprof-alloc wrote shows it from its first member. */
	n = read_some(fd, s->input, 20);
	if (n < 0 || !gzip__sized(s->input, (size_t)n)) {
		*err = n < 0 ? pprof_file__read_from(fd, NULL, 0, file, why,
						     why_size) :
			       pprof_file__read_from(fd, s->input, (size_t)n,
						     file, why, why_size);
		return 0;
	}
	s->input_len = (size_t)n;
	/* All of it, or the usual way past the most a profile may be. */
	for (;;) {
		if (s->input_len == cap &&
		    (cap >= PPROF_MAX_PROFILE ||
		     array__grow((void **)&s->input, &cap, cap + 1, 1))) {
			*err = pprof_file__read_from(fd, s->input, s->input_len,
						     file, why, why_size);
			return 0;
		}
		n = read_some(fd, s->input + s->input_len,
			      cap - s->input_len);
		if (n < 0) {
			*err = (int)n;
			snprintf(why, why_size, "%s", strerror(-*err));
			return 0;
		}
		s->input_len += (size_t)n;
		if (s->input_len < cap)
			return 1;
	}
}

int pprof_splice__read_fd(int fd, unsigned int threads,
			  struct pprof_file **file,
			  struct pprof_splice **splice, char *why,
			  size_t why_size)
{
	struct pprof_splice *s;
	struct stat st;
	int err = 0;

	*file = NULL;
	*splice = NULL;
	*why = '\0';
	if (fstat(fd, &st) < 0 || S_ISDIR(st.st_mode))
		return pprof_file__read_from(fd, NULL, 0, file, why, why_size);
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	if (!map_file(s, fd, &st)) {
		if (S_ISREG(st.st_mode) && st.st_size >= 20) {
			/* nothing read: as usual */
			err = pprof_file__read_from(fd, NULL, 0, file, why,
						    why_size);
			goto out_splice;
		}
		if (!read_stream(s, fd, file, why, why_size, &err))
			goto out_splice;
	}
	err = splice_read(s, threads, file);
	if (!err) {
		*splice = s;
		return 0;
	}
	if (err == -EBADMSG && s->mapped)	/* the usual way, from the file */
		err = pprof_file__read_from(fd, NULL, 0, file, why, why_size);
	else if (err == -EBADMSG)
		err = pprof_file__read_from(-1, s->input, s->input_len, file,
					    why, why_size);
	else
		snprintf(why, why_size, "%s", strerror(-err));
out_splice:
	pprof_splice__free(s);
	return err;
}

int pprof_splice__read(const char *path, unsigned int threads,
		       struct pprof_file **file, struct pprof_splice **splice,
		       char *why, size_t why_size)
{
	int fd, err;

	/* Blocking: a FIFO is read once a writer has opened it. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		err = -errno;
		snprintf(why, why_size, "%s", strerror(-err));
		return err;
	}
	err = pprof_splice__read_fd(fd, threads, file, splice, why, why_size);
	close(fd);
	return err;
}
