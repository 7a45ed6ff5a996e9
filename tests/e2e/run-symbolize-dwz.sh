#!/bin/sh
# run-symbolize-dwz.sh - DWARF that dwz moved partly into a shared file
# (.gnu_debugaltlink; Debian's dh_dwz does this to the debug files of
# packages with several binaries).  Two programs sharing a struct and an
# inline function are built with -g, then `dwz -m` moves what they share
# into one file named by absolute path; one program is stripped, its debug
# file (which keeps the link) put under a --debug-dir's .build-id tree.
# Symbolized from there, it must name the same functions, inlined calls,
# files and lines as the program before dwz: the names in the shared file
# come from the shared file, never from the debug file itself read as if
# it were the shared one (libdwfl asks the find_debuginfo callback for the
# shared file too).  The same with one thread, and with the debug file's
# DWARF compressed (decompressed once into an image, whose DWARF libdw
# reads with the shared file found by the absolute path dwz wrote).
. "$(dirname "$0")/lib.sh"

SYNTH="$BUILD/tests/tools/pprof-synth"
[ -x "$SYNTH" ] || fail "$SYNTH is missing"
need gcc dwz objcopy readelf nm go awk

cat >"$TMP/a.c" <<'SRC'
#include <stdio.h>
struct widget { int a, b; const char *name; };
static inline int widget_area(const struct widget *w) { return w->a * w->b; }
int use_widget_a(struct widget *w) { return widget_area(w) + 1; }
int main(int c, char **v)
{
	struct widget w = { c, 2, v[0] };
	printf("%d\n", use_widget_a(&w));
	return 0;
}
SRC
sed 's/use_widget_a/use_widget_b/g' "$TMP/a.c" >"$TMP/b.c"
(cd "$TMP" && gcc -O2 -g -o a a.c && gcc -O2 -g -o b b.c) || fail "gcc failed"
cp "$TMP/a" "$TMP/a.orig"
dwz -m "$TMP/common.debug" -M "$TMP/common.debug" "$TMP/a" "$TMP/b" ||
	fail "dwz -m failed"
readelf -S "$TMP/a" | grep -q gnu_debugaltlink || fail "dwz wrote no .gnu_debugaltlink"
readelf -wi "$TMP/a" 2>/dev/null | grep -q 'alt indirect string\|<alt ' ||
	fail "nothing of a's DWARF refers to the shared file"

# Addresses: a few bytes into each function (use_widget_a has
# widget_area inlined there).
nm "$TMP/a" | awk '$2 == "T" && ($3 == "main" || $3 == "use_widget_a") { print $1 }' |
	while read -r a; do printf '0x%x\n' $((0x$a + 4)); done >"$TMP/addrs"
[ "$(wc -l <"$TMP/addrs")" = 2 ] || fail "main and use_widget_a not both in nm a"

# Stripped, its debug file (with the link) under DIR/.build-id.
id=$(readelf -n "$TMP/a" | awk '/Build ID:/ { print $3 }')
[ -n "$id" ] || fail "no build ID in a"
d=$(echo "$id" | cut -c1-2)
mkdir -p "$TMP/dbg/.build-id/$d"
dbg="$TMP/dbg/.build-id/$d/$(echo "$id" | cut -c3-).debug"
objcopy --only-keep-debug "$TMP/a" "$dbg" && cp "$TMP/a" "$TMP/stripped" &&
	objcopy --strip-debug "$TMP/stripped" || fail "cannot split a"
readelf -S "$dbg" 2>/dev/null | grep -q gnu_debugaltlink || fail "the debug file lost its link"

locations() {	# NAME ELF [OPTIONS...]: symbolize, print the Locations
	name=$1 elf=$2; shift 2
	"$SYNTH" -e "$elf" -o "$TMP/$name.raw.pb.gz" <"$TMP/addrs" ||
		fail "pprof-synth ($name) failed"
	"$TRACER" symbolize "$TMP/$name.raw.pb.gz" -o "$TMP/$name.pb.gz" \
		--no-debuginfod "$@" 2>"$TMP/$name.err" ||
		{ cat "$TMP/$name.err" >&2; fail "symbolize ($name) failed"; }
	go tool pprof -raw -symbolize=none "$TMP/$name.pb.gz" 2>/dev/null |
		sed -n '/^Locations/,/^Mappings/p' | grep -v '^Mappings' >"$TMP/$name.locs"
	sed "s/^/    $name: /" "$TMP/$name.locs"
}

locations before "$TMP/a.orig"
grep -q 'widget_area .*a\.c:3' "$TMP/before.locs" ||
	fail "the program before dwz: no inlined widget_area at a.c:3"
locations split "$TMP/stripped" --debug-dir "$TMP/dbg"
grep -q "symbols from $dbg" "$TMP/split.err" || fail "the debug file was not used"
cmp -s "$TMP/before.locs" "$TMP/split.locs" ||
	fail "after dwz, from the debug file: other functions, files or lines"
locations split1 "$TMP/stripped" --debug-dir "$TMP/dbg" --jobs 1
cmp -s "$TMP/before.locs" "$TMP/split1.locs" || fail "after dwz, --jobs 1: other locations"

objcopy --compress-debug-sections=zlib "$dbg" || fail "cannot compress $dbg"
locations packed "$TMP/stripped" --debug-dir "$TMP/dbg"
cmp -s "$TMP/before.locs" "$TMP/packed.locs" ||
	fail "after dwz, from the compressed debug file: other locations"
echo PASS
