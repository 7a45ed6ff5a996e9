#!/bin/sh
# run-core.sh - a heap profile from a core dump (pprof-alloc --core).
#
# tests/workloads/die.c runs with the agent preloaded and no tracer at all
# (--rate 1 through PPROF_ALLOC_RATE), keeps 8 x 1 MiB (die_keep) and
# 4 x 64 KiB (die_keep_small), frees 2 x 256 KiB (die_freed), and
# segfaults with core dumps enabled for it, the core written in the
# test's directory.  From the core alone: the live heap at the crash, the
# freed blocks from the ring's records, functions by name (symbolized
# through the build IDs the core holds), and how it ended.  The same
# core as crash handlers may pass it on (tests/e2e/core_edit.py makes
# them): without its NT_FILE note, with one that names only the agent's
# memory, with its notes cut short inside NT_FILE, and without NT_FILE
# or DT_DEBUG - the modules then come from the dynamic loader's list and
# the auxiliary vector, and the profile must be as named as the kernel's.
# Then the refusals, each one line and exit 1, never a crash: a core of a
# program without the agent, a core cut short at several points, an
# executable that is not a core, garbage, cores whose agent header was
# damaged, and a core in which nothing names the executable.
. "$(dirname "$0")/lib.sh"
need go python3

W="$WORKLOADS/die"
MiB=1048576

# the core pattern is the machine's (lib.sh), put back at the end
trap 'core_pattern_give; rm -rf "$TMP"' EXIT
core_pattern_take

# dump CMD... : run CMD in $TMP/dump with cores enabled; the core's path
dump() {
	rm -rf "$TMP/dump"; mkdir "$TMP/dump"
	(cd "$TMP/dump" && ulimit -c unlimited && exec "$@") >/dev/null 2>&1
	ls "$TMP"/dump/core* 2>/dev/null | head -n 1
}

core=$(dump env LD_PRELOAD="$AGENT" PPROF_ALLOC_RATE=1 "$W" segv)
[ -n "$core" ] || fail "no core was dumped (core_pattern '$(cat /proc/sys/kernel/core_pattern)')"
mv "$core" "$TMP/agent.core"
note "core: $(stat -c %s "$TMP/agent.core") bytes"

"$TRACER" --core "$TMP/agent.core" -o "$TMP/core.pb.gz" --no-debuginfod 2>"$TMP/core.err"
rc=$?
sed 's/^/    stderr: /' "$TMP/core.err"
[ $rc = 0 ] || fail "--core exited $rc"
grep -q "dumped core on signal 11 (Segmentation fault)" "$TMP/core.err" ||
	check_failed "stderr does not say how the process ended"
pprof_sum "$TMP/core.pb.gz" leaf >"$TMP/core.sum"
check_site "$TMP/core.sum" die_keep 8 $((8 * MiB)) 8 $((8 * MiB))
check_site "$TMP/core.sum" die_keep_small 4 $((256 * 1024)) 4 $((256 * 1024))
check_site "$TMP/core.sum" die_freed 2 $((512 * 1024)) 0 0
# the tables replayed are the heap at the crash, not a peak of the run
go tool pprof -raw "$TMP/core.pb.gz" 2>/dev/null | grep -q "peak_inuse" &&
	check_failed "a core's profile claims a peak (peak_inuse_* sample types)"
grep -q "^# target dumped core on signal 11" "$TMP/core.sum" ||
	check_failed "the profile's comments do not say how the process ended"
grep -q '^# pprof-alloc: core dump .* of process [0-9]* (die)' "$TMP/core.sum" ||
	check_failed "the profile's comments do not name the core and the process"
go tool pprof -raw "$TMP/core.pb.gz" 2>/dev/null | grep -A20 '^Mappings' |
	grep -q "die .*[0-9a-f]\{40\}" ||
	check_failed "the program's mapping has no build ID"
check_core_named "$TMP/core.pb.gz" kernel

# the modules from the loader's list, where NT_FILE is missing or short
for edits in no-file file-only=memfd cut-notes "no-file zero-dt-debug"; do
	name=$(echo "$edits" | tr ' =' '-_')
	python3 "$TOP/tests/e2e/core_edit.py" "$TMP/agent.core" "$TMP/$name.core" $edits ||
		fail "cannot make the $name core"
	"$TRACER" --core "$TMP/$name.core" -o "$TMP/$name.pb.gz" --no-debuginfod 2>"$TMP/$name.err"
	rc=$?
	sed 's/^/    stderr: /' "$TMP/$name.err"
	if [ $rc != 0 ]; then
		check_failed "$name: --core exited $rc"
		continue
	fi
	grep -q "module.* named by the dynamic loader's list" "$TMP/$name.err" ||
		check_failed "$name: the modules did not come from the loader's list"
	check_core_named "$TMP/$name.pb.gz" "$name"
done

# refusals: one line, exit 1
refuse() {	# NAME FILE EXPECTED-WORDS
	"$TRACER" --core "$2" -o "$TMP/$1.pb.gz" 2>"$TMP/$1.err"
	_rc=$?
	if [ $_rc != 1 ] || ! grep -q "$3" "$TMP/$1.err" ||
	   [ "$(wc -l <"$TMP/$1.err")" != 1 ]; then
		check_failed "$1: exit $_rc, want 1 and one line with '$3': $(cat "$TMP/$1.err")"
	else
		note "$1: $(cat "$TMP/$1.err")"
	fi
	[ ! -e "$TMP/$1.pb.gz" ] || check_failed "$1: a profile was written"
}
plain=$(dump "$W" segv)
[ -n "$plain" ] || fail "no core of the program without the agent"
refuse no-agent "$plain" "no pprof-alloc agent memory in it"
refuse not-core "$W" "not a core dump"
head -c 100000 /dev/urandom >"$TMP/garbage"
refuse garbage "$TMP/garbage" "not an ELF file"
: >"$TMP/empty"
refuse empty "$TMP/empty" "not an ELF file"
refuse missing "$TMP/no-such-core" "cannot open it"
size=$(stat -c %s "$TMP/agent.core")
for cut in 64 2000 $((size / 2)) $((size - 4096)); do
	head -c $cut "$TMP/agent.core" >"$TMP/cut.core"
	"$TRACER" --core "$TMP/cut.core" -o "$TMP/cut.pb.gz" 2>"$TMP/cut.err"
	rc=$?
	# cut after the agent's memory, a profile is still possible;
	# otherwise a one-line refusal, and never a crash
	if [ $rc -ge 2 ] || { [ $rc = 1 ] && [ "$(wc -l <"$TMP/cut.err")" != 1 ]; }; then
		check_failed "core cut at $cut bytes: exit $rc: $(cat "$TMP/cut.err")"
	else
		note "core cut at $cut bytes: exit $rc: $(head -n 1 "$TMP/cut.err")"
	fi
	rm -f "$TMP/cut.pb.gz"
done
# damaged agent header: the magic, then the ring size
python3 - "$TMP/agent.core" "$TMP/bad-magic.core" "$TMP/bad-size.core" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
magic = struct.pack("<Q", 0x434c4146524f5050)
at = d.find(magic)
while at >= 0 and at % 4096:	# the header starts a page of the core
    at = d.find(magic, at + 1)
assert at > 0, "no agent header in the core"
m = bytearray(d); m[at] ^= 0xff
open(sys.argv[2], "wb").write(m)
s = bytearray(d); struct.pack_into("<Q", s, at + 32, 12345)   # data_size
open(sys.argv[3], "wb").write(s)
PY
refuse bad-magic "$TMP/bad-magic.core" "does not start with the pprof-alloc magic"
refuse bad-size "$TMP/bad-size.core" "does not agree with its layout"
# nothing names the executable: no NT_FILE, no r_debug, no path in the
# auxiliary vector or pr_psargs
python3 "$TOP/tests/e2e/core_edit.py" "$TMP/agent.core" "$TMP/nameless.core" \
	no-file zero-dt-debug no-exe-path || fail "cannot make the nameless core"
refuse nameless "$TMP/nameless.core" "cannot name the modules of .*the executable's among them: no NT_FILE note"
"$TRACER" --core "$TMP/agent.core" --pid 1 >/dev/null 2>"$TMP/usage.err"
[ $? = 2 ] || check_failed "--core with --pid is not a usage error"
finish
