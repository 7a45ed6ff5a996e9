/* SPDX-License-Identifier: MIT */
/*
 * seccomp.h - read a thread's seccomp filters and tell what they may do to
 * the system calls an injection makes.
 */
#ifndef PA_TRACER_SECCOMP_H
#define PA_TRACER_SECCOMP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/filter.h>

#define SECCOMP_MAX_FILTERS	64	/* more: seccomp__read says -E2BIG */
#define SECCOMP_MAX_INSNS	4096	/* BPF_MAXINSNS, per filter */
#define SECCOMP_MAX_STEPS	1000000	/* per seccomp__verdict */

/* What a system call may get: a bitmask of these (seccomp__verdict).  An
 * action value the kernel does not know kills the process, and is
 * reported as SECCOMP_MAY_KILL_PROCESS. */
enum {
	SECCOMP_MAY_KILL_PROCESS	= 1u << 0,
	SECCOMP_MAY_KILL_THREAD		= 1u << 1,
	SECCOMP_MAY_TRAP		= 1u << 2,	/* SIGSYS */
	SECCOMP_MAY_ERRNO		= 1u << 3,	/* fails, -1/errno */
	SECCOMP_MAY_USER_NOTIF		= 1u << 4,	/* a supervisor's say */
	SECCOMP_MAY_TRACE		= 1u << 5,	/* a tracer's say */
	SECCOMP_MAY_LOG			= 1u << 6,	/* runs, logged */
	SECCOMP_MAY_ALLOW		= 1u << 7,	/* runs */
};

/* Actions after which the target may not go on as if nothing happened:
 * killed, signalled, or stopped for someone else to decide. */
#define SECCOMP_MAY_DANGER						\
	(SECCOMP_MAY_KILL_PROCESS | SECCOMP_MAY_KILL_THREAD |		\
	 SECCOMP_MAY_TRAP | SECCOMP_MAY_USER_NOTIF | SECCOMP_MAY_TRACE)

/* A thread's filters, each validated (as the kernel's seccomp checker
 * would), in no meaningful order. */
struct seccomp_filters {
	size_t count;
	struct seccomp_prog {
		size_t len;			/* 1..SECCOMP_MAX_INSNS */
		struct sock_filter *insns;
	} progs[SECCOMP_MAX_FILTERS];
};

/*
 * Every filter of thread tid, which the caller has ptrace-stopped, read
 * with PTRACE_SECCOMP_GET_FILTER and validated.  A thread without filters
 * gives an empty set (count 0: everything is allowed).  Needs
 * CAP_SYS_ADMIN and a caller under no seccomp filter itself: without,
 * -EPERM.  -EOPNOTSUPP: a kernel that keeps no copy of the filters
 * (CONFIG_CHECKPOINT_RESTORE off).  -E2BIG: more than SECCOMP_MAX_FILTERS.
 * -EINVAL: a filter that does not validate.  On an error why (why_size
 * bytes) says what went wrong.  *out is freed with seccomp__free.
 */
int seccomp__read(pid_t tid, struct seccomp_filters **out, char *why,
		  size_t why_size);

/*
 * Add a copy of a filter of len instructions to *f (made if NULL), after
 * validating it; the tests build filter sets with it.  -EINVAL (with why)
 * if it does not validate, -E2BIG if *f is full, -ENOMEM.
 */
int seccomp__add(struct seccomp_filters **f, const struct sock_filter *insns,
		 size_t len, char *why, size_t why_size);

/* 0 if insns would pass the kernel's checks for a seccomp filter, or
 * -EINVAL with why saying what is wrong. */
int seccomp__validate(const struct sock_filter *insns, size_t len, char *why,
		      size_t why_size);

/*
 * The actions system call nr of the x86-64 ABI may get from the filters
 * (SECCOMP_MAY_*), in *actions.  Its arguments and instruction pointer
 * are unknown: every way they could go is counted, so the set may hold
 * more than can happen, never less.  0, or -E2BIG if the filters take
 * more than SECCOMP_MAX_STEPS to explore.
 */
int seccomp__verdict(const struct seccomp_filters *f, int nr,
		     unsigned *actions);

/*
 * The first of the n system calls nrs[] that may get an action in
 * SECCOMP_MAY_DANGER: 1 with it in *bad_nr and its actions in
 * *bad_actions; 0 if there is none (*bad_nr -1, *bad_actions 0); or a
 * negative errno from seccomp__verdict.
 */
int seccomp__check_calls(const struct seccomp_filters *f, const int *nrs,
			 size_t n, int *bad_nr, unsigned *bad_actions);

/* 1 if system call nr may be kept from running (any action but ALLOW and
 * LOG: ERRNO included), 0 if it always runs, or a negative errno. */
int seccomp__may_deny(const struct seccomp_filters *f, int nr);

void seccomp__free(struct seccomp_filters *f);

/* Every x86-64 system call the injection (the tracer's call stub, dlopen
 * of the agent, maybe from a memfd) and the agent (attach, its stats
 * thread, sampling, rescan, detach) may make in the target. */
extern const int seccomp_injection_calls[];
extern const size_t seccomp_injection_ncalls;

/* The name of a system call of seccomp_injection_calls, or "?". */
const char *seccomp__call_name(int nr);

#endif /* PA_TRACER_SECCOMP_H */
