#!/bin/sh
# run-agent-stress.sh - the agent under stress (tests/workloads/stress.c):
# the corners of the malloc API (sizes 0 and too large, bad alignments,
# realloc to 0, failed reallocs, free(NULL)), threads started and ending in
# every way, fork without exec while threads allocate, dlopen/dlclose
# storms from two threads, and threads that signal each other while a
# tracer borrows one of them (allocating signal handlers are
# run-signals.sh's).  Each mode runs bare, with the agent preloaded, under
# the tracer at the default rate and at --rate 1, and (threads, forkmt,
# dlstorm, sigidle) held running while a tracer attaches for 2 s.  Every
# run must print exactly what the bare run printed and exit with its
# status; every run has a time limit, and one that does not end in it is a
# failure (a hang - a deadlocked child, a lost cancellation - is what this
# looks for).  The bare output must have the expected lines (so an empty
# one fails), the profiles must load in `go tool pprof`, and at --rate 1
# have allocations at the mode's functions.
# plain build only: it stresses the agent, which is never sanitized; the tracer reads nothing there that other tests do not read sanitized
. "$(dirname "$0")/lib.sh"
need go cc
attach_init
# (variables here are st_*: lib.sh's helpers use _n, _p, _out... as globals)

W="$WORKLOADS/stress"
LIB="$TMP/libstress.so" LIB2="$TMP/libstress2.so"
RUN_LIMIT=30	# seconds for one run; a bare run takes about 1

[ -x "$W" ] || fail "$W is not built"
cc -std=gnu11 -O1 -g -fno-omit-frame-pointer -fPIC -shared -DSTRESS_LIBRARY \
	-Wall -Wextra -Werror -o "$LIB" "$TOP/tests/workloads/stress-lib.c" ||
	fail "cannot build $LIB"
cp "$LIB" "$LIB2" || fail "cannot copy $LIB"

# limited NAME CMD...: run CMD with the time limit, stdout to $TMP/NAME,
# stderr to $TMP/NAME.err, exit status in $rc; 1 (and a failure noted) if
# it did not end in time.  timeout signals CMD's whole process group, so a
# hung grandchild goes too.
limited() {
	st_name=$1; shift
	timeout -k 5 "$RUN_LIMIT" "$@" >"$TMP/$st_name" 2>"$TMP/$st_name.err"
	rc=$?
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		sed 's/^/    stderr: /' "$TMP/$st_name.err" | tail -n 20
		check_failed "$st_name: HUNG - no end after $RUN_LIMIT s: $*"
		return 1
	fi
}

# same_as_bare NAME BARE: run NAME printed what BARE printed and exited
# as it did.
same_as_bare() {
	if ! cmp -s "$TMP/$2" "$TMP/$1"; then
		diff "$TMP/$2" "$TMP/$1" | head -n 20 >&2
		sed 's/^/    stderr: /' "$TMP/$1.err" | tail -n 20
		check_failed "$1: output differs from the bare run's"
	fi
	[ "$rc" = "$bare_rc" ] ||
		check_failed "$1: exit status $rc, the bare run's was $bare_rc"
}

# profile_loads PROFILE [FUNCTION...]: go tool pprof reads PROFILE; with
# FUNCTIONs, each has allocations in it.
profile_loads() {
	st_p=$1; shift
	if [ ! -s "$st_p" ]; then
		check_failed "no profile written at $st_p"
		return
	fi
	if ! go tool pprof -top -cum -sample_index=alloc_objects \
		-nodecount=100000 "$st_p" >"$st_p.top" 2>"$st_p.top.err" ||
		! grep -q '^Type: alloc_objects' "$st_p.top"; then
		cat "$st_p.top.err" >&2
		check_failed "go tool pprof -top cannot read $st_p"
		return
	fi
	for st_f in "$@"; do
		awk -v f="$st_f" '$NF == f && $4 + 0 > 0 { found = 1 }
			END { exit !found }' "$st_p.top" ||
			check_failed "$st_p: no allocations at $st_f"
	done
}

# has NAME TEXT: the output of run NAME has the line TEXT.
has() {
	grep -qxF -- "$2" "$TMP/$1" || check_failed "$1: no line '$2'"
}

# no_broken NAME: none of the checks of run NAME reported damage.
no_broken() {
	if grep -E 'LOST|DAMAGED|NOT ZEROED|MISALIGNED|CHANGED|SHORT' "$TMP/$1" >&2 ||
		grep -E 'TOO MANY|HUNG|DIFFER|STILL LOADED|NOT CANCELLED' "$TMP/$1" >&2; then
		check_failed "$1: a check reported damage (lines above)"
	fi
}

# launched MODE ARGS...: MODE bare, preloaded, launched by the tracer at
# the default rate and at --rate 1 (whose profile must have allocations
# at $SITES); the bare output must pass $EXPECT (a function).
launched() {
	st_m=$1
	note "stress $*: bare"
	limited "$st_m.bare" "$W" "$@" || return
	bare_rc=$rc
	[ "$bare_rc" = 0 ] || {
		cat "$TMP/$st_m.bare.err" >&2
		check_failed "$st_m: bare run exited $bare_rc"
	}
	no_broken "$st_m.bare"
	$EXPECT "$st_m.bare"
	note "stress $*: LD_PRELOAD=agent"
	limited "$st_m.preload" env LD_PRELOAD="$AGENT" "$W" "$@" &&
		same_as_bare "$st_m.preload" "$st_m.bare"
	note "stress $*: tracer, default rate"
	limited "$st_m.traced" "$TRACER" -q -o "$TMP/$st_m.pb.gz" -- "$W" "$@" &&
		same_as_bare "$st_m.traced" "$st_m.bare"
	profile_loads "$TMP/$st_m.pb.gz"
	note "stress $*: tracer, --rate 1"
	limited "$st_m.rate1" "$TRACER" -q --rate 1 \
		-o "$TMP/$st_m.rate1.pb.gz" -- "$W" "$@" &&
		same_as_bare "$st_m.rate1" "$st_m.bare"
	# shellcheck disable=SC2086
	profile_loads "$TMP/$st_m.rate1.pb.gz" $SITES
}

# hold_run NAME MODE ARGS...: start `stress --hold MODE ARGS`, wait until
# it is ready, run $BETWEEN (a function: nothing, or attach a tracer),
# release it with SIGUSR1 and wait for its end (a failure if it does not
# come within 10 s; a repetition takes about 1).  Its output is in
# $TMP/NAME, its status in $rc.
hold_run() {
	st_n=$1; shift
	spawn "$TMP/$st_n" "$W" --hold "$@"
	st_pid=$spawned_pid
	if ! wait_for "$TMP/$st_n.err" '^stress: ready' 30; then
		cat "$TMP/$st_n.err" >&2
		check_failed "$st_n: stress --hold $* did not get ready in 30 s"
		kill -KILL "$st_pid" 2>/dev/null
		wait "$st_pid" 2>/dev/null
		return 1
	fi
	$BETWEEN "$st_n" "$st_pid"
	kill -USR1 "$st_pid"
	if ! wait_gone "$st_pid" 10; then
		echo "    threads of $st_pid (name, system call, kernel wait):" >&2
		for st_t in /proc/"$st_pid"/task/*; do
			echo "      $(cat "$st_t/comm") $(cut -d' ' -f1 \
				"$st_t/syscall") $(cat "$st_t/wchan")" >&2
		done
		command -v eu-stack >/dev/null &&
			timeout 20 eu-stack -p "$st_pid" 2>&1 |
			grep -E '^(TID|#[0-9] )' | head -n 40 >&2
		check_failed "$st_n: HUNG - stress --hold $* did not end within 10 s of SIGUSR1"
		kill -KILL "$st_pid"
		wait "$st_pid" 2>/dev/null
		return 1
	fi
	wait "$st_pid"
	rc=$?
	sed -n 's/^stress: \([0-9]*\) repetitions$/    \1 repetitions/p' "$TMP/$st_n.err"
}

nothing() { :; }
attach_for_2s() {
	timeout -k 5 30 "$TRACER" --pid "$2" --duration 2 -o "$TMP/$1.pb.gz" \
		>"$TMP/$1.tracer.out" 2>"$TMP/$1.tracer.err"
	st_trc=$?
	sed 's/^/    tracer: /' "$TMP/$1.tracer.err"
	[ "$st_trc" = 0 ] || check_failed "$1: the attached tracer exited $st_trc"
	grep -q 'was detached' "$TMP/$1.tracer.err" ||
		check_failed "$1: the tracer did not say it detached"
}

# attached MODE ARGS...: MODE held, bare and with a tracer attached for
# 2 s; the same output and status; the profile loads.
attached() {
	st_m=$1
	note "stress --hold $*: bare"
	BETWEEN=nothing hold_run "$st_m.hold" "$@" || return
	bare_rc=$rc
	[ "$bare_rc" = 0 ] || {
		cat "$TMP/$st_m.hold.err" >&2
		check_failed "$st_m: held bare run exited $bare_rc"
	}
	has "$st_m.hold" "stress: every repetition reported the same"
	note "stress --hold $*: tracer attached for 2 s"
	BETWEEN=attach_for_2s hold_run "$st_m.attached" "$@" || return
	same_as_bare "$st_m.attached" "$st_m.hold"
	profile_loads "$TMP/$st_m.attached.pb.gz"
}

expect_edge() {
	has "$1" "edge: 50 rounds"
	has "$1" "malloc(0): ptr errno=0, usable bytes writable"
	has "$1" "malloc(SIZE_MAX): NULL errno=ENOMEM"
	has "$1" "malloc(PTRDIFF_MAX+1): NULL errno=ENOMEM"
	has "$1" "calloc(SIZE_MAX/2, 4): NULL errno=ENOMEM"
	has "$1" "calloc(1, 1000) after a dirty free: ptr errno=0, zeroed"
	has "$1" "realloc(p, SIZE_MAX): NULL errno=ENOMEM, old block intact"
	has "$1" "realloc(p, 5000000): ptr errno=0, contents kept"
	has "$1" "realloc(p, 0): NULL errno=0"
	has "$1" "reallocarray(p, SIZE_MAX/2, 4): NULL errno=ENOMEM, old block intact"
	has "$1" "free(NULL): errno kept"
	has "$1" "posix_memalign(align 0, size 0x64): returned EINVAL errno=0, *out untouched, -"
	has "$1" "posix_memalign(align 0x3, size 0x64): returned EINVAL errno=0, *out untouched, -"
	has "$1" "posix_memalign(align 0x18, size 0x64): returned EINVAL errno=0, *out untouched, -"
	has "$1" "posix_memalign(align 0x40, size 0x64): returned 0 errno=0, *out ptr, aligned"
	has "$1" "valloc(0x64): ptr errno=0, aligned"
	has "$1" "strdup: equal"
	has "$1" "stress: every repetition reported the same"
	st_lines=$(grep -c . "$TMP/$1")
	[ "$st_lines" -ge 80 ] || check_failed "$1: $st_lines lines, want at least 80"
}
expect_threads() {
	has "$1" "threads: 2000 started: 334 returned, 334 pthread_exit, 333 detached, 333 detached pthread_exit, 333 nested, 333 cancelled"
	has "$1" "threads: 334 blocks handed back intact, 667 thread-specific blocks destroyed, 333 cleanup handlers, 333 inner threads"
	grep -q '^threads: checksum [1-9]' "$TMP/$1" || check_failed "$1: no checksum"
}
expect_forkmt() {
	has "$1" "forkmt: 100 forks while 3 threads allocate"
	st_exits=$(grep -c '^child [0-9]*: exit [0-9]*$' "$TMP/$1")
	st_signals=$(grep -c '^child [0-9]*: signal USR2$' "$TMP/$1")
	[ "$st_exits" = 80 ] && [ "$st_signals" = 20 ] ||
		check_failed "$1: $st_exits children exited and $st_signals were killed by SIGUSR2, want 80 and 20"
}
expect_sigidle() {
	has "$1" "sigidle: 2000 signals sent each way, 0 received with the siginfo of another process"
	has "$1" "sigidle: the peer thread was cancelled"
}
expect_dlstorm() {
	grep -q '^dlstorm: 2 threads x 500 rounds over 2 libraries, checksum [1-9]' "$TMP/$1" ||
		check_failed "$1: no dlstorm checksum line"
	has "$1" "dlstorm: library 0 after the storm: unloaded"
	has "$1" "dlstorm: library 1 after the storm: unloaded"
	has "$1" "dlopen(missing): NULL, libstress-missing.so: cannot open shared object file: No such file or directory"
}

EXPECT=expect_edge SITES="edge_realloc edge_libc" launched edge
EXPECT=expect_threads SITES="thread_work inner_main exit_holding" launched threads
EXPECT=expect_forkmt SITES="fm_worker forkmt_run" launched forkmt
EXPECT=expect_dlstorm SITES="stress_lib_round dl_main" launched dlstorm 500 "$LIB" "$LIB2"
EXPECT=expect_sigidle SITES="" launched sigidle

attached threads
attached forkmt
attached dlstorm 500 "$LIB" "$LIB2"
attached sigidle
finish
