#!/bin/sh
# run-symbolize-compressed.sh - DWARF in compressed sections (objcopy
# --compress-debug-sections, as distributions ship debug files) symbolizes
# exactly as uncompressed DWARF does.  2000 addresses drawn from the
# tracer's own .text become an unsymbolized profile naming a copy of the
# tracer; it is symbolized with that copy uncompressed, then compressed
# (elf/inflate.c decompresses it once for all --jobs threads), then
# stripped with its compressed DWARF in a separate file under --debug-dir:
# all three must write the same bytes, with functions and lines for most
# locations; so must that debug file naming a dwz file by a relative path,
# which is left to libdwfl to decompress.  A copy whose compressed .debug_info is damaged must still be
# symbolized from its symbol table, with exit 0 and a warning.
. "$(dirname "$0")/lib.sh"
need python3

SYNTH="$BUILD/tests/tools/pprof-synth"
N=2000
[ -x "$SYNTH" ] || fail "$SYNTH is missing"
need readelf objcopy go awk

BIN="$TMP/prog"
cp "$TRACER" "$BIN" && objcopy --decompress-debug-sections "$BIN" ||
	fail "cannot copy $TRACER"
text_addrs "$BIN" $N 11 dwarf >"$TMP/addrs"
"$SYNTH" -e "$BIN" -o "$TMP/raw.pb.gz" <"$TMP/addrs" || fail "pprof-synth failed"

sym() {	# OUT [OPTIONS...]
	out=$1; shift
	"$TRACER" symbolize "$TMP/raw.pb.gz" -o "$TMP/$out.pb.gz" \
		--no-debuginfod "$@" 2>"$TMP/$out.err" ||
		{ cat "$TMP/$out.err" >&2; fail "symbolize ($out) failed"; }
	sed "s/^/    $out: /" "$TMP/$out.err"
}
compressed() {	# FILE: how many of its .debug_* sections are compressed
	readelf -SW "$1" | awk '/\.debug_/ && $0 ~ / C / { c++ } END { print c + 0 }'
}

sym plain --jobs 2
[ "$(compressed "$BIN")" = 0 ] || fail "the plain copy has compressed sections"

objcopy --compress-debug-sections=zlib "$BIN" || fail "objcopy --compress-debug-sections failed"
[ "$(compressed "$BIN")" -ge 3 ] || fail "objcopy compressed nothing"
sym packed --jobs 2
cmp "$TMP/plain.pb.gz" "$TMP/packed.pb.gz" ||
	fail "compressed DWARF gave another profile than uncompressed"
sym packed1 --jobs 1
cmp "$TMP/plain.pb.gz" "$TMP/packed1.pb.gz" ||
	fail "compressed DWARF with --jobs 1 gave another profile"

# Stripped, its compressed DWARF in DIR/.build-id/xx/rest.debug.
id=$(readelf -n "$BIN" | awk '/Build ID:/ { print $3 }')
[ -n "$id" ] || fail "no build ID in $BIN"
mkdir -p "$TMP/dbg/.build-id/$(echo "$id" | cut -c1-2)"
dbg="$TMP/dbg/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug"
objcopy --only-keep-debug --compress-debug-sections=zlib "$BIN" "$dbg" &&
	objcopy --strip-debug "$BIN" || fail "cannot split $BIN"
[ "$(compressed "$dbg")" -ge 3 ] || fail "the debug file is not compressed"
sym split --jobs 2 --debug-dir "$TMP/dbg"
grep -q "symbols from $dbg" "$TMP/split.err" || fail "the debug file was not used"
cmp "$TMP/plain.pb.gz" "$TMP/split.pb.gz" ||
	fail "a compressed separate debug file gave another profile"

mostly_lined "$TMP/split.pb.gz" $N

# A debug file that names a dwz file (.gnu_debugaltlink) by a relative
# path is not given a decompressed image (elf/symbolize_modules.c): libdwfl
# reads it as it is, with the same result.  The dwz file named does not
# exist; nothing in this DWARF refers to it.
cp "$dbg" "$TMP/dbg.keep"
printf 'missing.dwz\0%s' '0123456789abcdefghij' >"$TMP/altlink"
objcopy --add-section .gnu_debugaltlink="$TMP/altlink" "$dbg" ||
	fail "cannot add .gnu_debugaltlink to $dbg"
sym altlink --jobs 2 --debug-dir "$TMP/dbg"
cmp "$TMP/plain.pb.gz" "$TMP/altlink.pb.gz" ||
	fail "a compressed debug file with .gnu_debugaltlink gave another profile"
mv "$TMP/dbg.keep" "$dbg"

# Damage the middle of the compressed .debug_info of the debug file.
set -- $(readelf -SW "$dbg" | sed -n 's/^ *\[ *[0-9]*\] //p' |
	awk '$1 == ".debug_info" { print $4, $5 }')
[ $# = 2 ] || fail "no .debug_info in $dbg"
printf 'garbage garbage garbage garbage garbage garbage garbage' |
	dd of="$dbg" bs=1 seek=$((0x$1 + 0x$2 / 2)) conv=notrunc 2>/dev/null ||
	fail "cannot damage $dbg"
sym damaged --jobs 2 --debug-dir "$TMP/dbg"
[ "$(grep -c "$dbg: a compressed DWARF section is damaged" "$TMP/damaged.err")" = 1 ] ||
	fail "want one warning about the damaged section"
go tool pprof -symbolize=none -raw "$TMP/damaged.pb.gz" >"$TMP/damaged.raw" 2>"$TMP/raw.err" ||
	{ cat "$TMP/raw.err" >&2; fail "go tool pprof -raw cannot read the damaged run's output"; }
named=$(awk '/^Locations/ { s = 1; next } /^Mappings/ { s = 0 }
	s && $1 ~ /^[0-9]+:$/ && NF > 3 && $4 != "??"' "$TMP/damaged.raw" | wc -l)
note "damaged DWARF: $named of $N locations named from the symbol table"
[ $((named * 10)) -ge $((N * 9)) ] || fail "damaged DWARF: only $named of $N locations named"
echo PASS
