// SPDX-License-Identifier: MIT
/*
 * attach.c - the tracer's side of attaching to a running process.
 *
 *   1. check the target (attach__check): refuse, untouched, anything that
 *      an injection could hurt or that cannot work;
 *   2. look for an agent memfd among its descriptors (a preloaded agent, or
 *      one a previous tracer injected): take it with pidfd_getfd and
 *      validate it (ringfile__open).  Recording: just connect.  Detached:
 *      call pprof_alloc_attach again;
 *   3. otherwise inject: check the target can open the agent (same file in
 *      its mount namespace, readable by its user; in another namespace,
 *      from a memfd: agent_memfd), find dlopen in its libc
 *      (base from /proc/PID/maps, value from the very file through
 *      map_files), borrow an idle thread (inject.c), call
 *      dlopen(agent, RTLD_NOW | RTLD_LOCAL) - reading dlerror() back if it
 *      fails - then pprof_alloc_attach(rate, frames, ring, live) at its
 *      address in the agent just mapped, and hand the thread back;
 *   4. take the memfd the agent made, as in 2.
 *
 * Detach sets the header's command word first (any sampling thread obeys
 * it), then calls pprof_alloc_detach on a borrowed thread if one is idle,
 * and waits a bounded time for the agent to say it is detached; then an
 * agent that was injected is turned off and, when that is safe, unloaded
 * (unload.c).
 *
 * Every function that can fail says why in the caller's buffer (why,
 * ATTACH_WHY_SIZE bytes): one line, fit to print as it is.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <grp.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "arch/arch.h"
#include "attach.h"
#include "pprof_alloc_memfd.h"
#include "attach_internal.h"
#include "elf/elfinfo.h"
#include "elf/maps.h"
#include "elf/symtab.h"
#include "callstub.h"
#include "entry.h"
#include "common/log.h"
#include "inject.h"
#include "owner.h"
#include "procexit.h"
#include "seccomp.h"
#include "unload.h"
#include "pa_clock.h"

#define WAIT_DETACH_MS		2000
/* while waiting: how often a thread is borrowed to call detach */
#define DETACH_RETRY_NS		(20 * PA_NSEC_PER_MSEC)

/* The reason, into the caller's why (ATTACH_WHY_SIZE bytes). */
static void say(char *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(char *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, ATTACH_WHY_SIZE, fmt, ap);
	va_end(ap);
}

/* Another module's reason (a string of its own) into why. */
static int keep(char *why, int err, const char *reason)
{
	if (err)
		say(why, "%s", reason ? reason : strerror(-err));
	return err;
}

/* A "Key:\tvalue" line of /proc/PID/status, as a number; -1 if absent. */
static long status_field(pid_t pid, const char *key)
{
	char path[64], line[256];
	size_t klen = strlen(key);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			v = strtol(line + klen + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static char proc_state(pid_t pid)
{
	char buf[512], *f = proc_stat__fields(pid, buf, sizeof(buf));

	return f ? f[0] : 0;
}

/* The first mapping of a file whose path ends in /base... (prefix match on
 * the base name), at file offset 0. */
static const struct maps_entry *find_module(const struct proc_maps *pm,
					    bool (*match)(const char *path,
							  const void *arg),
					    const void *arg)
{
	size_t i;

	for (i = 0; i < pm->count; i++)
		if (pm->entries[i].offset == 0 && pm->entries[i].path[0] == '/' &&
		    match(pm->entries[i].path, arg))
			return &pm->entries[i];
	return NULL;
}

static bool is_libc(const char *path, const void *arg)
{
	const char *base = strrchr(path, '/') + 1;

	(void)arg;
	return !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5);
}

/* musl's loader, which is also its libc (/lib/ld-musl-x86_64.so.1,
 * ld-musl-aarch64.so.1) */
static bool is_musl(const char *path, const void *arg)
{
	(void)arg;
	return !strncmp(strrchr(path, '/') + 1, "ld-musl-", 8);
}

/* glibc before 2.34 keeps dlopen in libdl.so.2 (or libdl-2.NN.so) */
static bool is_libdl(const char *path, const void *arg)
{
	const char *base = strrchr(path, '/') + 1;

	(void)arg;
	return !strncmp(base, "libdl.so", 8) || !strncmp(base, "libdl-", 6);
}

static bool is_path(const char *path, const void *arg)
{
	return !strcmp(path, (const char *)arg);
}

/* The memfd an agent is loaded from when its file is not in the target's
 * mount namespace (load_from_memfd): "/memfd:NAME (deleted)" in maps. */
#define AGENT_MEMFD_NAME	"pprof-alloc-agent.so"

/* The agent: the file at path arg, or one loaded from a memfd of ours. */
static bool is_agent(const char *path, const void *arg)
{
	static const char memfd[] = "/memfd:" AGENT_MEMFD_NAME;

	return is_path(path, arg) ||
	       (!strncmp(path, memfd, sizeof(memfd) - 1) &&
		(!path[sizeof(memfd) - 1] || path[sizeof(memfd) - 1] == ' '));
}

int attach__check(pid_t pid, char *why)
{
	struct proc_maps *pm;
	char path[64];
	unsigned char ident[EI_NIDENT + 4];
	long seccomp, tracer;
	char state;
	int fd, err;

	if (pid <= 0 || (kill(pid, 0) && errno == ESRCH)) {
		say(why, "no process %d", (int)pid);
		return -ESRCH;
	}
	state = proc_state(pid);
	if (!state) {
		say(why, "cannot read /proc/%d/stat: not permitted?", (int)pid);
		return -EPERM;
	}
	if (state == 'Z' || state == 'X') {
		say(why, "process %d has exited (a zombie)", (int)pid);
		return -ESRCH;
	}
	/* before "stopped": a traced process is in a tracing stop ('t')
	 * at every system call its tracer looks at */
	tracer = status_field(pid, "TracerPid");
	if (tracer > 0) {
		say(why, "process %d is already traced by process %ld (a debugger or strace?); detach that first",
		    (int)pid, tracer);
		return -EBUSY;
	}
	if (state == 'T' || state == 't') {
		say(why, "process %d is stopped; resume it first (kill -CONT %d)",
		    (int)pid, (int)pid);
		return -EAGAIN;
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		say(why, "cannot open %s: %s (tracing another user's process needs root or CAP_SYS_PTRACE)",
		    path, strerror(errno));
		return err;
	}
	err = read(fd, ident, sizeof(ident)) == (ssize_t)sizeof(ident) ? 0 : -EIO;
	close(fd);
	if (err || memcmp(ident, ELFMAG, SELFMAG)) {
		say(why, "process %d's executable is not ELF", (int)pid);
		return -ENOEXEC;
	}
	if (ident[EI_CLASS] != ELFCLASS64 ||
	    *(uint16_t *)(ident + EI_NIDENT + 2) != PA_ARCH_EM) {
		say(why, "process %d is not an " PA_ARCH_NAME " program (this pprof-alloc is)",
		    (int)pid);
		return -ENOEXEC;
	}
	/* a filter (2) is judged once a thread is borrowed (check_seccomp);
	 * strict mode allows nothing loading the agent does */
	seccomp = status_field(pid, "Seccomp");
	if (seccomp == 1) {
		say(why, "process %d runs in seccomp strict mode, which kills it for any system call but read, write and exit; not attaching",
		    (int)pid);
		return -EPERM;
	}
	err = proc_maps__read(pid, &pm);
	if (err) {
		say(why, "cannot read /proc/%d/maps: %s", (int)pid,
		    strerror(-err));
		return err;
	}
	if (!find_module(pm, is_libc, NULL)) {
		if (find_module(pm, is_musl, NULL))
			say(why, "process %d runs on musl libc (ld-musl), and the agent needs glibc; not attaching",
			    (int)pid);
		else
			say(why, "process %d has no glibc mapped (statically linked, or another libc); only dynamically linked glibc programs can be attached",
			    (int)pid);
		err = -ENOEXEC;
	}
	proc_maps__free(pm);
	return err;
}

/* ---- the memfd ------------------------------------------------------- */

static int pidfd_getfd_of(pid_t pid, int target_fd)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0), fd, err;

	if (pidfd < 0)
		return -errno;
	fd = (int)syscall(SYS_pidfd_getfd, pidfd, target_fd, 0);
	err = fd < 0 ? -errno : fd;
	close(pidfd);
	if (err >= 0)
		fcntl(err, F_SETFD, FD_CLOEXEC);
	return err;
}

/*
 * The process's id as it knows itself (getpid() there, which the agent
 * writes in its header): the last NSpid of its status, where it lives in
 * a PID namespace of its own (a container); pid otherwise.
 */
static pid_t own_pid(pid_t pid)
{
	char path[64], line[256], *p, *end;
	long v = pid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return pid;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "NSpid:", 6)) {
			for (p = line + 6;; p = end) {
				long n = strtol(p, &end, 10);

				if (end == p)
					break;
				v = n;
			}
			break;
		}
	fclose(f);
	return v > 0 ? (pid_t)v : pid;
}

/* Find and validate the agent's memfd.  0, -ENOENT (none), or -errno. */
int attach__find_agent(pid_t pid, struct ringfile *rf, char *why)
{
	char dir[64], link[PATH_MAX], path[PATH_MAX];
	const char *reason = NULL;
	pid_t self = own_pid(pid);
	struct dirent *d;
	int err = -ENOENT;
	DIR *dp;

	rf->hdr = NULL;
	rf->fd = -1;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	dp = opendir(dir);
	if (!dp) {
		say(why, "cannot list %s: %s", dir, strerror(errno));
		return -errno;
	}
	while ((d = readdir(dp))) {
		long fdno = strtol(d->d_name, NULL, 10);
		ssize_t n;
		int fd;

		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (!pa_is_memfd_path(link))
			continue;
		fd = pidfd_getfd_of(pid, (int)fdno);
		if (fd < 0) {
			err = fd;
			say(why, "cannot take the agent's memfd from process %d: %s",
			    (int)pid, strerror(-fd));
			continue;
		}
		err = ringfile__open(rf, fd, &reason);
		if (!err) {
			if (rf->hdr->agent_pid == (uint32_t)self)
				break;
			ringfile__close(rf);	/* a parent's, inherited */
			err = -ENOENT;
			continue;
		}
		close(fd);
		say(why, "process %d has an agent memfd this tracer cannot use: %s",
		    (int)pid, reason);
	}
	closedir(dp);
	return err;
}

/* ---- injection ------------------------------------------------------- */

/*
 * The file mapped at m, opened: through maps_entry__open, or - for the
 * agent's memfd, when map_files is not ours to open (a tracer without
 * CAP_SYS_ADMIN, as in a rootless container) and the memfd has no path -
 * our own agent file ours, if the mapping at offset 0 (the read-only
 * segment: ELF and program headers, build ID, dynamic symbols and their
 * values) is that file's, byte for byte.  A memfd of another build is
 * never taken for ours.  fd or -errno.
 */
#define OPEN_MAPPED_MAX		(4u << 20)
static int open_mapped(pid_t pid, const struct maps_entry *m,
		       const char *ours)
{
	static const char memfd[] = "/memfd:" AGENT_MEMFD_NAME;
	size_t n = m->end - m->start;
	uint8_t *theirs = NULL, *mine = NULL;
	struct iovec local, remote = { (void *)m->start, n };
	int fd = maps_entry__open(pid, m), err = fd;

	if (fd >= 0 || (fd != -EPERM && fd != -EACCES) || !ours ||
	    strncmp(m->path, memfd, sizeof(memfd) - 1) || m->offset ||
	    n < 4096 || n > OPEN_MAPPED_MAX)
		return fd;
	theirs = malloc(n);
	mine = malloc(n);
	if (!theirs || !mine) {
		err = -ENOMEM;
		goto out_free;
	}
	local = (struct iovec){ theirs, n };
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)n)
		goto out_free;
	fd = open(ours, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto out_free;
	}
	if (pread(fd, mine, n, 0) != (ssize_t)n || memcmp(mine, theirs, n)) {
		close(fd);
		err = -ESTALE;
		goto out_free;
	}
	err = fd;
out_free:
	free(theirs);
	free(mine);
	return err;
}

/* Address in the target of symbol name in the file mapped at m (ours:
 * see open_mapped, or NULL).  0, or -errno: maps_entry__open's, -ESTALE
 * (an agent memfd not of our agent), or -ENOENT (no such symbol). */
static int symbol_address(pid_t pid, const struct maps_entry *m,
			  const char *ours, const char *name, uint64_t *addr)
{
	uint64_t value, bias;
	int fd, err;

	fd = open_mapped(pid, m, ours);
	if (fd < 0)
		return fd;
	err = elfsym__find(fd, name, &value);
	if (!err)
		err = elfinfo__load_bias(fd, m->start, 0, &bias);
	close(fd);
	if (!err)
		*addr = bias + value;
	return err;
}

/* Why symbol_address failed for name in the file mapped at m, in words. */
static void symbol_why(char *why, pid_t pid, const struct maps_entry *m,
		       const char *name, int err)
{
	switch (err) {
	case -ESRCH:
		say(why, "process %d exited while being attached", (int)pid);
		break;
	case -ENOENT:
		if (kill(pid, 0) && errno == ESRCH)
			say(why, "process %d exited while being attached",
			    (int)pid);
		else
			say(why, "no %s in %s, mapped by process %d", name,
			    m->path, (int)pid);
		break;
	case -ESTALE:
		if (!strncmp(m->path, "/memfd:", 7))
			say(why, "the agent loaded in process %d is another build than this tracer's, and without CAP_SYS_ADMIN its memfd cannot be read: attach with the pprof-alloc that loaded it, or as root",
			    (int)pid);
		else
			say(why, "%s, mapped by process %d, has been replaced on disk since (upgraded?); cannot read the code it runs",
			    m->path, (int)pid);
		break;
	default:
		say(why, "cannot read %s, mapped by process %d: %s", m->path,
		    (int)pid, strerror(-err));
	}
}

/* The credentials a process opens files with: its filesystem uid and gid
 * (the fourth field of Uid: and Gid:) and its supplementary groups.
 * false if /proc/PID/status cannot be read. */
struct fs_creds {
	uid_t uid;
	gid_t gid;
	gid_t *groups;		/* malloc'ed, up to NGROUPS_MAX */
	int ngroups;
};

static bool fs_creds_of(pid_t pid, struct fs_creds *c)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	c->groups = NULL;
	c->ngroups = 0;
	f = fopen(path, "re");
	if (!f)
		return false;
	while (getline(&line, &cap, f) > 0) {
		unsigned long v[4];
		char *at, *end;

		if (sscanf(line, "Uid: %lu %lu %lu %lu", &v[0], &v[1], &v[2],
			   &v[3]) == 4) {
			c->uid = (uid_t)v[3];
			found |= 1;
		} else if (sscanf(line, "Gid: %lu %lu %lu %lu", &v[0], &v[1],
				  &v[2], &v[3]) == 4) {
			c->gid = (gid_t)v[3];
			found |= 2;
		} else if (!strncmp(line, "Groups:", 7) && !c->groups) {
			c->groups = calloc(NGROUPS_MAX, sizeof(*c->groups));
			for (at = line + 7; c->groups && c->ngroups < NGROUPS_MAX;
			     at = end) {
				unsigned long g = strtoul(at, &end, 10);

				if (end == at)
					break;
				c->groups[c->ngroups++] = (gid_t)g;
			}
			if (!c->groups)
				found |= 4;	/* out of memory: cannot tell */
		}
	}
	free(line);
	fclose(f);
	if (found != 3) {
		free(c->groups);
		c->groups = NULL;
		return false;
	}
	return true;
}

/*
 * Can a process with these credentials open the agent, at its path in
 * that process's root, for reading?  Asked the only exact way - a child
 * that takes them and tries - so that directory permissions and ACLs
 * count.  The path is resolved from an O_PATH descriptor of the process's
 * root opened before the child drops root: after a daemon's setuid the
 * process is not dumpable, and /proc/PID/root itself is closed to its
 * own user, though the file below is not (memcached -u nobody).  (Without
 * root the tracer has the target's uid anyway; ptrace requires it.)
 */
static bool readable_as(pid_t pid, const char *agent, const struct fs_creds *c)
{
	char root[64];
	int status, rootfd;
	pid_t child;

	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return true;	/* cannot tell: let dlopen say */
	child = fork();
	if (child < 0) {
		close(rootfd);
		return true;
	}
	if (!child) {
		while (*agent == '/')
			agent++;
		if (setgroups((size_t)c->ngroups, c->groups) ||
		    setresgid(c->gid, c->gid, c->gid) ||
		    setresuid(c->uid, c->uid, c->uid))
			_exit(2);
		_exit(openat(rootfd, agent, O_RDONLY | O_CLOEXEC) < 0 ? 1 : 0);
	}
	close(rootfd);
	if (waitpid(child, &status, 0) != child)
		return true;
	return !WIFEXITED(status) || WEXITSTATUS(status) != 1;
}

/* The target can open the agent: same file in its mount namespace, and
 * readable with its credentials. */
static int check_agent_visible(pid_t pid, const char *agent, char *why)
{
	char path[PATH_MAX + 64];
	struct stat ours, theirs;
	struct fs_creds c = { 0 };

	if (stat(agent, &ours)) {
		say(why, "cannot stat the agent %s: %s", agent,
		    strerror(errno));
		return -errno;
	}
	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, agent);
	if (stat(path, &theirs) || theirs.st_dev != ours.st_dev ||
	    theirs.st_ino != ours.st_ino) {
		say(why, "the agent %s is not visible at that path in process %d's mount namespace; install it there or set PPROF_ALLOC_AGENT",
		    agent, (int)pid);
		return -ENOENT;
	}
	if (geteuid() == 0 && fs_creds_of(pid, &c)) {
		bool ok = c.uid == 0 || readable_as(pid, agent, &c);

		free(c.groups);
		if (!ok) {
			say(why, "the agent %s is not readable by process %d's user (uid %ld): it or a directory above it is closed to that user",
			    agent, (int)pid, (long)c.uid);
			return -EACCES;
		}
	}
	return 0;
}

static int read_string(pid_t pid, uint64_t addr, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, buf, len - 1, (off_t)addr);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	buf[strnlen(buf, (size_t)n)] = 0;
	return 0;
}

/* Polls for an idle thread this long first: a busy program's threads are
 * each in a system call now and then. */
#define BORROW_TRIES	30
#define BORROW_WAIT_MS	10
/* Then waits for a busy thread's next system call, this long each, in
 * this many threads at most (the main thread first). */
#define BUSY_WAIT_MS	500
#define BUSY_THREADS	4

/* The busy path: up to n threads of pid, the main thread first, never the
 * agent's own.  Returns how many. */
static int busy_threads(pid_t pid, pid_t *tids, int n)
{
	char path[64], comm[32];
	struct dirent *d;
	int k = 0;
	DIR *dir;

	tids[k++] = pid;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return k;
	while ((d = readdir(dir)) && k < n) {
		long tid = strtol(d->d_name, NULL, 10);
		FILE *f;

		if (tid <= 0 || tid == pid)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%ld/comm", (int)pid,
			 tid);
		f = fopen(path, "re");
		if (f && fgets(comm, sizeof(comm), f) &&
		    strcmp(comm, "pprof-alloc\n"))
			tids[k++] = (pid_t)tid;
		if (f)
			fclose(f);
	}
	closedir(dir);
	return k;
}

static int borrow(struct remote *r, pid_t pid, int timeout_ms,
		  char *why)
{
	struct timespec wait = { 0, BORROW_WAIT_MS * PA_NSEC_PER_MSEC };
	pid_t tids[BUSY_THREADS];
	const char *reason = NULL;
	uint64_t longest = 0, sc, restorer;
	int i, n, err;

	/* a thread inside a signal handler is never borrowed: its stack
	 * holds the restorer's address (unknown: not looked for) */
	if (callstub__gadgets(pid, &sc, &restorer))
		restorer = 0;
	for (i = 0; i < BORROW_TRIES; i++) {
		pid_t tid;

		remote__settle();	/* let go of any earlier one */
		tid = remote__pick_thread(pid, restorer);

		if (tid == -ESRCH) {
			say(why, "process %d has gone", (int)pid);
			return -ESRCH;
		}
		if (tid >= 0) {
			err = remote__seize(r, pid, tid, timeout_ms, &reason);
			keep(why, err, reason);
			if (err == -EBUSY) {	/* still stopping from before */
				nanosleep(&wait, NULL);
				continue;
			}
			/* the thread ended between the pick and the seize
			 * (a program that starts and ends threads): another,
			 * unless the whole process has (a zombie counts) */
			if (err == -ESRCH && procexit__alive(pid)) {
				nanosleep(&wait, NULL);
				continue;
			}
			if (err == -ESRCH) {
				say(why, "process %d has gone", (int)pid);
				return err;
			}
			if (err)
				return err;
			if (r->longest_stop_ns < longest)
				r->longest_stop_ns = longest;
			if (remote__idle(r, restorer))
				return 0;
			/* It left its idle call before it stopped: let it go
			 * (nothing was changed) and look again. */
			remote__release(r);
			longest = r->longest_stop_ns;
		}
		nanosleep(&wait, NULL);
	}
	/* None idle: catch a busy one at its next system call. */
	n = busy_threads(pid, tids, BUSY_THREADS);
	for (i = 0; i < n; i++) {
		err = remote__seize_at_syscall(r, pid, tids[i], BUSY_WAIT_MS,
					       &reason);
		keep(why, err, reason);
		if (!err)
			return 0;
		if (err != -EBUSY && err != -ESRCH)
			return err;
		if (!procexit__alive(pid)) {
			say(why, "process %d has gone", (int)pid);
			return -ESRCH;
		}
	}
	say(why, "no thread of process %d waited in a system call in %d ms, nor made one it can be borrowed at in %d ms (each computes without system calls, or waits on a lock); try again",
	    (int)pid, BORROW_TRIES * BORROW_WAIT_MS, BUSY_WAIT_MS);
	return -EBUSY;
}

/* A call whose thread went home on its own leaves r released (inject.h):
 * borrow a thread again for the next one. */
static int again(struct remote *r, pid_t pid, const struct attach_config *cfg,
		 struct attach_stats *st, char *why)
{
	if (r->seized)
		return 0;
	if (r->longest_stop_ns > st->longest_stop_ns)
		st->longest_stop_ns = r->longest_stop_ns;
	remote__release(r);
	return borrow(r, pid, cfg->timeout_ms, why);
}

/* Does pid's program define allocator functions entry patching hooks? */
static bool program_wants_entry(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	return entry__path_wants(path);
}

static int call_attach(struct remote *r, uint64_t fn,
		       const struct attach_config *cfg, bool injected,
		       char *why)
{
	uint64_t args[5] = { cfg->rate, cfg->max_frames, cfg->ring_size,
			     cfg->live_size,
			     (cfg->stats ? PA_ATTACH_STATS : 0) |
			     (injected ? PA_ATTACH_INJECTED : 0) |
			     (program_wants_entry(r->pid) ? PA_ATTACH_ENTRY : 0) |
			     PA_ATTACH_UNWIND(cfg->unwind, cfg->stack_bytes) },
		 ret;
	const char *reason = NULL;
	int err = remote__call(r, fn, args, 5, &ret, cfg->timeout_ms, &reason);

	if (err)
		return keep(why, err, reason);
	if ((int)ret) {
		say(why, "the agent could not start in the target: %s",
		    strerror(-(int)ret));
		return (int)ret < 0 ? (int)ret : -EPROTO;
	}
	return 0;
}

/*
 * The agent started, but the tracer cannot use it: detach it again on a
 * borrowed thread (hooks out, sampling off; the agent and its memfd stay,
 * as after any detach, for a later attach) and say so after the reason.
 */
static void roll_back(struct remote *r, pid_t pid,
		      const struct maps_entry *agent,
		      const struct attach_config *cfg,
		      struct attach_stats *st, char *why)
{
	char ignored[ATTACH_WHY_SIZE], reason[ATTACH_WHY_SIZE];
	const char *unused;
	uint64_t fn, ret;

	snprintf(reason, sizeof(reason), "%s", why);
	if (symbol_address(pid, agent, cfg->agent, PA_DETACH_SYMBOL, &fn) ||
	    again(r, pid, cfg, st, ignored) ||
	    remote__call(r, fn, NULL, 0, &ret, cfg->timeout_ms, &unused) ||
	    (int)ret)
		say(why, "%s; the agent could not be detached again", reason);
	else
		say(why, "%s; the agent was detached again", reason);
}

/* Whether the target's descriptor fdno is still the file id names: its
 * other threads run on while one is borrowed, and may close or reuse it. */
static bool still_ours(pid_t pid, int fdno, const struct stat *id)
{
	struct stat st;
	int fd = pidfd_getfd_of(pid, fdno);
	bool same;

	if (fd < 0)
		return false;
	same = !fstat(fd, &st) && st.st_dev == id->st_dev &&
	       st.st_ino == id->st_ino;
	close(fd);
	return same;
}

/*
 * The agent is not in the target's mount namespace (a container): its
 * bytes go into a memfd made in the target (memfd_create on the borrowed
 * thread, through syscall(): glibc's wrapper is 2.27+), filled by us through pidfd_getfd, and dlopen opens it as
 * /proc/self/fd/N - so nothing is written into the container's files.
 * That path needs a procfs in the target's mount namespace: one without is
 * refused before anything is done (check_memfd_way).  *fdno is the
 * target's descriptor, for close() after the dlopen; path gets the name.
 */
static int agent_memfd(struct remote *r, pid_t pid,
		       const struct attach_config *cfg, uint64_t syscall_at,
		       int *fdno, struct stat *id, char *path, size_t len,
		       char *why)
{
	static const char name[] = AGENT_MEMFD_NAME;
	uint64_t args[3], ret, at;
	const char *reason = NULL;
	int in, out, err = 0;
	struct stat st;
	off_t off = 0;

	*fdno = -1;
	at = remote__scratch(r, sizeof(name));
	err = at ? remote__write(r, at, name, sizeof(name)) : -ENOSPC;
	if (err) {
		say(why, "cannot write into process %d's stack", (int)pid);
		return err;
	}
	args[0] = SYS_memfd_create;
	args[1] = at;
	args[2] = MFD_CLOEXEC;
	err = remote__call(r, syscall_at, args, 3, &ret, cfg->timeout_ms,
			   &reason);
	if (keep(why, err, reason))
		return err;
	if ((int)ret < 0) {
		say(why, "memfd_create failed in process %d (a seccomp filter?): the agent cannot be loaded into its mount namespace",
		    (int)pid);
		return -EPERM;
	}
	*fdno = (int)ret;
	snprintf(path, len, "/proc/self/fd/%d", *fdno);
	out = pidfd_getfd_of(pid, *fdno);
	in = open(cfg->agent, O_RDONLY | O_CLOEXEC);
	if (out < 0 || in < 0 || fstat(in, &st) || fstat(out, id)) {
		err = out < 0 ? out : -errno;
		say(why, "cannot fill the agent's memfd in process %d: %s",
		    (int)pid, strerror(-err));
		goto out_close;
	}
	while (off < st.st_size) {
		ssize_t n = sendfile(out, in, &off, (size_t)(st.st_size - off));

		if (n <= 0) {
			err = n ? -errno : -EIO;
			say(why, "cannot fill the agent's memfd in process %d: %s",
			    (int)pid, strerror(-err));
			break;
		}
	}
out_close:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return err;
}

/* The memfd way needs the target's mount namespace to have a procfs. */
static int check_memfd_way(pid_t pid, const char *agent, char *why)
{
	char path[64];
	struct statfs fs;

	snprintf(path, sizeof(path), "/proc/%d/root/proc", (int)pid);
	if (statfs(path, &fs) || fs.f_type != PROC_SUPER_MAGIC) {
		say(why, "the agent %s is not in process %d's mount namespace, and that namespace has no /proc to load it from a memfd: mount proc there, or install the agent at that path",
		    agent, (int)pid);
		return -ENOENT;
	}
	return 0;
}

/* Words for the worst of a seccomp verdict's dangerous actions. */
static const char *seccomp_words(unsigned int acts)
{
	if (acts & (SECCOMP_MAY_KILL_PROCESS | SECCOMP_MAY_KILL_THREAD))
		return "kill it";
	if (acts & SECCOMP_MAY_TRAP)
		return "send it SIGSYS";
	if (acts & SECCOMP_MAY_USER_NOTIF)
		return "stop it for a supervisor";
	return "stop it for a tracer";
}

/* A task's "Seccomp:" mode (0 none, 1 strict, 2 filter), -1 if unknown. */
static long task_seccomp(pid_t pid, const char *tid)
{
	char path[340], line[128];
	long mode = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%s/status", (int)pid, tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Seccomp:", 8)) {
			mode = strtol(line + 8, NULL, 10);
			break;
		}
	fclose(f);
	return mode;
}

static bool same_set(const struct seccomp_filters *a,
		     const struct seccomp_filters *b)
{
	size_t i;

	if (a->count != b->count)
		return false;
	for (i = 0; i < a->count; i++)
		if (a->progs[i].len != b->progs[i].len ||
		    memcmp(a->progs[i].insns, b->progs[i].insns,
			   a->progs[i].len * sizeof(*a->progs[i].insns)))
			return false;
	return true;
}

/* Judge one thread's filters: 0, or -EPERM said in why. */
static int judge_filters(const struct seccomp_filters *f, pid_t pid,
			 pid_t tid, char *why)
{
	unsigned int acts = 0;
	int err, bad = -1;

	err = seccomp__check_calls(f, seccomp_injection_calls,
				   seccomp_injection_ncalls, &bad, &acts);
	if (err > 0) {
		say(why, "process %d's seccomp filter may %s at %s (system call %d, thread %d), which loading the agent makes; not attaching",
		    (int)pid, seccomp_words(acts), seccomp__call_name(bad),
		    bad, (int)tid);
		return -EPERM;
	}
	if (err < 0) {
		say(why, "process %d's seccomp filter is too intricate to judge (thread %d: %s); not attaching",
		    (int)pid, (int)tid, strerror(-err));
		return -EPERM;
	}
	/* the agent's ring is a memfd, however the agent comes in */
	if (seccomp__may_deny(f, SYS_memfd_create) != 0) {
		say(why, "process %d's seccomp filter forbids memfd_create (thread %d), which the agent needs; not attaching",
		    (int)pid, (int)tid);
		return -EPERM;
	}
	return 0;
}

/*
 * A target under seccomp filters (Docker's, containerd's, systemd's
 * SystemCallFilter=): before anything runs on the borrowed thread, the
 * filters of every filtered thread are read (PTRACE_SECCOMP_GET_FILTER,
 * CAP_SYS_ADMIN; other threads than the borrowed one stopped for that
 * moment only) and run, arguments unknown, for every system call the
 * injection and the agent make (seccomp.c) - the agent's calls run on
 * every thread, and a later call may borrow another.  A filter that may
 * kill, signal or stop the target for any of them is refused, as is one
 * that denies memfd_create; one that only makes a call fail (the default
 * profiles' way) is fine - the agent and the loader handle failures.
 * Strict mode anywhere, or filters that cannot be read, refused.
 */
static int check_seccomp(const struct remote *r, pid_t pid, char *why)
{
	struct seccomp_filters *first = NULL, *f = NULL;
	char dir[64], reason[160];
	struct dirent *d;
	int err = 0;
	DIR *dp;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	dp = opendir(dir);
	if (!dp) {
		say(why, "cannot list process %d's threads: %s", (int)pid,
		    strerror(errno));
		return -errno;
	}
	while (!err && (d = readdir(dp))) {
		pid_t tid = (pid_t)atoi(d->d_name);
		long mode;

		if (tid <= 0)
			continue;
		mode = task_seccomp(pid, d->d_name);
		if (mode <= 0)
			continue;	/* none, or ended */
		if (mode == 1) {
			say(why, "thread %d of process %d runs in seccomp strict mode, which kills it for any system call but read, write and exit; not attaching",
			    (int)tid, (int)pid);
			err = -EPERM;
			break;
		}
		if (tid == r->tid) {
			err = seccomp__read(tid, &f, reason, sizeof(reason));
		} else {
			struct remote other;
			const char *w = NULL;

			err = remote__seize(&other, pid, tid, 200, &w);
			if (err == -ESRCH)
				err = 0;	/* ended */
			else if (err)
				snprintf(reason, sizeof(reason),
					 "thread %d: %s", (int)tid, w ? w : "?");
			else {
				err = seccomp__read(tid, &f, reason,
						    sizeof(reason));
				remote__release(&other);
			}
		}
		if (err) {
			say(why, "process %d runs under a seccomp filter that cannot be judged (%s); not attaching",
			    (int)pid, reason);
			err = -EPERM;
			break;
		}
		if (!f)
			continue;
		if (!first || !same_set(first, f))
			err = judge_filters(f, pid, tid, why);
		if (!first) {
			first = f;
		} else {
			seccomp__free(f);
		}
		f = NULL;
	}
	closedir(dp);
	seccomp__free(f);
	seccomp__free(first);
	return err;
}

/*
 * The target's dlopen and dlerror: libc's (glibc 2.34 and later); before
 * 2.34, libdl's if the program loaded libdl, else libc's own
 * __libc_dlopen_mode (GLIBC_PRIVATE, what glibc loads NSS modules with:
 * dlopen's work, with no dlerror; *dlerror_at is then 0).  0 or -errno,
 * said in why.
 */
static int find_dlopen(pid_t pid, const struct proc_maps *pm,
		       const struct maps_entry *libc, uint64_t *dlopen_at,
		       uint64_t *dlerror_at, char *why)
{
	const struct maps_entry *libdl;
	int err;

	err = symbol_address(pid, libc, NULL, "dlopen", dlopen_at);
	if (!err)
		err = symbol_address(pid, libc, NULL, "dlerror", dlerror_at);
	if (err != -ENOENT)
		goto out;
	libdl = find_module(pm, is_libdl, NULL);
	if (libdl) {
		err = symbol_address(pid, libdl, NULL, "dlopen", dlopen_at);
		if (!err)
			err = symbol_address(pid, libdl, NULL, "dlerror",
					     dlerror_at);
		if (err != -ENOENT)
			goto out;
	}
	*dlerror_at = 0;
	err = symbol_address(pid, libc, NULL, "__libc_dlopen_mode", dlopen_at);
out:
	if (err == -ENOENT && !kill(pid, 0))
		say(why, "no dlopen in %s, process %d's libc, nor in a libdl it loaded: not glibc?",
		    libc->path, (int)pid);
	else if (err)
		symbol_why(why, pid, libc, "dlopen", err);
	return err;
}

static int inject(pid_t pid, const struct attach_config *cfg,
		  struct attach_stats *st, struct ringfile *rf,
		  char *why)
{
	const struct maps_entry *libc, *agent;
	struct proc_maps *pm = NULL;
	struct remote r;
	const char *reason = NULL;
	uint64_t dlopen_at, dlerror_at, attach_at, args[2], handle, at;
	uint64_t syscall_at = 0, close_at = 0;
	struct stat memfd_id;
	char memfd_path[64], scratch[ATTACH_WHY_SIZE];
	const char *load = cfg->agent;
	bool via_memfd = false;
	int err, fdno = -1;

	err = check_agent_visible(pid, cfg->agent, why);
	if (err == -ENOENT) {
		/* another mount namespace: from a memfd, if it has a procfs */
		err = check_memfd_way(pid, cfg->agent, why);
		via_memfd = !err;
	}
	if (err)
		return err;
	err = proc_maps__read(pid, &pm);
	if (err) {
		say(why, "cannot read process %d's maps", (int)pid);
		return err;
	}
	agent = find_module(pm, is_agent, cfg->agent);
	libc = find_module(pm, is_libc, NULL);
	if (!libc) {
		say(why, "process %d has no libc mapped", (int)pid);
		err = -ENOENT;
		goto out_free;
	}
	/* musl (Alpine) cannot load the agent, a glibc library: say so
	 * before anything is done */
	if (symbol_address(pid, libc, NULL, "gnu_get_libc_version", &at) ==
	    -ENOENT && !kill(pid, 0)) {
		say(why, "process %d runs on a C library that is not glibc (%s; musl?), and the agent needs glibc; not attaching",
		    (int)pid, libc->path);
		err = -ENOEXEC;
		goto out_free;
	}
	err = find_dlopen(pid, pm, libc, &dlopen_at, &dlerror_at, why);
	if (err)
		goto out_free;
	/* memfd_create through syscall(): glibc has had that always, its
	 * memfd_create wrapper only since 2.27 */
	if (!agent && via_memfd &&
	    (symbol_address(pid, libc, NULL, "syscall", &syscall_at) ||
	     symbol_address(pid, libc, NULL, "close", &close_at))) {
		say(why, "no syscall() or close() in %s, process %d's libc: the agent cannot be loaded into its mount namespace",
		    libc->path, (int)pid);
		err = -ENOENT;
		goto out_free;
	}
	err = borrow(&r, pid, cfg->timeout_ms, why);
	if (err)
		goto out_free;
	err = check_seccomp(&r, pid, why);
	if (err)
		goto out_release;

	if (!agent) {
		size_t len;

		if (via_memfd) {
			err = agent_memfd(&r, pid, cfg, syscall_at, &fdno,
					  &memfd_id, memfd_path,
					  sizeof(memfd_path), why);
			if (!err && !still_ours(pid, fdno, &memfd_id)) {
				say(why, "process %d closed or replaced the agent's memfd (descriptor %d) while it was being loaded; not attaching",
				    (int)pid, fdno);
				fdno = -1;	/* not ours to close now */
				err = -EBUSY;
			}
			if (!err)
				err = again(&r, pid, cfg, st, why);
			if (err)
				goto out_close;
			load = memfd_path;
		}
		len = strlen(load) + 1;
		at = remote__scratch(&r, len);
		err = at ? remote__write(&r, at, load, len) : -ENAMETOOLONG;
		if (err) {
			say(why, "cannot write into process %d's stack", (int)pid);
			goto out_release;
		}
		args[0] = at;
		args[1] = RTLD_NOW | RTLD_LOCAL;
		/* as glibc's own callers of __libc_dlopen_mode do: a dlopen,
		 * counted as one (its __RTLD_DLOPEN) */
		if (!dlerror_at)
			args[1] |= 0x80000000u;
		err = remote__call(&r, dlopen_at, args, 2, &handle,
				   cfg->timeout_ms, &reason);
		if (keep(why, err, reason))
			goto out_close;
		if (!handle) {
			char msg[256] = "unknown error";
			uint64_t s;

			if (!dlerror_at)
				snprintf(msg, sizeof(msg),
					 "glibc before 2.34 (__libc_dlopen_mode) gives no reason; are libdl.so.2, libpthread.so.0 and libm.so.6 there?");
			else if (!again(&r, pid, cfg, st, why) &&
				 !remote__call(&r, dlerror_at, NULL, 0, &s,
					       cfg->timeout_ms, &reason) && s)
				read_string(pid, s, msg, sizeof(msg));
			say(why, "dlopen of the agent failed in process %d: %s",
			    (int)pid, msg);
			err = -ENOEXEC;
			goto out_close;
		}
		st->injected = true;
		/* mapped now: the target's descriptor is not needed (unless
		 * the program reused its number meanwhile) */
		if (fdno >= 0 && !still_ours(pid, fdno, &memfd_id))
			fdno = -1;
		if (fdno >= 0 && !again(&r, pid, cfg, st, scratch)) {
			uint64_t ret, fd_arg = (uint64_t)fdno;

			if (!remote__call(&r, close_at, &fd_arg, 1, &ret,
					  cfg->timeout_ms, &reason))
				fdno = -1;
		}
		proc_maps__free(pm);
		pm = NULL;
		err = proc_maps__read(pid, &pm);
		if (err) {
			say(why, "cannot read process %d's maps", (int)pid);
			goto out_release;
		}
		agent = find_module(pm, is_agent, cfg->agent);
		if (!agent) {
			say(why, "the agent is loaded but not mapped from %s in process %d",
			    load, (int)pid);
			err = -ENOENT;
			goto out_release;
		}
	}
	err = symbol_address(pid, agent, cfg->agent, PA_ATTACH_SYMBOL,
			     &attach_at);
	if (err) {
		if (err == -ENOENT && !kill(pid, 0))
			say(why, "the agent in process %d has no %s: another version?",
			    (int)pid, PA_ATTACH_SYMBOL);
		else
			symbol_why(why, pid, agent, PA_ATTACH_SYMBOL, err);
		goto out_release;
	}
	err = again(&r, pid, cfg, st, why);
	if (!err)
		err = call_attach(&r, attach_at, cfg, st->injected, why);
	if (err)
		goto out_release;
	/* the thread goes back before the memfd is taken (mapping it takes
	 * the tracer milliseconds); if that fails, a thread is borrowed
	 * again to detach the agent */
	remote__release(&r);
	err = attach__find_agent(pid, rf, why);
	if (err == -ENOENT)
		say(why, "the agent started in process %d but made no memfd",
		    (int)pid);
	if (!err)
		err = owner__claim(rf->hdr, pid, cfg->owner_addr, why,
				   ATTACH_WHY_SIZE);
	if (!err && getenv("PPROF_ALLOC_TEST_REFUSE_AGENT")) {
		owner__release(rf->hdr);
		say(why, "refused for a test (PPROF_ALLOC_TEST_REFUSE_AGENT)");
		err = -EPROTO;
	}
	if (err) {
		if (rf->hdr)
			ringfile__close(rf);
		/* not when another tracer, alive, owns it: it is theirs */
		if (err != -EBUSY)
			roll_back(&r, pid, agent, cfg, st, why);
	}
out_close:
	/* a memfd the dlopen did not take: closed again in the target */
	if (fdno >= 0 && !again(&r, pid, cfg, st, scratch)) {
		uint64_t ret, fd_arg = (uint64_t)fdno;

		remote__call(&r, close_at, &fd_arg, 1, &ret, cfg->timeout_ms,
			     &reason);
	}
out_release:
	remote__release(&r);
	if (r.longest_stop_ns > st->longest_stop_ns)
		st->longest_stop_ns = r.longest_stop_ns;
out_free:
	proc_maps__free(pm);
	return err;
}

/*
 * Zero len bytes of the memfd at off: the pages given back to the kernel
 * (a hole reads as zeros), so that a table mostly unused is not made
 * resident by clearing it; written over with zeros where a hole cannot
 * be punched.
 */
static void clear(struct ringfile *rf, uint64_t off, uint64_t len)
{
	if (!len)
		return;
	/* where the kernel does not overcommit the memfd was allocated
	 * whole, so that no touch in the program's malloc can fail: it
	 * stays so */
	if (rf->fd < 0 || pa_strict_overcommit() ||
	    fallocate(rf->fd, FALLOC_FL_PUNCH_HOLE |
				    FALLOC_FL_KEEP_SIZE, (off_t)off,
				    (off_t)len))
		memset((uint8_t *)rf->hdr + off, 0, len);
}

int attach__connect(pid_t pid, const struct attach_config *cfg,
		    struct ringfile *rf, struct attach_stats *st,
		    char *why)
{
	uint32_t orphan;
	int err, state;

	memset(st, 0, sizeof(*st));
	err = attach__find_agent(pid, rf, why);
	if (err && err != -ENOENT)
		return err;
	if (!err) {
		err = owner__claim(rf->hdr, pid, cfg->owner_addr, why,
				   ATTACH_WHY_SIZE);
		if (err) {
			ringfile__close(rf);
			return err;
		}
		state = __atomic_load_n(&rf->hdr->agent_state, __ATOMIC_ACQUIRE);
		if (state == PA_STATE_RUNNING) {
			st->existing = true;
			/* a tracer that died may have left its patches: this
			 * one owns them now (and puts them back at detach) */
			attach__patch_entries(pid, cfg->agent, st);
			rf->hdr->entry_patched = st->entry_patched;
			__atomic_store_n(&rf->hdr->mallctl_at, st->mallctl_at,
					 __ATOMIC_RELEASE);
			return 0;
		}
		if (state != PA_STATE_DETACHED) {
			owner__release(rf->hdr);
			ringfile__close(rf);
			say(why, "the agent in process %d is disabled (state %d)",
			    (int)pid, state);
			return -EPROTO;
		}
		orphan = __atomic_exchange_n(&rf->hdr->orphaned, 0,
					     __ATOMIC_ACQ_REL);
		if (orphan)
			pr_warn("note: the agent in process %d had turned itself off: its tracer (process %u) ended without detaching\n",
				(int)pid, orphan);
		/* detached, nothing writes it: empty the stale live table here
		 * rather than in the thread we are about to borrow */
		clear(rf, PA_HEADER_SIZE + rf->data_size,
		      rf->live_capacity * sizeof(struct pa_live_entry));
		/* and the sites' counts: they count from this attach on */
		clear(rf, pa_site_offset(rf->data_size, rf->live_capacity,
					 rf->site_capacity != 0,
					 rf->max_frames),
		      pa_site_table_size(rf->site_capacity));
		rf->hdr->sites_used = 0;
		ringfile__close(rf);
		st->reattached = true;
	}
	err = inject(pid, cfg, st, rf, why);
	if (!err) {
		attach__patch_entries(pid, cfg->agent, st);
		rf->hdr->entry_patched = st->entry_patched;
		__atomic_store_n(&rf->hdr->mallctl_at, st->mallctl_at,
				 __ATOMIC_RELEASE);
	}
	return err;
}

void attach__patch_entries(pid_t pid, const char *agent,
			   struct attach_stats *st)
{
	struct entry_plan *p;
	char why[ATTACH_WHY_SIZE];
	unsigned int i;
	int err;

	if (!program_wants_entry(pid))
		return;
	p = calloc(1, sizeof(*p));
	if (!p) {
		pr_warn("out of memory: the program's own allocator is not hooked\n");
		return;
	}
	err = entry__plan(pid, agent, p, why, sizeof(why));
	if (!err && p->n)
		err = entry__apply(p, why, sizeof(why));
	st->entry_patched = p->patched;
	st->entry_allocator = p->allocator;
	st->mallctl_at = p->patched ? p->mallctl_at : 0;
	if (p->longest_stop_ns > st->longest_stop_ns)
		st->longest_stop_ns = p->longest_stop_ns;
	if (err) {
		snprintf(st->entry_line, sizeof(st->entry_line),
			 "%.400s defines its own allocator (%s, linked into the executable), and its calls are not seen: %.400s",
			 p->program[0] ? p->program : "the program",
			 p->allocator ? p->allocator : "an allocator", why);
		pr_warn("%s\n", st->entry_line);
		goto out_free;
	}
	entry__describe(p, st->entry_line, sizeof(st->entry_line));
	for (i = 0; i < p->n && !p->fn[i].refused[0]; i++)
		;
	if (i < p->n)
		pr_warn("%s\n", st->entry_line);
	else
		pr_info("%s\n", st->entry_line);
out_free:
	free(p);
}

int attach__rescan(pid_t pid, const struct attach_config *cfg,
		   struct attach_stats *st)
{
	struct proc_maps *pm = NULL;
	const struct maps_entry *agent;
	char ignored[ATTACH_WHY_SIZE];
	const char *unused;
	struct remote r;
	uint64_t fn, ret = 0;
	int err;

	err = proc_maps__read(pid, &pm);
	if (err)
		return err;
	agent = find_module(pm, is_agent, cfg->agent);
	err = !agent ? -ENOENT :
	      symbol_address(pid, agent, cfg->agent, PA_RESCAN_SYMBOL, &fn);
	proc_maps__free(pm);
	if (err)
		return err;
	err = borrow(&r, pid, cfg->timeout_ms, ignored);
	if (err)
		return err;
	err = remote__call(&r, fn, NULL, 0, &ret, cfg->timeout_ms, &unused);
	remote__release(&r);
	if (r.longest_stop_ns > st->longest_stop_ns)
		st->longest_stop_ns = r.longest_stop_ns;
	return err ? err : (int)ret == 1;
}

/* Put the file's bytes back over the entries our jumps patched. */
static int restore_entries(pid_t pid, const struct attach_config *cfg,
			   struct attach_stats *st, struct ringfile *rf,
			   char *why)
{
	struct entry_plan *p = calloc(1, sizeof(*p));
	int err = -ENOMEM;

	if (p) {
		err = entry__plan(pid, cfg->agent, p, why, ATTACH_WHY_SIZE);
		if (!err)
			err = entry__restore(p, why, ATTACH_WHY_SIZE);
		free(p);
	}
	if (err)
		return err;
	st->entry_patched = 0;
	rf->hdr->entry_patched = 0;
	return 0;
}

int attach__detach(pid_t pid, const struct attach_config *cfg,
		   struct ringfile *rf, struct attach_stats *st,
		   char *why)
{
	int restore_err = 0;
	struct proc_maps *pm = NULL;
	const struct maps_entry *agent;
	uint64_t fn = 0, ret, deadline, next_try = 0;

	/* the file's bytes go back first: the hooks pass calls through in
	 * any state, and a detach that times out leaves nothing patched */
	if (st->entry_patched || rf->hdr->entry_patched)
		restore_err = restore_entries(pid, cfg, st, rf, why);
	__atomic_store_n(&rf->hdr->command, PA_CMD_DETACH, __ATOMIC_RELEASE);
	if (!proc_maps__read(pid, &pm)) {
		agent = find_module(pm, is_agent, cfg->agent);
		if (!agent ||
		    symbol_address(pid, agent, cfg->agent, PA_DETACH_SYMBOL,
				   &fn))
			fn = 0;
		proc_maps__free(pm);
	}
	/*
	 * Until the agent says it is detached: any of its sampling threads
	 * obeys the command word; meanwhile, every 20 ms, try to borrow a
	 * thread that has gone idle and call detach on it - a target whose
	 * threads were all busy a moment ago usually has one now.
	 */
	deadline = pa_now_ns() + WAIT_DETACH_MS * PA_NSEC_PER_MSEC;
	while (__atomic_load_n(&rf->hdr->agent_state, __ATOMIC_ACQUIRE) !=
	       PA_STATE_DETACHED) {
		struct timespec tick = { 0, 2 * PA_NSEC_PER_MSEC };
		uint64_t now = pa_now_ns();

		if (now >= deadline || kill(pid, 0)) {
			owner__release(rf->hdr);
			say(why, "the agent in process %d has not detached yet; it will at its next sampled allocation",
			    (int)pid);
			return -ETIMEDOUT;
		}
		if (fn && now >= next_try) {
			struct remote r;
			char ignored[ATTACH_WHY_SIZE];
			const char *unused;

			next_try = now + DETACH_RETRY_NS;
			if (!borrow(&r, pid, cfg->timeout_ms, ignored)) {
				remote__call(&r, fn, NULL, 0, &ret,
					     cfg->timeout_ms, &unused);
				remote__release(&r);
				if (r.longest_stop_ns > st->longest_stop_ns)
					st->longest_stop_ns = r.longest_stop_ns;
			}
		}
		nanosleep(&tick, NULL);
	}
	/* still ours: attach__leave releases it */
	if (restore_err) {
		owner__release(rf->hdr);
		say(why, "the program's allocator entries could not be put back in process %d; its hooks pass every call through",
		    (int)pid);
		return -EIO;
	}
	return 0;
}

void attach__leave(pid_t pid, const struct attach_config *cfg,
		   struct ringfile *rf, struct attach_stats *st)
{
	char why[ATTACH_WHY_SIZE];
	int err = unload__agent(pid, cfg, st, why);

	if (!procexit__alive(pid))
		err = UNLOAD_NOTHING;	/* it ended meanwhile: nothing stays */
	if (err == UNLOAD_DONE && !why[0])
		pr_info("unloaded the agent from process %d (its threads stopped %.2f ms for it)\n",
			(int)pid, (double)st->unload_stop_ns / PA_NSEC_PER_MSEC);
	else if (err == UNLOAD_DONE)
		pr_warn("unloaded the agent from process %d (its threads stopped %.2f ms for it), but %s\n",
			(int)pid, (double)st->unload_stop_ns / PA_NSEC_PER_MSEC,
			why);
	else if (err == UNLOAD_STAYS)
		pr_warn("the agent stays loaded in process %d, turned off (no thread, no memfd; its hooks pass every call through): %s\n",
			(int)pid, why);
	else if (err != UNLOAD_NOTHING)
		pr_warn("the agent stays loaded in process %d, detached (its hooks pass every call through): %s\n",
			(int)pid, why);
	owner__release(rf->hdr);
}

/* ---- for unload.c (attach_internal.h) -------------------------------- */

const struct maps_entry *attach__agent_map(const struct proc_maps *pm,
					   const char *agent)
{
	return find_module(pm, is_agent, agent);
}

const struct maps_entry *attach__libc_map(const struct proc_maps *pm)
{
	return find_module(pm, is_libc, NULL);
}

const struct maps_entry *attach__libdl_map(const struct proc_maps *pm)
{
	return find_module(pm, is_libdl, NULL);
}

int attach__open_mapped(pid_t pid, const struct maps_entry *m,
			const char *ours)
{
	return open_mapped(pid, m, ours);
}

int attach__symbol(pid_t pid, const struct maps_entry *m, const char *ours,
		   const char *name, uint64_t *addr)
{
	return symbol_address(pid, m, ours, name, addr);
}

int attach__borrow(struct remote *r, pid_t pid, int timeout_ms, char *why)
{
	return borrow(r, pid, timeout_ms, why);
}
