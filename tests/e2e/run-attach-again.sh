#!/bin/sh
# run-attach-again.sh - attach, detach, attach again, detach
# (tests/workloads/attach-idle.c, waiting in poll() between commands):
#
#   A  a target that is given work in each session: both profiles are
#      exact at --rate 1 and hold only their own session's allocations
#      (the blocks of session 1, and those made while detached, freed in
#      between or during session 2, are not in session 2's profile, and
#      nothing is negative); each detach unloads the agent (no mapping of
#      it, no memfd left), and the second session injects it afresh; the
#      target finishes with its data intact.
#   B  an idle target, which does nothing at all between the sessions (a
#      service waiting for requests): the detach on --duration unhooks at
#      once, and the second attach injects the agent again.
#   C  a process started with LD_PRELOAD of the agent and no tracer is
#      connected to without injection, and profiled: what it allocated
#      before the tracer came is in use in the profile (the live table);
#      after that tracer detached, a second one re-attaches to the same
#      agent.
#   D  the target's only thread is busy (computing, 600 ms, no allocation)
#      at the moment the tracer is told to detach: the detach still
#      completes once the thread is idle again (within the tracer's wait),
#      rather than leaving the hooks in until the next sampled allocation;
#      the agent is unloaded then, and a second session injects it again.
. "$(dirname "$0")/lib.sh"
need go python3
attach_init

W="$WORKLOADS/attach-idle"

# cmd FIFO OUT STRING DONE: write STRING to FIFO, wait for "done DONE".
cmd() {
	printf "$3" >"$1"
	wait_for "$2" "^done $4\$" 10 ||
		fail "the program did not carry out '$3' (no 'done $4' in $2)"
}

# agent_maps PID: how many mappings of the agent (and of its memfd).
agent_maps() {
	grep -Ec 'libpprof-alloc|memfd:pprof-alloc' "/proc/$1/maps"
}
memfds() {
	ls -l "/proc/$1/fd" | grep -c 'memfd:pprof-alloc'
}

# ---- A: busy sessions --------------------------------------------------
note "A: attach, detach, attach again, detach a target given work"
mkfifo "$TMP/a.cmd" || fail "mkfifo"
spawn "$TMP/a.out" "$W" poll "$TMP/a.cmd"
a=$spawned_pid
wait_for "$TMP/a.out" '^attach-idle poll: ready' 10 || fail "attach-idle did not start"

attach_bg "$a" "$TMP/a1.pb.gz" "$TMP/a1.err" --rate 1
grep -q "attached to process $a" "$TMP/a1.err" || fail "session 1 did not inject the agent: $(cat "$TMP/a1.err")"
cmd "$TMP/a.cmd" "$TMP/a.out" aaaaa 5
stop_tracer
sed 's/^/    tracer 1: /' "$TMP/a1.err"
[ "$tracer_rc" = 0 ] || fail "session 1: the tracer exited $tracer_rc"
grep -q "process $a was detached" "$TMP/a1.err" || check_failed "session 1 did not detach"
maps1=$(agent_maps "$a") fds1=$(memfds "$a")

# While detached: free everything, allocate 3 (unseen).
cmd "$TMP/a.cmd" "$TMP/a.out" f 6
cmd "$TMP/a.cmd" "$TMP/a.out" aaa 9

attach_bg "$a" "$TMP/a2.pb.gz" "$TMP/a2.err" --rate 1
grep -q "^pprof-alloc: attached to process $a" "$TMP/a2.err" ||
	check_failed "session 2 did not inject the agent afresh: $(head -n 1 "$TMP/a2.err")"
cmd "$TMP/a.cmd" "$TMP/a.out" aaaa 13
cmd "$TMP/a.cmd" "$TMP/a.out" f 14	# frees 3 unseen blocks and 4 seen
cmd "$TMP/a.cmd" "$TMP/a.out" aa 16
stop_tracer
sed 's/^/    tracer 2: /' "$TMP/a2.err"
[ "$tracer_rc" = 0 ] || fail "session 2: the tracer exited $tracer_rc"
grep -q "process $a was detached" "$TMP/a2.err" || check_failed "session 2 did not detach"
maps2=$(agent_maps "$a") fds2=$(memfds "$a")
[ "$maps1" = 0 ] && [ "$maps2" = 0 ] ||
	check_failed "the agent's mappings after each detach: $maps1, then $maps2 lines, want none (unloaded)"
[ "$fds1" = 0 ] && [ "$fds2" = 0 ] ||
	check_failed "the target holds $fds1, then $fds2 agent memfds after each detach, want 0"
for e in a1 a2; do
	grep -q "unloaded the agent from process $a " "$TMP/$e.err" ||
		check_failed "$e: the agent was not unloaded: $(grep 'stays loaded' "$TMP/$e.err")"
done

cmd "$TMP/a.cmd" "$TMP/a.out" a 17
printf q >"$TMP/a.cmd"
reap "$a" 10
tail -n 1 "$TMP/a.out"
[ "$reaped_rc" = 0 ] || check_failed "attach-idle exited $reaped_rc, want 0"
grep -qx 'attach-idle poll: 15 allocations, 12 freed, 3 kept, check ok' "$TMP/a.out" ||
	check_failed "wrong last line (want 15 allocations, 12 freed, 3 kept, check ok)"

pprof_sum "$TMP/a1.pb.gz" leaf >"$TMP/a1.txt"
cat "$TMP/a1.txt"
check_no_loss "$TMP/a1.txt"
check_no_negative "$TMP/raw.txt"
check_site "$TMP/a1.txt" tick_keep 5 20000 5 20000
check_site "$TMP/a1.txt" tick_churn 5 500 0 0
pprof_sum "$TMP/a2.pb.gz" leaf >"$TMP/a2.txt"
cat "$TMP/a2.txt"
check_no_loss "$TMP/a2.txt"
check_no_negative "$TMP/raw.txt"
check_site "$TMP/a2.txt" tick_keep 6 24000 2 8000
check_site "$TMP/a2.txt" tick_churn 6 600 0 0
check_absent "$TMP/a2.txt" release_all

# ---- B: an idle target -------------------------------------------------
note "B: attach, detach, attach again, detach a target doing nothing"
mkfifo "$TMP/b.cmd" || fail "mkfifo"
spawn "$TMP/b.out" "$W" poll "$TMP/b.cmd"
b=$spawned_pid
wait_for "$TMP/b.out" '^attach-idle poll: ready' 10 || fail "attach-idle did not start"
sleep 0.05
for session in 1 2; do
	start=$(date +%s%N)
	timeout -s KILL 30 "$TRACER" --pid "$b" --duration 0.3 --rate 1 \
		-o "$TMP/b$session.pb.gz" 2>"$TMP/b$session.err"
	rc=$? ms=$((($(date +%s%N) - start) / 1000000))
	sed "s/^/    tracer $session: /" "$TMP/b$session.err"
	note "session $session took $ms ms"
	[ "$rc" = 0 ] || check_failed "idle target, session $session: the tracer exited $rc, want 0"
	want="^pprof-alloc: attached to process $b"
	grep -q "$want" "$TMP/b$session.err" ||
		check_failed "idle target, session $session: want '$want', got: $(head -n 1 "$TMP/b$session.err")"
	grep -q "process $b was detached" "$TMP/b$session.err" ||
		check_failed "idle target, session $session: not detached at the end of --duration: $(grep -v '^pprof-alloc: \(first\|attached\|re-att\|connected\|note\)' "$TMP/b$session.err" | head -n 2)"
	running "$b" || fail "the idle target died"
	if [ -s "$TMP/b$session.pb.gz" ]; then
		pprof_sum "$TMP/b$session.pb.gz" leaf >"$TMP/b$session.txt"
		check_absent "$TMP/b$session.txt" tick_keep
	else
		check_failed "idle target, session $session: no profile written"
	fi
done
cmd "$TMP/b.cmd" "$TMP/b.out" a 1
printf q >"$TMP/b.cmd"
reap "$b" 10
[ "$reaped_rc" = 0 ] || check_failed "the idle attach-idle exited $reaped_rc, want 0"
grep -qx 'attach-idle poll: 1 allocations, 0 freed, 1 kept, check ok' "$TMP/b.out" ||
	check_failed "idle target: wrong last line: $(tail -n 1 "$TMP/b.out")"

# ---- C: a standalone preloaded agent ---------------------------------
note "C: connect to a process started with LD_PRELOAD of the agent"
mkfifo "$TMP/c.cmd" || fail "mkfifo"
spawn "$TMP/c.out" env LD_PRELOAD="$AGENT" PPROF_ALLOC_RATE=1 "$W" poll "$TMP/c.cmd"
c=$spawned_pid
wait_for "$TMP/c.out" '^attach-idle poll: ready' 10 || fail "the preloaded attach-idle did not start"
grep -q "$AGENT" "/proc/$c/maps" || fail "the agent is not preloaded in process $c"
cmd "$TMP/c.cmd" "$TMP/c.out" aaa 3	# before any tracer
maps1=$(agent_maps "$c")

attach_bg "$c" "$TMP/c1.pb.gz" "$TMP/c1.err"
grep -q "connected to the agent in process $c" "$TMP/c1.err" ||
	check_failed "the tracer did not connect to the preloaded agent: $(head -n 1 "$TMP/c1.err")"
cmd "$TMP/c.cmd" "$TMP/c.out" aa 5
stop_tracer
sed 's/^/    tracer 1: /' "$TMP/c1.err"
[ "$tracer_rc" = 0 ] || check_failed "preloaded, session 1: the tracer exited $tracer_rc"
maps2=$(agent_maps "$c")
[ "$maps1" = "$maps2" ] ||
	check_failed "the agent's mappings went from $maps1 to $maps2 lines: injected although preloaded?"
[ "$(memfds "$c")" = 1 ] || check_failed "the preloaded target holds $(memfds "$c") agent memfds, want 1"
# the tracer took the live samples from the agent's table, reading only
# its pages that hold something: the rest (2.6 MB) stays unmade
"$TRACER" stats --pid "$c" --json >"$TMP/c.stats" 2>"$TMP/c.stats.err" ||
	check_failed "stats --pid $c failed: $(cat "$TMP/c.stats.err")"
res=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["agent"]["memfd_bytes"])' "$TMP/c.stats")
note "preloaded at rate 1, after a session: memfd $res bytes resident"
[ "$res" -lt 1048576 ] ||
	check_failed "the memfd has $res bytes resident after a session: the tracer's scan of the live table made its pages"

cmd "$TMP/c.cmd" "$TMP/c.out" a 6	# while nobody watches
attach_bg "$c" "$TMP/c2.pb.gz" "$TMP/c2.err" --rate 1
grep -Eq "(re-attached to|connected to the agent in) process $c" "$TMP/c2.err" ||
	check_failed "preloaded, session 2: $(head -n 1 "$TMP/c2.err")"
cmd "$TMP/c.cmd" "$TMP/c.out" aa 8
stop_tracer
sed 's/^/    tracer 2: /' "$TMP/c2.err"
[ "$tracer_rc" = 0 ] || check_failed "preloaded, session 2: the tracer exited $tracer_rc"
printf q >"$TMP/c.cmd"
reap "$c" 10
[ "$reaped_rc" = 0 ] || check_failed "the preloaded attach-idle exited $reaped_rc, want 0"
grep -qx 'attach-idle poll: 8 allocations, 0 freed, 8 kept, check ok' "$TMP/c.out" ||
	check_failed "preloaded: wrong last line: $(tail -n 1 "$TMP/c.out")"

pprof_sum "$TMP/c1.pb.gz" leaf >"$TMP/c1.txt"
cat "$TMP/c1.txt"
check_no_loss "$TMP/c1.txt"
check_no_negative "$TMP/raw.txt"
# Everything the agent sampled is in use: the 3 blocks from before the
# tracer came (live table) and the 2 made while connected.  The 3 early
# allocations themselves may or may not still be in the ring.
ao=$(value tick_keep 1 <"$TMP/c1.txt")
[ "$ao" -ge 2 ] && [ "$ao" -le 5 ] ||
	check_failed "preloaded: tick_keep alloc_objects $ao, want 2 to 5"
[ "$(value tick_keep 3 <"$TMP/c1.txt") $(value tick_keep 4 <"$TMP/c1.txt")" = "5 20000" ] ||
	check_failed "preloaded: tick_keep in use $(value tick_keep 3 <"$TMP/c1.txt") objects, $(value tick_keep 4 <"$TMP/c1.txt") bytes, want 5 and 20000 (including the 3 from before the tracer connected)"
[ "$(value tick_churn 3 <"$TMP/c1.txt")" = 0 ] || check_failed "preloaded: tick_churn in use"
# Session 2 sees the 2 allocations it was there for; what was live before
# it came is either all there (connected) or, after a re-attach, gone
# stale and dropped: in use 2 or 8 blocks.
pprof_sum "$TMP/c2.pb.gz" leaf >"$TMP/c2.txt"
cat "$TMP/c2.txt"
check_no_loss "$TMP/c2.txt"
check_no_negative "$TMP/raw.txt"
ao=$(value tick_keep 1 <"$TMP/c2.txt") io=$(value tick_keep 3 <"$TMP/c2.txt")
[ "$ao" -ge 2 ] || check_failed "preloaded, session 2: tick_keep alloc_objects $ao, want at least 2"
[ "$io" = 2 ] || [ "$io" = 8 ] ||
	check_failed "preloaded, session 2: tick_keep in use $io objects, want 2 (re-attached) or 8 (connected)"

# ---- D: busy when told to detach ----------------------------------------
note "D: detach while the target's only thread is busy"
mkfifo "$TMP/d.cmd" || fail "mkfifo"
spawn "$TMP/d.out" "$W" poll "$TMP/d.cmd"
d=$spawned_pid
wait_for "$TMP/d.out" '^attach-idle poll: ready' 10 || fail "attach-idle did not start"
attach_bg "$d" "$TMP/d1.pb.gz" "$TMP/d1.err" --rate 1
cmd "$TMP/d.cmd" "$TMP/d.out" a 1
printf b >"$TMP/d.cmd"
n=100
until [ "$(cut -d' ' -f1 "/proc/$d/syscall")" = running ] || [ $n = 0 ]; do
	sleep 0.01
	n=$((n - 1))
done
[ $n != 0 ] || fail "the target did not start its busy spell"
stop_tracer
sed 's/^/    tracer: /' "$TMP/d1.err"
[ "$tracer_rc" = 0 ] || check_failed "busy target: the tracer exited $tracer_rc"
grep -q "process $d was detached" "$TMP/d1.err" ||
	check_failed "busy target: not detached once the thread was idle again: $(grep -v '^pprof-alloc: \(first\|attached\|re-att\|connected\|note\)' "$TMP/d1.err" | head -n 2)"
wait_for "$TMP/d.out" '^done 2$' 10 || fail "the busy spell did not end"
pprof_sum "$TMP/d1.pb.gz" leaf >"$TMP/d1.txt"
check_site "$TMP/d1.txt" tick_keep 1 4000 1 4000
# the agent unloaded, and the next session injects it again
grep -q "unloaded the agent from process $d " "$TMP/d1.err" ||
	check_failed "busy target: the agent was not unloaded: $(grep 'stays loaded' "$TMP/d1.err")"
attach_bg "$d" "$TMP/d2.pb.gz" "$TMP/d2.err" --rate 1
grep -q "^pprof-alloc: attached to process $d" "$TMP/d2.err" ||
	check_failed "busy target, session 2: want 'attached to process $d', got: $(head -n 1 "$TMP/d2.err")"
cmd "$TMP/d.cmd" "$TMP/d.out" a 3
stop_tracer
[ "$tracer_rc" = 0 ] || check_failed "busy target, session 2: the tracer exited $tracer_rc"
pprof_sum "$TMP/d2.pb.gz" leaf >"$TMP/d2.txt"
check_site "$TMP/d2.txt" tick_keep 1 4000 1 4000
printf q >"$TMP/d.cmd"
reap "$d" 10
[ "$reaped_rc" = 0 ] || check_failed "the busy attach-idle exited $reaped_rc, want 0"
grep -qx 'attach-idle poll: 2 allocations, 0 freed, 2 kept, check ok' "$TMP/d.out" ||
	check_failed "busy target: wrong last line: $(tail -n 1 "$TMP/d.out")"
finish
