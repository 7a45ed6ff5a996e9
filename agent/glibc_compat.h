/* SPDX-License-Identifier: MIT */
/*
 * glibc_compat.h - the agent needs nothing newer than GLIBC_2.17.
 *
 * The agent is loaded into other people's processes, in containers whose
 * glibc may be as old as CentOS 7's (2.17).  It is built on a newer one,
 * where the linker binds each call to the newest version of its symbol, so
 * every function whose default version is newer than 2.17 is dealt with
 * here or where it is called (tests/e2e/run-agent-glibc.sh checks the
 * built library, docs/design.md says why):
 *
 *   - pinned below to the version glibc 2.17 has: the dl* and pthread_*
 *     functions that 2.32 to 2.34 moved into libc.so.6 (glibc still exports
 *     their old versions there, the same code), and libm's log (2.29 dropped
 *     the SVID error wrapper, which only acts on log(x <= 0): the sampler's
 *     x is in (0, 1]).  pthread_sigmask stays, pinned, rather than a raw
 *     rt_sigprocmask: glibc's keeps SIGCANCEL and SIGSETXID out of any mask
 *     (stats.c relies on it).
 *     On glibc < 2.34 they live in libdl.so.2 and libpthread.so.0, which the
 *     agent therefore names as DT_NEEDED (Makefile).  The version need then
 *     says "libc.so.6: GLIBC_2.2.5", but the dynamic linker only checks that
 *     libc.so.6 defines that version (elf/dl-version.c); a symbol is matched
 *     by version name and hash in whichever object of the scope defines it
 *     (elf/dl-lookup.c, check_match), so libpthread's pthread_create@@
 *     GLIBC_2.2.5 satisfies it.
 *   - made raw system calls: gettid (2.30; agent__gettid, agent.h), fstat
 *     (2.33, before an inline over __fxstat; fd_stat, agent.c) and
 *     memfd_create (2.27; pprof_alloc_memfd.h), which have no older version
 *     to pin;
 *   - replaced: fmemopen (2.22; the old version is a different, buggier
 *     implementation) by fopencookie over the stats area (stats.c).
 *
 * Included in every agent file by the Makefile (-include), so a new call
 * site is covered; only directives, no declarations.  x86-64 only: the
 * version names are that architecture's.
 */
#ifndef PA_GLIBC_COMPAT_H
#define PA_GLIBC_COMPAT_H

#if defined(__x86_64__) && !defined(__ILP32__)

#define PA_SYMVER(sym, ver)	__asm__(".symver " #sym "," #sym "@" #ver)

PA_SYMVER(dladdr, GLIBC_2.2.5);
PA_SYMVER(dladdr1, GLIBC_2.3.3);
PA_SYMVER(dlclose, GLIBC_2.2.5);
PA_SYMVER(dlinfo, GLIBC_2.3.3);
PA_SYMVER(dlsym, GLIBC_2.2.5);
PA_SYMVER(pthread_attr_setstacksize, GLIBC_2.2.5);
PA_SYMVER(pthread_create, GLIBC_2.2.5);
PA_SYMVER(pthread_key_create, GLIBC_2.2.5);
PA_SYMVER(pthread_setspecific, GLIBC_2.2.5);
PA_SYMVER(pthread_sigmask, GLIBC_2.2.5);
PA_SYMVER(log, GLIBC_2.2.5);

#undef PA_SYMVER

#endif /* __x86_64__ */

#endif /* PA_GLIBC_COMPAT_H */
