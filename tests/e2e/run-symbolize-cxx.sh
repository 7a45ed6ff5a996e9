#!/bin/sh
# run-symbolize-cxx.sh - `pprof-alloc symbolize` on C++ and on clang code.
# A C++ program (tests/e2e/symbolize/symcxx.cc, g++ -O2 -g) whose class
# template member ns::Pool<int>::grow is inlined into ns::fill_pools:
# Function.name is the demangled name as c++filt prints it, system_name the
# mangled linkage name, and the inlined template frame is a Line of its own
# in the leaf location.  Then symprog.c built by clang, which writes no
# .debug_aranges (the CU of an address must be found another way): its
# functions, lines and inlined frame must resolve as with gcc.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/symbolize/common.sh"

need g++ clang c++filt nm readelf go python3
N=200
GROW_INTS=2000 RESERVE_DOUBLES=300

# --- C++: build, record at P unsymbolized, symbolize from the recorded path
P="$R/rec/symcxx"
mkdir -p "$R/rec"
compile "$P" g++ "$SYMSRC/symcxx.cc"
BID=$(build_id "$P") || exit 1
L_GROW=$(marker_line "$SYMSRC/symcxx.cc" grow_malloc) || exit 1
L_FILL_GROW=$(marker_line "$SYMSRC/symcxx.cc" fill_pools_call) || exit 1
L_RESERVE=$(marker_line "$SYMSRC/symcxx.cc" reserve_malloc) || exit 1
L_FILL_RESERVE=$(marker_line "$SYMSRC/symcxx.cc" fill_pools_reserve) || exit 1

# The linkage names (Itanium ABI) and what c++filt makes of them.
GROW_SYS=_ZN2ns4PoolIiE4growEm
FILL_SYS=_ZN2ns10fill_poolsEi
RESERVE_SYS=_ZN2ns4PoolIdE7reserveEm
GROW=$(c++filt "$GROW_SYS")
FILL=$(c++filt "$FILL_SYS")
RESERVE=$(c++filt "$RESERVE_SYS")
note "$GROW_SYS = $GROW; $FILL_SYS = $FILL; $RESERVE_SYS = $RESERVE"
[ "$GROW" = "ns::Pool<int>::grow(unsigned long)" ] || fail "c++filt $GROW_SYS gave '$GROW'"
# The program is as the test thinks: fill_pools and reserve out of line,
# grow inlined (no symbol) but described in DWARF with its linkage name.
nm "$P" | grep -q " T $FILL_SYS\$" || fail "$P has no global symbol $FILL_SYS"
nm "$P" | grep -q " [TW] $RESERVE_SYS\$" || fail "$P has no symbol $RESERVE_SYS (was reserve inlined?)"
nm "$P" | grep -q "$GROW_SYS" && fail "$P has a symbol $GROW_SYS: grow was not inlined"
readelf --debug-dump=info "$P" 2>/dev/null | grep -q "DW_AT_linkage_name.*: $GROW_SYS\$" ||
	fail "$P's DWARF has no DW_AT_linkage_name $GROW_SYS"

"$TRACER" --rate 1 --no-symbolize -o "$R/cxx-raw.pb.gz" -- "$P" $N >"$R/cxx.out" 2>"$R/cxx.err"
rc=$?
sed 's/^/    stderr: /' "$R/cxx.err"
[ $rc = 0 ] || fail "recording symcxx with --no-symbolize: exit $rc"
raw_of "$R/cxx-raw.pb.gz" "$R/cxx-raw.raw"

symbolize "$R/cxx.sym.err" "$R/cxx-raw.pb.gz" -o "$R/cxx.pb.gz" --no-debuginfod
[ "$sym_rc" = 0 ] && [ -s "$R/cxx.pb.gz" ] || fail "symbolize symcxx: exit $sym_rc, want 0 and a profile"
check_said "$R/cxx.sym.err" "pprof-alloc symbolize: $P [$BID]: symbols from $P (recorded path)"
check_summary "$R/cxx.sym.err" "$R/cxx-raw.raw"
locs_of "$R/cxx.pb.gz" "$R/cxx.locs"
grep -F "$P | " "$R/cxx.locs"

# The leaf location: the inlined template frame, then its caller's call.
check_loc "$R/cxx.locs" "$P | $GROW symcxx.cc:$L_GROW <- $FILL symcxx.cc:$L_FILL_GROW"
check_loc "$R/cxx.locs" "$P | $RESERVE symcxx.cc:$L_RESERVE"
check_loc "$R/cxx.locs" "$P | $FILL symcxx.cc:$L_FILL_RESERVE"
check_leaf "$R/cxx.locs" "$GROW" $N $((N * GROW_INTS * 4)) $N $((N * GROW_INTS * 4))
check_leaf "$R/cxx.locs" "$RESERVE" $N $((N * RESERVE_DOUBLES * 8)) 0 0

# Function.system_name: the mangled name (pprof -raw prints it after the
# name when the two differ).
python3 "$SYMSRC/symlocs.py" names <"$R/cxx.locs.raw" >"$R/cxx.names"
sed 's/^/    name: /' "$R/cxx.names"
for pair in "$GROW	$GROW_SYS" "$FILL	$FILL_SYS" "$RESERVE	$RESERVE_SYS" "main	main"; do
	grep -q -x -F "$pair" "$R/cxx.names" ||
		check_failed "no function with name and system_name '$pair' (tab-separated)"
done
grep -q -E '^_Z' "$R/cxx.names" && check_failed "a Function.name is still mangled: $(grep '^_Z' "$R/cxx.names")"

# What a user sees: go tool pprof -top names the template function in full,
# and with -lines shows the inlined frame at its own line.
go tool pprof -symbolize=none -sample_index=alloc_space -top "$R/cxx.pb.gz" >"$R/cxx.top" 2>&1 ||
	{ cat "$R/cxx.top" >&2; fail "go tool pprof -top failed"; }
go tool pprof -symbolize=none -sample_index=alloc_space -top -lines "$R/cxx.pb.gz" >"$R/cxx.top-lines" 2>&1 ||
	{ cat "$R/cxx.top-lines" >&2; fail "go tool pprof -top -lines failed"; }
sed -n '/flat%/,$p' "$R/cxx.top" "$R/cxx.top-lines" | sed 's/^/    /'
grep -q -F " $GROW" "$R/cxx.top" || check_failed "go tool pprof -top does not show '$GROW'"
grep -q -F " $RESERVE" "$R/cxx.top" || check_failed "go tool pprof -top does not show '$RESERVE'"
grep -q -F " $FILL" "$R/cxx.top" || check_failed "go tool pprof -top does not show '$FILL'"
grep -q -F "symcxx.cc:$L_GROW (inline)" "$R/cxx.top-lines" &&
	grep "symcxx.cc:$L_GROW (inline)" "$R/cxx.top-lines" | grep -q -F " $GROW " ||
	check_failed "go tool pprof -top -lines does not show '$GROW ...symcxx.cc:$L_GROW (inline)'"

# --- clang: symprog.c without .debug_aranges
note "symprog built by clang"
symprog_lines
P2="$R/rec/symprog-clang"
compile "$P2" clang "$SYMSRC/symprog.c"
BID2=$(build_id "$P2") || exit 1
has_section "$P2" .debug_info || fail "clang wrote no .debug_info into $P2"
has_section "$P2" .debug_aranges &&
	fail "clang wrote .debug_aranges into $P2; this test is about binaries without it (pass no -gdwarf-aranges)"
"$TRACER" --rate 1 --no-symbolize -o "$R/clang-raw.pb.gz" -- "$P2" $REC $TAB >"$R/clang.out" 2>"$R/clang.err"
rc=$?
sed 's/^/    stderr: /' "$R/clang.err"
[ $rc = 0 ] || fail "recording symprog-clang with --no-symbolize: exit $rc"
raw_of "$R/clang-raw.pb.gz" "$R/clang-raw.raw"
symbolize "$R/clang.sym.err" "$R/clang-raw.pb.gz" -o "$R/clang.pb.gz" --no-debuginfod
[ "$sym_rc" = 0 ] && [ -s "$R/clang.pb.gz" ] || fail "symbolize symprog-clang: exit $sym_rc, want 0 and a profile"
check_said "$R/clang.sym.err" "pprof-alloc symbolize: $P2 [$BID2]: symbols from $P2 (recorded path)"
check_summary "$R/clang.sym.err" "$R/clang-raw.raw"
locs_of "$R/clang.pb.gz" "$R/clang.locs"
grep -F "$P2 | " "$R/clang.locs"
check_symprog "$R/clang.locs" "$P2"
check_symprog_top "$R/clang.pb.gz"
finish
