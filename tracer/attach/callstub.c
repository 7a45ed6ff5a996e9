// SPDX-License-Identifier: MIT
/*
 * callstub.c - the code a borrowed thread runs, and the frame that brings it
 * back.
 *
 * A call made with ptrace alone (set the pc, make 0 the return address, catch
 * the fault) leaves the thread's way home in the tracer's memory: if the
 * tracer dies mid-call (kill -9, the OOM killer, a crash), the kernel lets
 * the thread go with the call's registers, it returns to address 0, and the
 * target dies.  So the way home lives in the target instead:
 *
 *   - the frame: a signal frame (the kernel's struct rt_sigframe, as it
 *     lays one out for a handler) written on the borrowed thread's stack,
 *     below the red zone and a scratch area for arguments.  It holds the
 *     thread's registers, its floating-point and vector state and its
 *     signal mask, and brings the thread back to where the stop found it -
 *     an interrupted system call restarted as the kernel would restart it
 *     (machine.h builds it, one file a processor).
 *
 *   - the stub: one page of code, mapped r-x once per process and found
 *     again by later attaches (its bytes are compared whole).  It calls
 *     the function with the arguments and the mailbox in registers the
 *     tracer set, writes the result and "done" in the mailbox, waits in
 *     ppoll(NULL, 0, 250 ms), then makes rt_sigreturn with the stack
 *     pointer at the frame.
 *
 *     The mailbox (struct callstub_mailbox) lies in the frame, above the
 *     call's stack.  The thread runs the call freely (PTRACE_CONT: the
 *     called code's system calls are not stopped, a loader's lock is not
 *     held longer); the tracer reads the mailbox until it says done, then
 *     interrupts the thread in its wait: an event-stop, which with
 *     syscall-stops is the only kind of stop a dying tracer may leave a
 *     thread in (with TRACESYSGOOD a syscall-stop's signal is no signal; a
 *     signal-delivery-stop would deliver its signal).  A tracer that died
 *     leaves the thread waiting that out, then going home.  The
 *     wait is a ppoll because an interrupted ppoll restarts without the
 *     thread's restart block (a futex or poll with a timeout would put
 *     theirs over the one of the call the thread was borrowed from: its
 *     poll, restarted, would have run our wait).
 *
 *   - mapping the stub takes one system call made on the thread: the frame
 *     is written first, then the thread runs libc's "syscall; ret" with
 *     mmap's arguments and returns into the signal restorer, whose
 *     rt_sigreturn takes the same frame: a tracer that dies there leaves a
 *     page mapped and the thread back home.  Both sequences are looked up
 *     by their bytes in what the target maps: libc first, then the other
 *     libraries and the vDSO (aarch64's restorer is there).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "callstub.h"
#include "elf/maps.h"
#include "machine.h"

uint64_t callstub__entry(uint64_t page)
{
	return page + machine_stub_code;
}

static int mem_open(pid_t pid, int flags)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int callstub__find(pid_t pid, uint64_t *page)
{
	struct proc_maps *pm;
	uint8_t buf[256];
	int fd, err;
	size_t i;

	err = proc_maps__read(pid, &pm);
	if (err)
		return err;
	fd = mem_open(pid, O_RDONLY);
	if (fd < 0) {
		err = fd;
		goto out_maps;
	}
	err = -ENOENT;
	for (i = 0; i < pm->count; i++) {
		const struct maps_entry *m = &pm->entries[i];

		if (m->path[0] || m->end - m->start != CALLSTUB_PAGE ||
		    m->prot != (MAPS_PROT_READ | MAPS_PROT_EXEC))
			continue;
		if (pread(fd, buf, machine_stub_size, (off_t)m->start) ==
			    (ssize_t)machine_stub_size &&
		    !memcmp(buf, machine_stub, machine_stub_size)) {
			*page = m->start;
			err = 0;
			break;
		}
	}
	close(fd);
out_maps:
	proc_maps__free(pm);
	return err;
}

int callstub__write(pid_t pid, uint64_t page)
{
	int fd = mem_open(pid, O_RDWR), err = 0;
	ssize_t n;

	if (fd < 0)
		return fd;
	n = pwrite(fd, machine_stub, machine_stub_size, (off_t)page);
	if (n != (ssize_t)machine_stub_size)
		err = n < 0 ? -errno : -EIO;
	close(fd);
	return err;
}

static bool is_libc(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5);
}

/* The first copy of the bytes insn at an instruction's boundary. */
static void *find_insns(uint8_t *text, size_t len, const uint8_t *insn,
			size_t size)
{
	uint8_t *at = text, *hit;

	while ((hit = memmem(at, len - (size_t)(at - text), insn, size))) {
		if (!((size_t)(hit - text) % machine_insn_align))
			return hit;
		at = hit + 1;
	}
	return NULL;
}

static bool is_vdso(const struct maps_entry *m)
{
	return !strcmp(m->path, "[vdso]");
}

/* Look for both sequences in one executable mapping.  Sets what it finds. */
static void search(int fd, const struct maps_entry *m, uint64_t *sc,
		   uint64_t *rt)
{
	size_t len = m->end - m->start;
	uint8_t *text;
	void *hit;

	if (len > (64u << 20))
		return;
	text = malloc(len);
	if (!text)
		return;
	if (pread(fd, text, len, (off_t)m->start) != (ssize_t)len)
		goto out_free;
	if (!*sc && (hit = find_insns(text, len, machine_syscall_ret,
				      machine_syscall_ret_size)))
		*sc = m->start + (uint64_t)((uint8_t *)hit - text);
	if (!*rt && is_vdso(m) == machine_restorer_in_vdso &&
	    (hit = find_insns(text, len, machine_restorer,
			      machine_restorer_size)))
		*rt = m->start + (uint64_t)((uint8_t *)hit - text);
out_free:
	free(text);
}

int callstub__gadgets(pid_t pid, uint64_t *sc, uint64_t *rt)
{
	struct proc_maps *pm;
	int fd, err, pass;
	size_t i;

	*sc = *rt = 0;
	err = proc_maps__read(pid, &pm);
	if (err)
		return err;
	fd = mem_open(pid, O_RDONLY);
	if (fd < 0) {
		err = fd;
		goto out_maps;
	}
	/* libc first: getpid and friends end in "syscall; ret", and on
	 * x86-64 __restore_rt is the restorer.  aarch64's is the vDSO's, and
	 * only there: a module's read-only data may share its executable
	 * segment, and the same bytes in it are no restorer a handler
	 * returns to */
	for (pass = 0; pass < 2 && !(*sc && *rt); pass++)
		for (i = 0; i < pm->count && !(*sc && *rt); i++) {
			const struct maps_entry *m = &pm->entries[i];

			if (!(m->prot & MAPS_PROT_EXEC) ||
			    (m->path[0] != '/' && strcmp(m->path, "[vdso]")) ||
			    is_libc(m->path) != (pass == 0))
				continue;
			search(fd, m, sc, rt);
		}
	close(fd);
	err = *sc && *rt ? 0 : -ENOENT;
out_maps:
	proc_maps__free(pm);
	return err;
}

void callstub__mailbox(struct callstub_mailbox *mb)
{
	memset(mb, 0, sizeof(*mb));
	mb->wait_nsec = CALLSTUB_WAIT_NSEC;
}

void callframe__free(struct callframe *f)
{
	free(f->bytes);
	f->bytes = NULL;
}
