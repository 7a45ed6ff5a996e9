/* SPDX-License-Identifier: MIT */
/*
 * glibc_compat.h - the agent needs nothing newer than GLIBC_2.17, and
 * nothing but libc.so.6 and the dynamic loader.
 *
 * The agent is loaded into other people's processes, in containers whose
 * glibc may be as old as CentOS 7's (2.17) and whose image may hold only
 * what `ldd` lists for the program: libc.so.6 and ld.so.  It is built on a
 * newer glibc, where the linker binds each call to the newest version of
 * its symbol, so every function whose default version is newer than 2.17,
 * or that glibc < 2.34 keeps outside libc.so.6, is dealt with where it is
 * called (tests/e2e/run-agent-glibc.sh checks the built library,
 * docs/design.md "The glibc baseline" says why):
 *
 *   - made raw system calls: gettid (2.30; agent__gettid, agent.h), fstat
 *     (2.33, before an inline over __fxstat; fd_stat, agent.c) and
 *     memfd_create (2.27; pprof_alloc_memfd.h), which have no older
 *     version to bind to;
 *   - replaced: fmemopen (2.22; the old version is a different, buggier
 *     implementation) by fopencookie over the stats area (stats.c);
 *     pthread_self, whose libc.so.6 forwarder before 2.34 returns 0
 *     without libpthread, by the TCB's address (agent__thread_self);
 *     pthread_sigmask (libpthread before 2.32) by sigprocmask, glibc's
 *     same code; log (libm) by sampler__log;
 *   - looked up at run time: dlsym and dladdr (libdl before 2.34) by the
 *     agent's own reading of the loaded modules' dynamic symbol tables,
 *     and pthread_create, pthread_attr_*, pthread_tryjoin_np,
 *     pthread_key_create, pthread_key_delete and pthread_setspecific
 *     (libpthread before 2.34) in whichever module
 *     defines them (dynsym.c), none if none does.
 *
 * The Makefile links with -nodefaultlibs -lc -z defs, so a new call to a
 * function outside libc.so.6 and ld.so fails the link, and includes this
 * header in every agent file (-include): a symbol to pin to an old version
 * goes here, as .symver directives (none is needed today).  On aarch64,
 * whose glibc begins at 2.17, every symbol is old enough.
 */
#ifndef PA_GLIBC_COMPAT_H
#define PA_GLIBC_COMPAT_H

#endif /* PA_GLIBC_COMPAT_H */
