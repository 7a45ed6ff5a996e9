/* SPDX-License-Identifier: MIT */
/*
 * report_assets.h - the report page's browser side (report_page.*), as
 * NUL-terminated strings built into the binary.
 */
#ifndef PA_TRACER_REPORT_ASSETS_H
#define PA_TRACER_REPORT_ASSETS_H

extern const char report_page_css[];
extern const char report_page_html[];
extern const char report_page_js[];

#endif /* PA_TRACER_REPORT_ASSETS_H */
