#!/bin/sh
# run-gzip-bomb.sh - `pprof-alloc symbolize` refuses a decompression bomb
# before it costs memory, reads a large real profile whole, and reads a
# profile from a pipe.
#
# Bombs, made by zlib's deflate without ever holding more than a MiB
# decompressed: 1 GiB of zeros (4.6 MB), the same as two members; a valid
# first field (a 1 GiB string, field 6) followed by the zeros, whose bytes
# look like a profile until they expand too much, in one member and as
# three (the field's tag alone, then the zeros).  Each is checked to
# decompress to a whole GiB, then symbolized from its file and through a
# pipe: exit 1, one line on stderr naming the input and the reason (not a
# pprof profile / a decompression bomb), no output, and a peak RSS
# (wait4's, measured by python) under 64 MiB.
#
# A bomb for protobuf-c instead: "" as the string table, then 15.5
# million empty samples (2 bytes each: 31 MB raw, 30 KB gzipped, under the
# 32 MiB at which the ratio starts to count).  It is a profile by every
# other check, and protobuf-c would unpack it into 1.8 GB.  Raw and
# gzipped, from the file and through a pipe: exit 1, one line saying what
# unpacking would take and that it is not a profile, RSS under 64 MiB.
#
# A real profile past the 32 MiB at which the ratio starts to count
# (pprof-synth: 1.2M addresses of libLLVM, ~40 MB packed) is symbolized;
# its peak RSS is over the limit, so the meter is shown to measure.  The
# same bytes come out when it is read from a pipe (`-`), and for a small
# profile from /dev/stdin, a FIFO, and as raw protobuf through a pipe.
# An empty pipe is refused as empty.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/symbolize/common.sh"

need gzip python3 readelf awk cmp mkfifo timeout clang
SYNTH="$BUILD/tests/tools/pprof-synth"
[ -x "$SYNTH" ] || fail "$SYNTH is missing"
LIMIT_KB=65536
GIB=1073741824
# under ASan, freed memory waits in a quarantine that grows RSS by design
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1"
mkdir -p "$R/out"

# measure NAME CMD...: run CMD (standard input as given, standard output
# to /dev/null, standard error in $R/NAME.err); "STATUS PEAK-RSS-KiB" in
# $R/NAME.rss.  Works as the last command of a pipeline too.
MAXRSS_PY='
import os, sys
pid = os.fork()
if pid == 0:
    try:
        err = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(err, 2)
        os.dup2(os.open("/dev/null", os.O_WRONLY), 1)
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
'
measure() {
	_n=$1; shift
	python3 -c "$MAXRSS_PY" "$R/$_n.err" "$@" >"$R/$_n.rss"
}

# refused NAME NAMED WORDS: NAME's run exited 1 with one line on stderr,
# "cannot read NAMED: ...WORDS...", wrote nothing, and stayed under the
# RSS limit.
refused() {
	read -r _rc _rss <"$R/$1.rss" || { check_failed "$1: no measurement"; return; }
	note "$1: exit $_rc, peak RSS $_rss KiB"
	sed 's/^/    stderr: /' "$R/$1.err"
	[ "$_rc" = 1 ] || check_failed "$1: exit $_rc, want 1"
	[ "$(wc -l <"$R/$1.err")" = 1 ] || check_failed "$1: want one line on stderr"
	grep -q -F -- "cannot read $2: " "$R/$1.err" || check_failed "$1: the message does not name $2"
	grep -q -F -- "$3" "$R/$1.err" || check_failed "$1: the message does not say '$3'"
	[ "$_rss" -gt 0 ] && [ "$_rss" -lt $LIMIT_KB ] ||
		check_failed "$1: peak RSS $_rss KiB, want under $LIMIT_KB"
	[ -z "$(ls -A "$R/out")" ] || check_failed "$1: wrote $(ls -A "$R/out")"
	rm -rf "$R/out" && mkdir "$R/out"
}

# --- the bombs: gzip members written by zlib's deflate, a MiB of zeros
# compressed once and its bytes repeated (a full flush ends each MiB on a
# byte boundary with the history reset, so each is a valid run of blocks
# on its own), closed by an empty final block and the CRC and size of what
# they hold; each is checked below by inflating it whole
TAG='\062\200\200\200\200\004'	# field 6 (a string), 2^30 bytes long
# bomb FILE PREFIX MIBS: one member of PREFIX (octal escapes) and MIBS MiB of zeros
bomb() {
	printf "$2" | python3 -c '
import struct, sys, zlib
prefix, mibs = sys.stdin.buffer.read(), int(sys.argv[2])
c = zlib.compressobj(1, zlib.DEFLATED, -15)
head = c.compress(prefix) + c.flush(zlib.Z_FULL_FLUSH)
zeros = bytes(1 << 20)
mib = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
crc = zlib.crc32(prefix)
for _ in range(mibs):
    crc = zlib.crc32(zeros, crc)
size = (len(prefix) + (mibs << 20)) & 0xffffffff
with open(sys.argv[1], "wb") as f:
    f.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + head)
    for _ in range(mibs):
        f.write(mib)
    f.write(b"\x03\x00" + struct.pack("<II", crc, size))
' "$1" "$3" || fail "cannot write $1"
}
bomb "$R/zeros.gz" "" 1024
bomb "$R/string.gz" "$TAG" 1024
bomb "$R/half.gz" "" 512
bomb "$R/tag.gz" "$TAG" 0
cat "$R/half.gz" "$R/half.gz" >"$R/zeros-members.gz"
cat "$R/tag.gz" "$R/half.gz" "$R/half.gz" >"$R/string-members.gz"
# gunzipped_size FILE: how many bytes FILE decompresses to, every member
# (zlib, 16 MiB at a time); fails on a truncated or corrupt file.
gunzipped_size() {
	python3 -c '
import sys, zlib
data, n = open(sys.argv[1], "rb").read(), 0
while data:
    d = zlib.decompressobj(31)
    while not d.eof:
        out = d.decompress(data, 1 << 24)
        if not out and not d.unconsumed_tail and not d.eof:
            sys.exit("truncated")
        n += len(out)
        data = d.unconsumed_tail
    data = d.unused_data
print(n)' "$1" || fail "cannot gunzip $1"
}
for b in zeros zeros-members string string-members; do
	n=$(gunzipped_size "$R/$b.gz") || exit 1
	note "$b.gz: $(wc -c <"$R/$b.gz") bytes, $n decompressed"
	[ "$n" -ge $GIB ] || fail "$b.gz decompresses to $n bytes, not a GiB"
done

for b in zeros zeros-members; do
	measure "$b" "$TRACER" symbolize "$R/$b.gz" -o "$R/out/$b.pb.gz" --no-debuginfod
	refused "$b" "$R/$b.gz" "not a pprof profile"
	cat "$R/$b.gz" | measure "$b-pipe" "$TRACER" symbolize - -o "$R/out/$b.pb.gz" --no-debuginfod
	refused "$b-pipe" "standard input" "not a pprof profile"
done
for b in string string-members; do
	measure "$b" "$TRACER" symbolize "$R/$b.gz" -o "$R/out/$b.pb.gz" --no-debuginfod
	refused "$b" "$R/$b.gz" "decompression bomb"
	cat "$R/$b.gz" | measure "$b-pipe" "$TRACER" symbolize - -o "$R/out/$b.pb.gz" --no-debuginfod
	refused "$b-pipe" "standard input" "decompression bomb"
done
measure string-stdin "$TRACER" symbolize /dev/stdin -o "$R/out/x.pb.gz" --no-debuginfod <"$R/string.gz"
refused string-stdin /dev/stdin "decompression bomb"
rm -f "$R"/*.gz

# --- a bomb for protobuf-c: many empty samples, raw and gzipped
python3 -c '
import sys
sys.stdout.buffer.write(b"\x32\x00" + b"\x12\x00" * 15500000)' >"$R/empty.pb" ||
	fail "cannot write the empty samples"
gzip -9 <"$R/empty.pb" >"$R/empty.pb.gz"
note "empty.pb: $(wc -c <"$R/empty.pb") bytes, $(wc -c <"$R/empty.pb.gz") gzipped"
for b in empty.pb empty.pb.gz; do
	measure "$b" "$TRACER" symbolize "$R/$b" -o "$R/out/$b.out" --no-debuginfod
	refused "$b" "$R/$b" "(15500000 samples of 2 bytes each take"
	grep -q -F -- "not a profile pprof-alloc reads" "$R/$b.err" ||
		check_failed "$b: the message does not say it is not a profile"
	cat "$R/$b" | measure "$b-pipe" "$TRACER" symbolize - -o "$R/out/$b.out" --no-debuginfod
	refused "$b-pipe" "standard input" "would take 1813 MiB to unpack"
done
rm -f "$R"/empty*

# --- a large real profile: read whole, from the file and from a pipe
LLVM=$(ldd "$(readlink -f "$(command -v clang)")" | awk '/libLLVM/ { print $3; exit }')
[ -n "$LLVM" ] && [ -f "$LLVM" ] || fail "clang links no libLLVM to draw addresses from"
text_addrs "$LLVM" 1200000 5 >"$R/big.addrs"
"$SYNTH" -e "$LLVM" -o "$R/big.pb.gz" <"$R/big.addrs" || fail "pprof-synth failed"
n=$(gunzipped_size "$R/big.pb.gz") || exit 1
note "big.pb.gz: $(wc -c <"$R/big.pb.gz") bytes, $n decompressed"
[ "$n" -gt $((32 << 20)) ] || fail "the large profile is only $n bytes decompressed"
measure big "$TRACER" symbolize "$R/big.pb.gz" -o "$R/big-file.pb.gz" --no-debuginfod -q
read -r rc rss <"$R/big.rss"
note "big: exit $rc, peak RSS $rss KiB"
[ "$rc" = 0 ] || { cat "$R/big.err" >&2; fail "symbolize of the large profile: exit $rc"; }
[ "$rss" -gt $LIMIT_KB ] || check_failed "the large profile took $rss KiB: is the meter measuring?"
cat "$R/big.pb.gz" | "$TRACER" symbolize - -o "$R/big-pipe.pb.gz" --no-debuginfod -q ||
	check_failed "symbolize of the large profile from a pipe failed"
cmp "$R/big-file.pb.gz" "$R/big-pipe.pb.gz" || check_failed "the large profile read from a pipe came out different"
rm -f "$R"/big*

# --- a small profile: a pipe, /dev/stdin, a FIFO, raw protobuf
text_addrs "$TRACER" 4000 7 >"$R/addrs"
"$SYNTH" -e "$TRACER" -o "$R/raw.pb.gz" <"$R/addrs" || fail "pprof-synth failed"
"$TRACER" symbolize "$R/raw.pb.gz" -o "$R/file.pb.gz" --no-debuginfod -q ||
	fail "symbolize of the small profile failed"
# same NAME: $R/NAME.pb.gz is what the file gave
same() {
	if [ ! -s "$R/$1.pb.gz" ]; then
		check_failed "$1: no output"
	elif ! cmp -s "$R/file.pb.gz" "$R/$1.pb.gz"; then
		check_failed "$1: not the output of the file"
	else
		note "$1: the same bytes as from the file"
	fi
}
cat "$R/raw.pb.gz" | "$TRACER" symbolize - -o "$R/pipe.pb.gz" --no-debuginfod -q
same pipe
cat "$R/raw.pb.gz" | "$TRACER" symbolize /dev/stdin -o "$R/devstdin.pb.gz" --no-debuginfod -q
same devstdin
"$TRACER" symbolize - -o "$R/redirect.pb.gz" --no-debuginfod -q <"$R/raw.pb.gz"
same redirect
gzip -dc "$R/raw.pb.gz" | "$TRACER" symbolize - -o "$R/rawpipe.pb.gz" --no-debuginfod -q
same rawpipe
mkfifo "$R/fifo"
timeout 60 sh -c 'cat "$1" >"$2"' sh "$R/raw.pb.gz" "$R/fifo" &
writer=$!
timeout 60 "$TRACER" symbolize "$R/fifo" -o "$R/fifo.pb.gz" --no-debuginfod -q
wait $writer || check_failed "the FIFO's writer failed"
same fifo

: | measure empty "$TRACER" symbolize - -o "$R/out/empty.pb.gz" --no-debuginfod
refused empty "standard input" "empty"
finish
