#!/bin/sh
# run-peak.sh - the heap at its highest point, and the readings at the end.
#
# tests/workloads/peak.c keeps 2 MiB (before_site), rises by 64 MiB at
# peak_site from two threads, holds it, frees it all and ends holding
# 1 MiB more (end_site).  `go tool pprof -sample_index=peak_inuse_space`
# must show peak_site at 64 MiB exactly at --rate 1, and 256 MiB of 1 MiB
# blocks within 10% at the default rate - and before_site, not end_site;
# inuse_space (still the default sample index) the opposite.  Stock Debian python3 holding a
# 100 MiB bytearray for a moment likewise.  PROFILE.json's last reading is
# taken as the program exits (RssAnon and the allocator at the end, not
# at the start), labelled "at exit"; a program that _exits or is killed
# keeps its last periodic reading, labelled so; the summary line names the
# peak heap, the peak RSS and the final RSS.  A stopped tracer holds a
# program's exit only until its beat is missed (200 ms), well under 1 s.  serve's /debug/pprof/heap?peak=1
# opens on peak_inuse_space.
. "$(dirname "$0")/lib.sh"
need pgrep curl python3

need go
W="$WORKLOADS/peak"
PEAK=$((16384 * 4096))
BEFORE=$((2 * 1048576))
PY=/usr/bin/python3

# json FILE EXPR: a value of PROFILE.json (python3 expression over d)
json() {
	$PY -c "import json,sys; d = json.load(open(sys.argv[1])); print($2)" "$1"
}

# totals PROFILE: "INUSE_SPACE PEAK_INUSE_SPACE" summed over every sample
totals() {
	go tool pprof -raw "$1" 2>/dev/null | $PY -c '
import re, sys
types, tot, on = [], None, False
for line in sys.stdin:
    if line.startswith("Samples:"):
        on = True
        continue
    if line.startswith("Locations"):
        break
    if on and not types and "/" in line:
        types = [t.split("[")[0] for t in line.split()]
        tot = [0] * len(types)
        continue
    m = re.match(r"^\s*([-\d ]+):", line) if on and types else None
    if m:
        for i, v in enumerate(m.group(1).split()):
            tot[i] += int(v)
print(tot[types.index("inuse_space/bytes")], tot[types.index("peak_inuse_space/bytes")])'
}

# check_peak NAME PROFILE PCT [TYPE [late]]: TYPE the default (inuse_space);
# late: attached after before_site's allocation, which it cannot know
check_peak() {
	pprof_sum "$2" peak >"$TMP/$1.peak"
	pprof_sum "$2" leaf >"$TMP/$1.leaf"
	sed 's/^/    /' "$TMP/$1.peak" | grep -v '^    #'
	got=$(value peak_site 2 <"$TMP/$1.peak")
	within "$got" $PEAK "$3" ||
		check_failed "$1: peak_inuse_space at peak_site is $got, want $PEAK within $3%"
	got=$(value before_site 2 <"$TMP/$1.peak")
	[ "${5:-}" = late ] || within "$got" $BEFORE "$3" ||
		check_failed "$1: peak_inuse_space at before_site is $got, want $BEFORE within $3%"
	got=$(value end_site 2 <"$TMP/$1.peak")
	[ "$got" = 0 ] ||
		check_failed "$1: end_site was not there at the peak, but peak_inuse_space says $got"
	got=$(value peak_site 4 <"$TMP/$1.leaf")
	[ "$got" = 0 ] ||
		check_failed "$1: inuse_space at peak_site is $got at the end, want 0"
	# what a user types
	go tool pprof -sample_index=peak_inuse_space -top "$2" >"$TMP/$1.top" 2>&1 ||
		check_failed "$1: go tool pprof -sample_index=peak_inuse_space failed: $(cat "$TMP/$1.top")"
	first=$(awk 'f { print $NF; exit } /flat%/ { f = 1 }' "$TMP/$1.top")
	[ "$first" = peak_site ] ||
		check_failed "$1: the top of peak_inuse_space is $first, want peak_site"
	grep -q "^Type: peak_inuse_space" "$TMP/$1.top" ||
		check_failed "$1: -sample_index=peak_inuse_space is not the peak's type"
	go tool pprof -top "$2" 2>&1 | grep -q "^Type: ${4:-inuse_space}\$" ||
		check_failed "$1: the default sample index is not ${4:-inuse_space}"
}

# check_end NAME JSON ERR TAKEN: the readings beside the profile
check_end() {
	taken=$(json "$2" "d['end']['reading']['taken']")
	[ "$taken" = "$4" ] ||
		check_failed "$1: the last reading was taken '$taken', want '$4'"
	grep -q "peak heap [0-9.]* MiB, peak RSS [0-9.]* MiB, final RSS [0-9.]* MiB" "$3" ||
		check_failed "$1: the summary line does not name the peak heap, peak RSS and final RSS"
	prss=$(json "$2" "d['end']['peak_rss']['bytes']")
	[ "$prss" -ge $PEAK ] ||
		check_failed "$1: peak RSS $prss is below the peak heap $PEAK"
	hwm=$(json "$2" "d['process']['status']['VmHWM']")
	[ "$hwm" -ge $PEAK ] ||
		check_failed "$1: VmHWM $hwm in the last reading is below the peak heap"
	# hex and octal lines of status are not numbers
	json "$2" "'SigCgt' in d['process']['status'] or 'Umask' in d['process']['status']" |
		grep -q False || check_failed "$1: status still has SigCgt or Umask"
}

# --- --rate 1: exact
note "--rate 1"
trace "$TMP/r1.out" "$TMP/r1.pb.gz" --rate 1 -- "$W" 16384 4096 300 exit
[ "$trace_rc" = 0 ] || fail "rate 1: exited $trace_rc"
check_peak r1 "$TMP/r1.pb.gz" 0
check_end r1 "$TMP/r1.json" "$TMP/r1.out.err" "at exit"
# at exit: the peak gone, end_site's 1 MiB there; the allocator's own
# statistics read then too (in use: the 3 MiB kept, not the 64 MiB)
anon=$(json "$TMP/r1.json" "d['process']['status']['RssAnon']")
[ "$anon" -lt $((PEAK / 2)) ] ||
	check_failed "rate 1: RssAnon at exit is $anon: the reading is not from the end"
used=$(json "$TMP/r1.json" "d['allocator']['mallinfo2']['uordblks'] + d['allocator']['mallinfo2']['hblkhd']")
[ "$used" -ge $((BEFORE + 1048576)) ] && [ "$used" -lt $((PEAK / 4)) ] ||
	check_failed "rate 1: the allocator holds $used at exit, want about 3 MiB"
# exact at the highest read, or the agent's count from two threads: a
# bound at most its slack above the peak, said so
ok=$(json "$TMP/r1.json" "(lambda p: p['exact'] if not p['counted_by_agent'] else
	$PEAK + $BEFORE <= p['bytes'] <= $PEAK + $BEFORE + p['slack_bytes'] + 1048576)(d['end']['peak_heap'])")
[ "$ok" = True ] || check_failed "rate 1: the peak is neither exact nor the agent's bound: $(json "$TMP/r1.json" "d['end']['peak_heap']")"
# (the agent's count, from two threads, is a bound a little above the
# highest read, which holds the peak here: either is said)
go tool pprof -raw "$TMP/r1.pb.gz" 2>/dev/null |
	grep -q -e "Comment: peak heap .*(exact" -e "Comment: peak heap .* counted by the agent at every call, at most" ||
	check_failed "rate 1: no 'peak heap ... (exact' comment in the profile"

# --- --rate 1, a run shorter than one read of the sites (50 ms): the
# peak the agent counted at every call.  From main alone it is exact:
# before_site's 2 MiB, the 1 MiB risen, the pointer array (256 * 8) and
# stdout's buffer (a file's st_blksize: "peak" is printed before the
# frees); from two threads, at most the slack the profile states above
# that.
blksize=$(: >"$TMP/blk"; stat -c %o "$TMP/blk")
for threads in 1 2; do
	note "--rate 1, short, $threads thread(s)"
	export PEAK_THREADS=$threads
	trace "$TMP/s$threads.out" "$TMP/s$threads.pb.gz" \
		--rate 1 -- "$W" 256 4096 0 exit
	unset PEAK_THREADS
	[ "$trace_rc" = 0 ] || fail "short rate 1: exited $trace_rc"
	want=$((BEFORE + 256 * 4096 + 256 * 8 + blksize))
	got=$(json "$TMP/s$threads.json" "int(d['end']['peak_heap']['bytes'])")
	slack=$(json "$TMP/s$threads.json" "d['end']['peak_heap'].get('slack_bytes', 0)")
	note "short, $threads thread(s): peak heap $got (want $want, slack $slack)"
	if [ $threads = 1 ]; then
		[ "$got" = "$want" ] ||
			check_failed "short rate 1, main alone: peak heap $got, want exactly $want"
	else
		[ "$got" -ge "$want" ] && [ "$got" -le $((want + slack + 65536)) ] ||
			check_failed "short rate 1, 2 threads: peak heap $got, want $want to $want + $slack + the threads' own"
	fi
	sums=$(totals "$TMP/s$threads.pb.gz")
	[ "${sums% *}" -le "$got" ] ||
		check_failed "short rate 1: in use at the end (${sums% *}) is above the peak $got"
done

# --- the same from main alone, ending by _exit and by SIGKILL: no flush
# of the thread's counts, and more than 256 samples (the period of a
# flush) since the last; the peak is still exact
for how in _exit kill; do
	note "--rate 1, main alone, ends with $how"
	export PEAK_THREADS=1
	trace "$TMP/e$how.out" "$TMP/e$how.pb.gz" --rate 1 -- "$W" 1000 4096 0 $how
	unset PEAK_THREADS
	want=$((BEFORE + 1000 * 4096 + 1000 * 8 + blksize))
	got=$(json "$TMP/e$how.json" "int(d['end']['peak_heap']['bytes'])")
	exact=$(json "$TMP/e$how.json" "d['end']['peak_heap']['exact']")
	note "$how: peak heap $got (want $want), exact $exact"
	[ "$got" = "$want" ] && [ "$exact" = True ] ||
		check_failed "rate 1, main alone, $how: peak heap $got (exact $exact), want exactly $want"
done

# --- the default rate: an estimate.  Its spread is about one over the
# square root of the samples: 64 MiB of small blocks is ~128 samples (9%),
# so here 256 MiB of 1 MiB blocks (2.5%: within 10% is four sigmas).
# before_site is one block: 2 MiB at a 512 KiB mean goes unsampled once
# in e^4 = 55 runs, 16 MiB once in e^32.
note "default rate"
PEAK=$((256 * 1048576))
BEFORE=$((16 * 1048576))
export PEAK_BEFORE=$BEFORE
trace "$TMP/d.out" "$TMP/d.pb.gz" -- "$W" 256 1048576 300 exit
unset PEAK_BEFORE
[ "$trace_rc" = 0 ] || fail "default rate: exited $trace_rc"
check_peak default "$TMP/d.pb.gz" 10
check_end default "$TMP/d.json" "$TMP/d.out.err" "at exit"
go tool pprof -raw "$TMP/d.pb.gz" 2>/dev/null | grep -q "Comment: peak heap .*estimated from samples" ||
	check_failed "default rate: the peak is not said to be an estimate"

PEAK=$((16384 * 4096))
BEFORE=$((2 * 1048576))

# --- no exit(): the last periodic reading, said
for how in _exit kill; do
	note "ends with $how"
	trace "$TMP/$how.out" "$TMP/$how.pb.gz" --interval 0.05 -- "$W" 16384 4096 300 $how
	taken=$(json "$TMP/$how.json" "d['end']['reading']['taken']")
	[ "$taken" = periodic ] ||
		check_failed "$how: the last reading is said to be '$taken', want periodic"
	grep -q "final RSS [0-9.]* MiB (last reading, [0-9.]* s before the end)" "$TMP/$how.out.err" ||
		check_failed "$how: the summary line does not say the final RSS is the last periodic reading's"
done

# --- a stock binary: python3's 300 MiB bytearray, at both rates
for rate in 1 default; do
	note "python3, rate $rate"
	set -- --rate 1
	[ $rate = 1 ] || set --
	trace "$TMP/py$rate.out" "$TMP/py$rate.pb.gz" "$@" -- $PY -c \
		'import time; b = bytearray(100 << 20); time.sleep(0.3); del b; x = [str(i) for i in range(1000)]'
	[ "$trace_rc" = 0 ] || fail "python3 rate $rate: exited $trace_rc"
	sums=$(totals "$TMP/py$rate.pb.gz")
	inuse=${sums% *} peak=${sums#* }
	[ "$peak" -ge $((100 * 1048576)) ] ||
		check_failed "python3 rate $rate: peak_inuse_space totals $peak, want at least 100 MiB"
	[ "$inuse" -lt $((32 * 1048576)) ] ||
		check_failed "python3 rate $rate: inuse_space totals $inuse at the end, want it small"
	taken=$(json "$TMP/py$rate.json" "d['end']['reading']['taken']")
	[ "$taken" = "at exit" ] || check_failed "python3 rate $rate: last reading '$taken'"
	note "python3 rate $rate: peak_inuse_space $peak, inuse_space $inuse"
done

# --- a stopped tracer holds the exit only until its beat is missed
note "stopped tracer"
"$TRACER" -o "$TMP/stop.pb.gz" -- "$W" 64 4096 500 exit >"$TMP/stop.out" 2>"$TMP/stop.err" &
tpid=$!
wait_for "$TMP/stop.out" '^peak' 20 || fail "stopped tracer: the workload did not start"
kill -STOP $tpid
wpid=$(pgrep -P $tpid | head -n 1)
wait_for "$TMP/stop.out" '^done' 5 || check_failed "stopped tracer: the workload did not finish"
n=0
while [ "$(sed 's/.*) //' /proc/$wpid/stat 2>/dev/null | cut -c1)" != Z ] && [ $n -lt 400 ]; do
	sleep 0.01; n=$((n + 1))
done
kill -CONT $tpid
wait $tpid
[ $n -lt 100 ] ||
	check_failed "stopped tracer: the program took $((n * 10)) ms to exit after its last line, want well under 1 s (200 ms without the tracer's beat)"
note "stopped tracer: the program exited $((n * 10)) ms after its last line"
taken=$(json "$TMP/stop.json" "d['end']['reading']['taken']")
[ "$taken" = periodic ] ||
	check_failed "stopped tracer: the last reading is said to be '$taken', want periodic"

# --- serve: ?peak=1
note "serve ?peak=1"
PEAK=$((256 * 1048576))		# the default rate again: see above
"$W" 256 1048576 0 wait "$TMP/gate" >"$TMP/svc.out" 2>&1 &
svc=$!
wait_for "$TMP/svc.out" '^ready' 20 || fail "serve: the workload did not start"
port=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$TRACER" serve --listen "127.0.0.1:$port" --pid $svc >"$TMP/srv.out" 2>"$TMP/srv.err" &
srv=$!
n=0
until curl -s "http://127.0.0.1:$port/healthz" 2>/dev/null | grep -q ok; do
	[ $n -lt 400 ] || { kill $svc $srv; fail "serve did not start: $(cat "$TMP/srv.err")"; }
	sleep 0.05; n=$((n + 1))
done
touch "$TMP/gate.go"
wait_for "$TMP/svc.out" '^done' 30 || check_failed "serve: the workload did not get past its peak"
sleep 0.3
curl -s -o "$TMP/srv-peak.pb.gz" "http://127.0.0.1:$port/debug/pprof/heap?peak=1"
check_peak serve "$TMP/srv-peak.pb.gz" 10 peak_inuse_space late
for q in "peak=2" "peak=1&seconds=1" "peak=1&peak=1"; do
	c=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/debug/pprof/heap?$q")
	[ "$c" = 400 ] || check_failed "serve: ?$q answered $c, want 400"
done
touch "$TMP/gate"
kill -TERM $srv 2>/dev/null
wait $srv 2>/dev/null
wait $svc 2>/dev/null
finish
