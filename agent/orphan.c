// SPDX-License-Identifier: MIT
/*
 * orphan.c - an injected agent whose tracer died turns itself off.
 *
 * A tracer that attached with --pid and was killed (SIGKILL, OOM) never
 * detached: its agent went on sampling into a ring nobody read, at the
 * target's cost, until the next attach.  The stats thread, which an
 * attached agent always has, asks orphan__tracer_gone every
 * PA_ORPHAN_CHECK_MS while the agent runs, and detaches the agent when it
 * says so: the hooks pass everything through, the GOT slots are put back
 * (attach.c), and the header's orphaned word names the dead tracer for the
 * next --pid or stats to say.
 *
 * The tracer's claim in the header (owner: its pid and the low 32 bits of
 * its start time; owner_ns: its PID namespace) says who it is.  In our own
 * PID namespace it is alive when /proc/PID/stat shows that start time (a
 * pid reused since is not it).  From another namespace (a tracer on the
 * host, the target in a container) it cannot be looked up; there the
 * tracer's loop bumps tracer_beat at least every 50 ms, and a beat that
 * has not moved for PA_ORPHAN_BEAT_MS means it is gone - a tracer stopped
 * that long (SIGSTOP) loses its agent too, and says so when it resumes.
 * No claim at all (a tracer that released it at its detach) is not an
 * orphan: that agent is detached already.  A preloaded agent never asks:
 * cores and late attach need it to keep recording.
 *
 * Runs on the stats thread only; allocates nothing (raw system calls into
 * a stack buffer).
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "agent.h"
#include "pa_clock.h"

/* Field 22 of /proc/PID/stat, the start time in clock ticks; 0 if the
 * process is gone or the file does not parse. */
static uint64_t start_time(uint32_t pid)
{
	char path[32] = "/proc/", digits[10], buf[512], *p, *end;
	size_t at = 6, k = 0;
	uint64_t v = 0;
	ssize_t n;
	int fd, field;

	do
		digits[k++] = (char)('0' + pid % 10);
	while ((pid /= 10) && k < sizeof(digits));
	while (k)
		path[at++] = digits[--k];
	memcpy(path + at, "/stat", 6);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')');	/* after comm, which may hold anything */
	if (!p)
		return 0;
	end = buf + n;
	for (field = 2; field < 22 && p < end; p++)
		if (*p == ' ')
			field++;
	for (; p < end && *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (uint64_t)(*p - '0');
	return v;
}

uint32_t orphan__tracer_gone(struct pa_header *hdr, uint64_t now_ns)
{
	static uint32_t last_beat;
	static uint64_t last_owner, beat_moved_ns, own_ns;
	uint64_t owner = __atomic_load_n(&hdr->owner, __ATOMIC_ACQUIRE);
	uint64_t ns = __atomic_load_n(&hdr->owner_ns, __ATOMIC_ACQUIRE);
	uint32_t beat = __atomic_load_n(&hdr->tracer_beat, __ATOMIC_ACQUIRE);
	uint32_t pid = (uint32_t)owner;
	uint64_t t;

	/* a new owner (a later attach) is timed from now */
	if (beat != last_beat || owner != last_owner || !beat_moved_ns) {
		last_beat = beat;
		last_owner = owner;
		beat_moved_ns = now_ns;
	}
	if (!owner || !pid)
		return 0;
	if (!own_ns)
		own_ns = pa_pidns_inode();
	if (ns && ns == own_ns) {
		t = start_time(pid);
		return t && (uint32_t)t == (uint32_t)(owner >> 32) ? 0 : pid;
	}
	return now_ns - beat_moved_ns >= PA_ORPHAN_BEAT_MS * PA_NSEC_PER_MSEC ?
	       pid : 0;
}
