// SPDX-License-Identifier: MIT
/*
 * fuzz-serve.c - libFuzzer target for what `serve` parses from outside:
 * the --listen address (tracer/http.c), the "seconds" query value of a
 * request, and a PID file's text (tracer/args.c).  The first byte picks
 * the parser; the rest is the input, made a C string where the parser
 * takes one.  Each result is checked against what the parser promises.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tracer/args.h"
#include "tracer/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char host[64], *s;
	unsigned int port = 0;
	int32_t pid = 0;
	long sec;

	if (!size)
		return 0;
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = 0;
	switch (data[0] % 3) {
	case 0:
		if (!http__parse_listen(s, host, sizeof(host), &port) &&
		    (port > 65535 || strlen(host) >= sizeof(host)))
			abort();
		break;
	case 1:
		sec = http__parse_seconds(s);
		if (sec < -1 || sec > (long)HTTP_SECONDS_MAX)
			abort();
		break;
	default:
		if (!parse_pid_text((const char *)data + 1, size - 1, &pid) &&
		    pid <= 0)
			abort();
		break;
	}
	free(s);
	return 0;
}
