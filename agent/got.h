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
 * not the loader, not the vDSO).  Returns how many slots were patched. */
unsigned int got__patch(const struct got_hook *hooks, unsigned int nhooks);

/* Put the real functions back in every slot that still holds our hook;
 * returns how many. */
unsigned int got__unpatch(void);

/* The last got__patch left a module for later: it was still being loaded. */
bool got__pending(void);

#endif /* PA_AGENT_GOT_H */
