# The tracer dies (SIGKILL) at every step of an attach and a detach, and at
# random moments: the target lives on, intact, every time.
#
# Part 1, every step: PPROF_ALLOC_TEST_KILL_STEP=N makes the tracer kill
# itself at the Nth step that changes a borrowed thread (tracer/attach/inject.c),
# for N = 1, 2, ... until an attach and detach complete (make test kills at
# every other step of each target, in turn, so each step is still met on
# two of the four; ATTACH_DEATH_EVERY=1, make check-long, kills at every
# step of each); each on a fresh
# survivor (tests/workloads/survivor.c), whose borrowed thread waits in
# poll, in nanosleep or in a read of a pipe, and which checks from the
# inside its registers (general and vector) across every wait, its signal
# masks, its alternate stack and its heap; and on a busy awk loop, borrowed
# at the entry of a write, whose every line must come out right.
# Part 2, random moments: the tracer is killed 0 to 20 ms after it starts,
# over and over, on one survivor, python3's http.server and a perl loop
# (stock Debian programs), plus fresh python and perl processes, so that
# the kills land in the first dlopen too; ATTACH_DEATH_ROUNDS rounds in
# all, parts 1 and 2, ATTACH_DEATH_FRESH of them on fresh processes of
# each kind (100 and 5 here, at least 10 on each long-lived target; 1000
# and 50 in make check-long: tests/long/run-attach-death-random.sh).  Then
# a tracer that is left alone must attach, record and detach.
# The targets' own output says whether they are intact: survivor's
# self-check, http.server's answers, the perl loop's numbered lines.
. "$(dirname "$0")/lib.sh"
need python3 curl go
attach_init

S="$WORKLOADS/survivor"
[ -x "$S" ] || fail "$S is not built"
rounds=0

# kill_at N PID: a tracer on PID that kills itself at step N; its status
kill_at() {
	PPROF_ALLOC_TEST_KILL_STEP=$1 timeout 30 "$TRACER" --pid "$2" \
		--duration 0.1 -q -o "$TMP/k.pb.gz" >"$TMP/k.out" 2>&1
}

# survivor_ends PID OUT WHAT: SIGTERM, then its self-check must say ok
survivor_ends() {
	kill -TERM "$1"
	wait_gone "$1" 10 || fail "$3: survivor did not end on SIGTERM"
	wait "$1" 2>/dev/null
	grep -q '^survivor: ok' "$2" ||
		fail "$3: $(cat "$2" "$2.err")"
}

# EVERY: a target meets step N when (N + its index) % EVERY == 0, and
# every step past the last one the targets before it reached (a busy
# target's attach takes more steps: each must be met somewhere); the
# step past the last always runs, with the tracer left alone
EVERY=${ATTACH_DEATH_EVERY:-2}
case "$EVERY" in ''|*[!0-9]*|0) fail "ATTACH_DEATH_EVERY must be a positive number" ;; esac
# skip N K: step N is not met on the target of index K
skip() {
	[ $(( ($1 + $2) % EVERY )) != 0 ] && { [ "$2" = 0 ] || [ "$1" -le $top ]; }
}
# killed N K: the tracer was killed at step N on the target of index K
met_all=" " top=0
killed() {
	eval "met_$2=\"\${met_$2:-}\${met_$2:+ }$1\""
	met_all="$met_all$1 "
	[ "$1" -le $top ] || top=$1
}
k=0
for idle in main sleeper reader; do
	n=1
	while :; do
		if skip $n $k; then
			n=$((n + 1))
			continue
		fi
		spawn "$TMP/s.$idle.$n" "$S" 0 "$idle"
		sp=$spawned_pid
		wait_for "$TMP/s.$idle.$n.err" 'survivor: ready' 10 ||
			fail "survivor $idle did not get ready"
		kill_at "$n" "$sp"
		rc=$?
		rounds=$((rounds + 1))
		sleep 0.05
		running "$sp" ||
			fail "survivor ($idle borrowed) ended with the tracer killed at step $n: $(cat "$TMP/s.$idle.$n")"
		survivor_ends "$sp" "$TMP/s.$idle.$n" "step $n ($idle)"
		[ "$rc" = 137 ] || break
		# a round where the tracer died: restart blocks may be lost
		killed $n $k
		n=$((n + 1))
	done
	[ "$rc" = 0 ] || { cat "$TMP/k.out"; fail "the tracer left alone failed ($idle: status $rc)"; }
	# left alone, the tracer restarted every interrupted call exactly
	grep -q ' eintr 0$' "$TMP/s.$idle.$n" ||
		fail "an EINTR with the tracer alive ($idle): $(cat "$TMP/s.$idle.$n")"
	[ "$n" -ge 8 ] || fail "only $n steps in an attach and detach ($idle)?"
	note "$idle borrowed: the target survived a kill at each of its steps $(eval echo \$met_$k | tr ' ' ',')"
	k=$((k + 1))
done

# a busy awk, borrowed at the entry of one of its writes: one a line,
# a line every few ms (fewer sums on a slower machine, which would
# otherwise write less often than the tracer waits for a call)
awk_sums=$((100000 / TIME_SCALE))
awk_sum=$(awk -v n=$awk_sums 'BEGIN { printf "%.0f", n * (n - 1) / 2 }')
awk_loop() {
	exec awk -v m=$awk_sums 'BEGIN { for (n = 0; ; n++) {
		s = 0; for (i = 0; i < m; i++) s += i
		print n, s; fflush() } }'
}
n=1
while :; do
	if skip $n $k; then
		n=$((n + 1))
		continue
	fi
	spawn "$TMP/awk.$n" awk_loop
	ap=$spawned_pid
	wait_for "$TMP/awk.$n" '^3 ' 10 || fail "awk did not start"
	kill_at "$n" "$ap"
	rc=$?
	rounds=$((rounds + 1))
	sleep 0.1
	running "$ap" || fail "awk ended with the tracer killed at step $n"
	kill -TERM "$ap"; wait "$ap" 2>/dev/null
	awk -v want=$awk_sum '$1 != NR - 1 || $2 + 0 != want + 0 { print "line " NR ": " $0; bad = 1; exit }
		END { exit bad }' "$TMP/awk.$n" ||
		fail "awk's output is broken with the tracer killed at step $n"
	[ "$rc" = 137 ] || break
	killed $n $k
	n=$((n + 1))
done
[ "$rc" = 0 ] || { cat "$TMP/k.out"; fail "the tracer left alone failed on awk (status $rc)"; }
note "busy awk: the target survived a kill at each of its steps $(echo $met_3 | tr ' ' ',')"
# every step up to the last one met was met on some target
i=1
while [ $i -le $top ]; do
	case "$met_all" in *" $i "*) ;; *) fail "no target met a kill at step $i of $top" ;; esac
	i=$((i + 1))
done
note "every step 1 to $top met a kill"

# ---- part 2: random moments ------------------------------------------

random_ms() { od -An -N2 -tu2 /dev/urandom | awk -v m="$1" '{ print $1 % (m + 1) }'; }

# kill_randomly PID COUNT: COUNT tracers on PID, each killed 0-20 ms in
kill_randomly() {
	_i=0
	while [ $_i -lt "$2" ]; do
		"$TRACER" --pid "$1" --duration 0.05 -q -o "$TMP/r.pb.gz" \
			>/dev/null 2>&1 &
		_t=$!
		sleep "0.0$(printf '%02d' "$(random_ms 20)")"
		kill -KILL $_t 2>/dev/null
		wait $_t 2>/dev/null
		sleep 0.02	# a thread let go mid-call finishes it first (and
				# waits at most 250 ms in the stub: run on)
		running "$1" || fail "target $1 died at random round $_i"
		rounds=$((rounds + 1))
		_i=$((_i + 1))
	done
}

# the perl loop: numbered lines, each with the same sum, every 5 ms
perl_loop() {
	exec perl -e '$| = 1; for ($i = 0; ; $i++) {
		my @a = map { "x" x ($_ % 97) } 1 .. 2000; my $s = 0;
		$s += length for @a; print "$i $s\n";
		select(undef, undef, undef, 0.005) }'
}
perl_intact() {
	awk -v what="$2" 'NF != 2 || $1 != NR - 1 || $2 != 94950 {
		printf "%s: line %d is \"%s\"\n", what, NR, $0; bad = 1; exit }
		END { exit bad || NR < 10 }' "$1" ||
		fail "$2: the perl loop's output is broken"
}

mkdir "$TMP/www"
echo "pprof-alloc survivor page" >"$TMP/www/page.txt"
port=$((20000 + $$ % 20000))
http_ok() {
	curl -s --max-time 5 "http://127.0.0.1:$port/page.txt" >"$TMP/page" &&
		cmp -s "$TMP/page" "$TMP/www/page.txt"
}
start_http() {
	(cd "$TMP/www" && exec python3 -m http.server "$port" --bind 127.0.0.1) \
		>"$TMP/http.out" 2>&1 &
	hp=$!
	spawned="$spawned $hp"
	_n=0
	until http_ok; do
		_n=$((_n + 1))
		[ $_n -lt 100 ] || fail "http.server did not start"
		sleep 0.05
	done
}

# ROUNDS rounds in all: 2 x FRESH on fresh processes below, the rest here
ROUNDS=${ATTACH_DEATH_ROUNDS:-100}
FRESH=${ATTACH_DEATH_FRESH:-5}
each=$(( (ROUNDS - rounds - 2 * FRESH + 2) / 3 ))
[ $each -ge 10 ] || each=10
spawn "$TMP/s.random" "$S" 0 main
sp=$spawned_pid
wait_for "$TMP/s.random.err" 'survivor: ready' 10 || fail "survivor did not get ready"
kill_randomly "$sp" $each

start_http
kill_randomly "$hp" $each
http_ok || fail "http.server does not answer after $each killed tracers"

spawn "$TMP/perl.out" perl_loop
pp=$spawned_pid
wait_for "$TMP/perl.out" '^5 ' 10 || fail "the perl loop did not start"
kill_randomly "$pp" $each

# ends PID WHAT: SIGTERM ends it (status 143), nothing else did first
ends() {
	kill -TERM "$1"
	wait "$1" 2>/dev/null
	_rc=$?
	[ $_rc = 143 ] || fail "$2 ended with status $_rc, not by our SIGTERM"
}

# fresh processes: kills that land in the first dlopen
i=0
while [ $i -lt "$FRESH" ]; do
	spawn "$TMP/perl.$i" perl_loop
	p=$spawned_pid
	wait_for "$TMP/perl.$i" '^3 ' 10 || fail "perl loop $i did not start"
	kill_randomly "$p" 1
	sleep 0.4	# a thread left in the stub's wait goes home in 250 ms
	ends "$p" "fresh perl $i"
	perl_intact "$TMP/perl.$i" "fresh perl $i"
	i=$((i + 1))
done
ends "$hp" "http.server"
i=0
while [ $i -lt "$FRESH" ]; do
	start_http
	kill_randomly "$hp" 1
	sleep 0.3
	http_ok || fail "fresh http.server $i does not answer after its tracer was killed"
	ends "$hp" "fresh http.server $i"
	i=$((i + 1))
done

# left alone, a tracer attaches, records and detaches
timeout 30 "$TRACER" --pid "$sp" --duration 0.5 -o "$TMP/final.pb.gz" \
	2>"$TMP/final.err" || { cat "$TMP/final.err"; fail "the last tracer failed"; }
grep -q "was detached" "$TMP/final.err" || { cat "$TMP/final.err"; fail "not detached"; }
pprof_sum "$TMP/final.pb.gz" leaf >"$TMP/sum.txt"
[ "$(value builder 1 <"$TMP/sum.txt")" -gt 0 ] ||
	{ cat "$TMP/sum.txt"; fail "no allocation by survivor's builder in the last profile"; }
survivor_ends "$sp" "$TMP/s.random" "random kills"
ends "$pp" "perl loop"
perl_intact "$TMP/perl.out" "perl loop"
note "$rounds rounds, the tracer killed in each; every target intact"
[ "$rounds" -ge "$ROUNDS" ] || fail "only $rounds rounds, want $ROUNDS"
