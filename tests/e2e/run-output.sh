#!/bin/sh
# run-output.sh - where the profile and its readings go.
#
# Before the run: an -o in a directory that does not exist or cannot be
# written (as nobody), an -o that is a directory (or ends in /), a FIFO or
# a device, readings beside it (PROFILE.json, PROFILE.timeline.jsonl) that
# are directories, and a working directory that cannot take the default
# name are refused with one line and exit 2 before anything runs: the
# command never starts (tests/workloads/gate.c would write its READY
# file), an attached process never gets the agent, --core reads nothing.
#
# After the run: the output directory removed while the program runs,
# then the working directory too, and a full filesystem (a 1 MiB tmpfs in
# a mount namespace of the test's own): the tracer says loudly that it
# cannot write where it was told, writes the profile, PROFILE.json and the
# timeline to the working directory or $TMPDIR instead and names them, the
# files there are whole (go tool pprof, python's json), and the exit status
# is still the program's.  Attached, the exit status is 1 then.
#
# Durability: the profile and PROFILE.json are fsynced before their rename
# only when they replace a file (a power cut must not leave an empty file
# where an older profile was); new files are not, as that wait was a
# tenth of a launch's fixed cost: strace counts the fsyncs both ways.
. "$(dirname "$0")/lib.sh"
readable_build	# (run as nobody)
need go python3
attach_init

G="$WORKLOADS/gate"
mkdir "$TMP/out" "$TMP/cwd"

# refused NAME RC WORDS -- TRACER ARGS: the tracer exits RC (2) with one
# line on stderr that holds WORDS, and the gate program never started
refused() {
	_name=$1 _rc=$2 _words=$3
	shift 4
	rm -f "$TMP/ready"
	"$@" >"$TMP/$_name.out" 2>"$TMP/$_name.err"
	_got=$?
	note "$_name: exit $_got: $(cat "$TMP/$_name.err")"
	[ "$_got" = "$_rc" ] || check_failed "$_name: exit $_got, want $_rc"
	[ "$(wc -l <"$TMP/$_name.err")" = 1 ] ||
		check_failed "$_name: want one line on stderr, got $(wc -l <"$TMP/$_name.err")"
	grep -qF -- "$_words" "$TMP/$_name.err" ||
		check_failed "$_name: stderr does not say '$_words'"
	[ ! -e "$TMP/ready" ] || check_failed "$_name: the program ran anyway"
}
GATE="$G $TMP/ready $TMP/go 0"
touch "$TMP/go"

refused nodir 2 "cannot write the profile /nonexistent/dir/x.pb.gz: directory /nonexistent/dir: No such file or directory" -- \
	"$TRACER" -o /nonexistent/dir/x.pb.gz -- $GATE
refused isdir 2 "cannot write the profile $TMP/out: it is a directory" -- \
	"$TRACER" -o "$TMP/out" -- $GATE
refused slash 2 "it names a directory" -- \
	"$TRACER" -o "$TMP/new/" -- $GATE
# (nodes of our own: a regression must not replace the machine's /dev/null)
mkfifo "$TMP/fifo"
refused fifo 2 "$TMP/fifo: it is not a regular file" -- \
	"$TRACER" -o "$TMP/fifo" -- $GATE
[ -p "$TMP/fifo" ] || check_failed "fifo: the FIFO was replaced"
mknod "$TMP/null" c 1 3 || fail "cannot make a device node (root needed)"
refused device 2 "$TMP/null: it is not a regular file" -- \
	"$TRACER" -o "$TMP/null" -- $GATE
[ -c "$TMP/null" ] || check_failed "device: the device node was replaced"
mkdir "$TMP/out/h.json"
refused json-dir 2 "cannot write the readings $TMP/out/h.json: it is a directory" -- \
	"$TRACER" -o "$TMP/out/h.pb.gz" -- $GATE
"$TRACER" -q --no-readings -o "$TMP/out/h.pb.gz" -- $GATE 2>"$TMP/noread.err" ||
	check_failed "--no-readings beside a directory named h.json: exit $? ($(cat "$TMP/noread.err"))"
[ -s "$TMP/out/h.pb.gz" ] || check_failed "--no-readings: no profile"
mkdir "$TMP/out/t.timeline.jsonl"
refused timeline-dir 2 "cannot write the readings $TMP/out/t.timeline.jsonl: it is a directory" -- \
	"$TRACER" --interval 0.1 -o "$TMP/out/t.pb.gz" -- $GATE

# as nobody: a directory of root's, and a working directory of root's
chmod 711 "$TMP"
mkdir -m 755 "$TMP/rootdir"
mkdir -m 777 "$TMP/open"
NOBODY="setpriv --reuid=nobody --regid=nogroup --clear-groups"
refused nobody-dir 2 "cannot create files in $TMP/rootdir: Permission denied" -- \
	$NOBODY "$TRACER" -o "$TMP/rootdir/x.pb.gz" -- $G "$TMP/open/ready" "$TMP/go" 0
[ ! -e "$TMP/open/ready" ] || check_failed "nobody-dir: the program ran anyway"
(cd "$TMP/rootdir" && $NOBODY "$TRACER" -- $G "$TMP/open/ready" "$TMP/go" 0) \
	>"$TMP/nobody-cwd.out" 2>"$TMP/nobody-cwd.err"
rc=$?
note "nobody-cwd: exit $rc: $(cat "$TMP/nobody-cwd.err")"
[ $rc = 2 ] || check_failed "nobody-cwd: exit $rc, want 2"
grep -q "cannot write the profile in the current directory" "$TMP/nobody-cwd.err" ||
	check_failed "nobody-cwd: the message does not say the current directory"
[ ! -e "$TMP/open/ready" ] || check_failed "nobody-cwd: the program ran anyway"
# the control: nobody can write where nobody may
$NOBODY "$TRACER" -q -o "$TMP/open/x.pb.gz" -- $G "$TMP/open/ready" "$TMP/go" 0 \
	2>"$TMP/nobody-ok.err" || check_failed "nobody in a directory it may write: exit $? ($(cat "$TMP/nobody-ok.err"))"
[ -s "$TMP/open/x.pb.gz" ] || check_failed "nobody: no profile where it may write"

# attached: refused before the agent goes in
spawn "$TMP/att-target.out" $G "$TMP/att-ready" "$TMP/att-go" 0
target=$spawned_pid
wait_for "$TMP/att-ready" . 20 || fail "the attach target did not get ready"
refused attach 2 "cannot write the profile /nonexistent/dir/x.pb.gz" -- \
	"$TRACER" --pid "$target" -o /nonexistent/dir/x.pb.gz
agent_mapped "$target" && check_failed "attach: the agent went into the process anyway"
# --core: refused before the core is read
refused core 2 "cannot write the profile /nonexistent/dir/x.pb.gz" -- \
	"$TRACER" --core "$TMP/no-such-core" -o /nonexistent/dir/x.pb.gz

# ---- after: the directory removed while the program runs
# run_gate NAME STATUS CWD PROFILE [TRACER OPTIONS]: run gate under the
# tracer in CWD in the background; wait until it is ready
run_gate() {
	_name=$1 _st=$2 _cwd=$3 _prof=$4
	shift 4
	rm -f "$TMP/ready" "$TMP/go"
	(cd "$_cwd" && exec "$TRACER" --rate 1 -o "$_prof" "$@" -- "$G" "$TMP/ready" "$TMP/go" "$_st") \
		>"$TMP/$_name.out" 2>"$TMP/$_name.err" &
	gate_tracer=$!
	spawned="$spawned $gate_tracer"
	wait_for "$TMP/ready" . 20 || fail "$_name: the program did not get ready"
	sleep 0.5	# a few timeline lines
}
open_gate() {	# NAME: let it exit; its status in $gate_rc
	touch "$TMP/go"
	reap "$gate_tracer" 30
	gate_rc=$reaped_rc
	sed 's/^/    stderr: /' "$TMP/$1.err"
}
# whole NAME DIR: the fallback files in DIR are a profile, JSON, a timeline
whole() {
	[ -s "$2/x.pb.gz" ] || { check_failed "$1: no profile in $2 ($(ls "$2"))"; return; }
	pprof_sum "$2/x.pb.gz" leaf >"$TMP/$1.sum"
	check_site "$TMP/$1.sum" gate_keep 10 10000 10 10000
	python3 -m json.tool "$2/x.json" >/dev/null 2>&1 ||
		check_failed "$1: $2/x.json is not whole JSON"
	python3 - "$2/x.timeline.jsonl" <<'PY' || check_failed "$1: $2/x.timeline.jsonl is not whole"
import json, sys
n = sum(1 for line in open(sys.argv[1]) if json.loads(line)["pid"] > 0)
assert n >= 3, "%d lines" % n
PY
}
mkdir "$TMP/gone"
run_gate gone 5 "$TMP/cwd" "$TMP/gone/x.pb.gz" --interval 0.1
rm -rf "$TMP/gone"
open_gate gone
[ "$gate_rc" = 5 ] || check_failed "gone: the tracer exited $gate_rc, want the program's 5"
grep -q "WARNING: cannot write the profile to $TMP/gone/x.pb.gz: No such file or directory" "$TMP/gone.err" ||
	check_failed "gone: no loud line about the profile's place"
grep -q "WARNING: wrote the profile to $TMP/cwd/x.pb.gz instead" "$TMP/gone.err" ||
	check_failed "gone: stderr does not name where the profile went"
grep -q "WARNING: wrote the readings to $TMP/cwd/x.json instead" "$TMP/gone.err" ||
	check_failed "gone: stderr does not name where the readings went"
grep -q "WARNING: wrote the timeline (.* lines) to $TMP/cwd/x.timeline.jsonl instead" "$TMP/gone.err" ||
	check_failed "gone: stderr does not name where the timeline went"
grep -q "exited with status 5; wrote $TMP/cwd/x.pb.gz" "$TMP/gone.err" ||
	check_failed "gone: the summary line does not name the file written"
whole gone "$TMP/cwd"

# ... and the working directory too: $TMPDIR
mkdir "$TMP/gone" "$TMP/cwd2" "$TMP/tmpdir"
export TMPDIR="$TMP/tmpdir"
run_gate gone2 6 "$TMP/cwd2" "$TMP/gone/x.pb.gz" --interval 0.1
rm -rf "$TMP/gone" "$TMP/cwd2"
open_gate gone2
unset TMPDIR
[ "$gate_rc" = 6 ] || check_failed "gone2: the tracer exited $gate_rc, want the program's 6"
grep -q "WARNING: wrote the profile to $TMP/tmpdir/x.pb.gz instead" "$TMP/gone2.err" ||
	check_failed "gone2: the profile did not go to \$TMPDIR"
whole gone2 "$TMP/tmpdir"

# a name taken in the fallback directory is not overwritten
mkdir "$TMP/gone"
echo precious >"$TMP/cwd/taken.pb.gz"
run_gate taken 0 "$TMP/cwd" "$TMP/gone/taken.pb.gz"
rm -rf "$TMP/gone"
open_gate taken
[ "$(cat "$TMP/cwd/taken.pb.gz")" = precious ] || check_failed "taken: a file in the fallback directory was overwritten"
written=$(sed -n 's/.*WARNING: wrote the profile to \(.*\) instead$/\1/p' "$TMP/taken.err")
case "$written" in
"$TMP"/cwd/taken.[0-9]*.pb.gz) [ -s "$written" ] || check_failed "taken: $written is empty" ;;
*) check_failed "taken: the profile went to '$written', want $TMP/cwd/taken.PID.pb.gz" ;;
esac

# a full filesystem (a tmpfs in a mount namespace of ours): the timeline
# moves to the fallback from the line that failed, then the rest follows
mkdir "$TMP/small" "$TMP/cwd3"
rm -f "$TMP/go" "$TMP/ready"
unshare --mount --propagation private sh -c '
	mount -t tmpfs -o size=1m tmpfs "$1" || exit 90
	cd "$2" || exit 91
	"$3" --rate 1 -o "$1/x.pb.gz" --interval 0.05 -- "$4" "$5/ready" "$5/go" 7 &
	t=$!
	n=0
	while [ ! -s "$5/ready" ] && [ $n -lt 2000 ]; do sleep 0.01; n=$((n + 1)); done
	sleep 0.3
	dd if=/dev/zero of="$1/fill" bs=64k 2>/dev/null
	sleep 0.3
	touch "$5/go"
	wait $t
' sh "$TMP/small" "$TMP/cwd3" "$TRACER" "$G" "$TMP" >"$TMP/full.out" 2>"$TMP/full.err"
rc=$?
rm -f "$TMP/go" "$TMP/ready"
sed 's/^/    stderr: /' "$TMP/full.err"
[ $rc = 7 ] || check_failed "full: exit $rc, want the program's 7"
grep -q "WARNING: cannot write $TMP/small/x.timeline.jsonl: No space left on device; its lines from line [0-9]* on go to $TMP/cwd3/x.timeline.jsonl" "$TMP/full.err" ||
	check_failed "full: the timeline did not move to the working directory"
grep -q "WARNING: cannot write the profile to $TMP/small/x.pb.gz: No space left on device" "$TMP/full.err" ||
	check_failed "full: no loud line about the full filesystem"
grep -q "WARNING: wrote the profile to $TMP/cwd3/x.pb.gz instead" "$TMP/full.err" ||
	check_failed "full: the profile did not go to the working directory"
whole full "$TMP/cwd3"

# attached: the place removed meanwhile: the profile goes elsewhere, exit 1
mkdir "$TMP/gone"
(cd "$TMP/cwd" && exec "$TRACER" --pid "$target" --duration 1 -o "$TMP/gone/att.pb.gz") \
	>"$TMP/att.out" 2>"$TMP/att.err" &
att=$!
spawned="$spawned $att"
wait_for "$TMP/att.err" 'attached to process' 20 || fail "attach: the tracer did not attach"
rm -rf "$TMP/gone"
reap "$att" 30
sed 's/^/    stderr: /' "$TMP/att.err"
[ "$reaped_rc" = 1 ] || check_failed "attached: exit $reaped_rc, want 1 (the profile is not where -o said)"
grep -q "WARNING: wrote the profile to $TMP/cwd/att.pb.gz instead" "$TMP/att.err" ||
	check_failed "attached: the profile did not go to the working directory"
[ -s "$TMP/cwd/att.pb.gz" ] || check_failed "attached: no profile in the working directory"
touch "$TMP/att-go"

# --- fsync: only what replaces a file
# fsyncs OUT: the fsync calls of a launch of true writing OUT (and OUT's
# PROFILE.json)
fsyncs() {
	strace -f -qq -e trace=fsync,fdatasync -o "$TMP/fsync.txt" \
		"$TRACER" -q -o "$1" -- /bin/true >/dev/null 2>&1 ||
		check_failed "a launch under strace: exit $?"
	grep -c 'sync(' "$TMP/fsync.txt"
}
if command -v strace >/dev/null; then
	mkdir "$TMP/fs"
	n_new=$(fsyncs "$TMP/fs/p.pb.gz")
	n_again=$(fsyncs "$TMP/fs/p.pb.gz")
	note "fsyncs: $n_new writing new files, $n_again replacing them"
	[ "$n_new" = 0 ] || check_failed "new files: $n_new fsync calls, want none"
	[ "$n_again" = 2 ] ||
		check_failed "replacing the profile and PROFILE.json: $n_again fsync calls, want 2"
else
	check_failed "strace is not installed (contrib/packages has it)"
fi
finish
