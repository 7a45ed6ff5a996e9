/* SPDX-License-Identifier: MIT */
/*
 * untrusted.h - a string that came from the target, made safe to show.
 *
 * Paths in its maps and memfd, its comm and exec names, its allocator's
 * name, cgroup paths, symbol names in its binaries and perf map, its
 * jemalloc's dump: the target controls every byte of them, and the
 * tracer often runs as root on someone's terminal.  Every sink the tracer
 * writes text to - stderr (log.c), the profile's string table (pprof.c),
 * JSON (json.c: PROFILE.json, the timeline, the report's data) and the
 * Prometheus exposition (readings_prom.c) - passes its strings through
 * this one function; no caller escapes on its own.
 *
 * Kept: printable ASCII, and UTF-8 sequences that are well formed (the
 * shortest form, no surrogates, at most U+10FFFF) and encode a printable
 * character.  Written as \xNN, one escape per byte: every other byte -
 * C0 controls (ESC, CR, LF, TAB, ...), DEL, bytes of an invalid sequence,
 * and the sequences of the C1 controls (U+0080..U+009F: CSI acts on some
 * terminals), the bidirectional overrides and isolates (U+202A..U+202E,
 * U+2066..U+2069, which reorder what a reader sees), and the line and
 * paragraph separators (U+2028, U+2029).  A backslash stays as it is, so
 * that cleaning twice changes nothing: a string read back from a profile
 * (symbolize, report) keeps its text.
 *
 * The output is bounded by the caller's buffer: a string cut short ends
 * in "..." and no escape is ever cut in two.
 */
#ifndef PPROF_ALLOC_UNTRUSTED_H
#define PPROF_ALLOC_UNTRUSTED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The most any sink keeps of one string (the pprof string table's bound;
 * C++ names of a few KiB stay whole). */
#define UNTRUSTED_MAX 16384

/* Clean at most len bytes of src (it ends earlier at a NUL) into dst of
 * size bytes (size >= 4), NUL-terminated; returns the length written. */
size_t untrusted__clean(char *dst, size_t size, const char *src, size_t len);

/* True when src (NUL-terminated) needs no escape and is at most max
 * bytes long: then it may be used as it is. */
bool untrusted__is_clean(const char *src, size_t max);

/* A cleaned copy of src bounded by UNTRUSTED_MAX, from malloc; NULL with
 * errno set. */
char *untrusted__strdup(const char *src);

/* Write src cleaned and bounded by UNTRUSTED_MAX to out, through put(),
 * which gets each run of bytes to write (a format's own escaper: JSON's,
 * Prometheus's). */
void untrusted__write(const char *src,
		      void (*put)(void *ctx, const char *s, size_t n),
		      void *ctx);

/* The bytes a cleaned string stood for: each \xNN back to its byte, into
 * dst of size bytes.  0, or -ENAMETOOLONG.  Not an exact inverse (a
 * backslash is not escaped): for a second try at a path that the first,
 * as it is, did not find. */
int untrusted__decode(char *dst, size_t size, const char *src);

/* Write src cleaned and bounded by UNTRUSTED_MAX to out as it is (a
 * terminal, a text file). */
void untrusted__fputs(const char *src, FILE *out);

#endif
