#!/bin/sh
# run-linked-alloc.sh - why nothing was sampled, said right.  A program
# linked with Debian's libjemalloc.a defines malloc itself, which wins over
# the preloaded agent: the tracer must say that, naming jemalloc, and not
# call a dynamically linked program "statically linked".  A program built
# -static is said to be statically linked.  The program's exit status is
# kept either way.  (Profiling such allocators is issue 24's; this is its
# diagnosis.)
. "$TOP/tests/e2e/lib.sh"

JE=/usr/lib/x86_64-linux-gnu/libjemalloc.a
[ -f $JE ] || fail "$JE is missing (contrib/install-deps.sh --test: libjemalloc-dev)"
cat >"$TMP/je.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) static void *site(void) { return malloc(65536); }
int main(void)
{
	static void *v[2000];
	int i;

	for (i = 0; i < 2000; i++)
		v[i] = site();
	printf("%d\n", v[1999] != NULL);
	return 3;
}
C
cc -O1 -g -o "$TMP/je" "$TMP/je.c" $JE -lpthread -lm -ldl || fail "cannot link with libjemalloc.a"
readelf -l "$TMP/je" | grep -q INTERP || fail "the jemalloc program is not dynamically linked"

"$TRACER" -o "$TMP/je.pb.gz" -- "$TMP/je" >/dev/null 2>"$TMP/je.err"
rc=$?
cat "$TMP/je.err"
[ $rc = 3 ] || check_failed "linked jemalloc: exit $rc, want the program's 3"
grep -q "defines malloc itself (jemalloc linked into the executable)" "$TMP/je.err" ||
	check_failed "linked jemalloc: not said that the program defines malloc itself, with jemalloc"
grep -q "statically linked" "$TMP/je.err" &&
	check_failed "linked jemalloc: a dynamic program is said to be statically linked"

cc -O1 -static -o "$TMP/st" "$TMP/je.c" || fail "cannot build a static program"
"$TRACER" -o "$TMP/st.pb.gz" -- "$TMP/st" >/dev/null 2>"$TMP/st.err"
rc=$?
cat "$TMP/st.err"
[ $rc = 3 ] || check_failed "static: exit $rc, want the program's 3"
grep -q "it is statically linked, so LD_PRELOAD is never read" "$TMP/st.err" ||
	check_failed "static: not said to be statically linked"
finish
