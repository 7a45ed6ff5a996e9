// SPDX-License-Identifier: MIT
/*
 * owner.c - one tracer at a time per agent.
 *
 * Two tracers draining one ring split its records between them, and the
 * first to detach unhooks the agent under the other.  So a tracer claims
 * the agent in its memfd header before it uses it (launch, --pid, serve),
 * and a second one finds the first alive and refuses, naming it.
 *
 * The claim is one 64-bit word, the owner's pid and the low 32 bits of its
 * start time (clock ticks since boot, /proc/PID/stat), swapped in with a
 * compare-and-swap from 0 or from the value it found.  That value's owner
 * is alive if a process with that pid and that start time exists in our
 * PID namespace: a pid reused since is not the owner.  An owner in another
 * PID namespace cannot be looked up from here; it is taken over, with a
 * warning, rather than block every later tracer for ever.  A tracer gives
 * the claim back when it detaches; one that dies leaves a claim that the
 * next one finds dead.  The header is the target's to scribble on: a value
 * that names no live process is just stale.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "elf/maps.h"
#include "owner.h"
#include "common/log.h"



static uint64_t pid_ns(void)
{
	struct stat st;

	return stat("/proc/self/ns/pid", &st) ? 0 : (uint64_t)st.st_ino;
}

static uint64_t me(void)
{
	pid_t pid = getpid();

	return (uint64_t)(uint32_t)pid |
	       (uint64_t)(uint32_t)proc_stat__start_time(pid) << 32;
}

static bool alive(uint64_t owner)
{
	pid_t pid = (pid_t)(uint32_t)owner;
	uint64_t t;

	if (pid <= 0)
		return false;
	t = proc_stat__start_time(pid);
	return t && (uint32_t)t == (uint32_t)(owner >> 32);
}

int owner__claim(struct pa_header *hdr, pid_t target, const char *addr,
		 char *why, size_t size)
{
	uint64_t self = me(), cur, ns = pid_ns(), their_ns;
	char where[sizeof(hdr->owner_addr)];
	int tries;

	for (tries = 0; tries < 100; tries++) {
		cur = __atomic_load_n(&hdr->owner, __ATOMIC_ACQUIRE);
		if (cur == self)
			return 0;
		their_ns = __atomic_load_n(&hdr->owner_ns, __ATOMIC_ACQUIRE);
		if (cur && alive(cur)) {
			memcpy(where, hdr->owner_addr, sizeof(where));
			where[sizeof(where) - 1] = 0;
			snprintf(why, size,
				 "process %d is already being profiled by pprof-alloc (process %d%s%s); stop that one first%s",
				 (int)target, (int)(uint32_t)cur,
				 where[0] ? ", serving on " : "", where,
				 where[0] ? ", or use its endpoints" : "");
			return -EBUSY;
		}
		if (__atomic_compare_exchange_n(&hdr->owner, &cur, self, false,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			if (cur && their_ns && their_ns != ns)
				pr_warn("took process %d's agent over from a tracer in another PID namespace (process %d there), which cannot be checked from here\n",
					(int)target, (int)(uint32_t)cur);
			__atomic_store_n(&hdr->owner_ns, ns, __ATOMIC_RELEASE);
			memset(hdr->owner_addr, 0, sizeof(hdr->owner_addr));
			if (addr)
				strncpy(hdr->owner_addr, addr,
					sizeof(hdr->owner_addr) - 1);
			return 0;
		}
	}
	snprintf(why, size, "the agent's owner keeps changing; try again");
	return -EBUSY;
}

void owner__release(struct pa_header *hdr)
{
	uint64_t self = me();

	__atomic_compare_exchange_n(&hdr->owner, &self, 0, false,
				    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
