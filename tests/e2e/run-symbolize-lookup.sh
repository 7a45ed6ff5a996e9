#!/bin/sh
# run-symbolize-lookup.sh - `pprof-alloc symbolize` finds a mapping's
# symbols by build ID, each way on its own, in a fresh layout each time:
# the recorded path, a --debug-dir's .build-id tree (also with the recorded
# path gone), and .gnu_debuglink (next to the ELF, in its .debug/, under a
# debug dir); it says which on stderr; it refuses files of another build
# (the decoy) and debuglink files with the wrong CRC; with no debug
# information it falls back to ELF symbols.  The program
# (tests/e2e/symbolize/symprog.c, gcc -O2 -g, frame pointers) is recorded
# stripped, with --no-symbolize, and must come out with the right
# functions, files, lines, inlined frames and exact totals.  Also: -q,
# re-symbolizing a symbolized profile (with and without -f), -o equal to
# the input, and go tool pprof symbolizing the raw profile by itself.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/symbolize/common.sh"

need gcc objcopy strip readelf go python3
symprog_lines

# --- build: the program, its split debug file, and a decoy of another build
mkdir -p "$R/build/stripped"
compile "$R/build/symprog" gcc "$SYMSRC/symprog.c"
compile "$R/build/variant" gcc "$SYMSRC/symprog.c" -DSYMPROG_VARIANT=1
split_debug "$R/build/symprog" "$R/build/stripped/symprog" "$R/build/symprog.debug"
objcopy --only-keep-debug "$R/build/variant" "$R/build/decoy.debug" || fail "objcopy the decoy"
BID=$(build_id "$R/build/symprog") || exit 1
DECOY_BID=$(build_id "$R/build/variant") || exit 1
[ "$BID" != "$DECOY_BID" ] || fail "the variant has the same build ID $BID"
note "build ID $BID, decoy $DECOY_BID"

# --- record the stripped program at P, unsymbolized
P="$R/rec/symprog"
put_file "$R/build/stripped/symprog" "$P"
"$TRACER" --rate 1 --no-symbolize -o "$R/raw.pb.gz" -- "$P" $REC $TAB \
	>"$R/rec.out" 2>"$R/rec.err"
rc=$?
sed 's/^/    stderr: /' "$R/rec.err"
[ $rc = 0 ] || fail "recording with --no-symbolize: exit $rc"

locs_of "$R/raw.pb.gz" "$R/raw.locs"
note "raw profile"
cat "$R/raw.locs"
named=$(grep -v -E ' \| -$' "$R/raw.locs")
[ -z "$named" ] || fail "the --no-symbolize profile has functions: $named"
map=$(mapping_line "$R/raw.locs.raw" "$P")
echo "    mapping: $map"
[ -n "$map" ] || fail "no mapping for $P in the raw profile"
echo "$map" | grep -q " $P $BID" || fail "the raw mapping of $P lacks its build ID $BID: $map"
echo "$map" | grep -q '\[FN\]' && fail "the raw mapping of $P claims functions: $map"
n=$(mapping_locations "$R/raw.locs.raw" "$P")
[ "$n" -ge 4 ] || fail "$n locations in $P in the raw profile, want at least 4"
SAID="pprof-alloc symbolize: $P [$BID]"

# fresh_layout: nothing at the recorded path's directory or the debug dir.
fresh_layout() {
	rm -rf "$R/rec" "$R/dbg" "$R/out.pb.gz"
	mkdir -p "$R/rec" "$R/dbg"
}

# symbolized CASE ARGS...: symbolize the raw profile with ARGS into
# $R/CASE.pb.gz; it must exit 0; its locations go to $R/CASE.locs.
symbolized() {
	_case=$1; shift
	note "case $_case"
	symbolize "$R/$_case.err" "$R/raw.pb.gz" -o "$R/$_case.pb.gz" --no-debuginfod "$@"
	if [ "$sym_rc" != 0 ] || [ ! -s "$R/$_case.pb.gz" ]; then
		check_failed "case $_case: exit $sym_rc, want 0 and a profile written"
		return 1
	fi
	locs_of "$R/$_case.pb.gz" "$R/$_case.locs"
	check_summary "$R/$_case.err" "$R/raw.locs.raw"
	_map=$(mapping_line "$R/$_case.locs.raw" "$P")
	echo "$_map" | grep -q " $P $BID" ||
		check_failed "case $_case: the output's mapping of $P lost its name or build ID: '$_map'"
}

# full CASE: the outcome of case CASE is symprog with all its debug info.
full() {
	check_symprog "$R/$1.locs" "$P"
	check_symprog_top "$R/$1.pb.gz"
	mapping_line "$R/$1.locs.raw" "$P" | grep -q '\[FN\]\[FL\]\[LN\]\[IN\]' ||
		check_failed "case $1: the mapping of $P is not marked [FN][FL][LN][IN]: $(mapping_line "$R/$1.locs.raw" "$P")"
}

DBG_ID=$(build_id_path "$R/dbg" "$BID")

# (a) the unstripped program at the recorded path
fresh_layout
put_file "$R/build/symprog" "$P"
if symbolized recorded; then
	check_said "$R/recorded.err" "$SAID: symbols from $P (recorded path)"
	full recorded
fi

# -q: the same, without the per-mapping lines
symbolize "$R/quiet.err" "$R/raw.pb.gz" -o "$R/quiet.pb.gz" --no-debuginfod -q
[ "$sym_rc" = 0 ] && [ -s "$R/quiet.pb.gz" ] || check_failed "-q: exit $sym_rc, want 0 and a profile"
grep -q -F "$SAID" "$R/quiet.err" && check_failed "-q: per-mapping lines on stderr anyway"

# (b) the stripped program at the recorded path, its debug file by build ID
fresh_layout
put_file "$R/build/stripped/symprog" "$P"
put_file "$R/build/symprog.debug" "$DBG_ID"
if symbolized debugdir --debug-dir "$R/dbg"; then
	check_said "$R/debugdir.err" "$SAID: symbols from $DBG_ID (debug dir)"
	full debugdir
fi

# (c) the recorded path gone: the debug file alone is enough
fresh_layout
rm -rf "$R/rec"
put_file "$R/build/symprog.debug" "$DBG_ID"
if symbolized debugonly --debug-dir "$R/dbg"; then
	check_said "$R/debugonly.err" "$SAID: symbols from $DBG_ID (debug dir)"
	full debugonly
fi

# (d) .gnu_debuglink: next to the program, in its .debug/, under a debug dir
fresh_layout
put_file "$R/build/stripped/symprog" "$P"
put_file "$R/build/symprog.debug" "$R/rec/symprog.debug"
if symbolized link-next; then
	check_said "$R/link-next.err" "$SAID: symbols from $R/rec/symprog.debug (debuglink)"
	full link-next
fi
fresh_layout
put_file "$R/build/stripped/symprog" "$P"
put_file "$R/build/symprog.debug" "$R/rec/.debug/symprog.debug"
if symbolized link-dotdebug; then
	check_said "$R/link-dotdebug.err" "$SAID: symbols from $R/rec/.debug/symprog.debug (debuglink)"
	full link-dotdebug
fi
fresh_layout
put_file "$R/build/stripped/symprog" "$P"
put_file "$R/build/symprog.debug" "$R/dbg$R/rec/symprog.debug"
if symbolized link-debugdir --debug-dir "$R/dbg"; then
	check_said "$R/link-debugdir.err" "$SAID: symbols from $R/dbg$R/rec/symprog.debug (debuglink)"
	full link-debugdir
fi

# (e) decoys: another build's debug file at the build-ID path, and another
# build's whole program at the recorded path; neither may be used
fresh_layout
put_file "$R/build/variant" "$P"
put_file "$R/build/decoy.debug" "$DBG_ID"
if symbolized decoy --debug-dir "$R/dbg"; then
	grep -F "$SAID: no symbols: " "$R/decoy.err" | grep -q -F "does not match" ||
		check_failed "decoy: no line '$SAID: no symbols: ...does not match...'"
	grep -F "$SAID: no symbols: " "$R/decoy.err" | grep -q -F "$DBG_ID" ||
		check_failed "decoy: the reasons do not name the refused $DBG_ID"
	check_unsymbolized "$R/decoy.locs" "$P"
	[ "$summary_n" -lt "$(location_count "$R/raw.locs.raw")" ] ||
		check_failed "decoy: the summary says every location was symbolized"
	mapping_line "$R/decoy.locs.raw" "$P" | grep -q '\[FN\]' &&
		check_failed "decoy: the mapping of $P claims functions it does not have (pprof would not symbolize it later)"
fi

# (e') a debuglink file of another build next to the stripped program: its
# CRC (and build ID) differ, so only the ELF symbols are used
fresh_layout
put_file "$R/build/stripped/symprog" "$P"
put_file "$R/build/decoy.debug" "$R/rec/symprog.debug"
if symbolized link-decoy; then
	grep -q -F "$SAID: ELF symbols only, from $P (recorded path); no debug info: " "$R/link-decoy.err" ||
		check_failed "link-decoy: no line '$SAID: ELF symbols only, from $P (recorded path); no debug info: ...'"
	grep -F "$SAID: ELF symbols only" "$R/link-decoy.err" | grep -q -F "$R/rec/symprog.debug" ||
		check_failed "link-decoy: the reasons do not name the refused $R/rec/symprog.debug"
	check_symprog_elf_only "$R/link-decoy.locs" "$P"
fi

# (f) no debug information anywhere: ELF symbols of the stripped program
fresh_layout
put_file "$R/build/stripped/symprog" "$P"
if symbolized elf-only; then
	grep -q -F "$SAID: ELF symbols only, from $P (recorded path); no debug info: " "$R/elf-only.err" ||
		check_failed "elf-only: no line '$SAID: ELF symbols only, from $P (recorded path); no debug info: ...'"
	check_symprog_elf_only "$R/elf-only.locs" "$P"
fi

# --- a profile that already has functions: without -f its mappings are
# left as they are (even with every file gone); with -f they are done again
note "symbolizing a symbolized profile"
fresh_layout
rm -rf "$R/rec"
symbolize "$R/again.err" "$R/recorded.pb.gz" -o "$R/again.pb.gz" --no-debuginfod
if [ "$sym_rc" = 0 ] && [ -s "$R/again.pb.gz" ]; then
	locs_of "$R/again.pb.gz" "$R/again.locs"
	check_symprog "$R/again.locs" "$P"
else
	check_failed "symbolizing a symbolized profile: exit $sym_rc, want 0 and a profile"
fi
put_file "$R/build/symprog" "$P"
symbolize "$R/force.err" "$R/recorded.pb.gz" -o "$R/force.pb.gz" --no-debuginfod -f
if [ "$sym_rc" = 0 ] && [ -s "$R/force.pb.gz" ]; then
	check_said "$R/force.err" "$SAID: symbols from $P (recorded path)"
	locs_of "$R/force.pb.gz" "$R/force.locs"
	check_symprog "$R/force.locs" "$P"
else
	check_failed "symbolize -f: exit $sym_rc, want 0 and a profile"
fi

# --- -o may be the input itself
note "in place"
cp "$R/raw.pb.gz" "$R/inplace.pb.gz"
symbolize "$R/inplace.err" "$R/inplace.pb.gz" -o "$R/inplace.pb.gz" --no-debuginfod
if [ "$sym_rc" = 0 ] && [ -s "$R/inplace.pb.gz" ]; then
	locs_of "$R/inplace.pb.gz" "$R/inplace.locs"
	check_symprog "$R/inplace.locs" "$P"
else
	check_failed "symbolize in place: exit $sym_rc, want 0 and a profile"
fi
[ -z "$(ls -A "$R" | grep -v -E '^(build|rec|dbg|bin)$|\.(pb\.gz|err|out|locs|raw|leaf|top|top\.err|raw\.err|json)$')" ] ||
	check_failed "stray files left beside the outputs: $(ls -A "$R")"

# --- pprof can symbolize the raw profile itself, from the recorded path:
# the mappings say they have no functions, so `-symbolize=local` is not
# skipped.  (Not from PPROF_BINARY_PATH: go tool pprof's built-in object
# reader reports no build ID for any file, so it ignores every file found
# there for a mapping that has one - "build-id mismatch (ID != )".  Its
# DWARF reader knows no inlined frames either, so only names are checked.)
note "go tool pprof -symbolize=local, the program at the recorded path"
fresh_layout
put_file "$R/build/symprog" "$P"
go tool pprof -symbolize=local -raw "$R/raw.pb.gz" >"$R/pprof-local.raw" 2>"$R/pprof-local.err" ||
	{ cat "$R/pprof-local.err" >&2; fail "go tool pprof -symbolize=local failed"; }
python3 "$SYMSRC/symlocs.py" locs <"$R/pprof-local.raw" >"$R/pprof-local.locs"
grep -F "$P | " "$R/pprof-local.locs"
for f in make_records make_table; do
	grep -q -E "^$P \\| $f symprog\\.c:[0-9]+( |\$)" "$R/pprof-local.locs" ||
		check_failed "go tool pprof -symbolize=local did not find $f in $P: $(cat "$R/pprof-local.err")"
done
finish
