#!/bin/sh
# run-install.sh - `make install` into a staging root; the installed
# pprof-alloc finds the installed agent (../lib/pprof-alloc/ next to its
# bin/) by itself - PPROF_ALLOC_AGENT unset, the build tree never used -
# and profiles a workload.
. "$TOP/tests/e2e/lib.sh"
need go python3

unset PPROF_ALLOC_AGENT
ROOT="$TMP/root"
make -s -C "$TOP" install PREFIX=/usr DESTDIR="$ROOT" >"$TMP/install.log" 2>&1 ||
	{ cat "$TMP/install.log" >&2; fail "make install PREFIX=/usr DESTDIR=$ROOT failed"; }
BIN="$ROOT/usr/bin/pprof-alloc"
LIB="$ROOT/usr/lib/pprof-alloc/libpprof-alloc.so"
[ -x "$BIN" ] || fail "make install did not install $BIN"
[ -f "$LIB" ] || fail "make install did not install $LIB"
find "$ROOT" -type f | sed "s|^$ROOT|installed: |"

# The workload prints which libpprof-alloc it has mapped.
W="$WORKLOADS/behave"
"$BIN" --rate 1 -o "$TMP/inst.pb.gz" -- "$W" agent >"$TMP/agent.out" 2>"$TMP/agent.err"
rc=$?
cat "$TMP/agent.err"
[ $rc = 0 ] || fail "the installed pprof-alloc exited $rc"
want=$(realpath "$LIB")
note "agent mapped in the workload: $(cat "$TMP/agent.out")"
[ "$(cat "$TMP/agent.out")" = "$want" ] ||
	check_failed "the workload ran with agent '$(cat "$TMP/agent.out")', want the installed $want"
pprof_sum "$TMP/inst.pb.gz" leaf >"$TMP/leaf.txt"
cat "$TMP/leaf.txt"
check_no_loss "$TMP/leaf.txt"
check_site "$TMP/leaf.txt" exit_site 1 100 1 100

# Without the installed agent it must fail, not fall back to the build tree.
mv "$LIB" "$LIB.away"
"$BIN" -o "$TMP/none.pb.gz" -- "$W" agent >"$TMP/none.out" 2>"$TMP/none.err"
rc=$?
note "without its agent: exit $rc: $(cat "$TMP/none.err")"
[ $rc != 0 ] || check_failed "the installed pprof-alloc ran without its agent (used '$(cat "$TMP/none.out")')"
grep -q "agent" "$TMP/none.err" || check_failed "no message about the missing agent"
mv "$LIB.away" "$LIB"

make -s -C "$TOP" uninstall PREFIX=/usr DESTDIR="$ROOT" >"$TMP/uninstall.log" 2>&1 ||
	{ cat "$TMP/uninstall.log" >&2; check_failed "make uninstall failed"; }
left=$(find "$ROOT" -type f)
[ -z "$left" ] || check_failed "make uninstall left files behind: $left"
finish
