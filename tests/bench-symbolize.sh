#!/bin/sh
# tests/bench-symbolize.sh BUILD_DIR - how fast `pprof-alloc symbolize` turns
# addresses into functions, files, lines and inline frames, next to the two
# addr2line programs, on the same addresses of the same big C++ library.
#
# The library is libstdc++ with its full DWARF (the unstripped copy that
# Debian's libstdc++6-12-dbg puts in /usr/lib/x86_64-linux-gnu/debug/):
# ~1.2 MB of .text, heavy inlining and templates, so both line tables and
# inline-frame lookup get exercised.  SYM_ADDRS unique addresses (default
# 20000) are drawn at random from its .text (awk, fixed seed); the
# tests/tools/pprof-synth tool writes them as an unsymbolized profile (one
# mapping with the library's build ID, one location per address), which is
# what `pprof-alloc --no-symbolize` would have written for a program that
# had it loaded.  Then, interleaved (pprof-alloc, addr2line, eu-addr2line,
# pprof-alloc, ...), each symbolizes all of them:
#
#   pprof-alloc symbolize RAW -o OUT --no-debuginfod -q
#   addr2line    -e LIB -i -f -C < ADDRS     (GNU binutils)
#   eu-addr2line -e LIB -i -f -C < ADDRS     (elfutils, libdw)
#
# Each figure is the median wall-clock time of its runs, process start-up,
# reading the input and writing the output included (for pprof-alloc that
# is a gzipped pprof file), reported as unique addresses per second.
# pprof-alloc and addr2line run ROUNDS times (default 5); eu-addr2line,
# which needs most of a second per thousand addresses here, runs only in the
# first EU_ROUNDS rounds (default 1), on the first EU_ADDRS of the same
# addresses (default all), and is compared by addresses per second.  The
# targets: pprof-alloc at least 10x binutils addr2line and faster than
# eu-addr2line.
#
# SYM_LIB picks another binary: an ELF file with a .text whose DWARF is
# in it or, by its build ID, under /usr/lib/debug/.build-id (where every
# tool here finds it).  SYM_LIB=biggest takes the shared library with the
# most code of those on this machine, at least SYM_MIN_TEXT bytes of it
# (default 2 MiB, beyond libstdc++'s 1.2 MB), and fails saying so if there
# is none.  `make bench` runs it that way too, for a large one: where its
# bench-deps are installed that is Ceph's libceph-common.so.2 (stripped,
# 6.6 MB of code; its 95 MB of compressed DWARF come from librados2-dbg).
#
# Before timing, one run without -q must symbolize at least 90% of the
# locations (counted in `go tool pprof -raw`), or the timings would mean
# nothing; the leaf frame of each address (system name, demangled name,
# line) is also compared with binutils addr2line's and the agreement
# printed.  The exit status is non-zero only
# if something failed to run or that sanity check failed; a missed target
# is printed, not an error.
set -eu
export LC_ALL=C
B=$(cd "${1:-build}" && pwd)
ROUNDS=${ROUNDS:-5}
EU_ROUNDS=${EU_ROUNDS:-1}
N=${SYM_ADDRS:-20000}
T="$B/pprof-alloc"
SYNTH="$B/tests/tools/pprof-synth"
LIB=${SYM_LIB:-/usr/lib/x86_64-linux-gnu/debug/libstdc++.so.6.0.30}
MIN_TEXT=${SYM_MIN_TEXT:-2097152}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT

die() { echo "bench-symbolize: $*" >&2; exit 1; }

# has_dwarf FILE: FILE has DWARF sections (compressed or not)
has_dwarf() {
	readelf -SW "$1" 2>/dev/null | grep -Eq ' \.z?debug_info '
}
# biggest_lib: the shared library with the most code (.text, at least
# MIN_TEXT bytes) whose DWARF is at hand, in the file or by its build ID
# under /usr/lib/debug/.build-id; nothing if there is none.
biggest_lib() {
	find /usr/lib /usr/local/lib /opt -xdev -type f -name '*.so*' -size +1M \
		2>/dev/null | while read -r f; do
		set -- $(readelf -SnW "$f" 2>/dev/null | awk '
			{ sub(/^ *\[ *[0-9]+\] /, "") }
			$1 == ".text" { text = $5 }
			$1 == ".debug_info" || $1 == ".zdebug_info" { dwarf = 1 }
			/Build ID:/ { id = $NF }
			END { if (text != "") print text, dwarf + 0, (id == "" ? "-" : id) }')
		[ $# = 3 ] && echo "$((0x$1)) $2 $3 $f"
	done | sort -k1,1nr | while read -r text dwarf id f; do
		[ "$text" -ge "$MIN_TEXT" ] || break
		dbg=/usr/lib/debug/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug
		if [ "$dwarf" = 1 ] || { [ "$id" != - ] && has_dwarf "$dbg"; }; then
			echo "$f"
			break
		fi
	done
}
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
now() { date +%s.%N; }

case "$ROUNDS$EU_ROUNDS$N" in *[!0-9]*) die "ROUNDS, EU_ROUNDS and SYM_ADDRS must be numbers" ;; esac
[ "$ROUNDS" -ge 1 ] && [ "$EU_ROUNDS" -ge 1 ] || die "ROUNDS and EU_ROUNDS must be at least 1"
[ "$EU_ROUNDS" -le "$ROUNDS" ] || EU_ROUNDS=$ROUNDS
if [ "$LIB" = biggest ]; then
	command -v readelf >/dev/null 2>&1 || die "readelf is not installed (make bench-deps)"
	LIB=$(biggest_lib)
	[ -n "$LIB" ] || die "SYM_LIB=biggest: no shared library with $MIN_TEXT bytes of code or more has its DWARF on this machine (in the file, or by build ID under /usr/lib/debug/.build-id): install the debug package of a large one (make bench-deps installs librados2-dbg), or set SYM_LIB=FILE"
	echo "SYM_LIB=biggest: $LIB"
fi
[ -f "$LIB" ] || die "$LIB is missing: install libstdc++6-12-dbg (make bench-deps), or set SYM_LIB=FILE"
[ -x "$T" ] || die "$T is missing: make B=$B all"
[ -x "$SYNTH" ] || die "$SYNTH is missing: make B=$B $SYNTH"
for tool in addr2line eu-addr2line readelf go; do
	command -v $tool >/dev/null 2>&1 || die "$tool is not installed (make bench-deps)"
done

# --- the addresses: N unique, uniform over .text, fixed seed
text=$(readelf -SW "$LIB" | sed -n 's/^ *\[ *[0-9]*\] //p' |
	awk '$1 == ".text" { print $3, $5 }')
[ -n "$text" ] || die "no .text section in $LIB"
set -- $text
text_start=$((0x$1)) text_size=$((0x$2))
[ "$N" -gt 0 ] && [ "$N" -le "$text_size" ] || die "SYM_ADDRS=$N: want 1 to $text_size"
awk -v s="$text_start" -v n="$text_size" -v want="$N" 'BEGIN {
	srand(1)
	while (c < want) {
		a = s + int(rand() * n)
		if (!(a in seen)) { seen[a]; c++; printf "0x%x\n", a }
	}
}' >"$TMP/addrs"
[ "$(sort -u "$TMP/addrs" | wc -l)" -eq "$N" ] || die "address generation gave duplicates"
"$SYNTH" -e "$LIB" -o "$TMP/raw.pb.gz" <"$TMP/addrs" || die "pprof-synth failed"

# --- sanity: one run that reports, then what go tool pprof sees
"$T" symbolize "$TMP/raw.pb.gz" -o "$TMP/out.pb.gz" --no-debuginfod 2>"$TMP/sym.err" ||
	{ cat "$TMP/sym.err" >&2; die "pprof-alloc symbolize failed"; }
go tool pprof -raw "$TMP/out.pb.gz" >"$TMP/out.raw" 2>"$TMP/out.raw.err" ||
	{ cat "$TMP/out.raw.err" >&2; die "go tool pprof cannot read pprof-alloc's output"; }
# Each location: "ID: ADDR M=ID [NAME FILE:LINE s=N[(SYSTEM_NAME)]]", then
# one line per further (caller) inline frame.  For each address its leaf
# frame: hex address, name, system name, line (tab-separated, sorted).
awk '/^Locations/ { s = 1; next } /^Mappings/ { s = 0 }
	s && $1 ~ /^[0-9]+:$/ {
		addr = $2; sub(/^0x0*/, "", addr)
		name = ""; sys = ""; line = ""
		if (NF > 3 && $4 != "??") {
			rest = $0; sub(/^ *[0-9]+: [^ ]+ M=[0-9]+ /, "", rest)
			if (match(rest, / s=[0-9]+\(.*\)$/)) {
				sys = substr(rest, RSTART, RLENGTH)
				sub(/^ s=[0-9]+\(/, "", sys); sub(/\)$/, "", sys)
				rest = substr(rest, 1, RSTART - 1)
			} else {
				sub(/ s=[0-9]+$/, "", rest)
			}
			line = rest; sub(/.*:/, "", line)
			if (line == "0") line = ""
			sub(/ [^ ]*$/, "", rest)
			name = rest
			if (sys == "") sys = name
		}
		print addr "\t" name "\t" sys "\t" line
	}' "$TMP/out.raw" | sort >"$TMP/pa.leaf"
locs=$(wc -l <"$TMP/pa.leaf")
named=$(awk -F '\t' '$2 != ""' "$TMP/pa.leaf" | wc -l)
echo "sanity check of one run without -q:"
grep '^pprof-alloc symbolize: ' "$TMP/sym.err" | head -n 5 | sed 's/^/  stderr: /'
grep -q 'locations symbolized' "$TMP/sym.err" ||
	echo "  (no 'N of M locations symbolized' line on stderr)"
echo "  go tool pprof -raw: $named of $locs locations have a function"
[ "$locs" -eq "$N" ] || die "the output has $locs locations, want $N"
[ $((named * 10)) -ge $((N * 9)) ] || die "only $named of $N locations symbolized (want >= 90%)"

# The same leaf frames as binutils addr2line?  -f without -C gives the
# raw (mangled) name, to compare with system_name; -C the demangled one.
leaf_a2l() {	# ADDR2LINE-OPTIONS...: address, function, line
	addr2line -a -e "$LIB" -f "$@" <"$TMP/addrs" |
		awk 'NR % 3 == 1 { a = $0; sub(/^0x0*/, "", a) }
		     NR % 3 == 2 { f = ($0 == "??" ? "" : $0) }
		     NR % 3 == 0 { l = $0; sub(/ \(discriminator.*/, "", l)
				   sub(/.*:/, "", l); if (l == "?" || l == "0") l = ""
				   print a "\t" f "\t" l }' | sort
}
leaf_a2l >"$TMP/a2l.sys"
leaf_a2l -C >"$TMP/a2l.name"
tab=$(printf '\t')
same() {	# PA-FIELD A2L-FIELD A2L-FILE: addresses where both agree (non-empty)
	cut -f 1,"$1" "$TMP/pa.leaf" | join -t "$tab" - "$TMP/$3" |
		awk -F '\t' -v f="$(($2 + 1))" '$2 != "" && $2 == $f' | wc -l
}
echo "  the leaf frame as binutils addr2line has it, of $N addresses:" \
	"system name $(same 3 2 a2l.sys), demangled name $(same 2 2 a2l.name)," \
	"line $(same 4 3 a2l.sys)"

# --- timing, interleaved
: >"$TMP/t.pprof-alloc"; : >"$TMP/t.addr2line"; : >"$TMP/t.eu-addr2line"
run() {	# VARIANT
	case $1 in
	pprof-alloc)
		"$T" symbolize "$TMP/raw.pb.gz" -o "$TMP/out.pb.gz" --no-debuginfod -q ;;
	addr2line)
		addr2line -e "$LIB" -i -f -C <"$TMP/addrs" >"$TMP/a2l.out" ;;
	eu-addr2line)
		eu-addr2line -e "$LIB" -i -f -C <"$TMP/eu-addrs" >"$TMP/eu.out" ;;
	esac
}
EU_N=${EU_ADDRS:-$N}
[ "$EU_N" -le "$N" ] || EU_N=$N
head -n "$EU_N" "$TMP/addrs" >"$TMP/eu-addrs"
i=0
while [ $i -lt "$ROUNDS" ]; do
	for v in pprof-alloc addr2line eu-addr2line; do
		[ $v = eu-addr2line ] && [ $i -ge "$EU_ROUNDS" ] && continue
		t0=$(now)
		run $v || die "$v failed (round $((i + 1)))"
		t1=$(now)
		awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f\n", b - a }' >>"$TMP/t.$v"
	done
	i=$((i + 1))
done

pa=$(median "$TMP/t.pprof-alloc")
a2l=$(median "$TMP/t.addr2line")
eu=$(median "$TMP/t.eu-addr2line")
rate() { awk -v n="${2:-$N}" -v t="$1" 'BEGIN { printf "%.0f", n / t }'; }
pa_rate=$(rate "$pa") a2l_rate=$(rate "$a2l") eu_rate=$(rate "$eu" "$EU_N")

echo "symbolize $N unique addresses of $(basename "$LIB") (.text $text_size bytes), wall clock, median"
printf '  %-34s %9s s  %9s addresses/s  (%s runs)\n' \
	"pprof-alloc symbolize" "$pa" "$pa_rate" "$ROUNDS" \
	"addr2line -i -f -C (binutils)" "$a2l" "$a2l_rate" "$ROUNDS"
printf '  %-34s %9s s  %9s addresses/s  (%s runs of the first %s addresses: slow, so fewer)\n' \
	"eu-addr2line -i -f -C (elfutils)" "$eu" "$eu_rate" "$EU_ROUNDS" "$EU_N"
awk -v pa="$pa" -v a2l="$a2l" -v eur="$eu_rate" -v par="$pa_rate" 'BEGIN {
	r1 = a2l / pa; r2 = par / eur
	printf "  pprof-alloc / addr2line     %8.2fx  %s target >= 10x\n", r1,
		(r1 >= 10 ? "meets" : "MISSES")
	printf "  pprof-alloc / eu-addr2line  %8.2fx  %s target > 1x\n", r2,
		(r2 > 1 ? "meets" : "MISSES")
}'
