#!/bin/sh
# tests/bench-symbolize-llvm.sh BUILD_DIR - `pprof-alloc symbolize` against
# llvm-symbolizer on the same addresses, the target of issue 35: at least
# 3x faster, the reading and writing of the profile included.
#
# Two cases:
#
#   cc1plus   GCC's C++ compiler proper, whose Debian binary has .dynsym
#             names only (no .symtab, no DWARF), compiling a C++ file that
#             includes most of the standard library and instantiates
#             templates (written below), at -O2, recorded with
#             `pprof-alloc --rate 1 --no-symbolize` (--max-stacks high
#             enough that no stack folds into [other]): ~12,000 unique
#             addresses, most in cc1plus, some in libc (whose DWARF
#             /usr/lib/debug has, compressed), libgmp and libmpfr, in a
#             profile of 300,000 samples (3 MB gzipped, 22 MB of protobuf).
#   libstdc++ its unstripped copy with full DWARF (libstdc++6-12-dbg):
#             SYM_ADDRS (default 20000) unique addresses drawn from its
#             .text (fixed seed), written as an unsymbolized profile by
#             tests/tools/pprof-synth, as tests/bench-symbolize.sh does.
#
# llvm-symbolizer gets the addresses as it wants them: file-relative
# virtual addresses (the run-time address less the mapping's start, plus
# its offset, less the segment's offset, plus its address), one per line,
# with inline frames and demangling (its defaults).  For cc1plus it runs
# two ways:
#
#   each in its file   "CODE FILE ADDRESS" lines, each address in its own
#                      module: the same answers as pprof-alloc's (libc's
#                      with lines and inline frames, from the same debug
#                      file), the comparison the target is judged on;
#   --obj=cc1plus      every address looked up in cc1plus (those of the
#                      libraries come out ??), as the issue measured it
#                      first: shown for reference.
#
# pprof-alloc: `pprof-alloc symbolize RAW -o OUT -q --no-debuginfod` - the
# profile read (gunzipped, checked), every location resolved, the profile
# written (gzipped, fsynced, renamed).  Runs are interleaved (pprof-alloc,
# llvm-symbolizer, ...), ROUNDS of each (default 7); each figure is the
# median wall-clock time with its spread (lowest-highest), and pprof-alloc's
# peak RSS (median, from wait4).  Ratios are of the medians.  Before
# timing, each pprof-alloc output is checked to name at least 40% of its
# locations (cc1plus has many static functions .dynsym does not name) and
# 90% (libstdc++).  A missed target is printed, not an error.
set -eu
export LC_ALL=C
B=$(cd "${1:-build}" && pwd)
ROUNDS=${ROUNDS:-7}
N=${SYM_ADDRS:-20000}
T="$B/pprof-alloc"
SYNTH="$B/tests/tools/pprof-synth"
LIB=${SYM_LIB:-/usr/lib/x86_64-linux-gnu/debug/libstdc++.so.6.0.30}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT

die() { echo "bench-symbolize-llvm: $*" >&2; exit 1; }

case "$ROUNDS$N" in *[!0-9]*) die "ROUNDS and SYM_ADDRS must be numbers" ;; esac
[ "$ROUNDS" -ge 1 ] || die "ROUNDS must be at least 1"
[ -x "$T" ] || die "$T is missing: make B=$B all"
[ -x "$SYNTH" ] || die "$SYNTH is missing: make B=$B $SYNTH"
for tool in llvm-symbolizer g++ readelf go python3; do
	command -v $tool >/dev/null 2>&1 || die "$tool is not installed (make bench-deps)"
done
CC1=$(g++ -print-prog-name=cc1plus)
[ -x "$CC1" ] || die "g++ has no cc1plus ($CC1)"
[ -f "$LIB" ] || die "$LIB is missing: install libstdc++6-12-dbg (make bench-deps), or set SYM_LIB=FILE"

# --- cc1plus: a C++ file, preprocessed, compiled under pprof-alloc
cat >"$TMP/big.cc" <<'EOF'
#include <algorithm>
#include <any>
#include <array>
#include <atomic>
#include <bitset>
#include <chrono>
#include <complex>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iomanip>
#include <iostream>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <queue>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

template <int N> struct Node {
	std::map<std::string, std::vector<int>> m;
	std::unordered_map<int, std::string> u;
	std::variant<int, double, std::string> v;
	int f(int x) { return Node<N - 1>().f(x) + N; }
	std::string g() {
		std::ostringstream o;
		for (auto &[k, vec] : m)
			o << k << std::accumulate(vec.begin(), vec.end(), 0);
		return o.str() + std::regex_replace(std::string("abc"), std::regex("b+"), "x");
	}
};
template <> struct Node<0> { int f(int x) { return x; } std::string g() { return ""; } };

template <typename T> T work(std::vector<T> v) {
	std::sort(v.begin(), v.end());
	std::set<T> s(v.begin(), v.end());
	std::deque<T> d(s.begin(), s.end());
	std::list<T> l(d.begin(), d.end());
	l.sort();
	std::priority_queue<T> q(v.begin(), v.end());
	return q.empty() ? T() : q.top();
}

int main() {
	int r = 0;
	r += Node<60>().f(1);
	r += Node<40>().g().size();
	r += work(std::vector<int>{3, 1, 2});
	r += work(std::vector<double>{3, 1, 2});
	r += work(std::vector<std::string>{"a", "b"}).size();
	r += work(std::vector<long>{3, 1, 2});
	r += work(std::vector<short>{3, 1, 2});
	std::mt19937 g(1);
	std::uniform_int_distribution<int> dist(0, 10);
	r += dist(g);
	std::any a = r;
	std::optional<std::tuple<int, std::string, double>> o;
	auto fut = std::async(std::launch::deferred, [&] { return r; });
	r += fut.get();
	std::cout << std::filesystem::path("/tmp/x").filename() << std::bitset<8>(r) << std::complex<double>(1, 2);
	return r;
}
EOF
g++ -std=gnu++17 -E "$TMP/big.cc" -o "$TMP/big.ii" || die "g++ -E failed"
"$T" -q --rate 1 --max-stacks 4000000 --no-symbolize -o "$TMP/cc1.raw.pb.gz" -- \
	"$CC1" -fpreprocessed -quiet -O2 "$TMP/big.ii" -o /dev/null 2>"$TMP/rec.err" ||
	{ cat "$TMP/rec.err" >&2; die "recording cc1plus failed"; }

# llvm-symbolizer's input from a profile's locations and mappings
# (go tool pprof -raw): "CODE FILE ADDRESS" per location, and the
# addresses of one file alone.
llvm_input() {	# RAW-PROFILE OUT
	_raw=$1 _out=$2
	go tool pprof -raw "$_raw" >"$TMP/raw.txt" 2>/dev/null || die "go tool pprof cannot read $_raw"
	awk '/^Mappings/ { s = 1; next } s && $1 ~ /^[0-9]+:$/ {
		split($2, r, "/"); id = $1; sub(/:$/, "", id)
		print id, r[1], r[3], $3 }' "$TMP/raw.txt" >"$TMP/maps"
	# each file's executable segment: offset and address, for the bias
	while read -r id start off file; do
		set -- $(readelf -lW "$file" |
			awk '$1 == "LOAD" && / (R E|RWE) / { print $2, $3; exit }')
		echo "$id $start $off $file ${1:-0x0} ${2:-0x0}"
	done <"$TMP/maps" >"$TMP/segs"
	awk 'NR == FNR { start[$1] = $2; off[$1] = $3; file[$1] = $4
		         poff[$1] = $5; pvaddr[$1] = $6; next }
	     /^Locations/ { s = 1; next } /^Mappings/ { s = 0 }
	     s && $1 ~ /^[0-9]+:$/ {
		id = $3; sub(/^M=/, "", id)
		if (!(id in file)) next
		print file[id], $2, start[id], off[id], poff[id], pvaddr[id] }' \
		"$TMP/segs" "$TMP/raw.txt" | python3 -c '
import sys
for line in sys.stdin:
    f, a, start, off, poff, pvaddr = line.split()
    v = int(a, 16) - int(start, 16) + int(off, 16) - int(poff, 16) + int(pvaddr, 16)
    print("CODE %s 0x%x" % (f, v))' >"$_out"
}
llvm_input "$TMP/cc1.raw.pb.gz" "$TMP/cc1.llvm"
awk -v f="$CC1" '$2 == f { print $3 }' "$TMP/cc1.llvm" >"$TMP/cc1.own"
awk '{ print $3 }' "$TMP/cc1.llvm" >"$TMP/cc1.all"
cc1_n=$(wc -l <"$TMP/cc1.llvm")
cc1_own=$(wc -l <"$TMP/cc1.own")
[ "$cc1_own" -gt 1000 ] ||
	die "the cc1plus profile has $cc1_own locations in $CC1, want more than 1000"

# --- libstdc++: N addresses of its .text, a synthetic profile
text=$(readelf -SW "$LIB" | sed -n 's/^ *\[ *[0-9]*\] //p' |
	awk '$1 == ".text" { print $3, $5 }')
[ -n "$text" ] || die "no .text section in $LIB"
set -- $text
awk -v s="$((0x$1))" -v n="$((0x$2))" -v want="$N" 'BEGIN {
	srand(1)
	while (c < want) {
		a = s + int(rand() * n)
		if (!(a in seen)) { seen[a]; c++; printf "0x%x\n", a }
	}
}' >"$TMP/lib.addrs"
"$SYNTH" -e "$LIB" -o "$TMP/lib.raw.pb.gz" <"$TMP/lib.addrs" || die "pprof-synth failed"

# --- sanity: pprof-alloc names what it should
named() {	# OUT: "named total" of its locations, from go tool pprof -raw
	go tool pprof -raw "$1" 2>/dev/null | awk '/^Locations/ { s = 1; next }
		/^Mappings/ { s = 0 } s && $1 ~ /^[0-9]+:$/ { n++; if (NF > 3 && $4 != "??") k++ }
		END { print k + 0, n + 0 }'
}
"$T" symbolize "$TMP/cc1.raw.pb.gz" -o "$TMP/cc1.out.pb.gz" -q --no-debuginfod ||
	die "pprof-alloc symbolize of the cc1plus profile failed"
"$T" symbolize "$TMP/lib.raw.pb.gz" -o "$TMP/lib.out.pb.gz" -q --no-debuginfod ||
	die "pprof-alloc symbolize of the libstdc++ profile failed"
set -- $(named "$TMP/cc1.out.pb.gz")
echo "cc1plus: $1 of $2 locations named (no .symtab: static functions have no name)"
[ $(($1 * 10)) -ge $(($2 * 4)) ] || die "only $1 of $2 cc1plus locations named"
set -- $(named "$TMP/lib.out.pb.gz")
echo "libstdc++: $1 of $2 locations named"
[ $(($1 * 10)) -ge $(($2 * 9)) ] || die "only $1 of $2 libstdc++ locations named"

# --- timing, interleaved
python3 - "$ROUNDS" "$T" "$TMP" "$CC1" "$LIB" "$cc1_n" "$cc1_own" "$N" <<'EOF'
import os, statistics, sys, time
rounds, t, tmp, cc1, lib = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
cc1_n, cc1_own, n = sys.argv[6], sys.argv[7], sys.argv[8]

def run(argv, stdin):
    """wall seconds and peak RSS (KiB) of argv, output to /dev/null"""
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(os.open(stdin or "/dev/null", os.O_RDONLY), 0)
            os.dup2(os.open("/dev/null", os.O_WRONLY), 1)
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("bench-symbolize-llvm: %s failed" % argv[0])
    return wall, usage.ru_maxrss

variants = [
    ("cc1", "pprof-alloc symbolize", [t, "symbolize", tmp + "/cc1.raw.pb.gz",
        "-o", tmp + "/cc1.out.pb.gz", "-q", "--no-debuginfod"], None),
    ("cc1", "llvm-symbolizer, each in its file", ["llvm-symbolizer"],
        tmp + "/cc1.llvm"),
    ("cc1", "llvm-symbolizer --obj=cc1plus", ["llvm-symbolizer",
        "--obj=" + cc1], tmp + "/cc1.all"),
    ("lib", "pprof-alloc symbolize", [t, "symbolize", tmp + "/lib.raw.pb.gz",
        "-o", tmp + "/lib.out.pb.gz", "-q", "--no-debuginfod"], None),
    ("lib", "llvm-symbolizer --obj=LIB", ["llvm-symbolizer", "--obj=" + lib],
        tmp + "/lib.addrs"),
]
walls = {v[1] + v[0]: [] for v in variants}
rss = {v[1] + v[0]: [] for v in variants}
for _ in range(rounds):
    for case, name, argv, stdin in variants:
        w, r = run(argv, stdin)
        walls[name + case].append(w)
        rss[name + case].append(r)

def show(case, name):
    w = walls[name + case]
    print("  %-36s %7.1f ms  (%.1f-%.1f)  peak RSS %5.1f MiB" % (name,
        statistics.median(w) * 1e3, min(w) * 1e3, max(w) * 1e3,
        statistics.median(rss[name + case]) / 1024))
    return statistics.median(w)

def ratio(what, pa, other):
    r = other / pa
    print("  %-50s %5.2fx  %s target >= 3x" % (what, r,
        "meets" if r >= 3 else "MISSES"))

print("symbolize, wall clock, median of %d interleaved runs (lowest-highest)" % rounds)
print("cc1plus --rate 1 profile: %s unique addresses, %s of them in cc1plus (.dynsym only)" % (cc1_n, cc1_own))
pa = show("cc1", "pprof-alloc symbolize")
each = show("cc1", "llvm-symbolizer, each in its file")
obj = show("cc1", "llvm-symbolizer --obj=cc1plus")
ratio("pprof-alloc / llvm-symbolizer (each in its file)", pa, each)
ratio("pprof-alloc / llvm-symbolizer --obj=cc1plus (reference)", pa, obj)
print("%s: %s unique addresses (full DWARF, inline frames)" % (os.path.basename(lib), n))
pa = show("lib", "pprof-alloc symbolize")
each = show("lib", "llvm-symbolizer --obj=LIB")
ratio("pprof-alloc / llvm-symbolizer", pa, each)
EOF
