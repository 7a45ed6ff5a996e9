#!/bin/sh
# run-symbolize-errors.sh - `pprof-alloc symbolize` on bad input.  An input
# that is not a whole pprof profile (truncated gzip, truncated protobuf in
# good gzip, /etc/passwd, an empty file, gzipped random bytes, a directory,
# a missing file, protobuf whose indices point nowhere) or an output that cannot be written: exit 1, one line on
# stderr naming the file, no crash, no output file (nor a temporary one)
# left behind.  Usage errors exit 2.  Bad candidate debug files (random
# bytes, an empty file, a truncated ELF at the .build-id path; a truncated
# program at the recorded path) are reported per mapping, naming the file,
# the command still exits 0, and the next candidate is used if there is one.
# The output is fsynced before its rename only where it replaces the input
# (a power cut must not leave an empty file where the only copy was):
# strace sees an fsync then, and none for an output of its own.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/symbolize/common.sh"

need gcc objcopy strip readelf gzip go python3 strace
symprog_lines

mkdir -p "$R/build/stripped" "$R/out" "$R/bad"
compile "$R/build/symprog" gcc "$SYMSRC/symprog.c"
split_debug "$R/build/symprog" "$R/build/stripped/symprog" "$R/build/symprog.debug"
BID=$(build_id "$R/build/symprog") || exit 1
P="$R/rec/symprog"
put_file "$R/build/stripped/symprog" "$P"
"$TRACER" --rate 1 --no-symbolize -o "$R/raw.pb.gz" -- "$P" $REC $TAB >"$R/rec.out" 2>"$R/rec.err"
rc=$?
[ $rc = 0 ] || { cat "$R/rec.err" >&2; fail "recording with --no-symbolize: exit $rc"; }
raw_of "$R/raw.pb.gz" "$R/raw.raw"
SAID="pprof-alloc symbolize: $P [$BID]"

# random_bytes N SEED: N pseudo-random bytes, the same every run.
random_bytes() {
	python3 -c 'import random, sys
r = random.Random(int(sys.argv[2]))
sys.stdout.buffer.write(bytes(r.getrandbits(8) for _ in range(int(sys.argv[1]))))' "$1" "$2"
}

# --- inputs that are not a (whole) profile: exit 1
size=$(wc -c <"$R/raw.pb.gz")
head -c $((size / 2)) "$R/raw.pb.gz" >"$R/bad/truncated.pb.gz"
gzip -dc "$R/raw.pb.gz" >"$R/raw.pb" || fail "cannot gunzip the raw profile"
size=$(wc -c <"$R/raw.pb")
# cut inside a length-delimited field from about 2/3 on: a cut that falls
# between two fields leaves a valid, shorter profile
python3 - "$R/raw.pb" <<'PY' | gzip >"$R/bad/truncated-proto.pb.gz" || fail "cannot cut the protobuf"
import sys
data = open(sys.argv[1], "rb").read()
def varint(i):
    v = shift = 0
    while True:
        b = data[i]; i += 1
        v |= (b & 0x7f) << shift; shift += 7
        if not b & 0x80:
            return v, i
i, cut = 0, None
while i < len(data):
    key, j = varint(i)
    wt = key & 7
    if wt == 0:
        _, j = varint(j)
    elif wt == 2:
        n, j = varint(j)
        if i >= len(data) * 2 // 3 and n >= 2:
            cut = j + n // 2
            break
        j += n
    elif wt == 1:
        j += 8
    elif wt == 5:
        j += 4
    else:
        sys.exit("unexpected wire type %d" % wt)
    i = j
if cut is None:
    sys.exit("no length-delimited field past 2/3")
sys.stdout.buffer.write(data[:cut])
PY
cp /etc/passwd "$R/bad/passwd"
: >"$R/bad/empty.pb.gz"
random_bytes 4096 42 | gzip >"$R/bad/random.pb.gz"
mkdir "$R/bad/a-directory.pb.gz"
# Well-formed protobuf, wrong profile: a sample type naming string 9 of a
# table of 3, and a location in mapping 7 of a profile with mapping 1 only.
python3 - "$R/bad" <<'PY' || fail "cannot write the crafted profiles"
import gzip, sys
def varint(n):
    out = b""
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])
def field(num, value):        # varint field
    return varint(num << 3) + varint(value)
def message(num, body):       # length-delimited field
    return varint(num << 3 | 2) + varint(len(body)) + body
def strings(*table):
    return b"".join(message(6, t.encode()) for t in table)
def sample(loc, value):
    return message(2, message(1, varint(loc)) + message(2, varint(value)))
bad_string = message(1, field(1, 9) + field(2, 2)) + sample(1, 1) + \
    message(3, field(1, 1) + field(2, 0x1000) + field(3, 0x2000)) + \
    message(4, field(1, 1) + field(2, 1) + field(3, 0x1100)) + \
    strings("", "objects", "count")
bad_mapping = message(1, field(1, 1) + field(2, 2)) + sample(1, 1) + \
    message(3, field(1, 1) + field(2, 0x1000) + field(3, 0x2000)) + \
    message(4, field(1, 1) + field(2, 7) + field(3, 0x1100)) + \
    strings("", "objects", "count")
for name, data in (("bad-string.pb.gz", bad_string), ("bad-mapping.pb.gz", bad_mapping)):
    with open(sys.argv[1] + "/" + name, "wb") as f:
        f.write(gzip.compress(data))
PY

# bad_input NAME FILE: symbolizing FILE fails cleanly.
bad_input() {
	symbolize "$R/$1.err" "$2" -o "$R/out/$1.pb.gz" --no-debuginfod
	[ "$sym_rc" = 1 ] || check_failed "$1: exit $sym_rc, want 1"
	_n=$(wc -l <"$R/$1.err")
	[ "$_n" = 1 ] || check_failed "$1: $_n lines on stderr, want one"
	grep -q -F -- "$2" "$R/$1.err" || check_failed "$1: the message does not name $2"
	[ -z "$(ls -A "$R/out")" ] && return
	check_failed "$1: files left in the output directory: $(ls -A "$R/out")"
	rm -rf "$R/out" && mkdir "$R/out"
}
bad_input truncated "$R/bad/truncated.pb.gz"
bad_input truncated-proto "$R/bad/truncated-proto.pb.gz"
bad_input passwd "$R/bad/passwd"
bad_input empty "$R/bad/empty.pb.gz"
bad_input random "$R/bad/random.pb.gz"
bad_input directory "$R/bad/a-directory.pb.gz"
bad_input missing "$R/bad/no-such-file.pb.gz"
bad_input bad-string "$R/bad/bad-string.pb.gz"
# a location in a missing mapping: refused (exit 1, as above), or, as pprof
# itself takes it, read as a location without a mapping (exit 0 and an
# output pprof reads); never a crash
symbolize "$R/bad-mapping.err" "$R/bad/bad-mapping.pb.gz" -o "$R/out/bad-mapping.pb.gz" --no-debuginfod
case $sym_rc in
1)	bad_input bad-mapping "$R/bad/bad-mapping.pb.gz" ;;
0)	raw_of "$R/out/bad-mapping.pb.gz" "$R/bad-mapping.raw"
	rm -f "$R/out/bad-mapping.pb.gz" ;;
*)	check_failed "a location in a missing mapping: exit $sym_rc, want 1 (or 0)" ;;
esac

# --- an output that cannot be written: exit 1, one line naming it (with
# -q, so that no per-mapping lines come first)
symbolize "$R/unwritable.err" "$R/raw.pb.gz" -o "$R/no-such-dir/heap.pb.gz" --no-debuginfod -q
[ "$sym_rc" = 1 ] || check_failed "output in a missing directory: exit $sym_rc, want 1"
[ "$(wc -l <"$R/unwritable.err")" = 1 ] ||
	check_failed "output in a missing directory: $(wc -l <"$R/unwritable.err") lines on stderr, want one"
grep -q -F "$R/no-such-dir/heap.pb.gz" "$R/unwritable.err" ||
	check_failed "output in a missing directory: the message does not name $R/no-such-dir/heap.pb.gz"
[ ! -e "$R/no-such-dir" ] || check_failed "output in a missing directory: $R/no-such-dir was created"
: >"$R/a-file"
symbolize "$R/notdir.err" "$R/raw.pb.gz" -o "$R/a-file/heap.pb.gz" --no-debuginfod -q
[ "$sym_rc" = 1 ] || check_failed "output under a regular file: exit $sym_rc, want 1"
grep -q -F "$R/a-file/heap.pb.gz" "$R/notdir.err" ||
	check_failed "output under a regular file: the message does not name $R/a-file/heap.pb.gz"
[ ! -s "$R/a-file" ] || check_failed "output under a regular file: $R/a-file was written to"

# --- usage errors: exit 2, nothing written
# usage_error WORD ARGS...: exit 2, WORD in the message, no output file.
usage_error() {
	_word=$1; shift
	symbolize "$R/usage.err" "$@"
	[ "$sym_rc" = 2 ] || check_failed "pprof-alloc symbolize $*: exit $sym_rc, want 2"
	[ -s "$R/usage.err" ] || check_failed "pprof-alloc symbolize $*: no message"
	[ -z "$_word" ] || grep -q -i -e "$_word" "$R/usage.err" ||
		check_failed "pprof-alloc symbolize $*: the message does not mention '$_word'"
	[ -z "$(ls -A "$R/out")" ] || check_failed "pprof-alloc symbolize $*: wrote $(ls -A "$R/out")"
	rm -rf "$R/out" && mkdir "$R/out"
}
usage_error "" "$R/raw.pb.gz"
usage_error bogus --bogus "$R/raw.pb.gz" -o "$R/out/x.pb.gz"
usage_error "" -o "$R/out/x.pb.gz"
usage_error "" --no-debuginfod
usage_error debug-dir "$R/raw.pb.gz" -o "$R/out/x.pb.gz" --debug-dir
usage_error debuginfod-timeout "$R/raw.pb.gz" -o "$R/out/x.pb.gz" --debuginfod-timeout abc

# --- --help
"$TRACER" symbolize --help >"$R/help.out" 2>"$R/help.err"
rc=$?
[ $rc = 0 ] || check_failed "symbolize --help: exit $rc, want 0"
grep -q -e '--debug-dir' "$R/help.out" || check_failed "symbolize --help does not mention --debug-dir on stdout"
[ -z "$(ls -A "$R/out")" ] || check_failed "symbolize --help wrote $(ls -A "$R/out")"

# --- bad candidate files: reported per mapping, exit 0, next one used
random_bytes 8192 7 >"$R/build/random.debug"
size=$(wc -c <"$R/build/symprog.debug")
head -c $((size / 2)) "$R/build/symprog.debug" >"$R/build/truncated.debug"
size=$(wc -c <"$R/build/symprog")
head -c $((size / 3)) "$R/build/symprog" >"$R/build/truncated-program"
D1=$(build_id_path "$R/dbg1" "$BID")
D2=$(build_id_path "$R/dbg2" "$BID")

# candidates CASE ARGS...: symbolize the raw profile with ARGS; exit 0 and
# a profile, whose locations go to $R/CASE.locs.
candidates() {
	_case=$1; shift
	note "case $_case"
	rm -f "$R/out/$_case.pb.gz"
	symbolize "$R/$_case.err" "$R/raw.pb.gz" -o "$R/out/$_case.pb.gz" --no-debuginfod "$@"
	if [ "$sym_rc" != 0 ] || [ ! -s "$R/out/$_case.pb.gz" ]; then
		check_failed "$_case: exit $sym_rc, want 0 and a profile"
		return 1
	fi
	locs_of "$R/out/$_case.pb.gz" "$R/$_case.locs"
	check_summary "$R/$_case.err" "$R/raw.raw"
}
# said_about CASE START [NAMED]: the one line said about symprog's mapping
# starts with START and, if NAMED is given, names NAMED after START.
said_about() {
	_line=$(grep -F "$SAID: " "$R/$1.err")
	[ "$(echo "$_line" | grep -c .)" = 1 ] ||
		{ check_failed "$1: want one line '$SAID: ...', got: '$_line'"; return; }
	case "$_line" in
	"$2"*) ;;
	*) check_failed "$1: the line should start '$2': '$_line'" ;;
	esac
	[ -z "${3:-}" ] || echo "${_line#"$2"}" | grep -q -F -- "$3" ||
		check_failed "$1: the reasons do not name $3: '$_line'"
}

# layout WHAT...: a fresh layout (no recorded path, empty debug dirs), then
# the files: "FILE=DEST" pairs
layout() {
	rm -rf "$R/rec" "$R/dbg1" "$R/dbg2"
	mkdir -p "$R/dbg1" "$R/dbg2"
	for _pair in "$@"; do
		put_file "${_pair%%=*}" "${_pair#*=}"
	done
}

for bad in random truncated; do
	layout "$R/build/$bad.debug=$D1"
	if candidates "$bad-alone" --debug-dir "$R/dbg1"; then
		said_about "$bad-alone" "$SAID: no symbols: " "$D1"
		check_unsymbolized "$R/$bad-alone.locs" "$P"
	fi
	layout "$R/build/$bad.debug=$D1" "$R/build/symprog.debug=$D2"
	if candidates "$bad-then-good" --debug-dir "$R/dbg1" --debug-dir "$R/dbg2"; then
		said_about "$bad-then-good" "$SAID: symbols from $D2 (debug dir)"
		check_symprog "$R/$bad-then-good.locs" "$P"
	fi
	layout "$R/build/$bad.debug=$D1" "$R/build/stripped/symprog=$P"
	if candidates "$bad-then-elf" --debug-dir "$R/dbg1"; then
		said_about "$bad-then-elf" "$SAID: ELF symbols only, from $P (recorded path); no debug info: " "$D1"
		check_symprog_elf_only "$R/$bad-then-elf.locs" "$P"
	fi
done

: >"$R/build/empty.debug"
layout "$R/build/empty.debug=$D1" "$R/build/symprog.debug=$D2"
if candidates empty-then-good --debug-dir "$R/dbg1" --debug-dir "$R/dbg2"; then
	said_about empty-then-good "$SAID: symbols from $D2 (debug dir)"
	check_symprog "$R/empty-then-good.locs" "$P"
fi

# a truncated program at the recorded path (its build ID note is intact,
# its section headers are gone): nothing can name its code, and the line
# about it names it in the reasons (whether as "no symbols" or as "ELF
# symbols only": its dynamic symbols may still be readable); the debug
# file by build ID still serves
layout "$R/build/truncated-program=$P"
if candidates truncated-program --debug-dir "$R/dbg1"; then
	case "$(grep -F "$SAID: " "$R/truncated-program.err")" in
	"$SAID: no symbols: "*)
		said_about truncated-program "$SAID: no symbols: " "$P" ;;
	*)
		said_about truncated-program "$SAID: ELF symbols only, from $P (recorded path); no debug info: " "$P" ;;
	esac
	check_unsymbolized "$R/truncated-program.locs" "$P"
fi
layout "$R/build/truncated-program=$P" "$R/build/symprog.debug=$D1"
if candidates truncated-program-debug --debug-dir "$R/dbg1"; then
	said_about truncated-program-debug "$SAID: symbols from $D1 (debug dir)"
	check_symprog "$R/truncated-program-debug.locs" "$P"
fi
# --- the output's fsync: in place only
# fsyncs OUT ARGS...: the fsync calls of `pprof-alloc symbolize ARGS` (to OUT)
fsyncs() {
	_o=$1; shift
	strace -f -qq -e trace=fsync,fdatasync -o "$_o" \
		"$TRACER" symbolize -q --no-debuginfod "$@" >/dev/null 2>&1 ||
		check_failed "symbolize $* under strace: exit $?"
	grep -c 'sync(' "$_o"
}
cp "$R/raw.pb.gz" "$R/inplace.pb.gz" || fail "cp"
n_new=$(fsyncs "$R/fs-new.txt" "$R/raw.pb.gz" -o "$R/out/fs-new.pb.gz")
n_in=$(fsyncs "$R/fs-in.txt" "$R/inplace.pb.gz" -o "$R/inplace.pb.gz")
note "fsyncs: $n_new writing a new file, $n_in replacing the input"
[ "$n_new" = 0 ] || check_failed "writing a new file: $n_new fsync calls, want none"
[ "$n_in" -ge 1 ] 2>/dev/null || check_failed "replacing the input: no fsync before the rename"
# the same answers either way
locs_of "$R/out/fs-new.pb.gz" "$R/fs-new.locs"
locs_of "$R/inplace.pb.gz" "$R/inplace.locs"
cmp -s "$R/fs-new.locs" "$R/inplace.locs" ||
	check_failed "symbolized in place, the locations differ from a new file's"
finish
