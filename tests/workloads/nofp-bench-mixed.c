// SPDX-License-Identifier: MIT
/*
 * nofp-bench-mixed - bench-mixed built as distributions build (-O2, no
 * frame pointers: the Makefile's nofp-* rule), for tests/bench-unwind.sh:
 * the agent's walk by its tables here against the frame-pointer walk in
 * bench-mixed, the same program with frame pointers.
 */
#include "bench-mixed.c"
