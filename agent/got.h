/* SPDX-License-Identifier: MIT */
/*
 * got.h - point modules' GOT slots for named functions at hooks, and back.
 */
#ifndef PA_AGENT_GOT_H
#define PA_AGENT_GOT_H

#include <stdbool.h>

struct got_hook {
	const char *name;	/* the symbol the slot is relocated against */
	void *hook;		/* what the slot should call */
	void *real;		/* what to put back on unpatch */
	bool is_free;		/* patched in the first pass */
};

/* Patch every not yet patched slot in every loaded module (not ourselves,
 * not the loader, not the vDSO).  Returns true when a module was left for
 * later: it was still being loaded.  Safe to call from several threads. */
bool got__patch(const struct got_hook *hooks, unsigned int nhooks);

/* Put the real functions back in every slot that still holds our hook;
 * returns how many. */
unsigned int got__unpatch(void);

#endif /* PA_AGENT_GOT_H */
