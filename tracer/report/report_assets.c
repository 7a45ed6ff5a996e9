// SPDX-License-Identifier: MIT
/*
 * report_assets.c - the report page's style, skeleton and script, built
 * into the binary.
 *
 * The three files beside this one are the page's browser side; the
 * assembler includes them whole (.incbin, paths from the top of the tree,
 * where make runs; the Makefile makes this object depend on them), each
 * followed by a NUL, so that `pprof-alloc report` needs nothing at run
 * time and the page loads nothing from anywhere.
 */
#include "report_assets.h"

#define ASSET(sym, file)						\
	__asm__(".section .rodata\n"					\
		".global " #sym "\n"					\
		".type " #sym ", @object\n"				\
		".balign 16\n"						\
		#sym ":\n"						\
		".incbin \"" file "\"\n"				\
		".byte 0\n"						\
		".size " #sym ", . - " #sym "\n"			\
		".previous\n")

ASSET(report_page_css, "tracer/report/report_page.css");
ASSET(report_page_html, "tracer/report/report_page.html");
ASSET(report_page_js, "tracer/report/report_page.js");
