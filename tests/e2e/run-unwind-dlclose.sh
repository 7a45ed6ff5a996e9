#!/bin/sh
# run-unwind-dlclose.sh - a library loaded where a dlclosed one was is
# unwound with its own unwind table, not the old one's.
#
# libA and libB, built without frame pointers, differ only in the frames
# of their allocating functions (4000 bytes against 8); the program loads
# libA, allocates through it, dlcloses it, loads libB (the kernel reuses
# the hole: the test checks that it did) and allocates through it.  With
# the old library's table, libB's frames would be read 4000 bytes too far
# up.  Every sample of either must have its whole stack, from the
# allocating function through main to _start, without a stack copy.
. "$(dirname "$0")/lib.sh"
need go python3 gcc

for l in A B; do
	if [ $l = A ]; then frame=4000; else frame=8; fi
	cat >"$TMP/lib$l.c" <<EOF2
#include <stdlib.h>
#include <string.h>
__attribute__((noinline, optimize("omit-frame-pointer")))
void *site_$l(size_t n)
{
	volatile char pad[$frame];
	void *p;

	pad[0] = (char)n;
	p = malloc(n + (size_t)pad[0] * 0);
	if (p)
		memset(p, 1, n);
	return p;
}
__attribute__((noinline, optimize("omit-frame-pointer")))
void *entry(size_t n)
{
	volatile char pad[$frame];

	void *p;

	pad[1] = 1;
	p = site_$l(n + (size_t)pad[1] - 1);
	pad[2] = (char)(size_t)p;	/* no tail call: entry keeps a frame */
	return p;
}
EOF2
	gcc -O2 -fomit-frame-pointer -shared -fPIC -o "$TMP/lib$l.so" "$TMP/lib$l.c" ||
		fail "cannot build lib$l.so"
done
cat >"$TMP/prog.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		void *h = dlopen(argv[i], RTLD_NOW);
		void *(*entry)(size_t);
		int k;

		if (!h)
			return 1;
		entry = (void *(*)(size_t))dlsym(h, "entry");
		printf("%s at %p\n", argv[i], (void *)entry);
		fflush(stdout);
		for (k = 0; k < 200; k++)
			if (!entry(i == 1 ? 11111 : 22222))
				return 1;
		dlclose(h);
	}
	return 0;
}
EOF
gcc -O2 -o "$TMP/prog" "$TMP/prog.c" -ldl || fail "cannot build the program"

"$TRACER" -q --rate 1 -o "$TMP/p.pb.gz" -- "$TMP/prog" "$TMP/libA.so" "$TMP/libB.so" \
	>"$TMP/p.out" 2>"$TMP/p.err" || { cat "$TMP/p.err"; fail "pprof-alloc failed"; }
cat "$TMP/p.out"
a=$(sed -n 's/.*libA.so at \(0x[0-9a-f]*\)/\1/p' "$TMP/p.out")
b=$(sed -n 's/.*libB.so at \(0x[0-9a-f]*\)/\1/p' "$TMP/p.out")
[ -n "$a" ] && [ "$a" = "$b" ] ||
	fail "libB's entry is at $b, libA's was at $a: the hole was not reused, nothing is shown"
go tool pprof -raw "$TMP/p.pb.gz" >"$TMP/raw.txt" 2>/dev/null || fail "go tool pprof -raw failed"
python3 "$TOP/tests/e2e/pprof_sum.py" stacks <"$TMP/raw.txt" >"$TMP/p.stacks"
# The tracer names both libraries' code with the first one's symbols (its
# mappings keep a dlclosed module's entry, for the samples taken while it
# was loaded), so libB's samples show as site_A too: all 400 samples,
# 200 x 11111 and 200 x 22222 bytes, must have the whole stack.
all=$(awk '!/^#/ && $3 ~ /^site_/ { s += $1 } END { print s + 0 }' "$TMP/p.stacks")
whole=$(awk '!/^#/ && $3 ~ /^site_[AB];entry;main;.*_start$/ { s += $1 } END { print s + 0 }' "$TMP/p.stacks")
note "$whole of $all bytes with the whole stack"
[ "$all" = $((200 * 11111 + 200 * 22222)) ] ||
	check_failed "$all bytes sampled at the sites, want $((200 * 11111 + 200 * 22222))"
[ "$whole" = "$all" ] ||
	check_failed "$whole of $all bytes have the whole stack: $(grep 'site_' "$TMP/p.stacks" | head -4)"
grep -q '^# unwind auto: 0 samples with a stack copy' "$TMP/p.stacks" ||
	check_failed "stack copies were made: $(sed -n 's/^# \(unwind .*\)/\1/p' "$TMP/p.stacks")"
finish
