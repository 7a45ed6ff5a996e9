// SPDX-License-Identifier: MIT
/*
 * inject.c - borrow one thread of a running process to call a function.
 *
 * This is how the tracer gets the agent into a process nobody started with
 * a preload: it calls dlopen in the target.  No gdb, no code written into
 * the target: only registers, and a few bytes of arguments on the thread's
 * own stack.  The sequence (DESIGN.md, "Hooking"):
 *
 *   1. pick a thread blocked in an idle system call (poll, epoll_wait,
 *      nanosleep, accept, read of a socket, pipe or terminal...).  Only
 *      when there is none, a thread waiting in futex for a condition
 *      variable, pthread_join or a semaphore - never one waiting for a
 *      low-level lock, which may hold another (fork() holds the arena
 *      locks while it waits for the next one; see borrowable_futex);
 *   2. PTRACE_SEIZE and PTRACE_INTERRUPT that thread only - the others run
 *      on - and save every register, the extended (xsave) state included;
 *      then check that it stopped inside such a call (remote__idle()): it
 *      may have left it between the pick and the stop;
 *   3. point rip at the function, the arguments in rdi..r9, rsp 16-byte
 *      aligned below the 128-byte red zone (and below any argument bytes
 *      written there), a return address of 0 pushed, and orig_rax = -1 so
 *      that the interrupted system call is not restarted at the new rip;
 *   4. continue until the thread faults at address 0: the call returned,
 *      its result is in rax;
 *   5. restore every register exactly and detach.  The kernel then sees
 *      the original orig_rax and -ERESTART* in rax and restarts the
 *      interrupted system call as if nothing had happened.
 *
 * Signals that arrive for the thread during the call are not swallowed,
 * and keep their sender: while borrowed, the thread blocks every signal
 * but the faults, so the kernel queues them for it, siginfo and all, until
 * release puts its mask back.  One that arrives anyway (the called code
 * unblocked it: glibc's pthread_sigmask never blocks SIGCANCEL) is blocked
 * again and handed back to the kernel, which requeues it.  A signal whose
 * delivery we interrupted at the start is delivered at release with its
 * own siginfo.  Any other kept signal (a call that timed out, SIGSTOP) is
 * sent again with its siginfo (rt_tgsigqueueinfo, for a sender's si_code),
 * and only failing that with tgkill - which makes the tracer its sender,
 * and glibc ignores a SIGCANCEL or SIGSETXID from another process
 * (pthread_cancel and setuid would hang).
 * Times are bounded: a call that does not return within its timeout is
 * reported, and the thread restored, rather than waited for forever.
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
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "inject.h"

#define XSTATE_MAX	(64 * 1024)
#define RED_ZONE	128

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* System calls a thread idles in, outside the allocator and the loader. */
static bool idle_syscall(long nr)
{
	switch (nr) {
	case SYS_read: case SYS_poll: case SYS_select: case SYS_pause:
	case SYS_nanosleep: case SYS_accept: case SYS_recvfrom:
	case SYS_recvmsg: case SYS_wait4: case SYS_rt_sigtimedwait:
	case SYS_rt_sigsuspend: case SYS_clock_nanosleep: case SYS_epoll_wait:
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
 * The thread's orig_rax says where the stop found it: in a system call
 * (interrupted, rax -ERESTART* or -EINTR) or just back from one (rax its
 * result), or, negative, in user code, which an interrupt entered.  Only
 * the first two, with a call it may be borrowed from, will do.
 */
bool remote__idle(const struct remote *r)
{
	long nr = (long)r->saved.orig_rax;

	if (!r->seized || nr < 0)
		return false;
	if (nr == SYS_futex)
		return borrowable_futex(r->saved.rsi) &&
		       !is_agent_thread(r->pid, r->tid);
	if (!idle_syscall(nr))
		return false;
	return nr != SYS_read || !reads_a_file(r->pid, r->tid, r->saved.rdi);
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

pid_t remote__pick_thread(pid_t pid)
{
	char path[64], buf[256];
	struct dirent *d;
	pid_t best = -EBUSY, waiter = -EBUSY;
	bool any = false;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -ESRCH;
	while ((d = readdir(dir))) {
		long tid = strtol(d->d_name, NULL, 10), nr;
		unsigned long arg0, arg1;
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
		if (nr == SYS_futex) {
			if ((waiter < 0 || tid == pid) && borrowable_futex(arg1) &&
			    !is_agent_thread(pid, tid))
				waiter = (pid_t)tid;
			continue;
		}
		if (!idle_syscall(nr) ||
		    (nr == SYS_read && reads_a_file(pid, tid, arg0)))
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

/* waitpid on one thread with a timeout.  0, -ETIMEDOUT or -errno. */
static int wait_thread(pid_t tid, int *status, int timeout_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct timespec tick = { 0, 50000 };

	for (;;) {
		pid_t w = waitpid(tid, status, __WALL | WNOHANG);

		if (w == tid)
			return 0;
		if (w < 0)
			return errno == EINTR ? 0 : -errno;
		if (now_ns() >= deadline)
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

int remote__seize(struct remote *r, pid_t pid, pid_t tid, int timeout_ms,
		  const char **why)
{
	struct iovec iov;
	int status, err;

	memset(r, 0, sizeof(*r));
	r->pid = pid;
	r->tid = tid;
	r->xstate = malloc(XSTATE_MAX);
	if (!r->xstate) {
		*why = "out of memory";
		return -ENOMEM;
	}
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL)) {
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
	err = wait_thread(tid, &status, timeout_ms);
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
	r->stopped_since = now_ns();
	/* A signal may have been on its way: keep it, and its siginfo, for
	 * later. */
	if ((status >> 16) != PTRACE_EVENT_STOP && WSTOPSIG(status) != SIGTRAP &&
	    r->npending < REMOTE_MAX_PENDING) {
		keep_signal(r, WSTOPSIG(status));
		r->signal_stop = true;
	}
	/* Signals that come while we hold the thread stay queued for it, with
	 * their siginfo, until it is released (a signal taken here and sent
	 * again with tgkill would come from us: glibc ignores a SIGCANCEL
	 * from another process, and pthread_cancel hangs).  Faults are not
	 * blocked: the kernel resets the handler of a blocked fault signal. */
	if (!ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(uint64_t),
		    &r->saved_sigmask)) {
		uint64_t block = ~0ull;
		static const int faults[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE,
					      SIGTRAP, SIGSYS };
		size_t i;

		for (i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
			block &= ~(1ull << (faults[i] - 1));
		r->unblocked = ~block;
		r->sigmask_set = !ptrace(PTRACE_SETSIGMASK, tid,
					 (void *)sizeof(block), &block);
	}
	if (ptrace(PTRACE_GETREGS, tid, NULL, &r->saved)) {
		err = -errno;
		*why = "cannot read the thread's registers";
		goto out_detach;
	}
	iov.iov_base = r->xstate;
	iov.iov_len = XSTATE_MAX;
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov)) {
		err = -errno;
		*why = "cannot read the thread's extended registers";
		goto out_detach;
	}
	r->xstate_len = iov.iov_len;
	return 0;
out_detach:
	if (r->sigmask_set)
		ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(uint64_t),
		       &r->saved_sigmask);
	ptrace(PTRACE_DETACH, tid, NULL, NULL);
	r->seized = false;
out_free:
	free(r->xstate);
	r->xstate = NULL;
	return err;
}

uint64_t remote__scratch(struct remote *r, size_t len)
{
	r->scratch_used = (r->scratch_used + len + 15) & ~(size_t)15;
	return (r->saved.rsp - RED_ZONE - r->scratch_used) & ~15ull;
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

int remote__call(struct remote *r, uint64_t fn, const uint64_t *args,
		 int nargs, uint64_t *ret, int timeout_ms, const char **why)
{
	struct user_regs_struct regs = r->saved;
	uint64_t sp, zero = 0;
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000ull;
	int status, err;

	if (!r->seized || nargs < 0 || nargs > 6) {
		*why = "bad remote call";
		return -EINVAL;
	}
	sp = ((r->saved.rsp - RED_ZONE - r->scratch_used) & ~15ull) - 8;
	err = remote__write(r, sp, &zero, sizeof(zero));
	if (err) {
		*why = "cannot write the return address on the thread's stack";
		return err;
	}
	regs.rsp = sp;
	regs.rip = fn;
	regs.rax = 0;
	regs.orig_rax = (unsigned long long)-1;
	regs.rdi = nargs > 0 ? args[0] : 0;
	regs.rsi = nargs > 1 ? args[1] : 0;
	regs.rdx = nargs > 2 ? args[2] : 0;
	regs.rcx = nargs > 3 ? args[3] : 0;
	regs.r8 = nargs > 4 ? args[4] : 0;
	regs.r9 = nargs > 5 ? args[5] : 0;
	if (ptrace(PTRACE_SETREGS, r->tid, NULL, &regs) ||
	    ptrace(PTRACE_CONT, r->tid, NULL, NULL)) {
		*why = "cannot start the call";
		return -errno;
	}
	for (;;) {
		uint64_t now = now_ns();
		int sig;

		if (now >= deadline) {
			*why = "the call did not return in time";
			ptrace(PTRACE_INTERRUPT, r->tid, NULL, NULL);
			/* Stopped now by the interrupt, or by a signal that a
			 * detach with the first one would replace: keep that one
			 * too, and send them all again at release. */
			if (!wait_thread(r->tid, &status, 1000) &&
			    WIFSTOPPED(status) &&
			    (status >> 16) != PTRACE_EVENT_STOP &&
			    WSTOPSIG(status) != SIGTRAP &&
			    r->npending < REMOTE_MAX_PENDING)
				keep_signal(r, WSTOPSIG(status));
			r->signal_stop = false;
			return -ETIMEDOUT;
		}
		err = wait_thread(r->tid, &status,
				  (int)((deadline - now) / 1000000) + 1);
		if (err == -ETIMEDOUT)
			continue;
		if (err) {
			*why = "waiting for the call failed";
			return err;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			r->seized = false;
			*why = "the target died during the call";
			return -ESRCH;
		}
		sig = WSTOPSIG(status);
		r->signal_stop = (status >> 16) != PTRACE_EVENT_STOP;
		if ((status >> 16) == PTRACE_EVENT_STOP) {
			/* a group stop or our own interrupt: go on */
			ptrace(PTRACE_CONT, r->tid, NULL, NULL);
			continue;
		}
		if (sig == SIGSEGV) {
			if (ptrace(PTRACE_GETREGS, r->tid, NULL, &regs)) {
				*why = "cannot read the result";
				return -errno;
			}
			if (regs.rip == 0) {
				*ret = regs.rax;
				return 0;
			}
			*why = "the called function crashed in the target";
			return -EFAULT;
		}
		/* Someone else's signal, which the called code unblocked
		 * (glibc's pthread_sigmask never blocks SIGCANCEL): block it
		 * again and hand it back, so that the kernel queues it for
		 * the thread, siginfo and all, until release. */
		if (r->sigmask_set && sig != SIGSTOP &&
		    !(r->unblocked & (1ull << (sig - 1)))) {
			uint64_t block = ~r->unblocked;

			if (!ptrace(PTRACE_SETSIGMASK, r->tid,
				    (void *)sizeof(block), &block) &&
			    !ptrace(PTRACE_CONT, r->tid, NULL,
				    (void *)(long)sig))
				continue;
		}
		/* Or keep it, and send it again after (SIGSTOP too: stopping
		 * the process now would leave the call waiting on stopped
		 * threads). */
		if (r->npending < REMOTE_MAX_PENDING)
			keep_signal(r, sig);
		ptrace(PTRACE_CONT, r->tid, NULL, NULL);
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

int remote__release(struct remote *r)
{
	struct iovec iov = { r->xstate, r->xstate_len };
	uint64_t stopped;
	int err = 0, i, inject = 0;

	if (!r->seized)
		goto out_free;
	if (ptrace(PTRACE_SETREGS, r->tid, NULL, &r->saved))
		err = -errno;
	if (r->xstate_len &&
	    ptrace(PTRACE_SETREGSET, r->tid, (void *)NT_X86_XSTATE, &iov) &&
	    !err)
		err = -errno;
	if (r->sigmask_set &&
	    ptrace(PTRACE_SETSIGMASK, r->tid, (void *)sizeof(uint64_t),
		   &r->saved_sigmask) && !err)
		err = -errno;
	/* The signal that came before we held the thread: delivered as the
	 * thread is let go, with its own siginfo (possible from a
	 * signal-delivery-stop, which the call's return at 0 is) */
	if (r->npending && (r->have_info & 1) && r->signal_stop &&
	    !ptrace(PTRACE_SETSIGINFO, r->tid, NULL, &r->infos[0]))
		inject = r->pending[0];
	if (ptrace(PTRACE_DETACH, r->tid, NULL, (void *)(long)inject) && !err)
		err = -errno;
	stopped = now_ns() - r->stopped_since;
	if (stopped > r->longest_stop_ns)
		r->longest_stop_ns = stopped;
	r->seized = false;
	for (i = inject ? 1 : 0; i < r->npending; i++)
		send_again(r, i);
	r->npending = 0;
out_free:
	free(r->xstate);
	r->xstate = NULL;
	return err;
}
