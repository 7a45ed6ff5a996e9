#!/bin/sh
# run-pac.sh - aarch64: return addresses signed with pointer
# authentication are stripped, so the stacks of code built with
# -mbranch-protection=standard are whole and named.
#
# The machine must have PAC (qemu's -cpu max,pauth-impdef=on: "paca" in
# /proc/cpuinfo) and the workload must sign (paciasp in its code), or the
# test proves nothing and fails.  The workload, built here with and
# without frame records, allocates from c() under b() under a() under
# main; each of --unwind fp, auto and dwarf, at --rate 1, must give that
# stack in order for every byte c() allocated, and no frame of the
# program's file may go unnamed (a signed address is not in the file:
# unstripped, it would show as an address above any module).
[ -n "${TOP:-}" ] || TOP=$(cd "$(dirname "$0")/../../.." && pwd)
. "$TOP/tests/e2e/lib.sh"
need go python3 cc objdump
[ "$(uname -m)" = aarch64 ] || fail "an aarch64 test, on $(uname -m)"
grep -qw paca /proc/cpuinfo || fail "this machine has no pointer authentication (paca): run it under qemu -cpu max,pauth-impdef=on"

cat >"$TMP/pac.c" <<'CEOF'
#include <stdlib.h>
#define NOINLINE __attribute__((noinline))
static void *volatile sink;
NOINLINE void c(int i) { sink = malloc(1000 + i % 7); free(sink); sink = malloc(4000); }
NOINLINE void b(int i) { c(i); __asm__ volatile(""); }
NOINLINE void a(int i) { b(i); __asm__ volatile(""); }
int main(void) { for (int i = 0; i < 500; i++) a(i); return 0; }
CEOF
for fp in keep omit; do
	flags="-fno-omit-frame-pointer"
	[ $fp = keep ] || flags="-fomit-frame-pointer"
	cc -O2 -g $flags -mbranch-protection=standard -o "$TMP/pac-$fp" "$TMP/pac.c" ||
		fail "cannot build the workload ($fp)"
	objdump -d "$TMP/pac-$fp" | grep -q paciasp ||
		fail "the workload ($fp) does not sign its return addresses"
	for unwind in fp auto dwarf; do
		[ $fp = omit ] && [ $unwind = fp ] && continue	# no records to walk
		out="$TMP/$fp-$unwind.pb.gz"
		"$TRACER" --rate 1 --unwind $unwind -q -o "$out" -- "$TMP/pac-$fp" ||
			fail "$fp $unwind: the tracer failed"
		go tool pprof -traces "$out" >"$TMP/traces" 2>/dev/null ||
			fail "$fp $unwind: go tool pprof cannot read the profile"
		python3 - "$TMP/traces" "$fp $unwind" <<'PYEOF' || check_failed "$fp $unwind: see above"
import re, sys
ok = bad = 0
# go tool pprof -traces: blocks between "-----------+" lines, each a label
# line ("bytes:  4kB"), then the leaf with its value, then its callers
for block in open(sys.argv[1]).read().split("-----------+")[1:]:
    names = []
    for line in block.splitlines()[1:]:
        line = line.strip()
        if not line or re.match(r"^[A-Za-z_]+:\s", line):
            continue
        names.append(line.split()[-1])
    if "c" not in names:
        continue
    i = names.index("c")
    if names[i:i + 4] == ["c", "b", "a", "main"]:
        ok += 1
    else:
        bad += 1
        print("%s: a stack of c: %s" % (sys.argv[2], " <- ".join(names)))
print("%s: %d stacks of c whole, %d not" % (sys.argv[2], ok, bad))
sys.exit(0 if ok and not bad else 1)
PYEOF
		go tool pprof -raw "$out" 2>/dev/null | grep -q '??' &&
			check_failed "$fp $unwind: unnamed frames ($(go tool pprof -raw "$out" 2>/dev/null | grep -c '??'))"
	done
done
finish
