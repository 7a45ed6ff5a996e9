#!/bin/sh
# run-symbolize-live.sh - the live paths use the same debug-file lookup as
# `pprof-alloc symbolize`: a fully stripped program (no .symtab, no DWARF,
# no debuglink), whose debug file is only in a --debug-dir's .build-id
# tree, comes out with its functions, lines and inlined frame, with exact
# totals at --rate 1: launched, and attached to (--pid).  Launched without
# --debug-dir, the same program has none of them (so it is the debug dir
# that did it).  The debuginfod options are accepted on the live path too.
# Program: tests/e2e/symbolize/symprog.c, gcc -O2 -g, frame pointers.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/symbolize/common.sh"
attach_init

need gcc objcopy strip readelf go python3
symprog_lines

mkdir -p "$R/build" "$R/rec" "$R/elsewhere"
compile "$R/build/symprog" gcc "$SYMSRC/symprog.c"
BID=$(build_id "$R/build/symprog") || exit 1
objcopy --only-keep-debug "$R/build/symprog" "$R/build/symprog.debug" || fail "objcopy --only-keep-debug"
P="$R/rec/symprog"
cp "$R/build/symprog" "$P" && strip "$P" || fail "strip $P"
has_section "$P" .symtab && fail "$P still has .symtab after strip"
has_section "$P" .debug_info && fail "$P still has .debug_info after strip"
[ "$(build_id "$P")" = "$BID" ] || fail "strip changed the build ID"
put_file "$R/build/symprog.debug" "$(build_id_path "$R/dbg" "$BID")"

# --- launched, with --debug-dir (the options as a user would give them)
note "launch with --debug-dir"
"$TRACER" --rate 1 --debug-dir "$R/dbg" -o "$R/launch.pb.gz" -- "$P" $REC $TAB \
	>"$R/launch.out" 2>"$R/launch.err"
rc=$?
sed 's/^/    stderr: /' "$R/launch.err"
[ $rc = 0 ] || fail "pprof-alloc --debug-dir ... -- $P: exit $rc, want 0"
locs_of "$R/launch.pb.gz" "$R/launch.locs"
grep -F "$P | " "$R/launch.locs"
check_symprog "$R/launch.locs" "$P"
check_symprog_top "$R/launch.pb.gz"
mapping_line "$R/launch.locs.raw" "$P" | grep -q " $P $BID \\[FN\\]" ||
	check_failed "the mapping of $P lacks its build ID or [FN]: $(mapping_line "$R/launch.locs.raw" "$P")"

# --- the debuginfod options on the live path
note "launch with --debug-dir --no-debuginfod --debuginfod-timeout 5"
"$TRACER" --rate 1 --debug-dir "$R/dbg" --no-debuginfod --debuginfod-timeout 5 \
	-o "$R/opts.pb.gz" -- "$P" $REC $TAB >"$R/opts.out" 2>"$R/opts.err"
rc=$?
sed 's/^/    stderr: /' "$R/opts.err"
if [ $rc = 0 ]; then
	locs_of "$R/opts.pb.gz" "$R/opts.locs"
	check_symprog "$R/opts.locs" "$P"
else
	check_failed "pprof-alloc --debug-dir --no-debuginfod --debuginfod-timeout 5: exit $rc, want 0"
fi

# --- the same without --debug-dir: nothing to name symprog's code with
note "launch without --debug-dir"
"$TRACER" --rate 1 -o "$R/plain.pb.gz" -- "$P" $REC $TAB >"$R/plain.out" 2>"$R/plain.err"
rc=$?
sed 's/^/    stderr: /' "$R/plain.err"
[ $rc = 0 ] || fail "pprof-alloc -- $P (no --debug-dir): exit $rc, want 0"
locs_of "$R/plain.pb.gz" "$R/plain.locs"
grep -F "$P | " "$R/plain.locs"
grep -F "$P | " "$R/plain.locs" | grep -q -e fill_buffer -e make_records -e 'symprog\.c:' &&
	check_failed "without --debug-dir the stripped $P still has names or lines: where from?"
grep -q -F "$P | " "$R/plain.locs" || check_failed "no locations of $P without --debug-dir"

# --- attached to the running stripped program, with --debug-dir
note "attach with --debug-dir"
mkdir "$R/ctl"
spawn "$R/target.out" "$P" $REC $TAB "$R/ctl"
target=$spawned_pid
wait_for "$R/ctl/ready" '^[0-9]+$' 10 || fail "symprog did not start: $(cat "$R/target.out.err")"
attach_bg "$target" "$R/attach.pb.gz" "$R/tracer.err" --rate 1 --debug-dir "$R/dbg" --no-debuginfod
: >"$R/ctl/go"
wait_for "$R/ctl/done" '^done$' 30 || fail "symprog did not finish its allocations while attached"
stop_tracer
sed 's/^/    tracer: /' "$R/tracer.err"
[ "$tracer_rc" = 0 ] || fail "the tracer exited $tracer_rc after SIGTERM, want 0"
: >"$R/ctl/exit"
reap "$target" 30
[ "$reaped_rc" = 0 ] || fail "symprog exited $reaped_rc after the detach, want 0"
locs_of "$R/attach.pb.gz" "$R/attach.locs"
grep -F "$P | " "$R/attach.locs"
check_symprog "$R/attach.locs" "$P"
finish
