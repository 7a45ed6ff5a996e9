#!/bin/sh
# run-readings-late.sh - an agent that answers the allocator's readings late
# is asked again as soon as its answer comes, not 10 s later.
#
# The tracer asks the agent's stats thread for the allocator's figures at
# every reading and waits 200 ms for the answer; an agent that does not
# answer in time (it exec'd, or its allocator is stuck) is left alone for
# 10 s.  A late answer - the process descheduled on a busy machine - once
# blacked out the allocator's figures for those 10 s, or for a whole short
# run (run-report's page then had no allocator series).  Here
# tests/workloads/peak.c waits at its gate under --interval 0.05; once the
# timeline has the allocator's figures, the target is stopped (SIGSTOP)
# until a reading says it did not answer in time, then let go: within
# 5 s (TIME_SCALE times; under the 10 s the tracer would leave it alone
# otherwise) a reading has the allocator's figures again.
#
# And the first reading of a launch, taken while the program waits in its
# constructor, has them too: the tracer, woken the moment the agent runs,
# once asked before the stats thread was being made and heard there was
# none (5 first readings of 200; none since): 30 launches of python3, none
# without.
. "$(dirname "$0")/lib.sh"
need python3 pgrep
attach_init

S=${TIME_SCALE:-1}
spawn "$TMP/l.out" "$TRACER" --interval 0.05 -o "$TMP/l.pb.gz" -- \
	"$WORKLOADS/peak" 64 4096 0 wait "$TMP/gate"
tp=$spawned_pid
TL="$TMP/l.timeline.jsonl"
wait_for "$TL" '"mallinfo2"' 30 || { cat "$TMP/l.out.err"; fail "no reading with the allocator's figures"; }
target=$(pgrep -P "$tp" | head -n 1)
[ -n "$target" ] || fail "no target under the tracer"
kill -STOP "$target"
wait_for "$TL" 'did not answer in time' 30 ||
	{ kill -CONT "$target"; fail "the stopped agent's reading did not time out"; }
kill -CONT "$target"
t0=$(date +%s%N)
# after the last line that timed out, one with the allocator's figures
late_then_answered() {
	python3 -c '
import json, sys
state = 0
for l in open(sys.argv[1]):
    try:
        d = json.loads(l)
    except ValueError:
        continue
    a = d.get("allocator") or {}
    if "did not answer in time" in a.get("why", ""):
        state = 1
    elif state and a.get("mallinfo2"):
        state = 2
sys.exit(state != 2)' "$TL"
}
ms=0
until late_then_answered; do
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	[ $ms -lt $((5000 * S)) ] || break
	sleep 0.05
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
if [ $ms -lt $((5000 * S)) ] && late_then_answered; then
	note "the allocator's figures again $ms ms after the stopped agent was let go"
else
	check_failed "no allocator figures in the $ms ms after the agent was let go: $(grep -o '"why":"[^"]*"' "$TL" | sort | uniq -c | tr '\n' ';')"
fi
: >"$TMP/gate.go"
: >"$TMP/gate"
reap "$tp" 30
[ "$reaped_rc" = 0 ] || { cat "$TMP/l.out.err"; check_failed "the tracer exited $reaped_rc"; }

# --- the first reading of a launch
mkdir "$TMP/first"
without=0
for i in $(seq 1 30); do
	"$TRACER" -q --interval 0.01 -o "$TMP/first/$i.pb.gz" -- python3 -c pass ||
		check_failed "launch $i of python3 failed"
	head -n 1 "$TMP/first/$i.timeline.jsonl" | grep -q '"mallinfo2"' ||
		{ without=$((without + 1)); head -n 1 "$TMP/first/$i.timeline.jsonl" |
			grep -o '"why":"[^"]*"' | head -n 3 | sed 's/^/    /'; }
done
note "first readings of 30 launches without the allocator's figures: $without"
[ "$without" = 0 ] || check_failed "$without first readings had no allocator figures"
finish
