// SPDX-License-Identifier: MIT
/*
 * seccomp-run.c - run a program under a seccomp filter of a known shape,
 * for the tests of attaching to filtered processes.
 *
 *   seccomp-run MODE PROG [ARG...]
 *
 *   docker     Docker's default profile's shape: another architecture is
 *              killed; clone3 fails with ENOSYS (so glibc falls back to
 *              clone); mount, umount2, kexec_load, reboot, swapon,
 *              init_module, bpf fail with EPERM; everything else runs
 *   no-memfd   memfd_create fails with EPERM; everything else runs
 *
 * no_new_privs is set first (a filter needs it without CAP_SYS_ADMIN).
 * Any failure: a line on stderr and exit 125.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "arch/arch.h"

#define LD(field)	BPF_STMT(BPF_LD | BPF_W | BPF_ABS,		\
				 offsetof(struct seccomp_data, field))
#define RET(v)		BPF_STMT(BPF_RET | BPF_K, (v))
#define IS(nr, t, f)	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), (t), (f))

int main(int argc, char **argv)
{
	struct sock_filter docker[] = {
		LD(arch),
		IS(PA_ARCH_AUDIT, 1, 0),
		RET(SECCOMP_RET_KILL_PROCESS),
		LD(nr),
		IS(SYS_clone3, 0, 1),
		RET(SECCOMP_RET_ERRNO | ENOSYS),
		IS(SYS_mount, 6, 0),
		IS(SYS_umount2, 5, 0),
		IS(SYS_kexec_load, 4, 0),
		IS(SYS_reboot, 3, 0),
		IS(SYS_swapon, 2, 0),
		IS(SYS_init_module, 1, 0),
		IS(SYS_bpf, 0, 1),
		RET(SECCOMP_RET_ERRNO | EPERM),
		RET(SECCOMP_RET_ALLOW),
	};
	struct sock_filter no_memfd[] = {
		LD(nr),
		IS(SYS_memfd_create, 0, 1),
		RET(SECCOMP_RET_ERRNO | EPERM),
		RET(SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog;

	if (argc < 3) {
		fprintf(stderr, "usage: seccomp-run docker|no-memfd PROG [ARG...]\n");
		return 125;
	}
	if (!strcmp(argv[1], "docker")) {
		prog.filter = docker;
		prog.len = sizeof(docker) / sizeof(docker[0]);
	} else if (!strcmp(argv[1], "no-memfd")) {
		prog.filter = no_memfd;
		prog.len = sizeof(no_memfd) / sizeof(no_memfd[0]);
	} else {
		fprintf(stderr, "seccomp-run: unknown mode %s\n", argv[1]);
		return 125;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0)) {
		fprintf(stderr, "seccomp-run: %s\n", strerror(errno));
		return 125;
	}
	execv(argv[2], argv + 2);
	fprintf(stderr, "seccomp-run: %s: %s\n", argv[2], strerror(errno));
	return 125;
}
