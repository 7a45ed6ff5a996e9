// SPDX-License-Identifier: MIT
/*
 * rawfork.c - a child made without the atfork handlers (a raw fork system
 * call) frees copies of the parent's blocks.  The agent in the child must
 * not touch the parent's shared ring or live table: parent_keeps holds
 * 100 x 1000 bytes to the end, and the profile must say so (not ~0, as it
 * would if the child's frees removed the parent's samples).
 * Run by tests/e2e/run-rawfork.sh.
 */

#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
static void *kept[100];
__attribute__((noinline)) static void parent_keeps(void)
{
	for (int i = 0; i < 100; i++) kept[i] = malloc(1000);
}
int main(void)
{
	parent_keeps();
#ifdef SYS_fork
	pid_t pid = (pid_t)syscall(SYS_fork);	/* or _Fork() */
#else
	pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);	/* aarch64 */
#endif
	if (pid == 0) {
		for (int i = 0; i < 100; i++) free(kept[i]);	/* the child's copies */
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	usleep(100000);
	return kept[0] == NULL;		/* parent still holds all 100 blocks */
}
