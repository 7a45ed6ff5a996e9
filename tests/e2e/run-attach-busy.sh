# A target whose only thread never waits in a system call: a stock awk
# loop that computes and writes a line now and then.  It is borrowed at the
# entry of one of its writes, attached, recorded and detached, and every
# line it writes is whole and right.  A thread that makes no system call
# at all is refused, in words, and left running untouched.
. "$(dirname "$0")/lib.sh"
need go cc
attach_init

# mawk, Debian's awk: one thread; a line every few tens of milliseconds
# (fewer sums a line on a slower machine, which would otherwise write
# less often than the tracer waits for a call)
sums=$((200000 / TIME_SCALE))
want=$(awk -v n=$sums 'BEGIN { printf "%.0f", n * (n - 1) / 2 }')
spawn "$TMP/awk.out" awk -v m=$sums 'BEGIN { for (n = 0; ; n++) {
	s = 0; for (i = 0; i < m; i++) s += i
	x = x "y"; if (length(x) > 1000) x = ""
	print n, s; fflush() } }'
ap=$spawned_pid
wait_for "$TMP/awk.out" '^3 ' 10 || fail "awk did not start"
[ "$(ls /proc/$ap/task | wc -l)" = 1 ] || fail "awk is not single-threaded"
timeout 30 "$TRACER" --pid $ap --duration 1 -o "$TMP/awk.pb.gz" 2>"$TMP/awk.err" ||
	{ cat "$TMP/awk.err"; fail "a busy awk could not be attached"; }
cat "$TMP/awk.err"
grep -q "attached to process $ap" "$TMP/awk.err" || fail "not attached"
grep -q "was detached" "$TMP/awk.err" || fail "not detached"
go tool pprof -raw "$TMP/awk.pb.gz" >/dev/null 2>&1 || fail "the profile does not load"
sleep 0.2
kill -TERM $ap
wait $ap 2>/dev/null
awk -v want=$want '$1 != NR - 1 || $2 + 0 != want + 0 { print "line " NR ": " $0; bad = 1; exit }
	END { exit bad || NR < 20 }' "$TMP/awk.out" || fail "awk's output is broken"
note "$(wc -l <"$TMP/awk.out") lines from awk, all whole"

# a spinner that makes no system call: refused, untouched
cat >"$TMP/spin.c" <<'C'
#include <stdio.h>
int main(void) { volatile unsigned long n = 0; puts("spinning"); fflush(stdout); for (;;) n++; }
C
cc -O1 -o "$TMP/spin" "$TMP/spin.c" || fail "cannot build the spinner"
spawn "$TMP/spin.out" "$TMP/spin"
sp=$spawned_pid
wait_for "$TMP/spin.out" spinning 10 || fail "the spinner did not start"
if timeout 30 "$TRACER" --pid $sp --duration 0.3 -o "$TMP/spin.pb.gz" 2>"$TMP/spin.err"; then
	fail "a thread that makes no system call was attached"
fi
cat "$TMP/spin.err"
grep -q "nor made one it can be borrowed at" "$TMP/spin.err" || fail "the refusal does not say why"
grep -q libpprof-alloc "/proc/$sp/maps" && fail "the agent was loaded into the spinner"
grep -q "TracerPid:[[:space:]]*0" "/proc/$sp/status" || fail "the spinner is still traced"
grep -q "State:[[:space:]]*R" "/proc/$sp/status" || fail "the spinner is not running"
