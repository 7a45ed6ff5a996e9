#!/bin/sh
# run-container-rootless.sh - a rootless container and a rootless tracer:
# an unprivileged user (nobody) starts tests/tools/ctr-run, whose user
# namespace maps its root to that user alone, and attaches to it from the
# host as that same user - no root, no CAP_SYS_ADMIN (so no map_files:
# files are read through /proc/PID/root, the agent's own memfd is known by
# its first page), no CAP_SYS_PTRACE (the owner of the namespace may
# ptrace into it).  At --rate 1 every site of a round of
# tests/workloads/attach-sites.c is exact, and the detach unloads the
# agent; attached again (injected again), a second round too.  Then a
# tracer is killed while attached: its agent, whose tracer is in another
# PID namespace, turns itself off once the tracer's beat stops (stats says
# so) and stays loaded; a tracer whose agent is another build (its build
# ID changed) than the one loaded there is refused; the next tracer of the
# same build takes it over and unloads it; then the program's own check
# passes.
. "$(dirname "$0")/lib.sh"
need go python3
attach_init

readable_build	# (run as nobody)
AS_NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
chmod 755 "$TMP"
mkdir "$TMP/out" && chmod 777 "$TMP/out" || fail "mkdir"
R="$TMP/root"
container_root "$R"
copy_in "$R" "$WORKLOADS/attach-sites" /app/attach-sites
mkfifo "$R/cmd" && chmod 666 "$R/cmd" || fail "mkfifo"
$AS_NOBODY "$TRACER" --help >/dev/null 2>&1 ||
	fail "nobody cannot run the tracer (its directories must be world-readable)"

T=4 N=8000 R_=200 PRE=1000
spawn "$TMP/ctr.out" $AS_NOBODY "$CTR" "$R" /app/attach-sites /cmd $T $N $R_ $PRE
wait_for "$TMP/ctr.out" '^attach-sites: ready' 20 ||
	fail "attach-sites did not start in a rootless container: $(cat "$TMP/ctr.out.err")"
ctr=$spawned_pid
hostpid=$(sed -n 's/^hostpid //p' "$TMP/ctr.out")
[ "$(awk 'NR == 1 { print $1, $2, $3 }' "/proc/$hostpid/uid_map")" = "0 65534 1" ] ||
	fail "root in the container is not nobody alone: $(cat "/proc/$hostpid/uid_map")"
[ "$(awk '$1 == "NSpid:" { print $NF }' "/proc/$hostpid/status")" = 1 ] ||
	fail "the program is not PID 1 of its PID namespace"

for round in 1 2; do
	note "round $round, attached as nobody"
	$AS_NOBODY "$TRACER" --pid "$hostpid" --rate 1 -o "$TMP/out/r$round.pb.gz" \
		>/dev/null 2>"$TMP/r$round.err" &
	tracer_pid=$!
	spawned="$spawned $tracer_pid"
	wait_for "$TMP/r$round.err" "attached to process $hostpid" 30 ||
		{ cat "$TMP/r$round.err"; fail "round $round: nobody could not attach"; }
	send "$R/cmd" w
	wait_for "$TMP/ctr.out" "^work done $round\$" 30 || fail "round $round did not finish"
	stop_tracer
	sed 's/^/    tracer: /' "$TMP/r$round.err"
	[ "$tracer_rc" = 0 ] || check_failed "round $round: the tracer exited $tracer_rc"
	grep -q "process $hostpid was detached" "$TMP/r$round.err" ||
		check_failed "round $round: not detached"
	pprof_sum "$TMP/out/r$round.pb.gz" leaf >"$TMP/r$round.sum"
	check_no_loss "$TMP/r$round.sum"
	check_site "$TMP/r$round.sum" work_keep $((T * N)) $((T * N / 4 * 960)) $((T * N)) $((T * N / 4 * 960))
	check_site "$TMP/r$round.sum" work_churn $((T * N)) $((T * N / 4 * 208)) 0 0
	check_site "$TMP/r$round.sum" work_handoff $((T * N)) $((T * N * 72)) 0 0
	go tool pprof -raw "$TMP/out/r$round.pb.gz" 2>/dev/null | grep -q " /app/attach-sites [0-9a-f]\{40\} \[FN\]" ||
		check_failed "round $round: no symbolized mapping /app/attach-sites"
	grep -q "^pprof-alloc: attached to process $hostpid" "$TMP/r$round.err" &&
	grep -q "unloaded the agent from process $hostpid " "$TMP/r$round.err" ||
		check_failed "round $round: the agent was not injected afresh and unloaded"
	agent_mapped "$hostpid" && check_failed "round $round: the agent is mapped after the detach"
done

# --- a tracer killed: its agent stays, off
note "a tracer killed while attached"
$AS_NOBODY "$TRACER" --pid "$hostpid" -o "$TMP/out/k.pb.gz" >/dev/null 2>"$TMP/k.err" &
tracer_pid=$!
spawned="$spawned $tracer_pid"
wait_for "$TMP/k.err" "attached to process $hostpid" 30 ||
	{ cat "$TMP/k.err"; fail "nobody could not attach a third time"; }
kill -KILL $tracer_pid
reap $tracer_pid 10
n=0
until $AS_NOBODY "$TRACER" stats --pid "$hostpid" >"$TMP/ks.out" 2>&1 &&
	grep -q "turned itself off: its tracer (process $tracer_pid) ended without detaching" "$TMP/ks.out"; do
	[ $n -lt 100 ] || { cat "$TMP/ks.out"; fail "the agent did not turn itself off"; }
	sleep 0.1; n=$((n + 1))
done

# --- an agent of another build than the one loaded there: its memfd
# cannot be read without map_files, and is not taken for ours (its build
# ID differs): refused in one line
note "another build's agent"
mkdir "$TMP/other" && cp "$AGENT" "$TMP/other/" && chmod -R a+rX "$TMP/other" || fail "copy"
id=$(readelf -n "$AGENT" | sed -n 's/.*Build ID: //p')
/usr/bin/python3 - "$TMP/other/libpprof-alloc.so" "$id" <<'PY' || fail "cannot change the copy's build ID"
import sys
p, hexid = sys.argv[1], sys.argv[2]
b = bytearray(open(p, "rb").read())
i = b.find(bytes.fromhex(hexid))
assert i > 0 and b.find(bytes.fromhex(hexid), i + 1) < 0
b[i] ^= 0xff
open(p, "wb").write(b)
PY
PPROF_ALLOC_AGENT="$TMP/other/libpprof-alloc.so" $AS_NOBODY "$TRACER" --pid "$hostpid" \
	--duration 0.3 -o "$TMP/out/o.pb.gz" 2>"$TMP/o.err"
rc=$?
cat "$TMP/o.err"
[ $rc = 1 ] || check_failed "another build: exit $rc, want 1"
# (after the note that the agent had turned itself off)
grep -q "note: the agent in process $hostpid had turned itself off" "$TMP/o.err" ||
	check_failed "another build: no note that the agent had turned itself off"
[ "$(grep -v '^pprof-alloc: note: ' "$TMP/o.err" | grep -c .)" = 1 ] ||
	check_failed "another build: the refusal is not one line"
grep -q "another build" "$TMP/o.err" || check_failed "another build: the refusal does not say so"

# --- the same build takes it over, and unloads it
$AS_NOBODY "$TRACER" --pid "$hostpid" --duration 0.3 -o "$TMP/out/t.pb.gz" 2>"$TMP/t.err" ||
	{ cat "$TMP/t.err"; check_failed "the tracer after the killed one failed"; }
sed 's/^/    tracer: /' "$TMP/t.err"
grep -q "re-attached to process $hostpid" "$TMP/t.err" &&
grep -q "unloaded the agent from process $hostpid " "$TMP/t.err" ||
	check_failed "the killed tracer's agent was not taken over and unloaded"
agent_mapped "$hostpid" && check_failed "the agent is mapped after the last detach"

send "$R/cmd" q
reap $ctr 60
cat "$TMP/ctr.out"
[ "$reaped_rc" = 0 ] || check_failed "attach-sites exited $reaped_rc after the detach, want 0"
grep -qx 'attach-sites: 2 rounds, check ok' "$TMP/ctr.out" ||
	check_failed "attach-sites did not finish its rounds with its data intact"
finish
