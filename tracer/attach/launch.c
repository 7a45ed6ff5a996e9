// SPDX-License-Identifier: MIT
/*
 * launch.c - run a program under the agent.
 *
 * The child gets the memfd as a plain inherited descriptor (dup clears
 * close-on-exec) and its number in PPROF_ALLOC_FD; the agent's constructor
 * picks it up before main.  Exec failure travels back over a close-on-exec
 * pipe: the parent reads either EOF (exec worked) or the child's errno,
 * so "no such command" is reported as such and not as an empty profile.
 *
 * The environment is prepared in the parent, before fork, so the child
 * only calls async-signal-safe functions.  A program whose interpreter is
 * musl's loader is refused before it runs: musl cannot load the agent
 * (a glibc library) and would exit 127 without running it.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sys/stat.h>
#include "elf/symtab.h"
#include "entry.h"
#include "pprof_alloc_abi.h"
#include "launch.h"

extern char **environ;

char *launch__find_agent(void)
{
	const char *env = getenv("PPROF_ALLOC_AGENT");
	static const char *const rel[] = {
		"/libpprof-alloc.so",
		"/../lib/pprof-alloc/libpprof-alloc.so",
	};
	char exe[PATH_MAX], cand[PATH_MAX + 64];
	ssize_t n;
	size_t i;
	char *slash;

	if (env && *env)
		return realpath(env, NULL);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = 0;
	for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(cand, sizeof(cand), "%s%s", exe, rel[i]);
		if (!access(cand, R_OK))
			return realpath(cand, NULL);
	}
	errno = ENOENT;
	return NULL;
}

/* The file execvp would run for name (its PATH search), in buf; false if
 * none is found (execvp will say so). */
static bool find_command(const char *name, char *buf, size_t size)
{
	const char *path = getenv("PATH"), *p, *end;

	if (strchr(name, '/'))
		return (size_t)snprintf(buf, size, "%s", name) < size;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path;; p = end + 1) {
		int len;

		end = strchrnul(p, ':');
		len = (int)(end - p);
		if ((size_t)snprintf(buf, size, "%.*s%s%s", len, p,
				     len ? "/" : "", name) < size &&
		    !access(buf, X_OK))
			return true;
		if (!*end)
			return false;
	}
}

/* Whether the ELF file at path asks for musl's loader (PT_INTERP
 * /lib/ld-musl-*).  A script, a static or unreadable file: false. */
static bool wants_musl(const char *path)
{
	char interp[256] = "";
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	bool musl = false;
	int fd, i;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return false;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(ph) || eh.e_phnum > 256)
		goto out_close;
	for (i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph),
			  (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) !=
		    sizeof(ph))
			break;
		if (ph.p_type != PT_INTERP || ph.p_filesz >= sizeof(interp))
			continue;
		if (pread(fd, interp, ph.p_filesz, (off_t)ph.p_offset) ==
		    (ssize_t)ph.p_filesz) {
			interp[ph.p_filesz] = 0;
			musl = strstr(interp, "ld-musl") != NULL;
		}
		break;
	}
out_close:
	close(fd);
	return musl;
}

/* Whether environ's entry e sets a variable the tracer decides. */
static bool ours(const char *e)
{
	static const char *const names[] = {
		"LD_PRELOAD=", PA_ENV_FD "=", PA_ENV_SESSION "=",
		PA_ENV_FOLLOW "=", PA_ENV_EXEC "=",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strncmp(e, names[i], strlen(names[i])))
			return true;
	return false;
}

/* environ with LD_PRELOAD and PPROF_ALLOC_FD set, the other variables of
 * ours dropped and those in extra ("NAME=VALUE"s, NULL-terminated, or
 * NULL) added; malloc'd. */
static char **child_env(const char *agent, int fd, const char *const *extra)
{
	const char *old = getenv("LD_PRELOAD");
	size_t n = 0, nx = 0, i, j = 0;
	char **env;

	while (environ[n])
		n++;
	while (extra && extra[nx])
		nx++;
	env = calloc(n + nx + 3, sizeof(*env));
	if (!env)
		return NULL;
	for (i = 0; i < n; i++)
		if (!ours(environ[i]))
			env[j++] = environ[i];
	for (i = 0; i < nx; i++)
		env[j++] = (char *)extra[i];
	if (asprintf(&env[j], "LD_PRELOAD=%s%s%s", agent,
		     old && *old ? ":" : "", old && *old ? old : "") < 0) {
		free(env);
		return NULL;
	}
	if (asprintf(&env[j + 1], PA_ENV_FD "=%d", fd) < 0) {
		free(env[j]);
		free(env);
		return NULL;
	}
	return env;
}

/* n as width digits at p, leading zeros (by hand: async-signal-safe). */
static void put_digits(char *p, int width, unsigned long long n)
{
	while (width-- > 0) {
		p[width] = (char)('0' + n % 10);
		n /= 10;
	}
}

/* In the child, after the fork: our pid and pid namespace into
 * PPROF_ALLOC_EXEC's digits (nothing here may allocate or lock). */
static void set_exec_pid(char **env)
{
	static const char name[] = PA_ENV_EXEC "=";
	size_t i, at = sizeof(name) - 1;

	for (i = 0; env[i]; i++) {
		if (strncmp(env[i], name, at))
			continue;
		put_digits(env[i] + at, PA_EXEC_PID_DIGITS,
			   (unsigned long long)getpid());
		put_digits(env[i] + at + PA_EXEC_PID_DIGITS + 1,
			   PA_EXEC_NS_DIGITS, pa_pidns_inode());
		return;
	}
}

int launch__spawn(char *const argv[], const char *agent, int memfd,
		  const char *const *extra, const sigset_t *unblock, pid_t *pid,
		  const char **why)
{
	int pipefd[2], child_fd, err = 0, status;
	char **env;
	ssize_t n;
	pid_t child;

	if (strpbrk(agent, ": ")) {
		*why = "the agent's path contains ':' or ' ', which LD_PRELOAD cannot hold";
		return -EINVAL;
	}
	{
		char path[PATH_MAX];

		if (find_command(argv[0], path, sizeof(path)) &&
		    wants_musl(path)) {
			*why = "runs on musl libc (its interpreter is ld-musl), which cannot load the agent, a glibc library; not run";
			return -ELIBBAD;
		}
	}
	/* The number the child will see: a dup made in the child lands on the
	 * lowest free descriptor, which we can only know there; so dup here,
	 * without close-on-exec, and close our copy after the fork. */
	child_fd = fcntl(memfd, F_DUPFD, 3);
	if (child_fd < 0) {
		*why = "cannot duplicate the memfd";
		return -errno;
	}
	env = child_env(agent, child_fd, extra);
	if (!env) {
		err = -ENOMEM;
		*why = "out of memory";
		goto out_close_fd;
	}
	if (pipe2(pipefd, O_CLOEXEC)) {
		err = -errno;
		*why = "cannot make a pipe";
		goto out_free_env;
	}
	child = fork();
	if (child < 0) {
		err = -errno;
		*why = "cannot fork";
		goto out_close_pipe;
	}
	if (child == 0) {
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		int sig, e;

		for (sig = 1; sig < NSIG; sig++)
			if (sigismember(unblock, sig))
				sigaction(sig, &dfl, NULL);
		sigprocmask(SIG_UNBLOCK, unblock, NULL);
		close(pipefd[0]);
		set_exec_pid(env);
		execvpe(argv[0], argv, env);
		e = errno;
		if (write(pipefd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pipefd[1]);
	pipefd[1] = -1;
	do {
		n = read(pipefd[0], &err, sizeof(err));
	} while (n < 0 && errno == EINTR);
	if (n == sizeof(err)) {
		err = -err;
		*why = "cannot execute the command";
		waitpid(child, &status, 0);
	} else {
		err = 0;
		*pid = child;
	}
out_close_pipe:
	close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
out_free_env:
	if (env) {
		size_t i;

		for (i = 0; env[i]; i++)
			if (!strncmp(env[i], "LD_PRELOAD=", 11) ||
			    !strncmp(env[i], PA_ENV_FD "=", sizeof(PA_ENV_FD)))
				free(env[i]);
		free(env);
	}
out_close_fd:
	close(child_fd);
	return err;
}

bool launch__wants_entry(const char *argv0)
{
	char path[PATH_MAX];

	return find_command(argv0, path, sizeof(path)) &&
	       entry__path_wants(path);
}

/*
 * Why the agent never started in the program argv0 ran: the program
 * defines malloc itself (an allocator linked into it, which wins over a
 * preloaded one, so the agent waits to be attached to hook it), is static
 * (no interpreter: LD_PRELOAD is never read) or setuid (the loader ignores
 * LD_PRELOAD); else not known.  One sentence into buf.
 */
void launch__why_not_started(const char *argv0, char *buf, size_t size)
{
	char path[PATH_MAX];
	uint64_t v;
	struct stat st;
	bool interp = false;
	int fd;

	snprintf(buf, size, "the agent never started in '%s' (why is not known)",
		 argv0);
	if (!find_command(argv0, path, sizeof(path)))
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return;
	if (!fstat(fd, &st) && (st.st_mode & (S_ISUID | S_ISGID))) {
		snprintf(buf, size, "the agent never started in '%s': it is setuid or setgid, and the loader ignores LD_PRELOAD for it",
			 argv0);
		goto out_close;
	}
	if (!elfsym__find(fd, "malloc", &v)) {
		snprintf(buf, size, "'%s' defines malloc itself (%s linked into the executable), and the agent never started: nothing was sampled",
			 argv0, entry__allocator_of(fd));
		goto out_close;
	}
	{
		char probe[4096];
		ssize_t n = pread(fd, probe, sizeof(probe), 0);

		/* PT_INTERP's string is in the first page of any executable
		 * ld makes; a static one has none */
		interp = n > 0 && memmem(probe, (size_t)n, "ld-linux", 8);
	}
	if (!interp)
		snprintf(buf, size, "the agent never started in '%s': it is statically linked, so LD_PRELOAD is never read",
			 argv0);
out_close:
	close(fd);
}
