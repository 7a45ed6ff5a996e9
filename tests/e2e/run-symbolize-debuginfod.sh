#!/bin/sh
# run-symbolize-debuginfod.sh - `pprof-alloc symbolize` fetches debug info
# from a real debuginfod server (elfutils' /usr/bin/debuginfod, started here
# on a free port, indexing a scratch directory), and copes when the server
# is gone or never answers.
#
# The program is tests/e2e/debuginfod/dbgprog.c, built with -g -O2; its
# DWARF is split off (objcopy --only-keep-debug) into the only file the
# server indexes, and the binary is stripped of it (strip -g keeps .symtab).
# It is profiled with --rate 1 --no-symbolize; then, with DEBUGINFOD_URLS
# unset and a fresh DEBUGINFOD_CACHE_PATH for every run:
#
#   server up, stripped binary at the recorded path, --debuginfod URL:
#       the report says "(debuginfod)" with a file from our cache; pprof
#       shows the sites with the lines of their "site:" markers, and the
#       inlined calloc as two lines of one location (leaf first)
#   server up, URL from DEBUGINFOD_URLS only: the same; with
#       --no-debuginfod added: no server is asked, ELF symbols only
#   server up, binary moved away: everything from the debug file
#   a profile of pprof-synth (one mapping, a load bias of 0x7f0000000000):
#       the same names
#   server killed, binary in place: exit 0 within the default bound,
#       "ELF symbols only ... (recorded path)", the reason names the URL and
#       says the connection was refused; names from .symtab, no lines
#   server killed, binary moved away: exit 0, "no symbols: ..." naming the URL
#   a listener that accepts and never answers, --debuginfod-timeout 2: exit
#       0 well within 10 s, the reason names the URL and says it gave up
#
# Every process started here is killed on exit; every symbolize run is
# itself bounded (timeout 60) so a hang fails rather than blocks.
. "$(dirname "$0")/lib.sh"
need go
attach_init

SRC="$TOP/tests/e2e/debuginfod/dbgprog.c"
SYNTH="$BUILD/tests/tools/pprof-synth"
unset DEBUGINFOD_URLS DEBUGINFOD_TIMEOUT DEBUGINFOD_PROGRESS DEBUGINFOD_VERBOSE
# The server and client talk over loopback: no proxy in between.
export no_proxy=127.0.0.1,localhost NO_PROXY=127.0.0.1,localhost
unset http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY

need debuginfod curl objcopy strip nm python3 timeout cc
[ -x "$SYNTH" ] || fail "$SYNTH is missing (make $SYNTH)"

# --- the program: full build, debug file, stripped binary
mkdir -p "$TMP/src" "$TMP/bin" "$TMP/away" "$TMP/served"
cc -std=gnu11 -g -O2 -fno-omit-frame-pointer -Wall -Wextra -Werror \
	-Wl,--build-id=sha1 "$SRC" -o "$TMP/src/dbgprog.full" ||
	fail "cannot build $SRC"
objcopy --only-keep-debug "$TMP/src/dbgprog.full" "$TMP/served/dbgprog.debug" ||
	fail "objcopy --only-keep-debug failed"
strip -g "$TMP/src/dbgprog.full" -o "$TMP/bin/dbgprog" || fail "strip -g failed"
BIN=$(cd "$TMP/bin" && pwd -P)/dbgprog
BID=$(readelf -nW "$BIN" 2>/dev/null | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
[ -n "$BID" ] || fail "no build ID in $BIN"
readelf -SW "$BIN" 2>/dev/null | grep -q '\.debug_info' && fail "strip -g left .debug_info in $BIN"
readelf -SW "$TMP/served/dbgprog.debug" 2>/dev/null | grep -q '\.debug_info' ||
	fail "objcopy --only-keep-debug produced no .debug_info"
note "dbgprog build ID $BID"

line_of() {	# MARKER: the line of SRC with "site: MARKER"
	grep -n "site: $1 \*/" "$SRC" | cut -d: -f1
}
L_ALPHA=$(line_of alpha) L_INLINE=$(line_of inline) L_BETA=$(line_of beta)
L_GAMMA=$(line_of gamma)
[ -n "$L_ALPHA" ] && [ -n "$L_INLINE" ] && [ -n "$L_BETA" ] && [ -n "$L_GAMMA" ] ||
	fail "site markers missing from $SRC"

# --- the raw profile
"$TRACER" --rate 1 --no-symbolize -o "$TMP/raw.pb.gz" -- "$BIN" >"$TMP/prog.out" 2>"$TMP/prog.err"
rc=$?
sed 's/^/    tracer: /' "$TMP/prog.err"
[ $rc = 0 ] || fail "profiling $BIN: exit $rc"
grep -q 'dbgprog: 15 blocks kept' "$TMP/prog.out" || fail "dbgprog did not run to the end"
go tool pprof -symbolize=none -raw "$TMP/raw.pb.gz" >"$TMP/raw.txt" 2>&1 ||
	{ cat "$TMP/raw.txt"; fail "go tool pprof cannot read the raw profile"; }
grep -q "$BIN $BID" "$TMP/raw.txt" ||
	{ sed -n '/^Mappings/,$p' "$TMP/raw.txt"; fail "the raw profile has no mapping of $BIN with build ID $BID"; }

# --- a free port on loopback; the server
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_server: debuginfod on $PORT indexing $TMP/served, waited for until
# it serves our debug file (at most 30 s); $server_pid.  A few ports are
# tried in case another process takes the one we picked first.
start_server() {
	for _try in 1 2 3; do
		PORT=$(free_port) || fail "cannot pick a free port"
		URL="http://127.0.0.1:$PORT"
		rm -f "$TMP/db.sqlite"*
		spawn "$TMP/server.out" debuginfod -v -d "$TMP/db.sqlite" -p "$PORT" \
			-F -t 0 -g 0 -c 1 "$TMP/served"
		server_pid=$spawned_pid
		_n=300
		while [ $_n -gt 0 ] && running "$server_pid"; do
			_code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
				"$URL/buildid/$BID/debuginfo" 2>/dev/null)
			[ "$_code" = 200 ] && { note "debuginfod (pid $server_pid) serves $URL after $((300 - _n))00 ms"; return 0; }
			sleep 0.1
			_n=$((_n - 1))
		done
		if running "$server_pid"; then
			tail -n 20 "$TMP/server.out.err" >&2
			fail "debuginfod on port $PORT did not serve $BID within 30 s"
		fi
		note "debuginfod on port $PORT exited; trying another port"
		tail -n 5 "$TMP/server.out.err"
	done
	fail "debuginfod would not start"
}

# symbolize NAME [OPTIONS...]: symbolize the raw profile (or $RAW) into
# $TMP/NAME.pb.gz with a fresh cache $TMP/cache.NAME; stderr in
# $TMP/NAME.err, exit status in $sym_rc, wall time (s) in $sym_secs.
RAW="$TMP/raw.pb.gz"
symbolize() {
	_name=$1; shift
	_t0=$(date +%s.%N)
	DEBUGINFOD_CACHE_PATH="$TMP/cache.$_name" timeout -k 5 60 \
		"$TRACER" symbolize "$RAW" -o "$TMP/$_name.pb.gz" "$@" \
		>"$TMP/$_name.out" 2>"$TMP/$_name.err"
	sym_rc=$?
	_t1=$(date +%s.%N)
	sym_secs=$(awk -v a="$_t0" -v b="$_t1" 'BEGIN { printf "%.2f", b - a }')
	note "symbolize $_name $*: exit $sym_rc after $sym_secs s"
	sed 's/^/    stderr: /' "$TMP/$_name.err"
	[ $sym_rc = 124 ] && check_failed "$_name: pprof-alloc symbolize did not finish within 60 s"
	[ $sym_rc = 0 ] || check_failed "$_name: exit $sym_rc, want 0"
	[ $sym_rc = 0 ] && [ ! -s "$TMP/$_name.pb.gz" ] &&
		check_failed "$_name: exit 0 but no profile written"
}

# report_line NAME: the report line about dbgprog's mapping (by build ID),
# "pprof-alloc symbolize: FILE [BUILDID]: ..."
report_line() {
	grep -F "[$BID]" "$TMP/$1.err" | head -n 1
}

# expect_report NAME EREGEX WHAT: dbgprog's report line matches EREGEX
# (a missing or misshapen line is reported once per run; the rest of the
# line is still checked)
bad_report=" "
expect_report() {
	_line=$(report_line "$1")
	case "$bad_report" in *" $1 "*) _seen=1 ;; *) _seen= ;; esac
	if [ -z "$_line" ]; then
		[ -n "$_seen" ] || check_failed "$1: no report line for dbgprog [$BID]"
		bad_report="$bad_report$1 "
		return
	fi
	case "$_line" in
	"pprof-alloc symbolize: $BIN [$BID]: "*) ;;
	*)	[ -n "$_seen" ] ||
			check_failed "$1: the report line should start 'pprof-alloc symbolize: $BIN [$BID]: ': $_line"
		bad_report="$bad_report$1 " ;;
	esac
	printf '%s\n' "$_line" | grep -Eq -- "$2" ||
		check_failed "$1: report line should say $3: $_line"
}

# pprof_view NAME ARGS...: go tool pprof on NAME's output, without pprof's
# own symbolization (only what pprof-alloc wrote counts)
pprof_view() {
	_n=$1; shift
	go tool pprof -symbolize=none "$@" "$TMP/$_n.pb.gz" >"$TMP/$_n.view" 2>"$TMP/$_n.view.err" ||
		{ cat "$TMP/$_n.view.err" >&2; check_failed "$_n: go tool pprof $* failed"; }
}

# check_lines NAME: functions and lines of the sites, and the inline frame
check_lines() {
	[ -s "$TMP/$1.pb.gz" ] || return
	pprof_view "$1" -top -lines -sample_index=alloc_space
	sed 's/^/    /' "$TMP/$1.view"
	for _want in "dbg_site_alpha .*dbgprog\.c:$L_ALPHA( |\$)" \
		"dbg_inline_make .*dbgprog\.c:$L_INLINE( |\$)" \
		"dbg_site_beta .*dbgprog\.c:$L_BETA( |\$)" \
		"dbg_site_gamma .*dbgprog\.c:$L_GAMMA( |\$)" \
		"main .*dbgprog\.c:[0-9]+"; do
		grep -Eq -- "$_want" "$TMP/$1.view" ||
			check_failed "$1: go tool pprof -top -lines has no line matching '$_want'"
	done
	# One location: dbg_inline_make at its calloc, then dbg_site_beta.
	pprof_view "$1" -raw
	awk -v a="dbg_inline_make" -v la="dbgprog.c:$L_INLINE" \
		-v b="dbg_site_beta" -v lb="dbgprog.c:$L_BETA" '
		/^Locations/ { s = 1; next } /^Mappings/ { s = 0 }
		s && prev && !index($0, "M=") && index($0, " " b " ") && index($0, lb " ") { ok = 1 }
		s { prev = index($0, "M=") && index($0, " " a " ") && index($0, la " ") }
		END { exit !ok }' "$TMP/$1.view" ||
		{ sed -n '/^Locations/,/^Mappings/p' "$TMP/$1.view" | grep -B1 -A1 dbg_ >&2
		  check_failed "$1: no location with lines [dbg_inline_make :$L_INLINE, dbg_site_beta :$L_BETA]"; }
}

start_server

# --- 1. server up, stripped binary where it ran, --debuginfod URL
symbolize up --debuginfod "$URL"
expect_report up "\\]: symbols from .*cache\\.up/.* \\(debuginfod\\)" \
	"symbols from a file in our DEBUGINFOD_CACHE_PATH (debuginfod)"
[ -s "$TMP/cache.up/$BID/debuginfo" ] ||
	check_failed "up: no $BID/debuginfo in DEBUGINFOD_CACHE_PATH: $(find "$TMP/cache.up" 2>/dev/null | head -n 5)"
check_lines up

# --- 2. the URL from DEBUGINFOD_URLS; then --no-debuginfod overrides it
export DEBUGINFOD_URLS="$URL"
symbolize env
expect_report env "\\(debuginfod\\)" "(debuginfod) with DEBUGINFOD_URLS=$URL"
check_lines env
symbolize off --no-debuginfod
unset DEBUGINFOD_URLS
expect_report off "ELF symbols only, from .*dbgprog \\(recorded path\\)" \
	"ELF symbols only from the recorded path with --no-debuginfod"
report_line off | grep -q '(debuginfod)' && check_failed "off: debuginfod used despite --no-debuginfod"
[ ! -e "$TMP/cache.off/$BID" ] || check_failed "off: --no-debuginfod, but the client cached $BID"

# --- 3. server up, binary moved away: all from the debug file
mv "$BIN" "$TMP/away/dbgprog"
symbolize moved --debuginfod "$URL"
expect_report moved "\\]: symbols from .*cache\\.moved/.* \\(debuginfod\\)" \
	"symbols from the debuginfod cache for a binary that is gone"
check_lines moved
mv "$TMP/away/dbgprog" "$BIN"

# --- 4. a synthetic profile: one mapping, loaded at a bias
for sym in dbg_site_alpha dbg_site_beta dbg_site_gamma; do
	a=$(nm "$TMP/src/dbgprog.full" | awk -v s="$sym" '$3 == s { print $1 }')
	[ -n "$a" ] || fail "nm finds no $sym"
	printf '0x%x\n' $((0x$a + 4))
done >"$TMP/synth.addrs"
"$SYNTH" -e "$BIN" -b 0x7f0000000000 -o "$TMP/synth.raw.pb.gz" <"$TMP/synth.addrs" ||
	fail "pprof-synth failed"
RAW="$TMP/synth.raw.pb.gz"
symbolize synth --debuginfod "$URL"
expect_report synth "\\(debuginfod\\)" "(debuginfod) for the synthetic profile"
if [ -s "$TMP/synth.pb.gz" ]; then
	pprof_view synth -top
	for sym in dbg_site_alpha dbg_site_beta dbg_site_gamma; do
		grep -q " $sym\$" "$TMP/synth.view" ||
			check_failed "synth: $sym missing from go tool pprof -top: $(cat "$TMP/synth.view")"
	done
fi
RAW="$TMP/raw.pb.gz"

# --- 5. the server is gone: connection refused
kill -TERM "$server_pid"
wait_gone "$server_pid" 10 || { kill -KILL "$server_pid"; wait_gone "$server_pid" 5; }
wait "$server_pid" 2>/dev/null
curl -s -o /dev/null --max-time 2 "$URL/metrics" && fail "the server still answers on $URL"
symbolize down --debuginfod "$URL"
awk -v t="$sym_secs" 'BEGIN { exit !(t < 10) }' ||
	check_failed "down: took $sym_secs s with the server gone, want < 10 s (the default bound)"
expect_report down "ELF symbols only, from .*dbgprog \\(recorded path\\); no debug info: " \
	"ELF symbols only from the recorded path"
expect_report down "$URL" "which server failed ($URL)"
expect_report down "[Rr]efused|connect" "that the connection was refused"
if [ -s "$TMP/down.pb.gz" ]; then
	pprof_view down -top -sample_index=alloc_space
	for sym in dbg_site_alpha dbg_site_beta dbg_site_gamma; do
		grep -q " $sym\$" "$TMP/down.view" ||
			check_failed "down: $sym (from .symtab) missing from go tool pprof -top"
	done
	# Without DWARF nothing knows dbg_inline_make was inlined.
	grep -q 'dbg_inline_make' "$TMP/down.view" &&
		check_failed "down: an inline frame without DWARF? $(grep dbg_inline_make "$TMP/down.view")"
fi

mv "$BIN" "$TMP/away/dbgprog"
symbolize gone --debuginfod "$URL"
awk -v t="$sym_secs" 'BEGIN { exit !(t < 10) }' ||
	check_failed "gone: took $sym_secs s with the server gone, want < 10 s"
expect_report gone "no symbols: " "no symbols"
expect_report gone "$URL" "which server failed ($URL)"
mv "$TMP/away/dbgprog" "$BIN"

# --- 6. a server that accepts and never answers
cat >"$TMP/silent.py" <<'EOF'
import os, socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
with open(sys.argv[1] + ".tmp", "w") as f:
	f.write("%d\n" % s.getsockname()[1])
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
held = []
while True:
	held.append(s.accept()[0])
EOF
spawn "$TMP/silent.out" python3 "$TMP/silent.py" "$TMP/silent.port"
wait_for "$TMP/silent.port" '^[0-9]+$' 10 || fail "the silent listener did not start"
SLOW="http://127.0.0.1:$(cat "$TMP/silent.port")"
curl -s -o /dev/null --max-time 1 "$SLOW/metrics"
[ $? = 28 ] || fail "the silent listener on $SLOW answered (curl did not time out)"

symbolize slow --debuginfod "$SLOW" --debuginfod-timeout 2
awk -v t="$sym_secs" 'BEGIN { exit !(t < 8) }' ||
	check_failed "slow: took $sym_secs s with --debuginfod-timeout 2, want < 8 s"
expect_report slow "ELF symbols only, from .*dbgprog \\(recorded path\\); no debug info: " \
	"ELF symbols only from the recorded path"
expect_report slow "$SLOW" "which server failed ($SLOW)"
expect_report slow "[Tt]ime|after 2 s|gave up" "that it timed out"

# One mapping only (pprof-synth), so one wait: well within the bound.
RAW="$TMP/synth.raw.pb.gz"
symbolize slow1 --debuginfod "$SLOW" --debuginfod-timeout 2
awk -v t="$sym_secs" 'BEGIN { exit !(t >= 1.5 && t < 5) }' ||
	check_failed "slow1: took $sym_secs s for one mapping with --debuginfod-timeout 2, want 2 s and a little"
expect_report slow1 "$SLOW" "which server failed ($SLOW)"

finish
