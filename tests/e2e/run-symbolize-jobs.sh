#!/bin/sh
# run-symbolize-jobs.sh - `pprof-alloc symbolize --jobs N` writes the same
# bytes whatever N.  4000 addresses drawn from the tracer's own .text (built
# -O2 -g: dozens of compile units, with .debug_aranges) become an
# unsymbolized profile (tests/tools/pprof-synth); symbolizing it with
# --jobs 1, 2 and 5 must give byte-identical files that go tool pprof reads
# with functions, files and lines for most locations.  Bad --jobs values
# are usage errors (exit 2).  A profile of 40000 addresses, over 1 MiB
# packed, is written as several gzip members that go tool pprof reads.
. "$(dirname "$0")/lib.sh"
need python3

SYNTH="$BUILD/tests/tools/pprof-synth"
N=4000
[ -x "$SYNTH" ] || fail "$SYNTH is missing"
need readelf go awk

text_addrs "$TRACER" $N 7 dwarf >"$TMP/addrs"
"$SYNTH" -e "$TRACER" -o "$TMP/raw.pb.gz" <"$TMP/addrs" || fail "pprof-synth failed"

for j in 1 2 5; do
	"$TRACER" symbolize "$TMP/raw.pb.gz" -o "$TMP/out$j.pb.gz" \
		--no-debuginfod --jobs $j 2>"$TMP/err$j" ||
		{ cat "$TMP/err$j" >&2; fail "symbolize --jobs $j failed"; }
	sed "s/^/    jobs $j: /" "$TMP/err$j"
done
cmp "$TMP/out1.pb.gz" "$TMP/out2.pb.gz" || fail "--jobs 1 and --jobs 2 wrote different files"
cmp "$TMP/out1.pb.gz" "$TMP/out5.pb.gz" || fail "--jobs 1 and --jobs 5 wrote different files"
# The default (online CPUs) too.
"$TRACER" symbolize "$TMP/raw.pb.gz" -o "$TMP/outd.pb.gz" --no-debuginfod -q ||
	fail "symbolize with the default --jobs failed"
cmp "$TMP/out1.pb.gz" "$TMP/outd.pb.gz" || fail "the default --jobs wrote a different file"

mostly_lined "$TMP/out2.pb.gz" $N

# A big output (over 1 MiB packed) is gzipped as several members in
# parallel: go tool pprof must read every location of it.
BIG=40000
text_addrs "$TRACER" $BIG 8 dwarf >"$TMP/big.addrs"
"$SYNTH" -e "$TRACER" -o "$TMP/big.pb.gz" <"$TMP/big.addrs" || fail "pprof-synth failed"
"$TRACER" symbolize "$TMP/big.pb.gz" -o "$TMP/bigout.pb.gz" --no-debuginfod -q ||
	fail "symbolize of $BIG addresses failed"
members=$(python3 -c '
import sys, zlib
data = open(sys.argv[1], "rb").read(); n = 0; size = 0
while data:
	d = zlib.decompressobj(31); size += len(d.decompress(data)); data = d.unused_data; n += 1
print(n, size)' "$TMP/bigout.pb.gz") || fail "python3 cannot read the gzip members"
note "$BIG addresses: gzip members and bytes: $members"
[ "${members%% *}" -ge 2 ] || fail "a ${members#* }-byte profile was written as ${members%% *} gzip member(s), want several"
locs=$(go tool pprof -symbolize=none -raw "$TMP/bigout.pb.gz" 2>"$TMP/raw.err" |
	awk '/^Locations/ { s = 1; next } /^Mappings/ { s = 0 } s && $1 ~ /^[0-9]+:$/' | wc -l)
[ "$locs" -eq $BIG ] || fail "go tool pprof read $locs of $BIG locations of the multi-member file"

for bad in 0 -1 x 65 ""; do
	"$TRACER" symbolize "$TMP/raw.pb.gz" -o "$TMP/bad.pb.gz" --jobs "$bad" 2>"$TMP/bad.err"
	rc=$?
	[ $rc = 2 ] || fail "--jobs '$bad': exit $rc, want 2"
	grep -q "invalid --jobs" "$TMP/bad.err" || fail "--jobs '$bad': no 'invalid --jobs' message: $(cat "$TMP/bad.err")"
done
echo PASS
