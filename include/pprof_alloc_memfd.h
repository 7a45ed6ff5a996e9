/* SPDX-License-Identifier: MIT */
/*
 * pprof_alloc_memfd.h - making the memfd of pprof_alloc_abi.h.
 *
 * The tracer makes it for a program it launches; the agent makes its own
 * when it runs without one.  Both must make it the same way - sized once,
 * sealed against shrinking and growing before anyone maps it (so that no
 * mapping of it can ever fault with SIGBUS past its end), and its header
 * filled in - so the one way lives here, inline, for both to compile in.
 * It allocates nothing and is safe to call from the agent's constructor.
 * memfd_create is the system call (Linux 3.17+), not glibc's wrapper,
 * which is 2.27+: the agent needs nothing newer than GLIBC_2.17
 * (agent/glibc_compat.h).
 */
#ifndef PPROF_ALLOC_MEMFD_H
#define PPROF_ALLOC_MEMFD_H

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "pprof_alloc_abi.h"

/*
 * Whether the kernel refuses memory it has not promised
 * (vm.overcommit_memory = 2): then a page of a memfd made at its first
 * touch may find no commit left, and that touch - in the program's
 * malloc - would die of SIGBUS.  The memfd is then allocated whole when
 * made, as it always was before its pages came as used.
 */
static inline bool pa_strict_overcommit(void)
{
	char c = 0;
	int f = open("/proc/sys/vm/overcommit_memory", O_RDONLY | O_CLOEXEC);

	if (f < 0)
		return false;
	if (read(f, &c, 1) != 1)
		c = 0;
	close(f);
	return c == '2';
}

/*
 * Make, seal, map and fill in a memfd for a ring of data_size bytes and a
 * live table of live_capacity entries (and, for sample_rate 1, a site
 * table).  On success *fd (close-on-exec) and
 * *hdr (the whole file, mapped shared) are set.  Nothing is populated:
 * a page is made when it is first touched, so the memory is what the
 * ring and the tables hold, not their bounds, and making one costs a
 * launch or an attach next to nothing - unless the kernel does not
 * overcommit (pa_strict_overcommit): then it is allocated whole.  0 or
 * -errno (-EINVAL: a size out of range).
 */
static inline int pa_memfd_create(uint64_t data_size, uint64_t live_capacity,
				  uint64_t sample_rate, uint32_t max_frames,
				  int *fd, struct pa_header **hdr)
{
	uint64_t sites = pa_sites_for_rate(sample_rate, live_capacity);
	uint64_t fsize = pa_layout_file_size(data_size, live_capacity,
					     max_frames, sites);
	void *map;
	int f, err;

	if (!fsize || !sample_rate || !max_frames || max_frames > PA_MAX_FRAMES)
		return -EINVAL;
	f = (int)syscall(SYS_memfd_create, PA_MEMFD_NAME,
			 MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (f < 0)
		return -errno;
	if (ftruncate(f, (off_t)fsize) ||
	    (pa_strict_overcommit() && fallocate(f, 0, 0, (off_t)fsize)) ||
	    fcntl(f, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		err = -errno;
		goto out_close;
	}
	map = mmap(NULL, fsize, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
	if (map == MAP_FAILED) {
		err = -errno;
		goto out_close;
	}
	pa_header_init(map, data_size, live_capacity, sample_rate, max_frames,
		       sites);
	*fd = f;
	*hdr = map;
	return 0;
out_close:
	close(f);
	return err;
}

#endif /* PPROF_ALLOC_MEMFD_H */
