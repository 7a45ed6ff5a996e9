// SPDX-License-Identifier: MIT
/*
 * follow.c - --follow-children: the launched program's descendants, each
 * profiled by a tracer process of its own.
 *
 * A followed descendant's agent makes a memfd and hands it to the session
 * socket (agent/session.c); the tracer forks a follower for it, which
 * reads that ring exactly as a launched run reads its own (trace_follow.c)
 * and writes one profile per process image:
 * BASE.PID.COMM.pb.gz beside the main profile.  One profile per process,
 * not labels in one: each has its own heap, its own end (exit, exec, or the
 * tracer leaving it) and its own readings, and `go tool pprof` merges
 * profiles given together.  A process that execs hands over a new memfd:
 * the follower of the old image is told (SIGUSR1) to finish.
 *
 * The main tracer is a child subreaper (PR_SET_CHILD_SUBREAPER): a
 * descendant whose parent exits - a daemon - becomes its child, so it
 * knows that the descendant is there even before its agent has said so
 * (the atfork handler that hands the memfd over may run after its parent
 * has gone), and waits for it.
 *
 * This file keeps the books: names, which follower follows which process,
 * how each ended (its exit status: FOLLOW_*), and reaps the orphans.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "elf/maps.h"
#include "follow.h"
#include "pa_futex.h"
#include "pprof_alloc_abi.h"
#include "tracer/record/ringfile.h"

void follow__init(struct follow *f, const char *output)
{
	size_t n = strlen(output);

	memset(f, 0, sizeof(*f));
	if (n > 6 && !strcmp(output + n - 6, ".pb.gz"))
		n -= 6;
	else if (n > 3 && !strcmp(output + n - 3, ".pb"))
		n -= 3;
	if (n >= sizeof(f->base))
		n = sizeof(f->base) - 1;
	memcpy(f->base, output, n);
	f->base[n] = 0;
}

static bool taken(const struct follow *f, const char *path)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (!strcmp(f->v[i].output, path))
			return true;
	return false;
}

char *follow__name(const struct follow *f, pid_t pid, const char *comm)
{
	char name[16], *path;
	size_t i;
	int k;

	for (i = 0; i < sizeof(name) - 1 && comm[i]; i++) {
		char c = comm[i];

		name[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '-' || c == '_' ||
			  c == '+' || (c == '.' && i) ? c : '_';
	}
	name[i] = 0;
	if (!i)
		snprintf(name, sizeof(name), "unknown");
	for (k = 1; k < 1000; k++) {
		int n = k == 1 ? asprintf(&path, "%s.%d.%s.pb.gz", f->base,
					  (int)pid, name) :
				 asprintf(&path, "%s.%d.%s.%d.pb.gz", f->base,
					  (int)pid, name, k);

		if (n < 0)
			return NULL;
		if (!taken(f, path))
			return path;
		free(path);
	}
	return NULL;
}

pid_t follow__tracer_of(const struct follow *f, pid_t pid)
{
	size_t i;

	for (i = f->n; i-- > 0;)
		if (f->v[i].pid == pid && f->v[i].tracer > 0 && !f->v[i].told)
			return f->v[i].tracer;
	return 0;
}

void follow__told(struct follow *f, pid_t tracer)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (f->v[i].tracer == tracer)
			f->v[i].told = true;
}

/* Whether some follower of pid still runs (told or not). */
static bool followed_now(const struct follow *f, pid_t pid)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (f->v[i].pid == pid && f->v[i].tracer > 0)
			return true;
	return false;
}

int follow__is_descendant(pid_t pid, pid_t root)
{
	pid_t self = getpid();
	int depth;

	for (depth = 0; depth < 256 && pid > 1; depth++) {
		char buf[512], *p;
		long ppid;

		if (pid == root || pid == self)
			return true;
		p = proc_stat__fields(pid, buf, sizeof(buf));
		/* the one that handed over, exited and reaped meanwhile (an
		 * ancestor gone makes its children the subreaper's: ours) */
		if (!p && !depth && kill(pid, 0) && errno == ESRCH)
			return -ESRCH;
		/* "S PPID ...": the state, then the parent */
		if (!p || !p[0] || p[1] != ' ')
			return false;
		ppid = strtol(p + 2, NULL, 10);
		if (ppid <= 0 || ppid == pid)
			return false;
		pid = (pid_t)ppid;
	}
	return false;
}

void follow__refuse(struct follow *f, int fd)
{
	struct ringfile rf = { .fd = -1 };
	const char *why;

	f->refused++;
	if (!ringfile__open(&rf, fd, &why)) {
		__atomic_store_n(&rf.hdr->command, PA_CMD_DETACH,
				 __ATOMIC_RELEASE);
		__atomic_store_n(&rf.hdr->tracer_state, PA_TRACER_READY,
				 __ATOMIC_RELEASE);
		pa_futex_wake(&rf.hdr->tracer_state);
		ringfile__close(&rf);	/* closes fd */
		return;
	}
	close(fd);
}

int follow__add(struct follow *f, pid_t pid, pid_t tracer, char *output)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 16;
		struct follower *v = realloc(f->v, cap * sizeof(*v));

		if (!v) {
			free(output);
			return -ENOMEM;
		}
		f->v = v;
		f->cap = cap;
	}
	f->v[f->n++] = (struct follower){ .pid = pid, .tracer = tracer,
					  .output = output };
	f->running++;
	return 0;
}

/* The follower whose tracer is pid, or NULL. */
static struct follower *by_tracer(struct follow *f, pid_t pid)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (f->v[i].tracer == pid)
			return &f->v[i];
	return NULL;
}

static void ended(struct follow *f, struct follower *fw, int status)
{
	fw->tracer = 0;
	f->running--;
	if (WIFEXITED(status) && WEXITSTATUS(status) == FOLLOW_WROTE)
		f->wrote++;
	else if (WIFEXITED(status) && WEXITSTATUS(status) == FOLLOW_EMPTY)
		f->empty++;
	else
		f->failed++;
}

void follow__reap(struct follow *f, pid_t keep)
{
	size_t i;

	for (i = 0; i < f->n; i++) {
		int status;

		if (f->v[i].tracer > 0 &&
		    waitpid(f->v[i].tracer, &status, WNOHANG) == f->v[i].tracer)
			ended(f, &f->v[i], status);
	}
	for (;;) {
		siginfo_t info = { 0 };
		struct follower *fw;
		int status;
		pid_t pid;

		/* look first: keep's status is the caller's to take, and an
		 * adopted process's is its follower's, from its zombie */
		if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) ||
		    info.si_pid <= 0 || info.si_pid == keep ||
		    followed_now(f, info.si_pid))
			return;
		pid = info.si_pid;
		if (waitpid(pid, &status, WNOHANG) != pid)
			return;
		fw = by_tracer(f, pid);
		if (fw)
			ended(f, fw, status);
		else
			f->adopted_ended++;	/* an orphan we adopted */
	}
}

bool follow__descendants(void)
{
	siginfo_t info = { 0 };

	/* any child at all, exited or not: 0; none: ECHILD */
	return !waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT);
}

void follow__signal(const struct follow *f, int sig)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (f->v[i].tracer > 0)
			kill(f->v[i].tracer, sig);
}

void follow__summary(const struct follow *f, char *buf, size_t size)
{
	size_t used;

	buf[0] = 0;
	if (!f->n && !f->gone)
		return;
	used = (size_t)snprintf(buf, size,
				"followed %zu child process image%s: wrote %llu profile%s (%s.PID.COMM.pb.gz)",
				f->n, f->n == 1 ? "" : "s",
				(unsigned long long)f->wrote,
				f->wrote == 1 ? "" : "s", f->base);
	if (f->gone && used < size)
		used += (size_t)snprintf(buf + used, size - used,
					 "; %llu gone before they could be followed",
					 (unsigned long long)f->gone);
	if (f->empty && used < size)
		used += (size_t)snprintf(buf + used, size - used,
					 "; %llu allocated nothing sampled (no profile)",
					 (unsigned long long)f->empty);
	if (f->refused && used < size)
		used += (size_t)snprintf(buf + used, size - used,
					 "; %llu started after we were told to stop: not followed (their agents off)",
					 (unsigned long long)f->refused);
	if (f->failed && used < size)
		snprintf(buf + used, size - used,
			 "; %llu profile%s NOT written (said above)",
			 (unsigned long long)f->failed,
			 f->failed == 1 ? "" : "s");
}

void follow__fini(struct follow *f)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		free(f->v[i].output);
	free(f->v);
	memset(f, 0, sizeof(*f));
}
