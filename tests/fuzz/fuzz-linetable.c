// SPDX-License-Identifier: MIT
/*
 * fuzz-linetable.c - libFuzzer target for the DWARF line table reader
 * (elf/linetable.c), which reads debug files from anywhere (a debuginfod
 * server, a target's directories).  The first input byte picks the CU's
 * address size (4 or 8) and whether it has a DW_AT_comp_dir; the rest is
 * .debug_line, and also .debug_line_str and .debug_str, so string offsets
 * land somewhere.  A table is read or refused; a read one must answer
 * lookups with lines and NUL-terminated names (ASan checks the reads).
 * line_tables__read() also walks every unit of it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "elf/linetable.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct line_sections sec;
	struct line_table *t;
	const char *file;
	int line, err;

	if (size < 1)
		return 0;
	sec = (struct line_sections){
		.line = data + 1, .line_size = size - 1,
		.line_str = data + 1, .line_str_size = size - 1,
		.str = data + 1, .str_size = size - 1,
	};
	/* Every DWARF 5 table, walking unit after unit. */
	{
		struct line_tables *set = NULL;

		if (line_tables__read(&sec, NULL, &set) == 0)
			line_tables__put(set);
		else if (set)
			abort();
	}
	err = line_table__decode(&sec, 0, data[0] & 1 ? 8 : 4,
				 data[0] & 2 ? "/comp/dir" : NULL, &t);
	if (err) {
		if (t || (err != -ENOTSUP && err != -ENOMEM))
			abort();
		return 0;
	}
	for (uint64_t pc = 0; pc < 4096; pc += 7) {
		if (line_table__find(t, pc, &line, &file) && file &&
		    strlen(file) > size + 4096)
			abort();	/* names are the input's or joined */
	}
	for (uint64_t i = 0; i < 8; i++) {
		file = line_table__file(t, i);
		if (file && strlen(file) > 2 * size + 16)
			abort();
	}
	line_table__free(t);
	return 0;
}
