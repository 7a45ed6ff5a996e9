# One tracer per agent.  A second tracer (--pid) on a process that a first
# one (--pid, serve, or the tracer that launched it), alive, is recording
# refuses with one line naming it (and serve's address), and leaves the
# first's profile as it would be alone; once the first is gone (detached,
# or killed), the next one takes over.  A failed attach rolls back: the
# agent that started is detached again, and a later attach works.
. "$(dirname "$0")/lib.sh"
need go python3 pgrep curl
attach_init

S="$WORKLOADS/survivor"
spawn "$TMP/s" "$S" 0 main
sp=$spawned_pid
wait_for "$TMP/s.err" 'survivor: ready' 10 || fail "survivor did not get ready"

# alone: how many samples 2 s give
timeout 30 "$TRACER" --pid $sp --duration 2 -o "$TMP/alone.pb.gz" 2>"$TMP/alone.err" ||
	{ cat "$TMP/alone.err"; fail "a tracer alone failed"; }
alone=$(sed -n 's/.*wrote .* (\([0-9]*\) samples).*/\1/p' "$TMP/alone.err")
[ "${alone:-0}" -gt 100 ] || { cat "$TMP/alone.err"; fail "too few samples alone: $alone"; }

# --pid beside --pid
"$TRACER" --pid $sp --duration 2 -o "$TMP/first.pb.gz" 2>"$TMP/first.err" &
first=$!
wait_for "$TMP/first.err" "attached to process|connected to the agent" 10 ||
	{ cat "$TMP/first.err"; fail "the first tracer did not attach"; }
if timeout 30 "$TRACER" --pid $sp --duration 0.5 -o "$TMP/second.pb.gz" \
	2>"$TMP/second.err"; then
	cat "$TMP/second.err"; fail "a second tracer was let in"
fi
cat "$TMP/second.err"
grep -q "process $sp is already being profiled by pprof-alloc (process $first)" "$TMP/second.err" ||
	fail "the refusal does not name the first tracer"
[ "$(wc -l <"$TMP/second.err")" = 1 ] || fail "the refusal is not one line"
[ -e "$TMP/second.pb.gz" ] && fail "the refused tracer wrote a profile"
wait $first || { cat "$TMP/first.err"; fail "the first tracer failed"; }
n=$(sed -n 's/.*wrote .* (\([0-9]*\) samples).*/\1/p' "$TMP/first.err")
note "alone: $alone samples in 2 s; beside a refused second tracer: $n"
# the second took nothing: every sample the agent took reached the first
go tool pprof -comments "$TMP/first.pb.gz" >"$TMP/first.comments" 2>&1 ||
	fail "go tool pprof cannot read the first profile"
taken=$(sed -n 's/.* \([0-9]*\) samples taken by the agent, \([0-9]*\) received.*/\1 \2/p' \
	"$TMP/first.comments")
set -- $taken
[ $# = 2 ] && [ "$1" -gt 0 ] && [ "$1" = "$2" ] ||
	{ cat "$TMP/first.comments"; fail "the first tracer did not receive every sample: $taken"; }
# and, within sampling and the machine's load, as many as alone
within "$n" "$alone" 50 || fail "the first profile has $n samples, $alone alone"
grep -q "was detached" "$TMP/first.err" || fail "the first tracer did not detach"

# --pid beside a launch: the launching tracer owns the agent from the start
# (the survivor lives 2 s, longer on a slower machine: past the refusal)
"$TRACER" -o "$TMP/launched.pb.gz" -- "$S" $((2 * TIME_SCALE)) main \
	>"$TMP/l.out" 2>"$TMP/l.err" &
launcher=$!
wait_for "$TMP/l.err" 'survivor: ready' 10 || fail "the launched survivor did not get ready"
lp=$(pgrep -P $launcher -n) || fail "no launched survivor"
if timeout 30 "$TRACER" --pid $lp --duration 0.3 -o "$TMP/beside.pb.gz" \
	2>"$TMP/beside.err"; then
	cat "$TMP/beside.err"; fail "a --pid tracer was let in beside the launching one"
fi
grep -q "process $lp is already being profiled by pprof-alloc (process $launcher)" "$TMP/beside.err" ||
	{ cat "$TMP/beside.err"; fail "the refusal does not name the launching tracer"; }
wait $launcher || { cat "$TMP/l.err"; fail "the launching tracer failed"; }
grep -q '^survivor: ok' "$TMP/l.out" || fail "the launched survivor: $(cat "$TMP/l.out")"
go tool pprof -comments "$TMP/launched.pb.gz" 2>&1 |
	grep -q ' \([0-9]*\) samples taken by the agent, \1 received' ||
	fail "the launching tracer did not receive every sample"

# --pid beside serve: refused, naming serve's address; serve keeps counting
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$TRACER" serve --pid $sp --listen "127.0.0.1:$port" >"$TMP/serve.out" 2>"$TMP/serve.err" &
server=$!
samples() {
	curl -s --max-time 5 "http://127.0.0.1:$port/metrics" |
		awk '$1 == "pprof_alloc_agent_samples_total" { print $2 }'
}
n=0
until [ -n "$(samples)" ]; do
	n=$((n + 1)); [ $n -lt 200 ] || { cat "$TMP/serve.err"; fail "serve did not come up"; }
	sleep 0.05
done
if timeout 30 "$TRACER" --pid $sp --duration 0.3 -o "$TMP/vs.pb.gz" 2>"$TMP/vs.err"; then
	cat "$TMP/vs.err"; fail "a --pid tracer was let in beside serve"
fi
grep -q "already being profiled by pprof-alloc (process $server, serving on 127.0.0.1:$port)" "$TMP/vs.err" ||
	{ cat "$TMP/vs.err"; fail "the refusal does not name serve and its address"; }
before=$(samples)
sleep 1
after=$(samples)
note "serve's samples: $before, a second later $after"
awk -v a="$after" -v b="$before" 'BEGIN { exit !(a > b) }' ||
	fail "serve's agent stopped counting after the refused tracer ($before -> $after)"
kill -TERM $server
wait $server || { cat "$TMP/serve.err"; fail "serve did not end cleanly"; }

# the first detached: the next one attaches
timeout 30 "$TRACER" --pid $sp --duration 0.3 -o "$TMP/next.pb.gz" 2>"$TMP/next.err" ||
	{ cat "$TMP/next.err"; fail "a tracer after a detached one failed"; }

# the owner killed: the next one takes over
"$TRACER" --pid $sp --duration 5 -o "$TMP/killed.pb.gz" 2>"$TMP/killed.err" &
k=$!
wait_for "$TMP/killed.err" "attached|connected" 10 || fail "the tracer to kill did not attach"
kill -KILL $k; wait $k 2>/dev/null
timeout 30 "$TRACER" --pid $sp --duration 0.3 -o "$TMP/over.pb.gz" 2>"$TMP/over.err" ||
	{ cat "$TMP/over.err"; fail "a killed owner's agent was not taken over"; }
# within a second of its tracer's death the agent turns itself off; on a
# busy machine that second may pass before the next tracer comes, which
# then re-attaches, saying so
grep -q "connected to the agent" "$TMP/over.err" ||
	{ grep -q "had turned itself off: its tracer (process $k) ended without detaching" "$TMP/over.err" &&
		grep -q "re-attached to process $sp" "$TMP/over.err"; } ||
	{ cat "$TMP/over.err"; fail "not taken over"; }

# a failed attach rolls back: the agent is detached again, the memfd's
# header says so and names no owner, and the next attach works
"$TRACER" --pid $sp --duration 0.3 -o "$TMP/rb.pb.gz" >/dev/null 2>&1	# detached now
if PPROF_ALLOC_TEST_REFUSE_AGENT=1 timeout 30 "$TRACER" --pid $sp --duration 0.3 \
	-o "$TMP/refused.pb.gz" 2>"$TMP/refused.err"; then
	fail "the refused attach succeeded"
fi
cat "$TMP/refused.err"
grep -q "refused for a test.*the agent was detached again" "$TMP/refused.err" ||
	fail "the failed attach does not say it rolled back"
python3 - "$sp" <<'PY' || fail "the agent is not detached and unowned after the failed attach"
import os, struct, sys
pid = sys.argv[1]
for fd in os.listdir(f"/proc/{pid}/fd"):
    if "memfd:pprof-alloc" in os.readlink(f"/proc/{pid}/fd/{fd}"):
        h = open(f"/proc/{pid}/fd/{fd}", "rb").read(4096)
        state, owner = struct.unpack_from("<I", h, 132)[0], struct.unpack_from("<Q", h, 768)[0]
        print(f"agent_state {state}, owner {owner:#x}")
        sys.exit(0 if state == 3 and owner == 0 else 1)
sys.exit(1)
PY
timeout 30 "$TRACER" --pid $sp --duration 0.5 -o "$TMP/after.pb.gz" 2>"$TMP/after.err" ||
	{ cat "$TMP/after.err"; fail "the attach after a rolled-back one failed"; }
pprof_sum "$TMP/after.pb.gz" leaf >"$TMP/sum.txt"
[ "$(value builder 1 <"$TMP/sum.txt")" -gt 0 ] || fail "no samples after the rollback"

kill -TERM $sp
wait_gone $sp 10 || fail "survivor did not end"
grep -q '^survivor: ok' "$TMP/s" || fail "$(cat "$TMP/s")"
