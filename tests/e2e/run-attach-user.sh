# Attach where the tracer is not root: as the target's own user, whom the
# kernel lets ptrace but not open /proc/PID/map_files (CAP_SYS_ADMIN), so
# libc and the agent are read through /proc/PID/root, checked to be the
# very files mapped.  And a target in a PID namespace of its own, whose
# agent knows itself by another pid.
. "$(dirname "$0")/lib.sh"
readable_build	# (run as nobody)
need pgrep go python3
attach_init

need setpriv
need unshare
S="$WORKLOADS/survivor"
chmod 755 "$TMP"
mkdir "$TMP/out" && chown nobody "$TMP/out" || fail "cannot make a directory for nobody"
NOBODY="setpriv --reuid=nobody --regid=nogroup --clear-groups"
as_nobody() { $NOBODY "$@"; }

spawn "$TMP/s" $NOBODY "$S" 0 main
sp=$spawned_pid
wait_for "$TMP/s.err" 'survivor: ready' 10 || fail "survivor did not get ready"
[ "$(stat -c %U /proc/$sp)" = nobody ] || fail "the target does not run as nobody"
as_nobody test -r "/proc/$sp/map_files/$(sed -n '1s/ .*//p' /proc/$sp/maps)" 2>/dev/null &&
	as_nobody cat "/proc/$sp/map_files/$(sed -n '1s/ .*//p' /proc/$sp/maps)" >/dev/null 2>&1 &&
	fail "nobody can read map_files here: the test proves nothing"
as_nobody timeout 30 "$TRACER" --pid $sp --duration 0.5 -o "$TMP/out/user.pb.gz" \
	2>"$TMP/user.err" || { cat "$TMP/user.err"; fail "attach as the target's user failed"; }
cat "$TMP/user.err"
pprof_sum "$TMP/out/user.pb.gz" leaf >"$TMP/sum.txt"
[ "$(value builder 1 <"$TMP/sum.txt")" -gt 0 ] ||
	{ cat "$TMP/sum.txt"; fail "no allocation by builder (symbolized) attached as nobody"; }
kill -TERM $sp
wait_gone $sp 10 || fail "survivor did not end"
grep -q '^survivor: ok.* eintr 0$' "$TMP/s" || fail "$(cat "$TMP/s")"

# another user's process, as nobody: refused, saying why
spawn "$TMP/r" "$S" 0 main
rp=$spawned_pid
wait_for "$TMP/r.err" 'survivor: ready' 10 || fail "survivor did not get ready"
if as_nobody timeout 30 "$TRACER" --pid $rp --duration 0.3 -o "$TMP/out/x.pb.gz" \
	2>"$TMP/other.err"; then
	fail "nobody attached to root's process"
fi
cat "$TMP/other.err"
grep -q "root or CAP_SYS_PTRACE\|not permitted" "$TMP/other.err" ||
	fail "the refusal does not say it is a matter of permission"
kill -TERM $rp; wait_gone $rp 10

# a PID namespace of its own: the agent's header names pid 1-ish
spawn "$TMP/ns" unshare -p -f --mount-proc "$S" 0 main
wait_for "$TMP/ns.err" 'survivor: ready' 10 || fail "survivor in a PID namespace did not get ready"
np=$(pgrep -f -n "^$S 0 main") || fail "no survivor in the namespace"
grep -q "^NSpid:.*[[:space:]]1$" /proc/$np/status || fail "the target is not pid 1 of its own namespace"
timeout 30 "$TRACER" --pid $np --duration 0.5 -o "$TMP/ns.pb.gz" 2>"$TMP/ns.trace" ||
	{ cat "$TMP/ns.trace"; fail "attach into a PID namespace failed"; }
pprof_sum "$TMP/ns.pb.gz" leaf >"$TMP/sum.txt"
[ "$(value builder 1 <"$TMP/sum.txt")" -gt 0 ] || fail "no allocation by builder in a PID namespace"
kill -TERM $np
wait_gone $np 10 || fail "survivor in the namespace did not end"
sleep 0.2
grep -q '^survivor: ok.* eintr 0$' "$TMP/ns" || fail "$(cat "$TMP/ns")"
