/* SPDX-License-Identifier: MIT */
#ifndef PA_TRACER_SHQUOTE_H
#define PA_TRACER_SHQUOTE_H

#include <stddef.h>

/*
 * argv as a shell command line that can be pasted back: a word of only
 * safe characters as it is, any other in single quotes ('\'' for a
 * quote), an empty one as '', one holding a control byte or a byte past
 * ASCII as bash's $'...' with \xNN escapes (never a raw control byte,
 * UTF-8's C1 controls included).  At most len - 1 bytes and a NUL: a line
 * that does not fit ends after the last whole word with " ...".  Returns
 * buf.
 */
char *shquote__argv(char *const *argv, char *buf, size_t len);

#endif /* PA_TRACER_SHQUOTE_H */
