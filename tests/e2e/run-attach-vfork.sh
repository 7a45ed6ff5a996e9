#!/bin/sh
# run-attach-vfork.sh - a thread the tracer seized but could not stop (its
# only thread, waiting in vfork while the tracer borrows one to hook a
# library just dlopened) is let go as soon as it stops, while the tracer
# stays attached: the program runs on after the vfork (its beats go on),
# and the tracer detaches in the end as usual.
. "$(dirname "$0")/lib.sh"
attach_init

ls /usr/lib/$MULTIARCH/libz.so.1 >/dev/null 2>&1 || ls /lib/$MULTIARCH/libz.so.1 >/dev/null 2>&1 ||
	fail "libz.so.1 is missing"
spawn "$TMP/v.out" "$WORKLOADS/vforker" "$TMP/go" "$TMP/beat" 2500
vp=$spawned_pid
wait_for "$TMP/beat" '^0$' 10 || fail "the program did not start"
"$TRACER" --pid "$vp" --duration 30 -o "$TMP/v.pb.gz" >"$TMP/t.out" 2>"$TMP/t.err" &
tracer=$!
spawned="$spawned $tracer"
wait_for "$TMP/t.err" "attached to process" 20 || { cat "$TMP/t.err"; fail "the tracer did not attach"; }
: >"$TMP/go"
# 2.5 s in vfork, then 25 beats of 20 ms: the thread must not stay stopped
wait_for "$TMP/beat" '^[2-9][0-9]*$' 20 ||
	{ cat "$TMP/t.err"; fail "the program stopped after its vfork, frozen by the tracer (beats: $(cat "$TMP/beat"))"; }
kill -0 "$tracer" 2>/dev/null || { cat "$TMP/t.err"; fail "the tracer is gone: the test proves nothing"; }
grep State "/proc/$vp/status" | grep -q -v "t (tracing stop)" || fail "the program's thread is in a tracing stop"
cat "$TMP/t.err"
kill -INT "$tracer"
rc=0
wait "$tracer" || rc=$?
[ "$rc" = 0 ] || { cat "$TMP/t.err"; fail "the tracer: exit $rc"; }
running "$vp" || fail "the program died"
b1=$(cat "$TMP/beat")
i=0
until [ "$(cat "$TMP/beat")" -ge $((b1 + 5)) ] 2>/dev/null; do
	[ $i -lt 1000 ] || fail "the program does not run on after the detach (beats: $b1, then $(cat "$TMP/beat"))"
	sleep 0.01; i=$((i + 1))
done
[ -s "$TMP/v.pb.gz" ] || fail "no profile"
finish
