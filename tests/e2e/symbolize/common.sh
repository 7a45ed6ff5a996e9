# Shared by the run-symbolize-*.sh tests; sourced after tests/e2e/lib.sh
# (POSIX sh).  Builds the test programs of this directory, splits their
# debug information off the way distributions do, runs
# `pprof-alloc symbolize`, and reads profiles back through the real
# `go tool pprof` (always with -symbolize=none, so that what is checked is
# what the profile holds, not what pprof could add from binaries it finds).
SYMSRC="$TOP/tests/e2e/symbolize"
SYMFLAGS="-g -O2 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -Wall -Wextra -Werror"

# No debuginfod server is ever asked, whatever the caller's environment.
unset DEBUGINFOD_URLS

# The real directory of the scratch space: mappings record resolved paths.
R=$(cd -P "$TMP" && pwd) || fail "cannot resolve $TMP"


# marker_line FILE NAME: the number of the one line of FILE that ends with
# the marker comment "@NAME" (C "/* @NAME */" or C++ "// @NAME").  Call as
# L=$(marker_line ...) || exit 1.
marker_line() {
	_ml=$(grep -n " @$2\( \*/\)\{0,1\}\$" "$1" | cut -d: -f1)
	[ "$(echo $_ml | wc -w)" = 1 ] ||
		fail "marker @$2: found on line(s) '${_ml}' of $1, want exactly one"
	echo "$_ml"
}

# build_id FILE: the GNU build ID of FILE (lower-case hex).  Call as
# ID=$(build_id ...) || exit 1.
build_id() {
	_bid=$(readelf -n "$1" 2>/dev/null | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
	[ -n "$_bid" ] || fail "$1 has no GNU build ID (readelf -n)"
	echo "$_bid"
}

# build_id_path DIR ID: where a debug file for build ID ID goes under DIR.
build_id_path() {
	echo "$1/.build-id/$(echo "$2" | cut -c1-2)/$(echo "$2" | cut -c3-).debug"
}

# has_section FILE NAME: FILE has a section called NAME.
has_section() {
	readelf -W -S "$1" 2>/dev/null | grep -q " $2 "
}

# compile OUT COMPILER SOURCE [FLAGS...]
compile() {
	_out=$1 _cc=$2 _src=$3; shift 3
	"$_cc" $SYMFLAGS "$@" -o "$_out" "$_src" || fail "cannot build $_out with $_cc"
}

# split_debug BIN STRIPPED DEBUG: DEBUG gets BIN's debug information
# (objcopy --only-keep-debug), STRIPPED a copy of BIN without it (strip
# --strip-debug: the ELF symbol table stays) and with a .gnu_debuglink
# naming DEBUG's base name, with DEBUG's CRC.
split_debug() {
	objcopy --only-keep-debug "$1" "$3" || fail "objcopy --only-keep-debug $1"
	cp "$1" "$2" && strip --strip-debug "$2" || fail "strip --strip-debug $2"
	(cd "$(dirname "$3")" && objcopy --add-gnu-debuglink="$(basename "$3")" "$2") ||
		fail "objcopy --add-gnu-debuglink $2"
	has_section "$2" .debug_info && fail "$2 still has .debug_info after strip"
	has_section "$2" .gnu_debuglink || fail "$2 has no .gnu_debuglink"
	has_section "$3" .debug_info || fail "$3 has no .debug_info"
	[ "$(build_id "$2")" = "$(build_id "$1")" ] || fail "strip changed the build ID of $2"
}

# put_file FILE DEST: copy FILE to DEST, making DEST's directory.
put_file() {
	mkdir -p "$(dirname "$2")" && cp "$1" "$2" || fail "cannot copy $1 to $2"
}

# symbolize ERR ARGS...: run `pprof-alloc symbolize ARGS`; stderr in ERR
# (shown, indented), stdout in ERR.out, exit status in $sym_rc.  A status
# of 128 or more (a crash) fails the test at once.
symbolize() {
	_err=$1; shift
	"$TRACER" symbolize "$@" >"$_err.out" 2>"$_err"
	sym_rc=$?
	note "pprof-alloc symbolize $*: exit $sym_rc"
	sed 's/^/    stderr: /' "$_err"
	[ "$sym_rc" -lt 128 ] || fail "pprof-alloc symbolize $* crashed (exit $sym_rc)"
}

# raw_of PROFILE OUT: `go tool pprof -symbolize=none -raw PROFILE` into
# OUT; fails if pprof cannot read PROFILE or warns about it.
raw_of() {
	go tool pprof -symbolize=none -raw "$1" >"$2" 2>"$2.err" ||
		{ cat "$2.err" >&2; fail "go tool pprof cannot read $1"; }
	if [ -s "$2.err" ]; then
		cat "$2.err" >&2
		fail "go tool pprof printed warnings for $1"
	fi
}

# locs_of PROFILE OUT: the locations PROFILE's samples use, one a line,
# "MAPPING-FILE | NAME FILE:LINE <- ..." (symlocs.py locs); OUT.raw keeps
# the raw text and OUT.leaf the per-leaf-function sums (symlocs.py leaf).
locs_of() {
	raw_of "$1" "$2.raw"
	python3 "$SYMSRC/symlocs.py" locs <"$2.raw" >"$2" || fail "symlocs.py locs failed"
	python3 "$SYMSRC/symlocs.py" leaf <"$2.raw" >"$2.leaf" || fail "symlocs.py leaf failed"
}

# check_loc LOCS LINE: LOCS (locs_of output) has exactly the location LINE.
check_loc() {
	if ! grep -q -x -F -- "$2" "$1"; then
		check_failed "no location '$2'; the locations of that mapping are:
$(grep -F -- "${2%% | *} | " "$1" | sed 's/^/        /')"
	fi
}

# check_leaf LOCS FUNC AO AS IO IS: summed over the samples whose leaf
# function is FUNC (a whole name, spaces allowed), the four values are
# exactly alloc_objects AO, alloc_space AS, inuse_objects IO, inuse_space IS.
check_leaf() {
	_got=$(awk -F '\t' -v f="$2" '$1 == f { print $2; n++ } END { if (!n) print "absent" }' "$1.leaf")
	if [ "$_got" = "$3 $4 $5 $6" ]; then
		note "$2: $_got"
	else
		check_failed "$2: got (alloc_objects alloc_space inuse_objects inuse_space) = ($_got), want ($3 $4 $5 $6)"
	fi
}

# check_said ERR LINE: ERR (symbolize's stderr) has the line LINE, exactly
# (runs of slashes in paths count as one).
check_said() {
	if ! sed 's#//*#/#g' "$1" | grep -q -x -F -- "$2"; then
		check_failed "symbolize did not say: '$2'"
	fi
}

# mapping_line RAW FILE: the line of the Mappings section of RAW (pprof -raw
# text) for FILE.
mapping_line() {
	sed -n '/^Mappings/,$p' "$1" | grep -F " $2 " | head -n 1
}

# mapping_locations RAW FILE: how many locations of RAW (pprof -raw text)
# are in the mapping of FILE.
mapping_locations() {
	_mid=$(mapping_line "$1" "$2" | sed -n 's/^ *\([0-9][0-9]*\):.*/\1/p')
	[ -n "$_mid" ] || { echo 0; return; }
	sed -n '/^Locations/,/^Mappings/p' "$1" | grep -c -E "^ *[0-9]+: 0x[0-9a-f]+ M=$_mid "
}

# location_count RAW: how many locations RAW (pprof -raw text) has.
location_count() {
	sed -n '/^Locations/,/^Mappings/p' "$1" | grep -c -E '^ *[0-9]+: 0x[0-9a-f]+ M='
}

# check_summary ERR RAW: ERR has one line "pprof-alloc symbolize: N of M
# locations symbolized...", after every per-mapping line, with M the number
# of locations of RAW (the input) and 0 < N <= M; N is left in $summary_n.
check_summary() {
	_total=$(location_count "$2")
	_pat='^pprof-alloc symbolize: [0-9][0-9]* of [0-9][0-9]* locations symbolized'
	_sum=$(grep -n -e "$_pat" "$1")
	summary_n=0
	if [ "$(echo "$_sum" | grep -c .)" != 1 ]; then
		check_failed "want one line 'pprof-alloc symbolize: N of M locations symbolized...' on stderr, got: '$_sum'"
		return
	fi
	_last_mapping=$(grep -n -e '^pprof-alloc symbolize: .* \[[0-9a-f]*\]: ' "$1" | tail -n 1 | cut -d: -f1)
	[ "${_sum%%:*}" -gt "${_last_mapping:-0}" ] ||
		check_failed "the summary line comes before a per-mapping line"
	set -- $(echo "${_sum#*:}" | sed 's/^pprof-alloc symbolize: \([0-9]*\) of \([0-9]*\) .*/\1 \2/')
	summary_n=$1
	[ "$2" = "$_total" ] || check_failed "the summary says $2 locations, the input has $_total: '${_sum#*:}'"
	[ "$1" -gt 0 ] && [ "$1" -le "$2" ] || check_failed "summary: $1 of $2 locations symbolized?"
}

# ---- symprog.c: what a run of `symprog $REC $TAB` must come out as -------

REC=100 TAB=50
RECORD_SIZE=4096 TABLE_SIZE=1000

# symprog_lines: L_MALLOC, L_CALL, L_CALLOC from symprog.c's markers.
symprog_lines() {
	L_MALLOC=$(marker_line "$SYMSRC/symprog.c" fill_buffer_malloc) || exit 1
	L_CALL=$(marker_line "$SYMSRC/symprog.c" make_records_call) || exit 1
	L_CALLOC=$(marker_line "$SYMSRC/symprog.c" make_table_calloc) || exit 1
}

# check_symprog LOCS FILE: in LOCS (locs_of), symprog mapped from FILE has
# its functions, files and lines, the inlined fill_buffer as its own frame
# of the make_records location, and exact totals.
check_symprog() {
	check_loc "$1" "$2 | fill_buffer symprog.c:$L_MALLOC <- make_records symprog.c:$L_CALL"
	check_loc "$1" "$2 | make_table symprog.c:$L_CALLOC"
	grep -q -F "$2 | main symprog.c:" "$1" ||
		check_failed "main (with a line of symprog.c) is not in the stacks of $2"
	check_leaf "$1" fill_buffer $REC $((REC * RECORD_SIZE)) $REC $((REC * RECORD_SIZE))
	check_leaf "$1" make_table $TAB $((TAB * TABLE_SIZE)) 0 0
}

# check_symprog_top PROFILE: `go tool pprof -top -lines` shows the inlined
# frame, its caller and make_table at their lines.
check_symprog_top() {
	go tool pprof -symbolize=none -sample_index=alloc_space -top -lines "$1" \
		>"$1.top" 2>"$1.top.err" || { cat "$1.top.err" >&2; fail "go tool pprof -top -lines $1 failed"; }
	_before=$failures
	for _want in " fill_buffer [^ ]*symprog\.c:$L_MALLOC (inline)\$" \
		" make_records [^ ]*symprog\.c:$L_CALL\$" " make_table [^ ]*symprog\.c:$L_CALLOC\$"; do
		grep -q -e "$_want" "$1.top" ||
			check_failed "go tool pprof -top -lines $1: no line matching '$_want'"
	done
	[ "$failures" = "$_before" ] || sed -n '/flat%/,$s/^/        /p' "$1.top" >&2
}

# check_symprog_elf_only LOCS FILE: symprog mapped from FILE was named by
# its ELF symbol table alone: make_records and make_table (fill_buffer is
# inlined, so it has no symbol), no source lines.
check_symprog_elf_only() {
	grep -q -E "^$2 \\| make_records( |\$)" "$1" || check_failed "no location of $2 named make_records"
	grep -q -E "^$2 \\| make_table( |\$)" "$1" || check_failed "no location of $2 named make_table"
	grep -F "$2 | " "$1" | grep -q -e 'fill_buffer' -e 'symprog\.c:' &&
		check_failed "$2 has DWARF names or lines, but should have ELF symbols only: $(grep -F "$2 | " "$1" | grep -e fill_buffer -e 'symprog\.c:')"
	check_leaf "$1" make_records $REC $((REC * RECORD_SIZE)) $REC $((REC * RECORD_SIZE))
}

# check_unsymbolized LOCS FILE: no location of FILE has a function.
check_unsymbolized() {
	_named=$(grep -F "$2 | " "$1" | grep -v -x -F "$2 | -")
	[ -z "$_named" ] || check_failed "locations of $2 have functions, but should have none: $_named"
	grep -q -x -F "$2 | -" "$1" || check_failed "no location of $2 at all"
}
