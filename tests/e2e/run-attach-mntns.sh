#!/bin/sh
# run-attach-mntns.sh - a target in its own mount namespace, where the
# agent's directory is hidden under a tmpfs (as a container's root has no
# agent): --pid loads the agent from a memfd made in the target, so no
# file is written into its namespace; the profile has the target's site;
# no descriptor is left behind but the ring's while attached, and the
# detach unloads the agent (nothing of it mapped, no descriptor); a second
# attach works the same way.  A namespace with no /proc (which that way needs) is
# refused up front, with a line saying so, and the target left untouched.
. "$(dirname "$0")/lib.sh"
need go python3

need unshare
AGENT_DIR=$(dirname "$AGENT")
cp "$WORKLOADS/attach-join" "$TMP/" || fail "copy"	# outside the hidden dir
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$TMP"' EXIT

# --- hidden agent, /proc there: attached from a memfd
unshare -m --propagation private sh -c \
	"mount -t tmpfs none '$AGENT_DIR' && exec '$TMP/attach-join'" \
	>"$TMP/out" 2>"$TMP/unshare.err" &
pid=$!
pids="$pids $pid"
wait_for "$TMP/out" ready 10 || fail "target did not start: $(cat "$TMP/unshare.err")"
[ -e "/proc/$pid/root$AGENT" ] && fail "the agent is visible in the target's namespace: the test proves nothing"
for round in 1 2; do
	timeout 60 "$TRACER" --pid $pid --duration 1 -o "$TMP/m$round.pb.gz" 2>"$TMP/err$round" &
	tracer=$!
	pids="$pids $tracer"
	wait_for "$TMP/err$round" "attached to process $pid" 20 ||
		{ cat "$TMP/err$round"; fail "attach $round into the mount namespace failed"; }
	grep -q "memfd:pprof-alloc-agent.so" "/proc/$pid/maps" ||
		check_failed "attach $round: the agent is not mapped from its memfd"
	# the agent's memfd was closed in the target once mapped
	ls -l "/proc/$pid/fd" | grep -q "pprof-alloc-agent" &&
		check_failed "attach $round: the target still has the agent's memfd open"
	wait $tracer || { cat "$TMP/err$round"; fail "attach $round into the mount namespace failed"; }
	cat "$TMP/err$round"
	pprof_sum "$TMP/m$round.pb.gz" leaf >"$TMP/m$round.sum"
	[ "$(value spin_site 1 <"$TMP/m$round.sum")" -gt 0 ] ||
		check_failed "attach $round: no spin_site in the profile"
	grep -q "unloaded the agent from process $pid " "$TMP/err$round" ||
		check_failed "attach $round: the agent was not unloaded"
	agent_mapped $pid && check_failed "attach $round: the agent is still mapped after the detach"
	ls -l "/proc/$pid/fd" | grep -q "memfd:pprof-alloc" &&
		check_failed "attach $round: the target still has a descriptor of the agent's"
	[ -e "/proc/$pid/root$AGENT" ] && check_failed "attach $round: the agent was written into the namespace"
	kill -0 $pid || fail "attach $round: the target died"
done
grep -q "was detached" "$TMP/err2" || check_failed "the second attach did not detach"

# --- hidden agent and no /proc: refused, untouched
unshare -m --propagation private sh -c \
	"mount -t tmpfs none '$AGENT_DIR' && mount -t tmpfs none /proc && exec '$TMP/attach-join'" \
	>"$TMP/out2" 2>"$TMP/unshare2.err" &
pid2=$!
pids="$pids $pid2"
wait_for "$TMP/out2" ready 10 || fail "the second target did not start: $(cat "$TMP/unshare2.err")"
if timeout 30 "$TRACER" --pid $pid2 --duration 0.3 -o "$TMP/x.pb.gz" 2>"$TMP/err"; then
	cat "$TMP/err"
	fail "the tracer attached to a target whose namespace has no /proc"
fi
cat "$TMP/err"
[ "$(grep -c . "$TMP/err")" = 1 ] || check_failed "the refusal is not one line"
grep -q "has no /proc to load it from a memfd" "$TMP/err" ||
	check_failed "the refusal does not say why"
agent_mapped $pid2 && check_failed "the agent was loaded anyway"
kill -0 $pid2 || fail "the target died"
finish
