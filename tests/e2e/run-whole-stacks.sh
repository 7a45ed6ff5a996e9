#!/bin/sh
# run-whole-stacks.sh - the agent's own unwinding gives whole stacks in
# every way a profile is taken, on code built without frame pointers.
#
# Three programs: stock Debian python3.11 (holding 20 MB in bytearrays and
# building lists), stock sqlite3 (filling an in-memory table and its
# index) and nofp-cxx (C++ through libstdc++, -O2 -fomit-frame-pointer).
# Each is profiled six ways: launched at the default rate and at --rate 1;
# attached to (at --rate 65536, for samples enough in 2 s); attached to
# late, when the agent was preloaded alone and took the samples before the
# tracer came; from the core of a preloaded process that aborts; and over
# serve's /debug/pprof/heap (--rate 65536).  In each
# profile at least 95% of the sampled allocated bytes, and of the in-use
# bytes where there are any, have stacks that reach main (python's
# Py_BytesMain, or main's caller in glibc for a stripped main; or a
# thread's entry), and the allocating function is named at the leaf side
# of the stacks that hold most of the in-use bytes (or, with none in use,
# of the allocated):
# PyByteArray_Resize, sqlite3Malloc, operator new under make_strings or
# new_array.
. "$(dirname "$0")/lib.sh"
need python3
attach_init

PY=/usr/bin/python3.11
SQLITE=/usr/bin/sqlite3
XX="$WORKLOADS/nofp-cxx"
need go curl "$PY" "$SQLITE"

cat >"$TMP/heap.py" <<'EOF'
import os, sys, time
def blocks(n):
    return [bytearray(100000) for _ in range(n)]
def churn(n):
    return [[str(j) * 10 for j in range(200)] for _ in range(n)]
keep = blocks(200)
work = churn(100)
mode = sys.argv[1]
if mode == "abort":
    os.abort()
if mode == "hold":
    print("ready", flush=True)
    end = time.time() + float(sys.argv[2])
    while time.time() < end:
        keep.pop(0)
        keep.extend(blocks(1))
        work = churn(10)
        time.sleep(0.01)
print("done", flush=True)
os._exit(0)    # as a killed server would: what it holds stays in use
EOF

SQL="create table t(a text, b int);
with recursive c(x) as (select 1 union all select x + 1 from c where x < 30000)
  insert into t select hex(randomblob(40)), x from c;
create index i on t(a);"

# py|sqlite|cxx MODE [SECONDS]: exec target in MODE (run, hold SECONDS:
# say ready, then go on allocating for SECONDS, abort), with the agent
# preloaded if $PRE names it
py() {
	exec env ${PRE:+LD_PRELOAD="$PRE"} "$PY" "$TMP/heap.py" "$@"
}
cxx() {
	exec env ${PRE:+LD_PRELOAD="$PRE"} "$XX" 150 "$@"
}
sqlite() {
	case $1 in
	run)	exec env ${PRE:+LD_PRELOAD="$PRE"} "$SQLITE" :memory: "$SQL" ;;
	abort)	exec env ${PRE:+LD_PRELOAD="$PRE"} "$SQLITE" :memory: "$SQL" \
			'.shell kill -ABRT $PPID' ;;
	hold)	# the statements, then ten rows every 100 ms for SECONDS
		rm -f "$TMP/sql.fifo"
		mkfifo "$TMP/sql.fifo" || exit 1
		{
			printf '%s\n' "$SQL" "select 'ready';"
			_i=0
			while [ $_i -lt $(($2 * 10)) ]; do
				for _j in 0 1 2 3 4 5 6 7 8 9; do
					echo "insert into t values(hex(randomblob(2000)), $_i$_j);"
				done
				sleep 0.1
				_i=$((_i + 1))
			done
		} >"$TMP/sql.fifo" &
		exec env ${PRE:+LD_PRELOAD="$PRE"} "$SQLITE" :memory: <"$TMP/sql.fifo" ;;
	esac
}

# leaf-side sites: the allocating function, within the first frames
site_of() {
	case $1 in
	py)	echo '^([^;]*;)?([^;]*;)?PyByteArray_Resize;' ;;
	sqlite)	echo '^([^;]*;)?([^;]*;)?sqlite3Malloc;' ;;
	cxx)	echo '^_Znwm;(.*;)?(_Z12make_stringsB5cxx11i|_Z9new_arrayi);' ;;
	esac
}
# (stock sqlite3 has no symbol for main: the frame that called it)
ENTRY=';(main|Py_BytesMain|__libc_start_call_main|start_thread|clone3)(;|$)'

# stacks PROFILE: "ALLOC INUSE F1;F2;..." a sample (leaf first)
stacks() {
	go tool pprof -raw "$1" >"$TMP/raw.txt" 2>"$TMP/raw.err" ||
		{ cat "$TMP/raw.err" >&2; check_failed "go tool pprof -raw $1 failed"; return 1; }
	python3 "$TOP/tests/e2e/pprof_sum.py" stacks <"$TMP/raw.txt"
}

# judge NAME TARGET PROFILE: the whole-stack shares and the site
judge() {
	[ -s "$3" ] || { check_failed "$1: no profile"; return; }
	stacks "$3" >"$TMP/$1.all" || return
	grep -v '^#' "$TMP/$1.all" >"$TMP/$1.stacks"
	# the agent's tables unwound every sample: no stack copy was taken
	_copies=$(sed -n 's/^# unwind auto: \([0-9]*\) samples with a stack copy.*/\1/p' "$TMP/$1.all")
	note "$1: ${_copies:-no} samples with a stack copy; $(sed -n "s/^# unwind auto: .*; the agent's \(unwind tables: .*\)/\1/p" "$TMP/$1.all")"
	[ "${_copies:-x}" = 0 ] ||
		check_failed "$1: ${_copies:-no count of} stack copies (the agent's tables should unwind all)"
	# ... and hardly any sample fell back to frame pointers (one may)
	sed -n 's/^# unwind auto: .* \([0-9]*\) of \([0-9]*\) samples fell back to frame pointers$/\1 \2/p' \
		"$TMP/$1.all" >"$TMP/$1.fell"
	read -r _fell _of <"$TMP/$1.fell" && [ "$_of" -gt 0 ] &&
		{ [ "$_fell" -le 1 ] || [ $((_fell * 100)) -le "$_of" ]; } ||
		check_failed "$1: ${_fell:-?} of ${_of:-?} samples fell back to frame pointers (want at most 1%, or 1)"
	awk -v entry="$ENTRY" -v site="$(site_of "$2")" -v name="$1" '
		{ s = ";" $3; a += $1; u += $2 }
		s ~ entry { wa += $1; wu += $2 }
		$3 ~ site { sa += $1; su += $2 }
		END {
			printf "%s: %d of %d allocated bytes reach main (%.1f%%), %d of %d in use (%.1f%%); at the site %d allocated, %d in use\n",
				name, wa, a, a ? 100 * wa / a : 0, wu, u,
				u ? 100 * wu / u : 0, sa, su
			bad = 0
			if (a < 1000000) { print "FAIL: " name ": only " a " bytes sampled"; bad = 1 }
			if (wa * 100 < a * 95) { print "FAIL: " name ": under 95% of the allocated bytes reach main"; bad = 1 }
			if (u > 0 && wu * 100 < u * 95) { print "FAIL: " name ": under 95% of the in-use bytes reach main"; bad = 1 }
			# what the program holds is at its allocating function
			# (or, holding under a MB, what it allocated)
			if (u >= 1000000 ? su * 100 < u * 50 : sa * 100 < a * 50) { print "FAIL: " name ": under half of the bytes at the allocating function"; bad = 1 }
			exit bad
		}' "$TMP/$1.stacks" >"$TMP/$1.judged"
	_rc=$?
	sed 's/^FAIL: /    /' "$TMP/$1.judged" | sed 's/^/--- /'
	if [ $_rc != 0 ]; then
		check_failed "$1: stacks not whole (the most bytes' stacks below)"
		sort -k1,1nr "$TMP/$1.stacks" | head -n 5 | cut -c1-400 | sed 's/^/    /'
	fi
}

# ---- launched, at the default rate and at --rate 1
for t in py sqlite cxx; do
	case $t in
	py)	set -- "$PY" "$TMP/heap.py" run ;;
	sqlite)	set -- "$SQLITE" :memory: "$SQL" ;;
	cxx)	set -- "$XX" 150 ;;
	esac
	for r in default 1; do
		n=$t-launch-$r
		opt=; [ $r = 1 ] && opt="--rate 1"
		# shellcheck disable=SC2086
		"$TRACER" -q $opt -o "$TMP/$n.pb.gz" -- "$@" \
			>"$TMP/$n.out" 2>"$TMP/$n.err" ||
			{ cat "$TMP/$n.err" >&2; check_failed "$n: the tracer failed"; continue; }
		judge "$n" $t "$TMP/$n.pb.gz"
	done
done

# ---- cores of preloaded processes that abort, with the machine's core
# pattern held (lib.sh) only while they are dumped
trap 'core_pattern_give; attach_cleanup' EXIT
core_pattern_take
for t in py sqlite cxx; do
	n=$t-core
	rm -rf "$TMP/dump"; mkdir "$TMP/dump"
	(cd "$TMP/dump" && ulimit -c unlimited && PRE="$AGENT" $t abort) \
		>/dev/null 2>&1
	core=$(ls "$TMP"/dump/core* 2>/dev/null | head -n 1)
	[ -n "$core" ] && mv "$core" "$TMP/$n.core"
done
core_pattern_give
for t in py sqlite cxx; do
	n=$t-core
	[ -f "$TMP/$n.core" ] || { check_failed "$n: no core dumped"; continue; }
	"$TRACER" --core "$TMP/$n.core" -o "$TMP/$n.pb.gz" --no-debuginfod -q 2>"$TMP/$n.err" ||
		{ cat "$TMP/$n.err" >&2; check_failed "$n: --core failed"; continue; }
	rm -f "$TMP/$n.core"
	judge "$n" $t "$TMP/$n.pb.gz"
done

# hold NAME TARGET: the target in hold mode (until it is stopped), in the
# background, its pid in $hp once it said ready
hold() {
	spawn "$TMP/$1.target" "$2" hold 600
	hp=$spawned_pid
	wait_for "$TMP/$1.target" '^ready' 30 ||
		{ cat "$TMP/$1.target.err" >&2; fail "$1: the target did not get ready"; }
}
# unhold: stop the held target and reap it (its pid is not ours after)
unhold() {
	kill -TERM "$hp" 2>/dev/null
	reap "$hp" 20
}

# ---- attached to, and attached to late (the agent preloaded alone)
for t in py sqlite cxx; do
	n=$t-attach
	hold $n $t
	"$TRACER" -q --rate 65536 --pid "$hp" --duration 2 -o "$TMP/$n.pb.gz" 2>"$TMP/$n.err" ||
		{ cat "$TMP/$n.err" >&2; check_failed "$n: the tracer failed"; }
	judge "$n" $t "$TMP/$n.pb.gz"
	unhold

	n=$t-late
	PRE="$AGENT" hold $n $t
	"$TRACER" --pid "$hp" --duration 1 -o "$TMP/$n.pb.gz" 2>"$TMP/$n.err" ||
		{ cat "$TMP/$n.err" >&2; check_failed "$n: the tracer failed"; }
	grep -q 'live samples from before we came' "$TMP/$n.err" ||
		check_failed "$n: the tracer did not find the agent's samples from before it came"
	judge "$n" $t "$TMP/$n.pb.gz"
	unhold
done

# ---- serve's /debug/pprof/heap
for t in py sqlite cxx; do
	n=$t-serve
	hold $n $t
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	"$TRACER" serve --rate 65536 --pid "$hp" --listen "127.0.0.1:$port" -q \
		>"$TMP/$n.srv.out" 2>"$TMP/$n.srv.err" &
	srv=$!
	spawned="$spawned $srv"
	i=0
	until [ "$(curl -s "http://127.0.0.1:$port/healthz" 2>/dev/null)" = ok ]; do
		if ! kill -0 $srv 2>/dev/null || [ $i -ge 300 ]; then
			cat "$TMP/$n.srv.err" >&2
			fail "$n: serve did not start"
		fi
		sleep 0.05; i=$((i + 1))
	done
	sleep 2
	curl -s -f -o "$TMP/$n.pb.gz" "http://127.0.0.1:$port/debug/pprof/heap" ||
		check_failed "$n: no profile from /debug/pprof/heap"
	kill -TERM $srv
	reap $srv 30
	judge "$n" $t "$TMP/$n.pb.gz"
	unhold
done
finish
