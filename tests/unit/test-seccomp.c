// SPDX-License-Identifier: MIT
/*
 * test-seccomp.c - reading seccomp filters and what they may do: filters
 * shaped like Docker's default profile (ERRNO by default) and systemd's
 * SystemCallFilter (KILL_PROCESS by default), a check of clone's flags
 * (args are unknown: KILL is possible), TRAP, USER_NOTIF, TRACE, LOG,
 * action values the kernel does not know, stacked filters and the
 * kernel's precedence between them, ALU and memory, RET A, a
 * division by an unknown X, an action the kernel does not know, the
 * exploration's bound; filters the validator must refuse; and live ones,
 * installed by children and read back with ptrace (root).
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include "arch/arch.h"
#include "check.h"
#include "tracer/attach/seccomp.h"

/* What the children wait in: pause, or ppoll of nothing on aarch64,
 * which has no pause. */
#ifdef SYS_pause
#define WAIT_NR		SYS_pause
#define wait_forever()	syscall(SYS_pause)
#else
#define WAIT_NR		SYS_ppoll
#define wait_forever()	syscall(SYS_ppoll, NULL, 0, NULL, NULL, 8)
#endif

#define ARR(a)		(sizeof(a) / sizeof((a)[0]))
#define LD_NR		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, \
				 offsetof(struct seccomp_data, nr))
#define LD_ARCH		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, \
				 offsetof(struct seccomp_data, arch))
#define LD_ARG0_LO	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, \
				 offsetof(struct seccomp_data, args[0]))
#define RET(v)		BPF_STMT(BPF_RET | BPF_K, (v))
#define ERRNO(e)	(SECCOMP_RET_ERRNO | (e))

static char why[256];

static struct seccomp_filters *add(struct seccomp_filters *f,
				   const struct sock_filter *p, size_t n)
{
	why[0] = 0;
	CHECK_EQ_INT(seccomp__add(&f, p, n, why, sizeof(why)), 0);
	return f;
}

static unsigned verdict(const struct seccomp_filters *f, int nr)
{
	unsigned a = ~0u;

	CHECK_EQ_INT(seccomp__verdict(f, nr, &a), 0);
	return a;
}

/* ld arch; wrong arch: bad; ld nr; each of nrs: ALLOW; else dflt. */
static size_t allow_list(struct sock_filter *p, const int *nrs, size_t n,
			 uint32_t dflt, uint32_t bad_arch)
{
	size_t i, at = 0;

	p[at++] = (struct sock_filter)LD_ARCH;
	p[at++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
					       PA_ARCH_AUDIT, 1, 0);
	p[at++] = (struct sock_filter)RET(bad_arch);
	p[at++] = (struct sock_filter)LD_NR;
	for (i = 0; i < n; i++)
		p[at++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ |
						       BPF_K, (uint32_t)nrs[i],
						       (uint8_t)(n - i), 0);
	p[at++] = (struct sock_filter)RET(dflt);
	p[at++] = (struct sock_filter)RET(SECCOMP_RET_ALLOW);
	return at;
}

/* Docker's default profile: KILL for another architecture, clone only
 * without namespace flags, an allow list, ERRNO(EPERM) for the rest. */
static void check_docker(void)
{
	static const int nrs[] = { SYS_read, SYS_write, SYS_mmap, SYS_openat,
				   SYS_close, SYS_futex };
	struct sock_filter p[64] = {
		LD_ARCH,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PA_ARCH_AUDIT, 1, 0),
		RET(SECCOMP_RET_KILL_PROCESS),
		LD_NR,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4),
		LD_ARG0_LO,
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x7e020000, 0, 1),
		RET(ERRNO(EPERM)),
		RET(SECCOMP_RET_ALLOW),
	};
	struct seccomp_filters *f;
	size_t at = 9, i;

	for (i = 0; i < ARR(nrs); i++)
		p[at++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ |
						       BPF_K, (uint32_t)nrs[i],
						       (uint8_t)(ARR(nrs) - i),
						       0);
	p[at++] = (struct sock_filter)RET(ERRNO(EPERM));
	p[at++] = (struct sock_filter)RET(SECCOMP_RET_ALLOW);
	f = add(NULL, p, at);
	CHECK_EQ_INT(verdict(f, SYS_read), SECCOMP_MAY_ALLOW);
	CHECK_EQ_INT(verdict(f, SYS_futex), SECCOMP_MAY_ALLOW);
	CHECK_EQ_INT(verdict(f, SYS_memfd_create), SECCOMP_MAY_ERRNO);
	CHECK_EQ_INT(verdict(f, SYS_clone),
		     SECCOMP_MAY_ALLOW | SECCOMP_MAY_ERRNO);
	CHECK_EQ_INT(seccomp__may_deny(f, SYS_memfd_create), 1);
	CHECK_EQ_INT(seccomp__may_deny(f, SYS_clone), 1);
	CHECK_EQ_INT(seccomp__may_deny(f, SYS_read), 0);
	/* an x32 number is not in the list */
	CHECK_EQ_INT(verdict(f, (int)(0x40000000 | SYS_read)),
		     SECCOMP_MAY_ERRNO);
	seccomp__free(f);
}

/* systemd's SystemCallFilter: KILL_PROCESS for what is not listed. */
static void check_systemd(void)
{
	struct sock_filter p[64];
	static const int nrs[] = { SYS_read, SYS_write, SYS_exit_group };
	struct seccomp_filters *f = NULL;
	int bad = 0;
	unsigned acts = 0;
	static const int calls[] = { SYS_read, SYS_write, SYS_mmap, SYS_read };

	f = add(f, p, allow_list(p, nrs, ARR(nrs), SECCOMP_RET_KILL_PROCESS,
				 SECCOMP_RET_KILL_PROCESS));
	CHECK_EQ_INT(verdict(f, SYS_write), SECCOMP_MAY_ALLOW);
	CHECK_EQ_INT(verdict(f, SYS_mmap), SECCOMP_MAY_KILL_PROCESS);
	CHECK_EQ_INT(seccomp__check_calls(f, calls, ARR(calls), &bad, &acts),
		     1);
	CHECK_EQ_INT(bad, SYS_mmap);
	CHECK_EQ_INT(acts, SECCOMP_MAY_KILL_PROCESS);
	CHECK_EQ_INT(seccomp__check_calls(f, calls, 2, &bad, &acts), 0);
	CHECK_EQ_INT(bad, -1);
	CHECK_EQ_INT(acts, 0);
	CHECK_EQ_INT(seccomp__check_calls(f, seccomp_injection_calls,
					  seccomp_injection_ncalls, &bad,
					  &acts), 1);
	CHECK_EQ_INT(bad, seccomp_injection_calls[0]);
	seccomp__free(f);
}

/* KILL for clone with CLONE_NEWUSER: args are unknown, so KILL may be. */
static void check_clone_flags(void)
{
	const struct sock_filter p[] = {
		LD_NR,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 3),
		LD_ARG0_LO,
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x10000000, 0, 1),
		RET(SECCOMP_RET_KILL_THREAD),
		RET(SECCOMP_RET_ALLOW),
	};
	struct seccomp_filters *f = add(NULL, p, ARR(p));
	int bad;
	unsigned acts;
	static const int calls[] = { SYS_read, SYS_clone };

	CHECK_EQ_INT(verdict(f, SYS_clone),
		     SECCOMP_MAY_KILL_THREAD | SECCOMP_MAY_ALLOW);
	CHECK_EQ_INT(verdict(f, SYS_clone3), SECCOMP_MAY_ALLOW);
	CHECK_EQ_INT(seccomp__check_calls(f, calls, 2, &bad, &acts), 1);
	CHECK_EQ_INT(bad, SYS_clone);
	CHECK_EQ_INT(acts, SECCOMP_MAY_KILL_THREAD | SECCOMP_MAY_ALLOW);
	seccomp__free(f);
}

/* TRAP, USER_NOTIF, TRACE and LOG, each for one call. */
static void check_actions(void)
{
	const struct sock_filter p[] = {
		LD_NR,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ptrace, 0, 1),
		RET(SECCOMP_RET_TRAP | 7),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mount, 0, 1),
		RET(SECCOMP_RET_USER_NOTIF),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_kill, 0, 1),
		RET(SECCOMP_RET_TRACE | 1),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getpid, 0, 1),
		RET(SECCOMP_RET_LOG),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
		RET(0x00040000),	/* unknown to the kernel: kills */
		RET(SECCOMP_RET_ALLOW),
	};
	struct seccomp_filters *f = add(NULL, p, ARR(p));
	int bad;
	unsigned acts;
	static const int calls[] = { SYS_getpid, SYS_read, SYS_mount };

	CHECK_EQ_INT(verdict(f, SYS_ptrace), SECCOMP_MAY_TRAP);
	CHECK_EQ_INT(verdict(f, SYS_mount), SECCOMP_MAY_USER_NOTIF);
	CHECK_EQ_INT(verdict(f, SYS_kill), SECCOMP_MAY_TRACE);
	CHECK_EQ_INT(verdict(f, SYS_getpid), SECCOMP_MAY_LOG);
	CHECK_EQ_INT(verdict(f, SYS_getppid), SECCOMP_MAY_KILL_PROCESS);
	CHECK_EQ_INT(verdict(f, SYS_read), SECCOMP_MAY_ALLOW);
	CHECK_EQ_INT(seccomp__may_deny(f, SYS_getpid), 0);	/* LOG runs */
	CHECK_EQ_INT(seccomp__may_deny(f, SYS_ptrace), 1);
	CHECK_EQ_INT(seccomp__check_calls(f, calls, ARR(calls), &bad, &acts),
		     1);
	CHECK_EQ_INT(bad, SYS_mount);
	CHECK_EQ_INT(acts, SECCOMP_MAY_USER_NOTIF);
	{
		static const int trap[] = { SYS_getpid, SYS_ptrace };
		static const int trace[] = { SYS_read, SYS_kill };
		static const int kill_[] = { SYS_getppid };
		static const int harmless[] = { SYS_getpid, SYS_read };

		CHECK_EQ_INT(seccomp__check_calls(f, trap, 2, &bad, &acts), 1);
		CHECK_EQ_INT(bad, SYS_ptrace);
		CHECK_EQ_INT(acts, SECCOMP_MAY_TRAP);
		CHECK_EQ_INT(seccomp__check_calls(f, trace, 2, &bad, &acts), 1);
		CHECK_EQ_INT(bad, SYS_kill);
		CHECK_EQ_INT(seccomp__check_calls(f, kill_, 1, &bad, &acts), 1);
		CHECK_EQ_INT(seccomp__check_calls(f, harmless, 2, &bad, &acts),
			     0);
	}
	seccomp__free(f);
}

/* Values the kernel does not know kill the process, wherever they fall
 * in its order: after LOG, one loses to LOG and beats ALLOW. */
static void check_unknown_actions(void)
{
	static const uint32_t odd[] = { 0x80010000, 0x00010000, 0x00040000,
					0x7fd00000, 0x7ff80000, 0x7ffd0000 };
	const struct sock_filter after_log[] = {
		RET(0x7ffd0000),
	};
	const struct sock_filter log[] = {
		RET(SECCOMP_RET_LOG),
	};
	const struct sock_filter allow[] = {
		RET(SECCOMP_RET_ALLOW),
	};
	const struct sock_filter errno_[] = {
		RET(ERRNO(1)),
	};
	struct seccomp_filters *f;
	size_t i;

	for (i = 0; i < ARR(odd); i++) {
		const struct sock_filter p[] = { RET(odd[i]) };

		f = add(NULL, p, 1);
		CHECK_EQ_INT(verdict(f, SYS_read), SECCOMP_MAY_KILL_PROCESS);
		seccomp__free(f);
	}
	f = add(add(NULL, after_log, 1), allow, 1);
	CHECK_EQ_INT(verdict(f, SYS_read), SECCOMP_MAY_KILL_PROCESS);
	seccomp__free(f);
	f = add(add(NULL, after_log, 1), log, 1);
	CHECK_EQ_INT(verdict(f, SYS_read), SECCOMP_MAY_LOG);
	seccomp__free(f);
	f = add(add(NULL, errno_, 1), after_log, 1);
	CHECK_EQ_INT(verdict(f, SYS_read), SECCOMP_MAY_ERRNO);
	seccomp__free(f);
}

/* A JSET on a known value is decided. */
static void check_jset(void)
{
	const struct sock_filter p[] = {
		LD_NR,
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 2, 0, 1),
		RET(ERRNO(1)),
		BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, 8, 0, 1),
		RET(SECCOMP_RET_TRAP),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 5, 0, 1),
		RET(SECCOMP_RET_LOG),
		RET(SECCOMP_RET_ALLOW),
	};
	struct seccomp_filters *f = add(NULL, p, ARR(p));

	CHECK_EQ_INT(verdict(f, 2), SECCOMP_MAY_ERRNO);		/* bit 1 */
	CHECK_EQ_INT(verdict(f, 1), SECCOMP_MAY_ALLOW);
	CHECK_EQ_INT(verdict(f, 5), SECCOMP_MAY_LOG);		/* >= 5 */
	CHECK_EQ_INT(verdict(f, 4), SECCOMP_MAY_ALLOW);
	CHECK_EQ_INT(verdict(f, 9), SECCOMP_MAY_TRAP);		/* > 8 */
	CHECK_EQ_INT(verdict(f, 8), SECCOMP_MAY_LOG);
	seccomp__free(f);
}

/* Two filters: the lowest action wins; one that always denies takes the
 * other's ALLOW away, one that only may deny does not. */
static void check_stacked(void)
{
	struct sock_filter docker[64];
	static const int nrs[] = { SYS_read, SYS_ptrace, SYS_getpid,
				   SYS_mmap };
	const struct sock_filter no_ptrace[] = {
		LD_NR,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ptrace, 0, 1),
		RET(SECCOMP_RET_KILL_PROCESS),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getpid, 0, 1),
		RET(SECCOMP_RET_LOG),
		/* mmap: TRAP if arg0 is odd, else ALLOW */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 0, 3),
		LD_ARG0_LO,
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 1, 0, 1),
		RET(SECCOMP_RET_TRAP),
		RET(SECCOMP_RET_ALLOW),
	};
	const struct sock_filter all_errno[] = {
		LD_NR,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 0, 1),
		RET(ERRNO(EACCES)),
		RET(SECCOMP_RET_ALLOW),
	};
	struct seccomp_filters *f;

	f = add(NULL, docker, allow_list(docker, nrs, ARR(nrs), ERRNO(EPERM),
					 SECCOMP_RET_KILL_PROCESS));
	f = add(f, no_ptrace, ARR(no_ptrace));
	CHECK_EQ_INT(f->count, 2);
	CHECK_EQ_INT(verdict(f, SYS_read), SECCOMP_MAY_ALLOW);
	CHECK_EQ_INT(verdict(f, SYS_ptrace), SECCOMP_MAY_KILL_PROCESS);
	/* ALLOW and LOG: LOG comes first */
	CHECK_EQ_INT(verdict(f, SYS_getpid), SECCOMP_MAY_LOG);
	/* ERRNO (the first filter) and KILL? no: write is not listed by
	 * the first, allowed by the second */
	CHECK_EQ_INT(verdict(f, SYS_write), SECCOMP_MAY_ERRNO);
	CHECK_EQ_INT(verdict(f, SYS_mmap),
		     SECCOMP_MAY_TRAP | SECCOMP_MAY_ALLOW);
	f = add(f, all_errno, ARR(all_errno));
	/* the third always says ERRNO for mmap: TRAP still may win, ALLOW
	 * no longer can */
	CHECK_EQ_INT(verdict(f, SYS_mmap), SECCOMP_MAY_TRAP | SECCOMP_MAY_ERRNO);
	CHECK_EQ_INT(seccomp__may_deny(f, SYS_mmap), 1);
	CHECK_EQ_INT(seccomp__may_deny(f, SYS_read), 0);
	seccomp__free(f);
}

/* ALU, X, memory, RET A, division by an unknown X. */
static void check_alu(void)
{
	/* nr into M[3]; A = ALLOW >> 16 << 16 unless nr is read's, then
	 * ERRNO; returned with RET A */
	const struct sock_filter known[] = {
		LD_NR,
		BPF_STMT(BPF_ST, 3),
		BPF_STMT(BPF_LD | BPF_IMM, 0x7fff),
		BPF_STMT(BPF_ALU | BPF_LSH | BPF_K, 16),
		BPF_STMT(BPF_MISC | BPF_TAX, 0),
		BPF_STMT(BPF_LD | BPF_MEM, 3),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_read, 0, 2),
		BPF_STMT(BPF_LD | BPF_IMM, SECCOMP_RET_ERRNO),
		BPF_STMT(BPF_RET | BPF_A, 0),
		BPF_STMT(BPF_MISC | BPF_TXA, 0),
		BPF_STMT(BPF_RET | BPF_A, 0),
	};
	/* A = args[0]; RET A: anything */
	const struct sock_filter any[] = {
		LD_NR,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 2),
		LD_ARG0_LO,
		BPF_STMT(BPF_RET | BPF_A, 0),
		RET(SECCOMP_RET_ALLOW),
	};
	/* X = args[1] AND 0, so known 0 ... and X = args[1]: may be 0 */
	const struct sock_filter divide[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args[1])),
		BPF_STMT(BPF_MISC | BPF_TAX, 0),
		LD_NR,
		BPF_STMT(BPF_ALU | BPF_DIV | BPF_X, 0),
		RET(SECCOMP_RET_ALLOW),
	};
	/* JEQ on an unknown arg: its equal way knows it (arg == 5 -> A + 1
	 * == 6 -> ALLOW; the other way ERRNO): no KILL */
	const struct sock_filter refine[] = {
		LD_ARG0_LO,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 5, 0, 4),
		BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, 1),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 6, 1, 0),
		RET(SECCOMP_RET_KILL_PROCESS),
		RET(SECCOMP_RET_ALLOW),
		RET(ERRNO(1)),
	};
	struct seccomp_filters *f;

	f = add(NULL, known, ARR(known));
	CHECK_EQ_INT(verdict(f, SYS_read), SECCOMP_MAY_ERRNO);
	CHECK_EQ_INT(verdict(f, SYS_write), SECCOMP_MAY_ALLOW);
	seccomp__free(f);

	f = add(NULL, any, ARR(any));
	CHECK_EQ_INT(verdict(f, SYS_read), SECCOMP_MAY_ALLOW);
	CHECK_EQ_INT(verdict(f, SYS_ioctl), 0xff);	/* every action */
	seccomp__free(f);

	f = add(NULL, divide, ARR(divide));
	CHECK_EQ_INT(verdict(f, SYS_write),
		     SECCOMP_MAY_KILL_THREAD | SECCOMP_MAY_ALLOW);
	seccomp__free(f);

	f = add(NULL, refine, ARR(refine));
	CHECK_EQ_INT(verdict(f, SYS_write),
		     SECCOMP_MAY_ALLOW | SECCOMP_MAY_ERRNO);
	seccomp__free(f);
}

/* 40 tests of unknown bits, each way leaving X different: 2^40 paths,
 * more than the bound. */
static void check_bound(void)
{
	struct sock_filter p[4 + 40 * 5];
	struct seccomp_filters *f;
	unsigned acts;
	size_t at = 0, i;

	p[at++] = (struct sock_filter)BPF_STMT(BPF_LDX | BPF_IMM, 0);
	for (i = 0; i < 40; i++) {
		p[at++] = (struct sock_filter)LD_ARG0_LO;
		p[at++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET |
						       BPF_K,
						       1u << (i % 32), 0, 3);
		p[at++] = (struct sock_filter)BPF_STMT(BPF_MISC | BPF_TXA, 0);
		p[at++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_ADD |
						       BPF_K,
						       1u << (i % 32));
		p[at++] = (struct sock_filter)BPF_STMT(BPF_MISC | BPF_TAX, 0);
	}
	p[at++] = (struct sock_filter)RET(SECCOMP_RET_ALLOW);
	f = add(NULL, p, at);
	CHECK_EQ_INT(seccomp__verdict(f, SYS_read, &acts), -E2BIG);
	seccomp__free(f);

	/* 30 tests whose ways meet again (X is 7 either way): 2^30 paths,
	 * but a few states, each explored once */
	at = 0;
	p[at++] = (struct sock_filter)BPF_STMT(BPF_LDX | BPF_IMM, 7);
	for (i = 0; i < 30; i++) {
		p[at++] = (struct sock_filter)LD_ARG0_LO;
		p[at++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET |
						       BPF_K, 1u << i, 0, 1);
		p[at++] = (struct sock_filter)BPF_STMT(BPF_LDX | BPF_IMM, 7);
	}
	p[at++] = (struct sock_filter)RET(SECCOMP_RET_ALLOW);
	f = add(NULL, p, at);
	CHECK_EQ_INT(verdict(f, SYS_read), SECCOMP_MAY_ALLOW);
	seccomp__free(f);

	/* 12 of the first kind: 4096 paths, within the bound */
	at = 0;
	p[at++] = (struct sock_filter)BPF_STMT(BPF_LDX | BPF_IMM, 0);
	for (i = 0; i < 12; i++) {
		p[at++] = (struct sock_filter)LD_ARG0_LO;
		p[at++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET |
						       BPF_K,
						       1u << (i % 32), 0, 3);
		p[at++] = (struct sock_filter)BPF_STMT(BPF_MISC | BPF_TXA, 0);
		p[at++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_ADD |
						       BPF_K,
						       1u << (i % 32));
		p[at++] = (struct sock_filter)BPF_STMT(BPF_MISC | BPF_TAX, 0);
	}
	p[1 + 12 * 5] = (struct sock_filter)RET(SECCOMP_RET_ALLOW);
	f = add(NULL, p, 1 + 12 * 5 + 1);
	CHECK_EQ_INT(verdict(f, SYS_read), SECCOMP_MAY_ALLOW);
	seccomp__free(f);
}

static void refused(const struct sock_filter *p, size_t n, const char *what)
{
	struct seccomp_filters *f = NULL;

	why[0] = 0;
	CHECK_EQ_INT(seccomp__add(&f, p, n, why, sizeof(why)), -EINVAL);
	CHECK(f == NULL);
	CHECK(strstr(why, what) != NULL);
}

static void check_invalid(void)
{
	static struct sock_filter big[SECCOMP_MAX_INSNS + 1];
	const struct sock_filter jt_out[] = {
		LD_NR,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
		RET(SECCOMP_RET_ALLOW),
	};
	const struct sock_filter jf_out[] = {
		LD_NR,
		BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, 0, 0, 5),
		RET(SECCOMP_RET_ALLOW),
	};
	const struct sock_filter ja_out[] = {
		BPF_STMT(BPF_JMP | BPF_JA, 1),
		RET(SECCOMP_RET_ALLOW),
	};
	const struct sock_filter byte_load[] = {
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0),
		RET(SECCOMP_RET_ALLOW),
	};
	const struct sock_filter mod[] = {
		LD_NR,
		BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, 3),
		RET(SECCOMP_RET_ALLOW),
	};
	const struct sock_filter misaligned[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 2),
		RET(SECCOMP_RET_ALLOW),
	};
	const struct sock_filter beyond[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, sizeof(struct seccomp_data)),
		RET(SECCOMP_RET_ALLOW),
	};
	const struct sock_filter slot[] = {
		BPF_STMT(BPF_ST, 16),
		RET(SECCOMP_RET_ALLOW),
	};
	const struct sock_filter unstored[] = {
		LD_NR,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
		BPF_STMT(BPF_ST, 2),
		BPF_STMT(BPF_LDX | BPF_MEM, 2),	/* not stored if nr != 0 */
		RET(SECCOMP_RET_ALLOW),
	};
	const struct sock_filter no_ret[] = {
		LD_NR,
	};
	const struct sock_filter div0[] = {
		BPF_STMT(BPF_ALU | BPF_DIV | BPF_K, 0),
		RET(SECCOMP_RET_ALLOW),
	};
	const struct sock_filter shift[] = {
		BPF_STMT(BPF_ALU | BPF_LSH | BPF_K, 32),
		RET(SECCOMP_RET_ALLOW),
	};
	const struct sock_filter ok[] = {
		LD_NR,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
		BPF_STMT(BPF_ST, 2),
		BPF_STMT(BPF_ST, 2),
		BPF_STMT(BPF_LDX | BPF_MEM, 2),	/* stored either way */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 60),	/* args[5] high */
		BPF_STMT(BPF_LD | BPF_W | BPF_LEN, 0),
		BPF_STMT(BPF_JMP | BPF_JA, 0),
		RET(SECCOMP_RET_ALLOW),
	};
	struct seccomp_filters *f = NULL;
	size_t i;

	refused(jt_out, ARR(jt_out), "beyond the end");
	refused(jf_out, ARR(jf_out), "beyond the end");
	refused(ja_out, ARR(ja_out), "beyond the end");
	refused(byte_load, ARR(byte_load), "not allowed");
	refused(mod, ARR(mod), "not allowed");
	refused(misaligned, ARR(misaligned), "aligned word");
	refused(beyond, ARR(beyond), "aligned word");
	refused(slot, ARR(slot), "memory slot 16");
	refused(unstored, ARR(unstored), "before it is stored");
	refused(no_ret, ARR(no_ret), "end with a return");
	refused(div0, ARR(div0), "division by 0");
	refused(shift, ARR(shift), "shift by 32");
	refused(ok, 0, "0 instructions");
	for (i = 0; i < ARR(big); i++)
		big[i] = (struct sock_filter)RET(SECCOMP_RET_ALLOW);
	refused(big, ARR(big), "4097 instructions");
	f = add(f, big, SECCOMP_MAX_INSNS);
	f = add(f, ok, ARR(ok));
	CHECK_EQ_INT(verdict(f, SYS_read), SECCOMP_MAY_ALLOW);
	for (i = 2; i < SECCOMP_MAX_FILTERS; i++)
		f = add(f, ok, ARR(ok));
	CHECK_EQ_INT(seccomp__add(&f, ok, ARR(ok), why, sizeof(why)), -E2BIG);
	seccomp__free(f);
	CHECK_EQ_INT(verdict(NULL, SYS_read), SECCOMP_MAY_ALLOW);
}

/* Every call the list names is a real one, once. */
static void check_list(void)
{
	size_t i, j;

	CHECK(seccomp_injection_ncalls >= 30);
	for (i = 0; i < seccomp_injection_ncalls; i++) {
		/* -1: the call skipped at a borrowed thread's entry stop */
		CHECK(seccomp_injection_calls[i] >= -1 &&
		      seccomp_injection_calls[i] < 512);
		for (j = 0; j < i; j++)
			CHECK(seccomp_injection_calls[i] !=
			      seccomp_injection_calls[j]);
	}
}

/* An allow list of every real call of the list, KILL for the rest: the
 * skipped call (-1) of a thread borrowed at a system call's entry still
 * meets the filter, and is judged. */
static void check_skipped_call(void)
{
	struct sock_filter p[128];
	int nrs[64], bad = 0;
	unsigned acts = 0;
	size_t i, n = 0;
	struct seccomp_filters *f;

	for (i = 0; i < seccomp_injection_ncalls; i++)
		if (seccomp_injection_calls[i] >= 0)
			nrs[n++] = seccomp_injection_calls[i];
	CHECK(n + 1 == seccomp_injection_ncalls);
	f = add(NULL, p, allow_list(p, nrs, n, SECCOMP_RET_KILL_PROCESS,
				    SECCOMP_RET_KILL_PROCESS));
	CHECK_EQ_INT(seccomp__check_calls(f, nrs, n, &bad, &acts), 0);
	CHECK_EQ_INT(seccomp__check_calls(f, seccomp_injection_calls,
					  seccomp_injection_ncalls, &bad,
					  &acts), 1);
	CHECK_EQ_INT(bad, -1);
	CHECK_EQ_INT(acts, SECCOMP_MAY_KILL_PROCESS);
	seccomp__free(f);
}

/* ---- live ---- */

#define STRICT_MODE	((const struct sock_filter *)1)

/* A child that installs p (unless NULL; STRICT_MODE: seccomp's strict
 * mode), says so on the pipe and waits; stopped with PTRACE_INTERRUPT
 * once it is waiting.  It dies with its parent. */
static pid_t start_child(const struct sock_filter *p, size_t n)
{
	struct sock_fprog prog = { .len = (unsigned short)n,
				   .filter = (struct sock_filter *)p };
	int fds[2], status;
	char c;
	pid_t pid;

	CHECK_EQ_INT(pipe(fds), 0);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0))
			_exit(2);
		if (p == STRICT_MODE) {
			int block[2];	/* its own: fds[0] has our byte */

			if (pipe(block) ||
			    prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0))
				_exit(2);
			syscall(SYS_write, fds[1], "x", 1);
			for (;;)	/* nobody writes: blocks */
				syscall(SYS_read, block[0], &c, 1);
		}
		if (p && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
			  syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0,
				  &prog)))
			_exit(2);
		syscall(SYS_write, fds[1], "x", 1);
		for (;;)
			wait_forever();
	}
	close(fds[1]);
	CHECK_EQ_INT(read(fds[0], &c, 1), 1);
	close(fds[0]);
	CHECK_EQ_INT(ptrace(PTRACE_SEIZE, pid, NULL, NULL), 0);
	CHECK_EQ_INT(ptrace(PTRACE_INTERRUPT, pid, NULL, NULL), 0);
	CHECK_EQ_INT(waitpid(pid, &status, __WALL), pid);
	CHECK(WIFSTOPPED(status));
	return pid;
}

static void end_child(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	CHECK_EQ_INT(waitpid(pid, &status, __WALL), pid);
}

static void check_live(void)
{
	const struct sock_filter no_memfd[] = {
		LD_ARCH,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PA_ARCH_AUDIT, 1, 0),
		RET(SECCOMP_RET_KILL_PROCESS),
		LD_NR,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_memfd_create, 0, 1),
		RET(ERRNO(EPERM)),
		RET(SECCOMP_RET_ALLOW),
	};
	struct sock_filter strict[64];
	static const int nrs[] = { SYS_write, WAIT_NR, SYS_restart_syscall,
				   SYS_rt_sigreturn, SYS_exit_group, SYS_exit,
				   SYS_read, SYS_openat, SYS_close };
	size_t nstrict = allow_list(strict, nrs, ARR(nrs),
				    SECCOMP_RET_KILL_PROCESS,
				    SECCOMP_RET_KILL_PROCESS);
	struct seccomp_filters *f;
	unsigned acts;
	int bad;
	pid_t pid;

	/* strict mode: not "no filter" */
	pid = start_child(STRICT_MODE, 0);
	why[0] = 0;
	CHECK_EQ_INT(seccomp__read(pid, &f, why, sizeof(why)), -EPERM);
	CHECK(f == NULL);
	CHECK(strstr(why, "strict") != NULL);
	end_child(pid);

	/* no filter: nothing to read, everything allowed */
	pid = start_child(NULL, 0);
	CHECK_EQ_INT(seccomp__read(pid, &f, why, sizeof(why)), 0);
	CHECK_EQ_INT(f->count, 0);
	CHECK_EQ_INT(verdict(f, SYS_memfd_create), SECCOMP_MAY_ALLOW);
	seccomp__free(f);
	end_child(pid);

	/* ERRNO for memfd_create, the rest allowed */
	pid = start_child(no_memfd, ARR(no_memfd));
	why[0] = 0;
	CHECK_EQ_INT(seccomp__read(pid, &f, why, sizeof(why)), 0);
	CHECK_EQ_INT(f->count, 1);
	CHECK_EQ_INT(f->progs[0].len, ARR(no_memfd));
	CHECK(!memcmp(f->progs[0].insns, no_memfd, sizeof(no_memfd)));
	CHECK_EQ_INT(verdict(f, SYS_memfd_create), SECCOMP_MAY_ERRNO);
	CHECK_EQ_INT(seccomp__may_deny(f, SYS_memfd_create), 1);
	CHECK_EQ_INT(verdict(f, SYS_read), SECCOMP_MAY_ALLOW);
	CHECK_EQ_INT(seccomp__may_deny(f, SYS_read), 0);
	CHECK_EQ_INT(seccomp__check_calls(f, seccomp_injection_calls,
					  seccomp_injection_ncalls, &bad,
					  &acts), 0);
	CHECK_EQ_INT(bad, -1);
	seccomp__free(f);
	end_child(pid);

	/* KILL_PROCESS by default, memfd_create not listed; stacked on the
	 * first (a child inherits its parent's filters) */
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		struct sock_fprog prog = { .len = ARR(no_memfd),
					   .filter = (struct sock_filter *)
						     no_memfd };

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
			_exit(2);
		pid = start_child(strict, nstrict);
		CHECK_EQ_INT(seccomp__read(pid, &f, why, sizeof(why)), -EPERM);
		CHECK(strstr(why, "CAP_SYS_ADMIN") != NULL);
		end_child(pid);
		_exit(0);
	}
	{
		int status;

		CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
		/* the reader under a filter itself could not read */
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	pid = start_child(strict, nstrict);
	CHECK_EQ_INT(seccomp__read(pid, &f, why, sizeof(why)), 0);
	CHECK_EQ_INT(f->count, 1);
	CHECK_EQ_INT(verdict(f, SYS_memfd_create), SECCOMP_MAY_KILL_PROCESS);
	CHECK_EQ_INT(verdict(f, SYS_read), SECCOMP_MAY_ALLOW);
	CHECK_EQ_INT(seccomp__check_calls(f, seccomp_injection_calls,
					  seccomp_injection_ncalls, &bad,
					  &acts), 1);
	CHECK_EQ_INT(bad, SYS_mmap);
	CHECK_EQ_INT(acts, SECCOMP_MAY_KILL_PROCESS);
	seccomp__free(f);
	end_child(pid);
}

int main(void)
{
	check_docker();
	check_systemd();
	check_clone_flags();
	check_actions();
	check_unknown_actions();
	check_jset();
	check_stacked();
	check_alu();
	check_bound();
	check_invalid();
	check_list();
	check_skipped_call();
	if (geteuid() == 0)
		check_live();
	else
		printf("test-seccomp: not root, the live filters skipped\n");
	CHECK_SUMMARY("test-seccomp");
	return 0;
}
