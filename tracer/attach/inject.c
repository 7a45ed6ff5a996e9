// SPDX-License-Identifier: MIT
/*
 * inject.c - borrow one thread of a running process to call a function.
 *
 * This is how the tracer gets the agent into a process nobody started with
 * a preload: it calls dlopen in the target.  No gdb: registers, a signal
 * frame on the thread's stack and one page of code (callstub.c).  The
 * sequence:
 *
 *   1. pick a thread blocked in an idle system call (poll, epoll_wait,
 *      nanosleep, accept, read of a socket, pipe or terminal...).  Only
 *      when there is none, a thread waiting in futex for a condition
 *      variable, pthread_join or a semaphore - never one waiting for a
 *      low-level lock, which may hold another (fork() holds the arena
 *      locks while it waits for the next one; see borrowable_futex);
 *   2. PTRACE_SEIZE (with TRACESYSGOOD) and PTRACE_INTERRUPT that thread
 *      only - the others run on - and save its registers, extended state
 *      and signal mask; check that it stopped inside such a call with room
 *      on its stack (remote__idle()), and in an event-stop, not for a
 *      signal: it may have moved between the pick and the stop;
 *   3. the first call writes the way back on the thread's stack - a signal
 *      frame of its saved state, with a mailbox - and finds the stub page,
 *      or maps it; each call then starts at the stub with the function,
 *      the mailbox and the arguments in registers (machine.h); the thread
 *      runs it freely (PTRACE_CONT) until the mailbox says done, and is
 *      interrupted in the wait that follows;
 *   4. release puts back the exact state from the tracer (go_home), so
 *      that an interrupted system call restarts as the kernel would have
 *      restarted it, and detaches.
 *
 * From the first change to the thread's registers to the detach, the
 * thread holds registers that lead home without us: if the tracer dies
 * (kill -9, the OOM killer, a crash), the kernel lets the thread go from a
 * syscall-stop or an event-stop - never a signal-delivery-stop, which
 * would deliver its signal - and it finishes the call, waits out the
 * stub's second and returns through the frame.  A thread that makes no
 * idle system call can be caught at the entry of one of its own instead
 * (remote__seize_at_syscall); its way home is then to make that call (or,
 * where a state taken at that stop is not whole, it is caught again just
 * after the call).  PPROF_ALLOC_TEST_KILL_STEP=N kills the tracer at the
 * Nth step that changes the thread, for the tests that show it.
 *
 * Signals that arrive for the thread during a call are not swallowed and
 * keep their sender: while borrowed, the thread blocks every signal but
 * the faults, so the kernel queues them for it, siginfo and all, until its
 * mask is put back.  One that arrives anyway (the called code unblocked
 * it: glibc's pthread_sigmask never blocks SIGCANCEL) is blocked again and
 * handed back to the kernel, which requeues it.  SIGSETXID stays unblocked
 * (a setuid elsewhere waits for every thread); a SIGSTOP is delivered, and
 * the group stop it starts continued for the call (it holds after the
 * detach).  A thread stopped for a signal at the seize is not borrowed.
 * Times are bounded: a call that does not return within its timeout is
 * reported and the thread let go to finish it and come home on its own
 * (a loader stopped holding its lock would hang the process).
 *
 * A thread that was seized but had not stopped when we let it go (one
 * waiting in vfork for its child, which no interrupt ends) cannot be
 * detached yet: PTRACE_DETACH needs a stop, and it would take the pending
 * interrupt's later and stay there, frozen, as long as the tracer lives.
 * Such threads are kept in a list and detached at their stop by
 * remote__settle(), which the tracer's loop calls (ptrace requests come
 * from the thread that seized).
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "callstub.h"
#include "elf/maps.h"
#include "inject.h"
#include "pa_clock.h"

#define RED_ZONE	128
#define CALL_STACK_ROOM	(64 * 1024)	/* below sp, for frame and call */
#define SIGSETXID	33		/* glibc's, for setuid in every thread */

#define ORPHANS_MAX	64

/* Seized, not stopped when let go: detached by remote__settle(). */
static struct orphan {
	pid_t tid;
	int sig;		/* to deliver at the detach */
} orphans[ORPHANS_MAX];
static int norphans;

static bool is_orphan(pid_t tid)
{
	int i;

	for (i = 0; i < norphans; i++)
		if (orphans[i].tid == tid)
			return true;
	return false;
}

/* PTRACE_DETACH, or, if the thread is not in a stop yet, later. */
void remote__detach_thread(pid_t tid, int sig)
{
	if (!ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)sig) ||
	    errno != ESRCH || is_orphan(tid))
		return;
	if (norphans < ORPHANS_MAX)
		orphans[norphans++] = (struct orphan){ .tid = tid, .sig = sig };
	/* beyond that the kernel lets them go when the tracer exits */
}

int remote__settle(void)
{
	int i = 0;

	while (i < norphans) {
		struct orphan *o = &orphans[i];
		int status, sig = o->sig;
		pid_t w = waitpid(o->tid, &status, __WALL | WNOHANG);

		if (w == 0) {
			i++;		/* not stopped yet */
			continue;
		}
		if (w == o->tid && WIFSTOPPED(status)) {
			/* a signal-delivery-stop delivers its signal; the
			 * one we held is sent again */
			if ((status >> 16) == 0 &&
			    WSTOPSIG(status) != (SIGTRAP | 0x80)) {
				if (sig)
					syscall(SYS_tkill, o->tid, sig);
				sig = WSTOPSIG(status);
			}
			if (ptrace(PTRACE_DETACH, o->tid, NULL,
				   (void *)(long)sig) && errno == ESRCH &&
			    !kill(o->tid, 0)) {
				i++;
				continue;
			}
		}
		/* detached, gone, or not ours any more */
		*o = orphans[--norphans];
	}
	return norphans;
}

/* System calls a thread idles in, outside the allocator and the loader. */
static bool idle_syscall(long nr)
{
	switch (nr) {
#ifdef SYS_poll			/* not on aarch64, which has only the
				   p-calls, epoll_pwait and no pause */
	case SYS_poll: case SYS_select: case SYS_pause: case SYS_epoll_wait:
#endif
	case SYS_read: case SYS_nanosleep: case SYS_accept: case SYS_recvfrom:
	case SYS_recvmsg: case SYS_wait4: case SYS_rt_sigtimedwait:
	case SYS_rt_sigsuspend: case SYS_clock_nanosleep:
	case SYS_pselect6: case SYS_ppoll: case SYS_epoll_pwait:
	case SYS_accept4: case SYS_waitid: case SYS_restart_syscall:
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
		return true;
	default:
		return false;
	}
}

/*
 * A futex wait that holds no lock of libc's: glibc waits for a condition
 * variable, pthread_join and a semaphore with FUTEX_WAIT_BITSET.  A plain
 * FUTEX_WAIT is a low-level lock (lll_lock: malloc's arenas, the loader's
 * lock, stdio), and its waiter may hold another such lock: fork() holds
 * every arena lock while it waits for the next, dlopen the loader's - a
 * call made on that thread would wait for its own thread for ever.
 */
static bool borrowable_futex(unsigned long op)
{
	return (op & ~(unsigned long)(FUTEX_PRIVATE_FLAG |
				      FUTEX_CLOCK_REALTIME)) ==
	       FUTEX_WAIT_BITSET;
}

/* A read of a regular file (not a socket, pipe or terminal) may be the
 * loader reading a library under its lock: not idle. */
static bool reads_a_file(pid_t pid, long tid, unsigned long fd)
{
	char path[96];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/task/%ld/fd/%lu", (int)pid,
		 tid, fd);
	if (stat(path, &st))
		return true;	/* cannot tell: do not borrow */
	return S_ISREG(st.st_mode) || S_ISBLK(st.st_mode);
}

/* The agent's stats thread (agent/stats.c), which waits in futex: it is
 * ours, and its signal mask is not the program's - never borrow it. */
static bool is_agent_thread(pid_t pid, long tid)
{
	char path[80], comm[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%ld/comm", (int)pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, comm, sizeof(comm) - 1);
	close(fd);
	if (n <= 0)
		return false;
	comm[n] = 0;
	return !strcmp(comm, "pprof-alloc\n");
}

/*
 * The thread is on a stack, with room below its stack pointer for the
 * scratch area, the signal frame and the call: a stack of its own
 * (proc_maps__own_stack: the main thread's, which grows, or one right
 * above a guard, as pthread stacks are).  Not a stack carved out of the
 * heap or some other mapping (a coroutine's, an alternate signal stack in
 * a malloc'd block), where "room below" would be someone else's memory.
 */
static bool stack_room(const struct remote *r)
{
	struct proc_maps *pm;
	const struct maps_entry *m;
	uint64_t sp = mregs__sp(&r->saved);
	bool ok = false;

	if (proc_maps__read(r->pid, &pm))
		return false;
	/* (sp may be a mapping's end: nothing pushed yet) */
	m = sp ? proc_maps__at(pm, sp - 1) : NULL;
	if (m && proc_maps__own_stack(pm, m))
		ok = !strcmp(m->path, "[stack]") ||
		     m->start + CALL_STACK_ROOM <= sp;
	proc_maps__free(pm);
	return ok;
}

/*
 * Is the thread whose stack pointer is sp inside a signal handler?  Its
 * stack then holds the handler's way back, the signal restorer's address
 * (restorer, 0 if unknown: then no), in the 64 KiB above sp, with the
 * kernel's signal frame (machine__sigframe_sp: a stale copy of the
 * address in a buffer nobody wrote is no frame).  A handler may have
 * interrupted the allocator holding its lock: never borrowed.
 */
static bool in_handler(pid_t pid, uint64_t sp, uint64_t restorer)
{
	uint64_t words[512], at = sp & ~7ull, end = at + 16 * 4096;

	if (!restorer)
		return false;
	/* from sp up, a page at a time: below it lie the frames of
	 * handlers that have returned */
	while (at < end) {
		size_t len = (size_t)(((at | 4095) + 1) - at), i;
		struct iovec local = { words, len };
		struct iovec remote = { (void *)(uintptr_t)at, len };

		if (process_vm_readv(pid, &local, 1, &remote, 1, 0) !=
		    (ssize_t)len)
			return false;	/* the stack's end */
		for (i = 0; i < len / 8; i++)
			if (words[i] == restorer &&
			    machine__sigframe_sp(pid, at + i * 8))
				return true;
		at += len;
	}
	return false;
}

/*
 * The stop found the thread in a system call (interrupted, to restart) or
 * just back from one, with a call it may be borrowed from, room on its
 * stack, and in no handler - whose way back may also be in the link
 * register, if it has called nothing yet.
 */
bool remote__idle(const struct remote *r, uint64_t restorer)
{
	const struct mregs *m = &r->saved;
	uint64_t sp = mregs__sp(m);
	long nr;

	if (!r->seized || r->signal_stop || !stack_room(r) ||
	    (restorer && mregs__lr(m) == restorer))
		return false;
	nr = mregs__syscall_at_stop(r->pid, m);
	if (nr < 0)
		return false;
	if (nr == SYS_futex)
		return borrowable_futex(mregs__arg(m, 1)) &&
		       !is_agent_thread(r->pid, r->tid) &&
		       !in_handler(r->pid, sp, restorer);
	/* a read whose descriptor is gone from the registers (the call
	 * returned) is not known to be idle */
	if (!idle_syscall(nr) ||
	    (nr == SYS_read && (!mregs__args_kept(r->pid, m) ||
				reads_a_file(r->pid, r->tid, mregs__arg(m, 0)))))
		return false;
	return !in_handler(r->pid, sp, restorer);
}

/* Keep the signal the thread is stopped for, with its siginfo. */
static void keep_signal(struct remote *r, int sig)
{
	int i = r->npending++;

	r->pending[i] = sig;
	if (!ptrace(PTRACE_GETSIGINFO, r->tid, NULL, &r->infos[i]))
		r->have_info |= 1u << i;
	else
		r->have_info &= ~(1u << i);
}

pid_t remote__pick_thread(pid_t pid, uint64_t restorer)
{
	char path[64], buf[256];
	struct dirent *d;
	pid_t best = -EBUSY, waiter = -EBUSY;
	int i;
	bool any = false;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -ESRCH;
	while ((d = readdir(dir))) {
		long tid = strtol(d->d_name, NULL, 10), nr;
		unsigned long arg0, arg1, sp;
		char *end;
		ssize_t n;
		int fd;

		if (tid <= 0)
			continue;
		any = true;
		snprintf(path, sizeof(path), "/proc/%d/task/%ld/syscall",
			 (int)pid, tid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		if (buf[0] < '0' || buf[0] > '9')
			continue;	/* "running" or "-1 ..." */
		/* "NR ARG0 ARG1 ... SP PC", the arguments in hex */
		nr = strtol(buf, &end, 10);
		arg0 = strtoul(end, &end, 16);
		arg1 = strtoul(end, &end, 16);
		for (i = 0; i < 5; i++)		/* arguments 2 to 5, then sp */
			sp = strtoul(end, &end, 16);
		if (nr == SYS_futex) {
			if ((waiter < 0 || tid == pid) && borrowable_futex(arg1) &&
			    !is_agent_thread(pid, tid) &&
			    !in_handler(pid, sp, restorer))
				waiter = (pid_t)tid;
			continue;
		}
		if (!idle_syscall(nr) ||
		    (nr == SYS_read && reads_a_file(pid, tid, arg0)) ||
		    in_handler(pid, sp, restorer))
			continue;
		/* prefer the main thread: its stack is the biggest */
		if (best < 0 || tid == pid)
			best = (pid_t)tid;
	}
	closedir(dir);
	if (!any)
		return -ESRCH;
	return best >= 0 ? best : waiter;
}

int remote__wait_thread(pid_t tid, int *status, int timeout_ms)
{
	uint64_t deadline = pa_now_ns() + (uint64_t)timeout_ms * PA_NSEC_PER_MSEC;
	struct timespec tick = { 0, 50 * PA_NSEC_PER_USEC };

	for (;;) {
		pid_t w = waitpid(tid, status, __WALL | WNOHANG);

		if (w == tid)
			return 0;
		if (w < 0 && errno != EINTR)
			return -errno;
		if (pa_now_ns() >= deadline)
			return -ETIMEDOUT;
		nanosleep(&tick, NULL);
	}
}

static const char *ptrace_why(int err)
{
	switch (err) {
	case EPERM:
		return "ptrace is not permitted (another tracer is attached, "
		       "the target is more privileged, or Yama's ptrace_scope "
		       "forbids it: see /proc/sys/kernel/yama/ptrace_scope)";
	case ESRCH:
		return "no such process";
	default:
		return "ptrace failed";
	}
}

/*
 * A test's way to kill the tracer at each step that changes the borrowed
 * thread (PPROF_ALLOC_TEST_KILL_STEP=N: SIGKILL at the Nth), to show that
 * the target survives the tracer's death at every one of them.
 */
static void step(void)
{
	static long at = -1, count;

	if (at < 0) {
		const char *s = getenv("PPROF_ALLOC_TEST_KILL_STEP");

		at = s ? strtol(s, NULL, 10) : 0;
	}
	if (at > 0 && ++count == at)
		kill(getpid(), SIGKILL);
}

static bool is_fault(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
	       sig == SIGFPE || sig == SIGTRAP || sig == SIGSYS;
}

/*
 * What a borrowed thread leaves unblocked: the faults (the kernel resets the
 * handler of a blocked one) and glibc's SIGSETXID (33), whose handler only
 * makes this thread's setuid call: a setuid in another thread waits for
 * every thread to take it, and the call we make may wait for that thread.
 */
static uint64_t fault_mask(void)
{
	static const int faults[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP,
				      SIGSYS };
	uint64_t m = 0;
	size_t i;

	for (i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		m |= 1ull << (faults[i] - 1);
	return m | 1ull << (SIGSETXID - 1);
}

int remote__seize(struct remote *r, pid_t pid, pid_t tid, int timeout_ms,
		  const char **why)
{
	int status, err;

	memset(r, 0, sizeof(*r));
	r->pid = pid;
	r->tid = tid;
	if (remote__settle() && is_orphan(tid)) {
		*why = "the thread has not stopped since an earlier try";
		return -EBUSY;
	}
	r->ext = malloc(MACHINE_EXT_MAX);
	if (!r->ext) {
		*why = "out of memory";
		return -ENOMEM;
	}
	/* TRACESYSGOOD: a syscall-stop's signal is then no signal at all,
	 * which a thread left in that stop by a dying tracer does not get */
	if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)PTRACE_O_TRACESYSGOOD)) {
		err = -errno;
		*why = ptrace_why(-err);
		goto out_free;
	}
	r->seized = true;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL)) {
		err = -errno;
		*why = "cannot interrupt the thread";
		goto out_detach;
	}
	err = remote__wait_thread(tid, &status, timeout_ms);
	if (err) {
		*why = err == -ETIMEDOUT ? "the thread did not stop in time" :
					   "waiting for the thread failed";
		goto out_detach;
	}
	if (!WIFSTOPPED(status)) {
		err = -ESRCH;
		*why = "the target exited while being attached";
		r->seized = false;
		goto out_free;
	}
	r->stopped_since = pa_now_ns();
	r->stop = REMOTE_AS_FOUND;
	/* A signal was on its way: this thread is not borrowed (the stop is a
	 * signal-delivery-stop, which a dying tracer would end by delivering
	 * the signal - fine now, not once the registers are ours); release
	 * delivers it. */
	if ((status >> 16) != PTRACE_EVENT_STOP) {
		keep_signal(r, WSTOPSIG(status));
		r->signal_stop = true;
	}
	if (ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(uint64_t),
		   &r->saved_sigmask)) {
		err = -errno;
		*why = "cannot read the thread's signal mask";
		goto out_detach;
	}
	err = mregs__get(tid, &r->saved);
	if (err) {
		*why = "cannot read the thread's registers";
		goto out_detach;
	}
	r->ext_len = MACHINE_EXT_MAX;
	err = machine__get_ext(tid, r->ext, &r->ext_len);
	if (err) {
		*why = "cannot read the thread's floating-point registers";
		goto out_detach;
	}
	return 0;
out_detach:
	remote__detach_thread(tid, 0);
	r->seized = false;
out_free:
	free(r->ext);
	r->ext = NULL;
	return err;
}

uint64_t remote__scratch(struct remote *r, size_t len)
{
	size_t used = (r->scratch_used + len + 15) & ~(size_t)15;

	if (used > REMOTE_SCRATCH_MAX || len > REMOTE_SCRATCH_MAX)
		return 0;
	r->scratch_used = used;
	return (mregs__sp(&r->saved) - RED_ZONE - r->scratch_used) & ~15ull;
}

int remote__write(const struct remote *r, uint64_t addr, const void *buf,
		  size_t len)
{
	char path[64];
	ssize_t n;
	int fd, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)r->pid);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pwrite(fd, buf, len, (off_t)addr);
	if (n < 0)
		err = -errno;
	else if ((size_t)n != len)
		err = -EIO;
	close(fd);
	return err;
}

/* Set the thread's registers (a step), then, the first time, block every
 * signal but the faults: in that order, so that a tracer dying in between
 * leaves the mask to the frame, which puts it back. */
static int set_regs(struct remote *r, const struct mregs *regs)
{
	uint64_t block = ~fault_mask();
	int err;

	err = mregs__set(r->tid, regs);
	if (err)
		return err;
	r->ours = true;
	step();
	if (r->sigmask_set)
		return 0;
	if (ptrace(PTRACE_SETSIGMASK, r->tid, (void *)sizeof(block), &block))
		return -errno;
	r->sigmask_set = true;
	step();
	return 0;
}

static bool syscall_info(struct remote *r, uint8_t op)
{
	struct __ptrace_syscall_info info;

	return ptrace(PTRACE_GET_SYSCALL_INFO, r->tid, (void *)sizeof(info),
		      &info) > 0 && info.op == op;
}

/*
 * Run the thread (PTRACE_SYSCALL) until it stops at the entry (op) of
 * system call nr at address at, or at a fault.  Other signals that come
 * are blocked again and handed back (the called code unblocked them:
 * glibc's pthread_sigmask never blocks SIGCANCEL) so that the kernel
 * queues them until release; SIGSTOP is kept and sent again after.
 * 0 (regs then holds the thread's registers), -EFAULT, -ESRCH, -ETIMEDOUT.
 */
static int run_until(struct remote *r, long nr, uint64_t at, uint8_t op,
		     struct mregs *regs, uint64_t deadline)
{
	int status, err, sig = 0;

	for (;;) {
		uint64_t now;

		if (ptrace(PTRACE_SYSCALL, r->tid, NULL, (void *)(long)sig))
			return -errno;
		sig = 0;
		for (;;) {
			now = pa_now_ns();
			if (now >= deadline)
				return -ETIMEDOUT;
			err = remote__wait_thread(r->tid, &status,
					  (int)((deadline - now) / PA_NSEC_PER_MSEC) + 1);
			if (err != -ETIMEDOUT)
				break;
		}
		if (err)
			return err;
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			r->seized = false;
			return -ESRCH;
		}
		if (WSTOPSIG(status) == (SIGTRAP | 0x80)) {
			err = mregs__get(r->tid, regs);
			if (err)
				return err;
			r->stop = syscall_info(r, PTRACE_SYSCALL_INFO_ENTRY) ?
				  REMOTE_SYSCALL_ENTRY : REMOTE_SYSCALL_EXIT;
			if (mregs__nr(regs) == nr && mregs__pc(regs) == at &&
			    syscall_info(r, op))
				return 0;
			continue;
		}
		if ((status >> 16) == PTRACE_EVENT_STOP)
			continue;	/* a group stop, or an interrupt */
		sig = WSTOPSIG(status);
		if (is_fault(sig)) {
			r->stop = REMOTE_FAULTED;
			return -EFAULT;
		}
		if (sig == SIGSTOP)
			continue;	/* delivered: a group stop, which we
					   continue; it holds after detach */
		{
			uint64_t block = ~fault_mask();

			if (!ptrace(PTRACE_SETSIGMASK, r->tid,
				    (void *)sizeof(block), &block))
				continue;	/* handed back, requeued */
		}
		if (r->npending < REMOTE_MAX_PENDING)
			keep_signal(r, sig);
		sig = 0;
	}
}

/*
 * Send pending signal i again.  With its siginfo, if the kernel lets us:
 * a sender's (negative) si_code, so it keeps its sender, value and code -
 * SIGCANCEL from pthread_cancel stays a SI_TKILL from the process itself.
 * Else with tgkill, and the tracer as its sender.
 */
static void send_again(struct remote *r, int i)
{
	if ((r->have_info & (1u << i)) && r->infos[i].si_code < 0 &&
	    !syscall(SYS_rt_tgsigqueueinfo, r->pid, r->tid, r->pending[i],
		     &r->infos[i]))
		return;
	syscall(SYS_tgkill, r->pid, r->tid, r->pending[i]);
}

/* Detach, delivering sig; kept signals from the first'th on are sent
 * again. */
static void let_go(struct remote *r, int sig, int first)
{
	uint64_t stopped = pa_now_ns() - r->stopped_since;
	int i;

	remote__detach_thread(r->tid, sig);
	if (stopped > r->longest_stop_ns)
		r->longest_stop_ns = stopped;
	r->seized = false;
	for (i = first; i < r->npending; i++)
		send_again(r, i);
	r->npending = 0;
}

/*
 * System calls a busy thread may be borrowed at, at their entry: the
 * program's own I/O and queries, made outside the allocator (which calls
 * mmap, munmap, mremap, brk, madvise, mprotect and futex under its locks,
 * and writev to report corruption) and the loader (open, read of a file,
 * mmap, close under its lock).  Never inside a signal handler, which may
 * have interrupted the allocator: the scan counts handlers in and out,
 * and a stack holding the signal restorer's address is inside one.
 */
static bool busy_safe_syscall(long nr)
{
	switch (nr) {
	case SYS_write: case SYS_pwrite64:
	case SYS_pwritev: case SYS_sendto: case SYS_sendmsg:
	case SYS_sendmmsg: case SYS_recvfrom: case SYS_recvmsg:
	case SYS_getpid: case SYS_getppid: case SYS_gettid:
	case SYS_sched_yield: case SYS_lseek: case SYS_ioctl:
	case SYS_fsync: case SYS_fdatasync: case SYS_getrusage:
	case SYS_times: case SYS_sysinfo: case SYS_uname:
		return true;
	default:
		return idle_syscall(nr);
	}
}


/*
 * At the entry stop of nr, where a state taken is not whole (machine.h):
 * let the thread make the call as the program made it, to its exit stop
 * (a call still running after a second is interrupted, as a seize would),
 * then catch it with an interrupt on its way out.  It must then be where
 * it was, just after (or, set to restart, at) that call.
 */
static int seize_after_call(struct remote *r, long nr)
{
	uint64_t pc = mregs__pc(&r->saved);
	bool interrupted = false;
	int status, err;

	if (ptrace(PTRACE_SYSCALL, r->tid, NULL, NULL))
		return -errno;
	for (;;) {
		err = remote__wait_thread(r->tid, &status, 1000);
		if (err == -ETIMEDOUT && !interrupted) {
			if (ptrace(PTRACE_INTERRUPT, r->tid, NULL, NULL))
				return -errno;
			interrupted = true;
			continue;
		}
		if (err)
			return err;
		if (!WIFSTOPPED(status)) {
			r->seized = false;
			return -ESRCH;
		}
		if (WSTOPSIG(status) == (SIGTRAP | 0x80))
			break;		/* its exit */
		/* the interrupt, or a group stop, before the exit: on */
		if (ptrace(PTRACE_SYSCALL, r->tid, NULL, NULL))
			return -errno;
	}
	if (ptrace(PTRACE_INTERRUPT, r->tid, NULL, NULL) ||
	    ptrace(PTRACE_CONT, r->tid, NULL, NULL))
		return -errno;
	err = remote__wait_thread(r->tid, &status, 1000);
	if (err)
		return err;
	if (!WIFSTOPPED(status)) {
		r->seized = false;
		return -ESRCH;
	}
	if ((status >> 16) != PTRACE_EVENT_STOP) {
		/* a signal came first: it is delivered at the let-go */
		keep_signal(r, WSTOPSIG(status));
		r->signal_stop = true;
		return -EBUSY;
	}
	r->stop = REMOTE_AS_FOUND;
	err = mregs__get(r->tid, &r->saved);
	if (err)
		return err;
	if (mregs__syscall_at_stop(r->pid, &r->saved) != nr ||
	    (mregs__pc(&r->saved) != pc &&
	     mregs__pc(&r->saved) != pc - machine_syscall_len))
		return -EBUSY;
	return 0;
}

int remote__seize_at_syscall(struct remote *r, pid_t pid, pid_t tid,
			     int timeout_ms, const char **why)
{
	uint64_t deadline = pa_now_ns() + (uint64_t)timeout_ms * PA_NSEC_PER_MSEC;
	uint64_t sc, restorer;
	int err, status, sig = 0, handlers = 0;
	long nr = -1;

	if (callstub__gadgets(pid, &sc, &restorer)) {
		*why = "no signal restorer in the target";
		return -EBUSY;
	}

	err = remote__seize(r, pid, tid, timeout_ms, why);
	if (err)
		return err;
	if (remote__idle(r, restorer))
		return 0;
	if (r->signal_stop)
		goto out_busy;
	for (;;) {
		if (ptrace(PTRACE_SYSCALL, tid, NULL, (void *)(long)sig))
			goto out_busy;
		sig = 0;
		do {
			if (pa_now_ns() >= deadline) {
				/* running: stop it to let it go */
				ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
				if (!remote__wait_thread(tid, &status, 1000) &&
				    WIFSTOPPED(status) &&
				    (status >> 16) != PTRACE_EVENT_STOP &&
				    WSTOPSIG(status) != (SIGTRAP | 0x80))
					sig = WSTOPSIG(status);
				let_go(r, sig, 0);
				goto out_free;
			}
			err = remote__wait_thread(tid, &status, 10);
		} while (err == -ETIMEDOUT);
		if (err || !WIFSTOPPED(status)) {
			r->seized = false;
			*why = "the thread exited while being attached";
			goto out_free;
		}
		if ((status >> 16) == PTRACE_EVENT_STOP)
			continue;
		if (WSTOPSIG(status) != (SIGTRAP | 0x80)) {
			sig = WSTOPSIG(status);	/* its own: delivered, */
			handlers++;		/* perhaps to a handler */
			continue;
		}
		if (!syscall_info(r, PTRACE_SYSCALL_INFO_ENTRY) ||
		    mregs__get(tid, &r->saved))
			continue;
		nr = mregs__nr(&r->saved);
		if (nr == SYS_rt_sigreturn && handlers > 0)
			handlers--;
		if (handlers || !busy_safe_syscall(nr) ||
		    nr == SYS_restart_syscall ||
		    in_handler(pid, mregs__sp(&r->saved), restorer) ||
		    (restorer && mregs__lr(&r->saved) == restorer) ||
		    (nr == SYS_read &&
		     reads_a_file(pid, tid, mregs__arg(&r->saved, 0))) ||
		    !stack_room(r))
			continue;
		break;
	}
	if (machine_entry_regs_whole) {
		/* At the call's entry: its way home is to make that call,
		 * as a restart would (back over the syscall instruction). */
		mregs__rewind_entry(&r->saved);
		r->stop = REMOTE_SYSCALL_ENTRY;
	} else if (seize_after_call(r, nr)) {
		goto out_busy;
	}
	r->ext_len = MACHINE_EXT_MAX;
	if (ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(uint64_t),
		   &r->saved_sigmask) ||
	    machine__get_ext(tid, r->ext, &r->ext_len))
		goto out_busy;
	return 0;
out_busy:
	remote__release(r);
out_free:
	free(r->ext);
	r->ext = NULL;
	*why = "the thread made no system call it can be borrowed at in time";
	return -EBUSY;
}

/*
 * The frame, then the stub: found in the target, or mapped there by one
 * mmap run on the thread through libc's "syscall; ret", which returns into
 * the restorer and so through the frame.
 */
static int arm(struct remote *r, uint64_t deadline, const char **why)
{
	struct mregs regs;
	struct callframe f;
	uint64_t sc = 0, restorer = 0, page = 0, top;
	uint64_t args[6] = { 0, CALLSTUB_PAGE, PROT_READ | PROT_EXEC,
			     MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1, 0 };
	int err;

	err = callstub__find(r->pid, &page);
	if (err == -ENOENT) {
		err = callstub__gadgets(r->pid, &sc, &restorer);
		if (err) {
			*why = "no \"syscall; ret\" and signal restorer in the target to map the call stub with";
			return err;
		}
	} else if (err) {
		*why = "cannot look for the call stub in the target";
		return err;
	}
	top = (mregs__sp(&r->saved) - RED_ZONE - REMOTE_SCRATCH_MAX) & ~15ull;
	err = callframe__build(&f, &r->saved, r->ext, r->ext_len,
			       r->saved_sigmask, top, restorer);
	if (err) {
		*why = "cannot make a signal frame of the thread's state";
		return err;
	}
	err = remote__write(r, f.base, f.bytes, f.len);
	callframe__free(&f);
	if (err) {
		*why = "cannot write on the thread's stack";
		return err;
	}
	step();
	r->frame = f.sp;
	r->ret_slot = f.ret_slot;
	r->mailbox = f.mailbox;
	if (page) {
		r->stub = page;
		return 0;
	}

	regs = r->saved;
	mregs__syscall(&regs, sc, r->frame, restorer, SYS_mmap, args, 6);
	err = set_regs(r, &regs);
	if (err) {
		*why = "cannot set the thread's registers";
		return err;
	}
	err = run_until(r, SYS_mmap, sc + machine_syscall_len,
			PTRACE_SYSCALL_INFO_EXIT, &regs, deadline);
	if (err) {
		*why = err == -ETIMEDOUT ? "mapping the call stub did not return in time" :
					   "mapping the call stub failed";
		return err;
	}
	if (mregs__ret(&regs) > -4096ull) {
		*why = "the target could not map a page for the call stub";
		return (int)mregs__ret(&regs);
	}
	err = callstub__write(r->pid, mregs__ret(&regs));
	if (err) {
		*why = "cannot write the call stub into the target";
		return err;
	}
	step();
	r->stub = mregs__ret(&regs);
	return 0;
}

/* The call overran: let the thread go to finish it and come back through
 * the frame on its own (a loader holding its lock must not be stopped). */
static void abandon(struct remote *r)
{
	int status, sig = 0;

	ptrace(PTRACE_INTERRUPT, r->tid, NULL, NULL);
	if (!remote__wait_thread(r->tid, &status, 1000) && WIFSTOPPED(status) &&
	    (status >> 16) != PTRACE_EVENT_STOP &&
	    WSTOPSIG(status) != (SIGTRAP | 0x80))
		sig = WSTOPSIG(status);	/* requeued: it is blocked */
	let_go(r, sig, 0);
}

static int read_mailbox(const struct remote *r, struct callstub_mailbox *mb)
{
	struct iovec local = { mb, sizeof(*mb) };
	struct iovec remote = { (void *)(uintptr_t)r->mailbox, sizeof(*mb) };

	return process_vm_readv(r->pid, &local, 1, &remote, 1, 0) ==
		       (ssize_t)sizeof(*mb) ? 0 : -EIO;
}

/*
 * Let the thread run the call (PTRACE_CONT) until the mailbox says done,
 * then interrupt it in its wait.  Signals that come meanwhile are handled
 * as in run_until; a fault is the call crashing.  0 with *ret (if the
 * thread had already gone home when it stopped, it is let go: r->seized
 * is false), -EFAULT, -ESRCH, -ETIMEDOUT (still running), -errno.
 */
static int run_call(struct remote *r, uint64_t deadline, uint64_t *ret)
{
	struct timespec tick = { 0, 20 * PA_NSEC_PER_USEC };
	struct callstub_mailbox mb;
	struct mregs regs;
	bool interrupted = false;
	int status, sig = 0;
	pid_t w;

	if (ptrace(PTRACE_CONT, r->tid, NULL, NULL))
		return -errno;
	for (;;) {
		w = waitpid(r->tid, &status, __WALL | WNOHANG);
		if (w < 0 && errno != EINTR)
			return -errno;
		if (w == r->tid) {
			if (WIFEXITED(status) || WIFSIGNALED(status)) {
				r->seized = false;
				return -ESRCH;
			}
			if ((status >> 16) == PTRACE_EVENT_STOP) {
				if (interrupted)
					break;
				if (ptrace(PTRACE_CONT, r->tid, NULL, NULL))
					return -errno;
				continue;
			}
			sig = WSTOPSIG(status);
			if (is_fault(sig)) {
				r->stop = REMOTE_FAULTED;
				return -EFAULT;
			}
			if (sig == SIGSTOP) {
				/* delivered: a group stop, which we continue
				 * and which holds after detach (kept and sent
				 * again, it would outlive a SIGCONT) */
				if (ptrace(PTRACE_CONT, r->tid, NULL,
					   (void *)(long)sig))
					return -errno;
				continue;
			} else {
				uint64_t block = ~fault_mask();

				if (!ptrace(PTRACE_SETSIGMASK, r->tid,
					    (void *)sizeof(block), &block) &&
				    !ptrace(PTRACE_CONT, r->tid, NULL,
					    (void *)(long)sig))
					continue;	/* handed back */
			}
			if (r->npending < REMOTE_MAX_PENDING)
				keep_signal(r, sig);
			if (ptrace(PTRACE_CONT, r->tid, NULL, NULL))
				return -errno;
			continue;
		}
		if (!interrupted) {
			if (!read_mailbox(r, &mb) && mb.done == 1) {
				if (ptrace(PTRACE_INTERRUPT, r->tid, NULL, NULL))
					return -errno;
				interrupted = true;
				continue;
			}
			if (pa_now_ns() >= deadline)
				return -ETIMEDOUT;
		}
		nanosleep(&tick, NULL);
	}
	r->stop = REMOTE_AS_FOUND;
	if (mregs__get(r->tid, &regs) || read_mailbox(r, &mb))
		return -EIO;
	*ret = mb.result;
	if (mregs__pc(&regs) < r->stub ||
	    mregs__pc(&regs) >= r->stub + CALLSTUB_PAGE) {
		/* it waited out its wait and went home: as it was, with the
		 * call made; borrow it again for another */
		r->ours = r->sigmask_set = false;
		let_go(r, 0, 0);
	}
	return 0;
}

int remote__call(struct remote *r, uint64_t fn, const uint64_t *args,
		 int nargs, uint64_t *ret, int timeout_ms, const char **why)
{
	struct callstub_mailbox mb;
	struct mregs regs;
	uint64_t deadline = pa_now_ns() + (uint64_t)timeout_ms * PA_NSEC_PER_MSEC;
	int err;

	if (!r->seized || r->signal_stop || r->stop == REMOTE_FAULTED ||
	    nargs < 0 || nargs > 6) {
		*why = "bad remote call";
		return -EINVAL;
	}
	if (!r->stub) {
		err = arm(r, deadline, why);
		if (err)
			goto out_err;
	}
	callstub__mailbox(&mb);
	err = remote__write(r, r->mailbox, &mb, sizeof(mb));
	if (err) {
		*why = "cannot write on the thread's stack";
		goto out_err;
	}
	regs = r->saved;
	mregs__call(&regs, callstub__entry(r->stub), r->frame, fn, r->mailbox,
		    args, nargs);
	err = set_regs(r, &regs);
	if (err) {
		*why = "cannot start the call";
		goto out_err;
	}
	err = run_call(r, deadline, ret);
	if (!err)
		return 0;
	switch (err) {
	case -ETIMEDOUT:
		*why = "the call did not return in time (the thread was let go to finish it)";
		break;
	case -EFAULT:
		*why = "the called function crashed in the target";
		break;
	case -ESRCH:
		*why = "the target died during the call";
		break;
	default:
		*why = "waiting for the call failed";
	}
out_err:
	if (err == -ETIMEDOUT && r->seized)
		abandon(r);
	return err;
}

int remote__munmap(struct remote *r, uint64_t addr, uint64_t len,
		   int timeout_ms, const char **why)
{
	uint64_t deadline = pa_now_ns() + (uint64_t)timeout_ms * PA_NSEC_PER_MSEC;
	uint64_t sc, restorer, args[2] = { addr, len };
	struct mregs regs;
	int err;

	if (!r->seized || r->signal_stop || r->stop == REMOTE_FAULTED ||
	    !r->frame) {
		*why = "bad remote call";
		return -EINVAL;
	}
	if (callstub__gadgets(r->pid, &sc, &restorer)) {
		*why = "no \"syscall; ret\" and signal restorer in the target to unmap a page with";
		return -ENOENT;
	}
	/* the frame's return slot, if any: the restorer, as when the stub
	 * was mapped (a frame made for a stub found has 0 there) */
	if (r->ret_slot) {
		err = remote__write(r, r->ret_slot, &restorer,
				    sizeof(restorer));
		if (err) {
			*why = "cannot write on the thread's stack";
			return err;
		}
		step();
	}
	regs = r->saved;
	mregs__syscall(&regs, sc, r->frame, restorer, SYS_munmap, args, 2);
	err = set_regs(r, &regs);
	if (err) {
		*why = "cannot set the thread's registers";
		return err;
	}
	err = run_until(r, SYS_munmap, sc + machine_syscall_len,
			PTRACE_SYSCALL_INFO_EXIT, &regs, deadline);
	if (err) {
		*why = err == -ETIMEDOUT ? "munmap in the target did not return in time" :
					   "munmap in the target failed";
		return err;
	}
	if (mregs__ret(&regs)) {
		*why = "munmap failed in the target";
		return (int)mregs__ret(&regs) < 0 ? (int)mregs__ret(&regs) :
						     -EIO;
	}
	if (addr <= r->stub && r->stub < addr + len)
		r->stub = 0;	/* a call would map it again */
	return 0;
}

/*
 * Home from a stop where the registers are ours: from a syscall-entry
 * stop, skip the call (the stub's rt_sigreturn) to its exit stop first -
 * changing the call's number there would run another call.  Then, with an interrupt
 * pending so that the way out passes the signal code, the thread's own
 * extended state, mask and registers, in an order where a tracer dying at
 * any step leaves either the frame's way back or the thread's own state;
 * the interrupt's stop is the seize's again, and a detach from it restarts
 * an interrupted system call exactly as the kernel would have.
 */
static int go_home(struct remote *r)
{
	struct mregs regs;
	int status, err = 0;

	if (r->stop == REMOTE_SYSCALL_ENTRY) {
		err = mregs__get(r->tid, &regs);
		if (err)
			return err;
		mregs__skip_syscall(&regs);
		err = mregs__set(r->tid, &regs);
		if (err)
			return err;
		if (ptrace(PTRACE_SYSCALL, r->tid, NULL, NULL))
			return -errno;
		step();
		for (;;) {
			err = remote__wait_thread(r->tid, &status, 1000);
			if (err)
				return err;
			if (!WIFSTOPPED(status)) {
				r->seized = false;
				return -ESRCH;
			}
			if (WSTOPSIG(status) == (SIGTRAP | 0x80))
				break;
			/* only faults get through the mask: not ours */
			if (ptrace(PTRACE_SYSCALL, r->tid, NULL, NULL))
				return -errno;
		}
	}
	if (ptrace(PTRACE_INTERRUPT, r->tid, NULL, NULL))
		return -errno;
	step();
	err = machine__set_ext(r->tid, r->ext, r->ext_len);
	if (err)
		return err;
	step();
	if (ptrace(PTRACE_SETSIGMASK, r->tid, (void *)sizeof(uint64_t),
		   &r->saved_sigmask))
		return -errno;
	step();
	err = mregs__set(r->tid, &r->saved);
	if (err)
		return err;
	step();
	if (ptrace(PTRACE_CONT, r->tid, NULL, NULL))
		return -errno;
	for (;;) {
		err = remote__wait_thread(r->tid, &status, 1000);
		if (err)
			return err;
		if (!WIFSTOPPED(status)) {
			r->seized = false;
			return -ESRCH;
		}
		if ((status >> 16) == PTRACE_EVENT_STOP)
			return 0;
		/* a signal before the interrupt's stop: keep it for after;
		 * SIGSTOP goes on (a group stop holds after detach) */
		if (WSTOPSIG(status) == SIGSTOP) {
			if (ptrace(PTRACE_CONT, r->tid, NULL,
				   (void *)(long)SIGSTOP))
				return -errno;
			continue;
		}
		if (r->npending < REMOTE_MAX_PENDING)
			keep_signal(r, WSTOPSIG(status));
		if (ptrace(PTRACE_CONT, r->tid, NULL, NULL))
			return -errno;
	}
}

int remote__release(struct remote *r)
{
	int err = 0, sig = 0;

	if (!r->seized)
		goto out_free;
	if (r->signal_stop) {
		/* never ours: deliver the signal it stopped for, as it was */
		if (r->npending && (r->have_info & 1) &&
		    !ptrace(PTRACE_SETSIGINFO, r->tid, NULL, &r->infos[0]))
			sig = r->pending[0];
	} else if (r->ours || r->sigmask_set) {
		err = go_home(r);
	}
	if (r->seized)
		let_go(r, sig, sig ? 1 : 0);
out_free:
	free(r->ext);
	r->ext = NULL;
	return err;
}
