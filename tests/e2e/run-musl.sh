#!/bin/sh
# run-musl.sh - a program on musl libc (as on Alpine) is refused in one
# line and left untouched: the agent is a glibc library, which musl's
# loader cannot load (preloaded, it would exit 127 before main).  The
# program is built here with Debian's musl-gcc.  Launched: not run at all,
# exit 126.  Attached: nothing is loaded into it, and it runs on.
. "$(dirname "$0")/lib.sh"
attach_init

need musl-gcc
cat >"$TMP/m.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(void)
{
	unsigned long n = 0;

	printf("ready\n");
	fflush(stdout);
	for (;;) {
		free(malloc(100));
		if (++n % 10 == 0) {
			printf("beat %lu\n", n);
			fflush(stdout);
		}
		usleep(10000);
	}
}
C
musl-gcc -O1 -o "$TMP/m" "$TMP/m.c" || fail "musl-gcc cannot build a program"
readelf -l "$TMP/m" | grep -q "ld-musl" || fail "the program built does not ask for musl's loader"

# --- launched: refused, not run
"$TRACER" -o "$TMP/l.pb.gz" -- "$TMP/m" >"$TMP/l.out" 2>"$TMP/l.err"
rc=$?
cat "$TMP/l.err"
[ $rc = 126 ] || check_failed "launched: exit $rc, want 126"
[ "$(grep -c . "$TMP/l.err")" = 1 ] || check_failed "launched: the refusal is not one line"
grep -q "musl" "$TMP/l.err" || check_failed "launched: the refusal does not name musl"
[ -s "$TMP/l.out" ] && check_failed "launched: the program ran: $(head -3 "$TMP/l.out")"

# --- attached: refused, untouched
spawn "$TMP/a.out" "$TMP/m"
m=$spawned_pid
wait_for "$TMP/a.out" '^ready' 10 || fail "the musl program did not start"
timeout 30 "$TRACER" --pid $m --duration 0.3 -o "$TMP/a.pb.gz" 2>"$TMP/a.err"
rc=$?
cat "$TMP/a.err"
[ $rc = 1 ] || check_failed "attached: exit $rc, want 1"
[ "$(grep -c . "$TMP/a.err")" = 1 ] || check_failed "attached: the refusal is not one line"
grep -q "not glibc" "$TMP/a.err" || check_failed "attached: the refusal does not say the C library is not glibc"
agent_mapped $m && check_failed "attached: the agent was loaded anyway"
beats=$(grep -c '^beat' "$TMP/a.out")
sleep 0.3
[ "$(grep -c '^beat' "$TMP/a.out")" -gt "$beats" ] || check_failed "attached: the program stopped running"
running $m || check_failed "attached: the program died"
finish
