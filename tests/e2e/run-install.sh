#!/bin/sh
# run-install.sh - `pprof-alloc --version` prints the file VERSION's
# version; `make install` into a staging root puts the tracer, its agent,
# the systemd unit (its ExecStart naming the installed tracer) and the
# build's man pages in place, copying the build under test and building
# nothing; the installed pprof-alloc says its version and finds the
# installed agent (../lib/pprof-alloc/ next to its bin/) by itself -
# PPROF_ALLOC_AGENT unset, the build tree never used - and profiles a
# workload; `make uninstall` then leaves nothing in the root, not even a
# directory.
. "$(dirname "$0")/lib.sh"
need go python3 make

unset PPROF_ALLOC_AGENT
want="pprof-alloc $(cat "$TOP/VERSION")"
[ "$want" != "pprof-alloc " ] || fail "$TOP/VERSION is empty"
got=$("$TRACER" --version)
rc=$?
note "--version: '$got' (exit $rc)"
[ $rc = 0 ] || check_failed "$TRACER --version exited $rc"
[ "$got" = "$want" ] || check_failed "$TRACER --version printed '$got', want '$want'"

# Other tests run beside this one on the same build: install must copy
# it, never remake any of it.
make -q --no-print-directory -C "$TOP" B="$BUILD" all ||
	fail "$BUILD is not up to date (make -q all): make install would rebuild it under the other tests; make B=$BUILD test-bins first"
ROOT="$TMP/root"
make -s --no-print-directory -C "$TOP" install B="$BUILD" PREFIX=/usr DESTDIR="$ROOT" >"$TMP/install.log" 2>&1 ||
	{ cat "$TMP/install.log" >&2; fail "make install PREFIX=/usr DESTDIR=$ROOT failed"; }
grep -E '^ *(CC|LD|AR|CXX|PROTOC) ' "$TMP/install.log" &&
	check_failed "make install built something (above)"
find "$ROOT" -type f | sed "s|^$ROOT|installed: |"
BIN="$ROOT/usr/bin/pprof-alloc"
LIB="$ROOT/usr/lib/pprof-alloc/libpprof-alloc.so"
UNIT="$ROOT/usr/lib/systemd/system/pprof-alloc@.service"
[ -x "$BIN" ] || fail "make install did not install $BIN"
[ -f "$LIB" ] || fail "make install did not install $LIB"
[ -f "$UNIT" ] || fail "make install did not install $UNIT"
cmp -s "$TRACER" "$BIN" || check_failed "$BIN is not the build's $TRACER"
cmp -s "$AGENT" "$LIB" || check_failed "$LIB is not the build's $AGENT"
grep -q '^ExecStart=.* exec /usr/bin/pprof-alloc serve ' "$UNIT" ||
	check_failed "the installed unit's ExecStart does not run /usr/bin/pprof-alloc: $(grep ExecStart "$UNIT")"
grep -q /usr/local "$UNIT" && check_failed "the installed unit still names /usr/local: $(grep -n /usr/local "$UNIT")"
pages=0
for m in "$BUILD"/man/*.1; do
	[ -f "$m" ] || continue
	pages=$((pages + 1))
	cmp -s "$m" "$ROOT/usr/share/man/man1/${m##*/}" ||
		check_failed "the man page $m is not installed as /usr/share/man/man1/${m##*/}"
done
note "$pages man pages in $BUILD/man, each installed"

got=$("$BIN" --version)
rc=$?
[ $rc = 0 ] && [ "$got" = "$want" ] ||
	check_failed "the installed pprof-alloc --version printed '$got' (exit $rc), want '$want'"

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

make -s --no-print-directory -C "$TOP" uninstall B="$BUILD" PREFIX=/usr DESTDIR="$ROOT" >"$TMP/uninstall.log" 2>&1 ||
	{ cat "$TMP/uninstall.log" >&2; check_failed "make uninstall failed"; }
left=$(find "$ROOT" -mindepth 1)
[ -z "$left" ] || check_failed "make uninstall left behind: $left"
finish
