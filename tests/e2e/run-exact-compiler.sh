#!/bin/sh
# run-exact-compiler.sh - exact mode at a compiler's scale: every
# allocation keeps its own stack.
#
# GCC's cc1plus (stock Debian, run directly as `g++ -O2` runs it) compiles
# <bits/stdc++.h> and a chain of 100 template instantiations at --rate 1
# with the default limits: about a million allocations at 110,000 (stack,
# size) pairs from 50,000 stacks of ~40 frames - past the old agent's
# stack table (16,384 entries) and the tracer's old default of 100,000
# pairs, where 83% of a bigger file's allocations landed in [other].
#   - the compiler's output is the same as a bare run's;
#   - at least 99% of the allocated objects and bytes are on their own
#     stacks (not [other]), and more pairs than the old default are kept;
#   - nothing lost, nothing through the ring for want of a site, no
#     warning about --max-stacks;
#   - the profile's allocations agree with the agent's own hook counters
#     (a few more there: its start);
#   - the peak heap the summary gives is not below the heap at the end.
. "$(dirname "$0")/lib.sh"
need g++ go python3

CC1=$(g++ -print-prog-name=cc1plus)
case "$CC1" in
/*) [ -x "$CC1" ] || fail "g++ names cc1plus $CC1, which is not there" ;;
*) fail "g++ -print-prog-name=cc1plus gives '$CC1', not a path" ;;
esac

cat >"$TMP/t.cc" <<'EOF'
#include <bits/stdc++.h>
template <int N> struct F {
	static int f(std::map<std::string, std::vector<int>> &m)
	{
		m[std::to_string(N)].push_back(N);
		return F<N - 1>::f(m) + (int)m.size();
	}
};
template <> struct F<0> {
	static int f(std::map<std::string, std::vector<int>> &) { return 0; }
};
int g() { std::map<std::string, std::vector<int>> m; return F<100>::f(m); }
EOF
g++ -E "$TMP/t.cc" -o "$TMP/t.ii" || fail "g++ -E failed"

"$CC1" -quiet -O2 "$TMP/t.ii" -o "$TMP/bare.s" || fail "cc1plus failed bare"
trace "$TMP/c.out" "$TMP/c.pb.gz" --rate 1 -- "$CC1" -quiet -O2 "$TMP/t.ii" -o "$TMP/traced.s"
[ "$trace_rc" = 0 ] || fail "cc1plus under --rate 1: exited $trace_rc"
cmp -s "$TMP/bare.s" "$TMP/traced.s" ||
	check_failed "cc1plus wrote other assembly under the tracer"
grep -q "max-stacks" "$TMP/c.out.err" &&
	check_failed "a warning about --max-stacks: $(grep max-stacks "$TMP/c.out.err")"

go tool pprof -raw "$TMP/c.pb.gz" >"$TMP/c.raw" 2>"$TMP/c.raw.err" ||
	fail "go tool pprof -raw failed: $(cat "$TMP/c.raw.err")"
python3 - "$TMP/c.raw" >"$TMP/c.share" <<'PY' || fail "cannot read the profile: $(cat "$TMP/c.share")"
import re, sys
types, samples, other_locs = None, [], set()
section = None
for line in open(sys.argv[1]):
    if line.startswith("Samples:"):
        section = "samples"
        continue
    if line.startswith("Locations"):
        section = "locations"
        continue
    if line.startswith("Mappings"):
        section = None
        continue
    if section == "samples":
        if types is None:
            types = [t.split("/")[0] for t in line.split()]
            continue
        m = re.match(r"^\s*([-\d ]+):(.*)", line)
        if m:
            samples.append(([int(v) for v in m.group(1).split()],
                            m.group(2).split()))
    elif section == "locations":
        m = re.match(r"^\s*(\d+): 0x[0-9a-f]+ (\S+)", line)
        if m and m.group(2) == "[other]":
            other_locs.add(m.group(1))
ao, asp = types.index("alloc_objects"), types.index("alloc_space")
iu = types.index("inuse_space")
tot_o = sum(v[ao] for v, _ in samples)
tot_b = sum(v[asp] for v, _ in samples)
oth = [v for v, locs in samples if other_locs & set(locs)]
print(len(samples), tot_o, tot_b, sum(v[ao] for v in oth),
      sum(v[asp] for v in oth), sum(v[iu] for v, _ in samples))
PY
set -- $(cat "$TMP/c.share")
pairs=$1 objects=$2 bytes=$3 oobjects=$4 obytes=$5 inuse=$6
note "cc1plus at --rate 1: $pairs (stack, size) pairs, $objects allocations of $bytes bytes; in [other]: $oobjects allocations, $obytes bytes"
[ "$objects" -gt 500000 ] ||
	check_failed "only $objects allocations: not the compiler's scale this test is for"
[ "$pairs" -gt 100000 ] ||
	check_failed "$pairs (stack, size) pairs: want more than the old default of 100,000"
[ $((oobjects * 100)) -le "$objects" ] ||
	check_failed "$oobjects of $objects allocations are in [other]: want 99% on their own stacks"
[ $((obytes * 100)) -le "$bytes" ] ||
	check_failed "$obytes of $bytes bytes are in [other]: want 99% on their own stacks"

go tool pprof -comments "$TMP/c.pb.gz" >"$TMP/c.comments" 2>&1
sed -n 's/^exact/    exact/p; s/^agent memfd/    agent memfd/p' "$TMP/c.comments"
grep -q "^lost records 0 " "$TMP/c.comments" || check_failed "records were lost"
grep -q " 0 allocations recorded through the ring (0 found no site)" "$TMP/c.comments" ||
	check_failed "allocations went through the ring: the agent's tables were full"
hooks=$(sed -n "s/.*the agent's hooks counted \([0-9]*\) calls that allocate.*/\1/p" "$TMP/c.comments")
[ -n "$hooks" ] && [ "$hooks" -ge "$objects" ] && [ $((hooks - objects)) -le 16 ] ||
	check_failed "the agent's hooks counted ${hooks:-nothing} calls that allocate, the profile $objects"
peak=$(sed -n 's/^peak heap [^(]* (\([0-9]*\) bytes.*/\1/p' "$TMP/c.comments")
[ -n "$peak" ] && [ "$peak" -ge "$inuse" ] ||
	check_failed "the peak heap (${peak:-none}) is below the heap at the end ($inuse)"
finish
