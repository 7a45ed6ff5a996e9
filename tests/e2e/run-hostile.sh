#!/bin/sh
# run-hostile.sh - a target that lies to the tracer (tests/workloads/hostile.c
# plays the agent and misbehaves) cannot crash, hang or mislead it.
#
# For each misbehaviour the tracer attaches with --pid and --duration 0.5,
# under a timeout; the test asserts its exit status, its message, that it
# finished within a bound, that the hostile process is still alive and
# untouched (the tracer never writes where the target points), and - where
# the ring was honest at first - that the profile holds exactly the honest
# records: 10 allocations of 1000 bytes at hostile_hello.
#
#   refused at connect: unsealed, shrinkable, writesealed, lying, abi
#   ring corrupted after connect: back, ahead, unaligned, reclen, frames,
#     stackcopy, module -> "the target's ring is corrupt (...)"
#   counters, backwards: 10^12 lost records in a second, or going backwards
#     -> one "the agent's header is corrupt" line, no advice on them
#   busy: a record never finished; honest records behind it; and again
#     for longer than the stall warning
#   stubborn: never detaches -> bounded wait, then a message
#   livegarbage: live and stack tables of random words
#   paths: the module file replaced by a FIFO (an open by path would block)
#   shrink: the module file emptied and refilled every millisecond
#     (a mapping of it SIGBUSes; the tracer must survive)
#   flood: four threads of records with new stacks and addresses, never
#     freed, for FLOOD_SECONDS (default 4): the tracer's memory stays
#     bounded (caps: --max-stacks FLOOD_MAX_STACKS, default 20000, and the
#     live-sample cap); make check-long floods for longer at the tracer's
#     own default cap
. "$(dirname "$0")/lib.sh"
need go cc python3

H="$WORKLOADS/hostile"
[ -x "$H" ] || fail "no $H"
hp=
trap 'kill -9 $hp 2>/dev/null; rm -rf "$TMP"' EXIT

# start MODE [LIB]: the hostile process, its pid in $hp once it is ready
start() {
	rm -f "$TMP/pid"
	"$H" "$1" "$TMP/pid" ${2:+"$2"} 2>"$TMP/hostile.err" &
	hp=$!
	i=0
	until [ -s "$TMP/pid" ] || [ $i -ge 200 ]; do sleep 0.05; i=$((i + 1)); done
	[ -s "$TMP/pid" ] || fail "$1: the hostile process did not start: $(cat "$TMP/hostile.err")"
}

# attach MODE LIMIT_S [tracer options]: run the tracer on $hp; sets rc, ms
attach() {
	_mode=$1 _limit=$2; shift 2
	_t0=$(date +%s%N)
	timeout -s KILL 120 "$TRACER" --pid "$hp" --duration 0.5 \
		-o "$TMP/$_mode.pb.gz" "$@" >"$TMP/$_mode.out" 2>"$TMP/$_mode.err"
	rc=$?
	ms=$(( ($(date +%s%N) - _t0) / 1000000 ))
	note "$_mode: exit $rc in $ms ms: $(grep -v 'connected to\|note: the agent there\|first record' "$TMP/$_mode.err" | tr '\n' ' ')"
	[ $rc -lt 128 ] || check_failed "$_mode: the tracer died of signal $((rc - 128)) (or timed out)"
	[ "$ms" -le $((_limit * 1000)) ] ||
		check_failed "$_mode: took $ms ms, more than $_limit s"
	kill -0 "$hp" 2>/dev/null || check_failed "$_mode: the hostile process is gone"
}

said() {	# said MODE TEXT: the tracer's stderr has TEXT
	grep -qF -- "$2" "$TMP/$1.err" ||
		check_failed "$1: no message '$2' (stderr: $(cat "$TMP/$1.err"))"
}

stop() { kill -9 "$hp" 2>/dev/null; wait "$hp" 2>/dev/null; hp=; }

# honest_profile MODE [EXTRA_FUNC EXTRA_BYTES]: the profile holds the 10
# honest allocations (and nothing impossible)
honest_profile() {
	[ -s "$TMP/$1.pb.gz" ] || { check_failed "$1: no profile"; return; }
	# (pprof itself may try a module file the target garbled, as
	# shrink's, which we left unsymbolized: not asked to here)
	pprof_sum "$TMP/$1.pb.gz" leaf -symbolize=none >"$TMP/$1.sums" ||
		{ check_failed "$1: go tool pprof cannot read the profile"; return; }
	check_site "$TMP/$1.sums" hostile_hello 10 10000 10 10000
}

# ---- refused at connect: nothing mapped, nothing written -------------------
for m in unsealed:"the memfd is not sealed against resizing" \
	 shrinkable:"the memfd is not sealed against resizing" \
	 writesealed:"cannot map the memfd" \
	 lying:"the memfd header's sizes do not agree with its layout" \
	 abi:"the agent speaks another ABI version than this tracer"; do
	mode=${m%%:*} msg=${m#*:}
	start "$mode"
	attach "$mode" 5
	[ $rc = 1 ] || check_failed "$mode: exit $rc, want 1"
	said "$mode" "has an agent memfd this tracer cannot use: $msg"
	[ ! -e "$TMP/$mode.pb.gz" ] || check_failed "$mode: wrote a profile from a refused memfd"
	# refused before any injection: no agent library was loaded into it
	! grep -q libpprof-alloc "/proc/$hp/maps" ||
		check_failed "$mode: the tracer injected the agent after refusing its memfd"
	stop
done

# ---- corrupted after the honest records ------------------------------------
for m in back:"ring head is behind the tail or more than a ring ahead" \
	 ahead:"ring head is behind the tail or more than a ring ahead" \
	 unaligned:"ring head or tail is not 8-byte aligned" \
	 reclen:"record length points outside the ring or past the head" \
	 frames:"allocation record with more frames than max_frames" \
	 stackcopy:"allocation record length does not match its stack copy" \
	 module:"module record length does not match its path"; do
	mode=${m%%:*} msg=${m#*:}
	start "$mode"
	attach "$mode" 10
	[ $rc = 0 ] || check_failed "$mode: exit $rc, want 0"
	said "$mode" "the target's ring is corrupt ($msg); no longer reading it"
	honest_profile "$mode"
	stop
done

# ---- loss counters the target forged: said once as a corrupt header, and
# no advice given on them
for m in counters:"a loss counter is more than the process could have counted since it started" \
	 backwards:"a loss counter went backwards"; do
	mode=${m%%:*} msg=${m#*:}
	start "$mode"
	attach "$mode" 10
	[ $rc = 0 ] || check_failed "$mode: exit $rc, want 0"
	said "$mode" "the agent's header is corrupt: $msg; its loss counters are ignored"
	n=$(grep -c "header is corrupt" "$TMP/$mode.err")
	[ "$n" = 1 ] || check_failed "$mode: the corrupt header was said $n times, want once"
	! grep -q "LOST\|ring-size\|1000000000000\|18446744073709551615" "$TMP/$mode.err" ||
		check_failed "$mode: advice given on forged counters: $(grep "LOST\|ring-size" "$TMP/$mode.err")"
	honest_profile "$mode"
	if [ "$mode" = counters ]; then
		# stats reads the forged counters too: said, not shown
		"$TRACER" stats --pid "$hp" >"$TMP/$mode.stats" 2>&1
		grep -q "its header is corrupt" "$TMP/$mode.stats" ||
			check_failed "$mode: stats does not say the header is corrupt: $(cat "$TMP/$mode.stats")"
		! grep -q "1000000000000" "$TMP/$mode.stats" ||
			check_failed "$mode: stats shows the forged counters"
	fi
	go tool pprof -comments "$TMP/$mode.pb.gz" 2>/dev/null | grep -qF "header is corrupt: $msg" ||
		check_failed "$mode: the profile's comments do not say the header is corrupt"
	! go tool pprof -comments "$TMP/$mode.pb.gz" 2>/dev/null | grep -q "records lost" ||
		check_failed "$mode: the profile's comments give the forged losses"
	stop
done

# ---- a record that never finishes: later records wait; at detach the
# producers are gone and it is skipped, and the summary says so
start busy
attach busy 10
[ $rc = 0 ] || check_failed "busy: exit $rc, want 0"
said busy "1 records were left half-written by the target's threads and skipped"
# the 10 records behind it (7 bytes each) arrive; nothing is in use, since
# after a skip the agent's live table (empty here) decides what is live
pprof_sum "$TMP/busy.pb.gz" >"$TMP/busy.sums" || check_failed "busy: no profile"
check_site "$TMP/busy.sums" hostile_hello 20 10070 0 0
stop

# ---- the busy record, seen for longer than the stall warning (set to 1 s
# here; 5 s by default) --------
start busy
export PPROF_ALLOC_STALL_WARN_SECONDS=1
attach busy-long 15 --duration 2
said busy-long "the ring has waited more than 1 s for a record that a thread of process $hp began and has not finished"
stop

# ---- the same stall under serve, which runs for days: warned there too
start busy
"$TRACER" serve --pid "$hp" --listen 127.0.0.1:0 >/dev/null 2>"$TMP/serve-busy.err" &
sp=$!
wait_for "$TMP/serve-busy.err" "the ring has waited more than 1 s" 20
kill -TERM $sp
wait $sp
rc=$?
[ $rc = 0 ] || check_failed "serve on busy: exit $rc, want 0"
said serve-busy "the ring has waited more than 1 s for a record that a thread of process $hp began and has not finished"
unset PPROF_ALLOC_STALL_WARN_SECONDS
stop

# ---- never obeys detach: the tracer waits a bounded time (2 s) -------------
start stubborn
attach stubborn 10
[ $rc = 0 ] || check_failed "stubborn: exit $rc, want 0"
said stubborn "the agent in process $hp has not detached yet"
honest_profile stubborn
stop

# ---- garbage in the live table: nothing impossible is taken ---------------
start livegarbage
attach livegarbage 10
[ $rc = 0 ] || check_failed "livegarbage: exit $rc, want 0"
said livegarbage "3 live samples from before we came"
honest_profile livegarbage
check_site "$TMP/livegarbage.sums" hostile_seeded 3 3000 3 3000
# nothing else: the impossible entries were refused
awk '!/^#/ && $1 != "hostile_hello" && $1 != "hostile_seeded" { print; n++ }
	END { exit n > 0 }' "$TMP/livegarbage.sums" ||
	check_failed "livegarbage: samples at other places (above)"
stop

# ---- the module's path now names a FIFO: the tracer must read the mapped
# file (map_files), never the path; an open of the FIFO would block
LIB="$TMP/libdlsite.so"
cc -shared -fPIC -DDLSITE_LIBRARY -O1 -g -fno-omit-frame-pointer \
	-Wall -Wextra -Werror -o "$LIB" "$TOP/tests/workloads/dlsite.c" ||
	fail "cannot build the test library"
cp "$LIB" "$TMP/paths.so"
start paths "$TMP/paths.so"
attach paths 10
[ -p "$TMP/paths.so" ] || check_failed "paths: the library was not replaced by a FIFO"
[ $rc = 0 ] || check_failed "paths: exit $rc, want 0"
honest_profile paths
check_site "$TMP/paths.sums" dlsite_run 10 30000 10 30000
stop

# ---- the module file emptied and refilled under the tracer ----------------
cp "$LIB" "$TMP/shrink.so"
start shrink "$TMP/shrink.so"
attach shrink 15
[ $rc = 0 ] || check_failed "shrink: exit $rc, want 0"
honest_profile shrink
stop

# ---- the flood: memory bounded -------------------------------------------
F=${FLOOD_SECONDS:-4}
FMAX=${FLOOD_MAX_STACKS:-20000}
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1"
start flood
_t0=$(date +%s%N)
"$TRACER" --pid "$hp" --duration "$F" --max-stacks "$FMAX" -o "$TMP/flood.pb.gz" \
	>"$TMP/flood.out" 2>"$TMP/flood.err" &
tp=$!
: >"$TMP/flood.rss"
while kill -0 $tp 2>/dev/null; do
	awk -v t="$(( ($(date +%s%N) - _t0) / 1000000 ))" \
		'/^VmRSS:/ { print t, $2 }' /proc/$tp/status >>"$TMP/flood.rss" 2>/dev/null
	sleep 0.5
done
wait $tp
rc=$?
ms=$(( ($(date +%s%N) - _t0) / 1000000 ))
kill -0 "$hp" 2>/dev/null || check_failed "flood: the hostile process is gone"
stop
note "flood: exit $rc in $ms ms: $(grep -v 'connected to\|note: the agent there\|first record' "$TMP/flood.err" | tr '\n' ' ')"
[ $rc = 0 ] || check_failed "flood: exit $rc, want 0"
[ "$ms" -le $(( (F + 60) * 1000 )) ] || check_failed "flood: took $ms ms"
said flood "lost their stack to [other]"
said flood "samples live at once"
# while recording: RSS in the second half no more than 10% + 16 MiB above
# the first half's peak (an uncapped tracer grows all along: 1.8 GB at 10 s)
awk -v f="$F" '$1 <= f * 1000 { n++; t[n] = $1; r[n] = $2 }
	END {
		if (n < 6) { print "too few RSS readings: " n; exit 1 }
		for (i = 1; i <= n; i++) {
			if (t[i] <= f * 500 && r[i] > a) a = r[i];
			if (t[i] > f * 500 && r[i] > b) b = r[i];
		}
		printf "flood RSS: peak %d KiB in the first half, %d KiB in the second\n", a, b;
		exit !(b <= a * 1.10 + 16384)
	}' "$TMP/flood.rss" || check_failed "flood: the tracer's memory kept growing (see $TMP/flood.rss)"
peak=$(awk '$2 > m { m = $2 } END { print m + 0 }' "$TMP/flood.rss")
note "flood: peak RSS $peak KiB"
[ "$peak" -le 1048576 ] || check_failed "flood: peak RSS $peak KiB, more than 1 GiB"
[ -s "$TMP/flood.pb.gz" ] && go tool pprof -top "$TMP/flood.pb.gz" >/dev/null 2>&1 ||
	check_failed "flood: no readable profile"

# ---- the honest control, last: the same harness takes an honest target ----
start honest
attach honest 10
[ $rc = 0 ] || check_failed "honest: exit $rc, want 0"
honest_profile honest
stop
finish
