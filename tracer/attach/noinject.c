// SPDX-License-Identifier: MIT
/*
 * noinject.c - the calls into a running process, on an architecture they
 * are not written for yet (aarch64: docs/design.md, "Architectures").
 *
 * inject.c, callstub.c, unload.c and entry.c hold machine code, register
 * layouts and signal frames of x86-64.  Where they are not built, this
 * file gives their interface: every way into a running process says it
 * is not done here (-EOPNOTSUPP, with the reason), nothing is left seized,
 * and what does not need the target's registers (finding no allocator to
 * patch, settling no thread) answers as it would where nothing applies.
 * The front-ends refuse --pid and the like before they get here
 * (attach.c's attach__supported); these answers are the floor under that.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include "arch/arch.h"
#include "callstub.h"
#include "entry.h"
#include "inject.h"
#include "unload.h"

#define WHY_NOT "calls into a running process are not supported on " \
		PA_ARCH_NAME " yet"

static int refuse(const char **why)
{
	*why = WHY_NOT;
	return -EOPNOTSUPP;
}

pid_t remote__pick_thread(pid_t pid, uint64_t restorer)
{
	(void)pid;
	(void)restorer;
	return -EOPNOTSUPP;
}

int remote__seize(struct remote *r, pid_t pid, pid_t tid, int timeout_ms,
		  const char **why)
{
	(void)r;
	(void)pid;
	(void)tid;
	(void)timeout_ms;
	return refuse(why);
}

int remote__seize_at_syscall(struct remote *r, pid_t pid, pid_t tid,
			     int timeout_ms, const char **why)
{
	return remote__seize(r, pid, tid, timeout_ms, why);
}

bool remote__idle(const struct remote *r, uint64_t restorer)
{
	(void)r;
	(void)restorer;
	return false;
}

int remote__call(struct remote *r, uint64_t fn, const uint64_t *args,
		 int nargs, uint64_t *ret, int timeout_ms, const char **why)
{
	(void)r;
	(void)fn;
	(void)args;
	(void)nargs;
	(void)ret;
	(void)timeout_ms;
	return refuse(why);
}

int remote__munmap(struct remote *r, uint64_t addr, uint64_t len,
		   int timeout_ms, const char **why)
{
	(void)r;
	(void)addr;
	(void)len;
	(void)timeout_ms;
	return refuse(why);
}

int remote__write(const struct remote *r, uint64_t addr, const void *buf,
		  size_t len)
{
	(void)r;
	(void)addr;
	(void)buf;
	(void)len;
	return -EOPNOTSUPP;
}

uint64_t remote__scratch(struct remote *r, size_t len)
{
	(void)r;
	(void)len;
	return 0;
}

int remote__release(struct remote *r)
{
	(void)r;
	return 0;
}

int remote__settle(void)
{
	return 0;
}

int remote__wait_thread(pid_t tid, int *status, int timeout_ms)
{
	(void)tid;
	(void)status;
	(void)timeout_ms;
	return -EOPNOTSUPP;
}

void remote__detach_thread(pid_t tid, int sig)
{
	ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)sig);
}

int callstub__gadgets(pid_t pid, uint64_t *syscall_ret, uint64_t *restorer)
{
	(void)pid;
	*syscall_ret = *restorer = 0;
	return -ENOENT;
}

int unload__agent(pid_t pid, const struct attach_config *cfg,
		  struct attach_stats *st, char *why)
{
	(void)pid;
	(void)cfg;
	(void)st;
	snprintf(why, ATTACH_WHY_SIZE, WHY_NOT);
	return -EOPNOTSUPP;
}

bool entry__file_wants(int fd)
{
	(void)fd;
	return false;
}

bool entry__path_wants(const char *path)
{
	(void)path;
	return false;
}

const char *entry__allocator_of(int fd)
{
	(void)fd;
	return "an allocator";
}

int entry__plan(pid_t pid, const char *agent, struct entry_plan *p,
		char *why, size_t size)
{
	(void)pid;
	(void)agent;
	p->n = 0;
	snprintf(why, size, "entry patching is not supported on " PA_ARCH_NAME
		 " yet");
	return -EOPNOTSUPP;
}

int entry__apply(struct entry_plan *p, char *why, size_t size)
{
	(void)p;
	snprintf(why, size, "entry patching is not supported on " PA_ARCH_NAME
		 " yet");
	return -EOPNOTSUPP;
}

int entry__restore(struct entry_plan *p, char *why, size_t size)
{
	(void)p;
	(void)why;
	(void)size;
	return 0;
}

void entry__describe(const struct entry_plan *p, char *buf, size_t size)
{
	(void)p;
	snprintf(buf, size, "entry patching is not supported on " PA_ARCH_NAME
		 " yet");
}
