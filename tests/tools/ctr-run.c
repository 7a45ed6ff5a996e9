// SPDX-License-Identifier: MIT
/*
 * ctr-run.c - a minimal container for the tests: run a program in new
 * user, mount, PID, UTS, IPC and cgroup namespaces, pivot_root'ed into a
 * directory the test assembled, as runc does it.
 *
 *   ctr-run [--uid HOSTUID] [--no-proc] [--cwd DIR] ROOT PROG [ARG...]
 *
 * The parent clones the child into the namespaces, writes its uid and gid
 * maps (root there is HOSTUID here, 65536 ids from it when we are root,
 * our own id alone otherwise: a rootless container), prints "hostpid N"
 * and lets it go on.  The child makes its mounts private, binds ROOT onto
 * itself, mounts a proc of its PID namespace on ROOT/proc (which the test
 * made; not with --no-proc), pivots into ROOT, detaches the old root and execs PROG as
 * PID 1 there (in DIR, default /), root in its namespace.  The parent waits and exits with
 * PROG's status (128+signal if killed), so the test has one process to
 * wait for.  Any failure: a line on stderr and exit 125.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct child_args {
	int sync[2];
	const char *root;
	char **argv;
	const char *cwd;
	int proc;
};

static char stack[256 * 1024] __attribute__((aligned(16)));

static void die(const char *what)
{
	fprintf(stderr, "ctr-run: %s: %s\n", what, strerror(errno));
	_exit(125);
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -EIO;
}

static int child(void *arg)
{
	struct child_args *a = arg;
	char path[4096], c;

	close(a->sync[1]);
	if (read(a->sync[0], &c, 1) != 1)
		_exit(125);	/* the parent failed and said why */
	close(a->sync[0]);
	if (setresgid(0, 0, 0) || setresuid(0, 0, 0))
		die("become root in the user namespace");
	/* the test kills the parent: the container goes with it (set after
	 * the uid change, which clears it) */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL))
		die("PR_SET_PDEATHSIG");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		die("make the mounts private");
	if (mount(a->root, a->root, NULL, MS_BIND | MS_REC, NULL))
		die("bind the root onto itself");
	if (a->proc) {
		snprintf(path, sizeof(path), "%s/proc", a->root);
		if (mount("proc", path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  NULL))
			die("mount proc");
	}
	if (sethostname("ctr", 3))
		die("sethostname");
	if (chdir(a->root))
		die("chdir to the root");
	/* runc's way: the old root stacked under the new, then detached;
	 * no directory needed in ROOT, which root here may not write */
	if (syscall(SYS_pivot_root, ".", "."))
		die("pivot_root");
	if (umount2(".", MNT_DETACH))
		die("detach the old root");
	if (chdir(a->cwd))
		die("chdir in the new root");
	execv(a->argv[0], a->argv);
	die(a->argv[0]);
	return 125;
}

int main(int argc, char **argv)
{
	struct child_args a = { .proc = 1, .cwd = "/" };
	unsigned long hostuid = getuid();
	char map[128], path[64];
	int i = 1, status, count;
	pid_t pid;

	for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
		if (!strcmp(argv[i], "--uid") && i + 1 < argc)
			hostuid = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--no-proc"))
			a.proc = 0;
		else if (!strcmp(argv[i], "--cwd") && i + 1 < argc)
			a.cwd = argv[++i];
		else
			break;
	}
	if (argc - i < 2) {
		fprintf(stderr, "usage: ctr-run [--uid HOSTUID] [--no-proc] [--cwd DIR] ROOT PROG [ARG...]\n");
		return 125;
	}
	a.root = argv[i];
	a.argv = argv + i + 1;
	if (pipe2(a.sync, O_CLOEXEC))
		die("pipe");
	pid = clone(child, stack + sizeof(stack),
		    CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS |
		    CLONE_NEWIPC | CLONE_NEWCGROUP | SIGCHLD, &a);
	if (pid < 0)
		die("clone into new namespaces");
	close(a.sync[0]);
	count = getuid() == 0 ? 65536 : 1;
	snprintf(map, sizeof(map), "0 %lu %d\n", hostuid, count);
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	if (write_file(path, map))
		die("write uid_map");
	if (getuid() != 0) {
		snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
		if (write_file(path, "deny"))
			die("write setgroups");
		snprintf(map, sizeof(map), "0 %lu 1\n", (unsigned long)getgid());
	}
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	if (write_file(path, map))
		die("write gid_map");
	printf("hostpid %d\n", (int)pid);
	fflush(stdout);
	if (write(a.sync[1], "x", 1) != 1)
		die("start the child");
	close(a.sync[1]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid");
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
