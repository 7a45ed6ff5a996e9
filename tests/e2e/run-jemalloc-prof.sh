#!/bin/sh
# run-jemalloc-prof.sh - `--pid PID --jemalloc-prof` and serve's
# ?jemalloc=1: the heap profile a process's own jemalloc keeps
# (MALLOC_CONF=prof:true), asked of it from outside and written as every
# profile is.  A program built here holds 2000 x 64 KiB at one site and
# 20000 x 512 B at another, and allocated then freed 5000 x 4 KiB at a
# third; jemalloc samples every 4 KiB on average (lg_prof_sample:12).
# Linked with -ljemalloc (mallctl found by dlsym), the profile shows each
# site's in-use bytes within 10% of what the program holds, as the leaf
# (jemalloc's own frames gone), under main, symbolized, and with
# prof_accum:true the freed site's allocated bytes; the target lives on
# with no dump memfd left open.  Linked with Debian's libjemalloc.a
# (mallctl only in the executable's .symtab, passed by the tracer), the
# same; and with jemalloc's prefixes: a libjemalloc built here from
# libjemalloc_pic.a exporting je_mallctl (dlsym), and the static program
# with its mallctl renamed _rjem_mallctl (Rust's tikv-jemallocator's
# name, in .symtab).  Refused with one line, nothing written: jemalloc without
# prof:true, with prof.active false, and no jemalloc at all.  serve
# answers ?jemalloc=1 with the same numbers, and a 409 with the reason.
. "$(dirname "$0")/lib.sh"
need go python3 curl cc
attach_init

JE=/usr/lib/x86_64-linux-gnu/libjemalloc.a
need $JE /usr/include/jemalloc/jemalloc.h
cat >"$TMP/sites.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
__attribute__((noinline)) void *site_big(void) { void *p = malloc(65536); memset(p, 1, 64); return p; }
__attribute__((noinline)) void *site_small(void) { return calloc(1, 512); }
__attribute__((noinline)) void *site_freed(void) { return malloc(4096); }
int main(void)
{
	static void *big[2000], *small[20000];
	int i;

	for (i = 0; i < 2000; i++)
		big[i] = site_big();
	for (i = 0; i < 20000; i++)
		small[i] = site_small();
	for (i = 0; i < 5000; i++)
		free(site_freed());
	printf("ready %d\n", big[1999] != small[19999]);
	fflush(stdout);
	for (;;)
		pause();
}
C
cc -O1 -g -fno-omit-frame-pointer -o "$TMP/dyn" "$TMP/sites.c" -ljemalloc ||
	fail "cannot link with -ljemalloc"
cc -O1 -g -fno-omit-frame-pointer -o "$TMP/static" "$TMP/sites.c" $JE -lpthread -lm -ldl ||
	fail "cannot link with libjemalloc.a"
cc -O1 -g -fno-omit-frame-pointer -o "$TMP/glibc" "$TMP/sites.c" ||
	fail "cannot build the glibc program"
readelf --dyn-syms -W "$TMP/static" | grep -qw mallctl &&
	fail "the static program exports mallctl: the .symtab path would not be tested"
nm "$TMP/static" | grep -qw mallctl || fail "the static program has no mallctl"

BIG=$((2000 * 65536)) SMALL=$((20000 * 512)) FREED=$((5000 * 4096))

# start NAME MALLOC_CONF PROGRAM: $pid, the program ready
start() {
	MALLOC_CONF=$2 spawn "$TMP/$1.out" "$TMP/$3"
	pid=$spawned_pid
	wait_for "$TMP/$1.out" '^ready' 10 || fail "$1: the program did not start"
}

# check_sites NAME PROFILE: the in-use bytes of each site, as leaves
check_sites() {
	pprof_sum "$2" leaf >"$TMP/$1.sum"
	pprof_sum "$2" cum >"$TMP/$1.cum"
	grep -q "^# jemalloc's own heap profile of process [0-9]* (mallctl prof.dump): sampling period 4096 bytes" "$TMP/$1.sum" ||
		check_failed "$1: the profile does not say it is jemalloc's, sampled every 4096 bytes"
	got=$(value site_big 4 <"$TMP/$1.sum")
	note "$1: site_big in use $got bytes, held $BIG"
	within "$got" $BIG 10 || check_failed "$1: site_big in use $got, want $BIG within 10%"
	got=$(value site_small 4 <"$TMP/$1.sum")
	note "$1: site_small in use $got bytes, held $SMALL"
	within "$got" $SMALL 10 || check_failed "$1: site_small in use $got, want $SMALL within 10%"
	got=$(value site_freed 4 <"$TMP/$1.sum")
	[ "$got" = 0 ] || check_failed "$1: site_freed in use $got, want 0 (all freed)"
	for f in je_prof_backtrace prof_backtrace_impl je_malloc_default \
		je_prof_tctx_create; do
		check_absent "$TMP/$1.cum" "$f"
	done
	# the sites are the leaves: no malloc or calloc above them (those
	# left are ld.so's own, inline, for the agent's dlopen)
	pprof_sum "$2" stacks | grep -E ' (malloc|calloc);site_' &&
		check_failed "$1: jemalloc's entry points left above the sites"
	got=$(value main 4 <"$TMP/$1.cum")
	[ "$got" -ge $((BIG + SMALL * 9 / 10)) ] ||
		check_failed "$1: main holds $got in use cumulatively, want both sites under it"
	go tool pprof -traces "$2" 2>/dev/null | awk '/^-+\+/ { n = 0; next }
		{ n++; if (n == 1) leaf = $NF; if (leaf == "site_big" && $NF == "main") ok = 1 }
		END { exit !ok }' || check_failed "$1: no trace of site_big called from main (-traces)"
}

# no_dump_left NAME: the target holds no memfd of a dump any longer
no_dump_left() {
	i=0
	while ls -l /proc/$pid/fd 2>/dev/null | grep -q pprof-alloc-jeprof; do
		[ $i -lt 100 ] || { check_failed "$1: the dump's memfd is still open in the target"; return; }
		sleep 0.05; i=$((i + 1))
	done
}

# profile NAME MALLOC_CONF PROGRAM: --jemalloc-prof on it, its sites
# checked; the program lives on, without the dump's memfd
profile() {
	note "$1: $3"
	start "$1" "$2" "$3"
	"$TRACER" --pid $pid --jemalloc-prof -o "$TMP/$1.pb.gz" 2>"$TMP/$1.err"
	rc=$?
	sed 's/^/    stderr: /' "$TMP/$1.err"
	[ $rc = 0 ] || check_failed "$1: exit $rc"
	check_sites "$1" "$TMP/$1.pb.gz"
	running $pid || check_failed "$1: the program did not survive"
	no_dump_left "$1"
}

# --- linked with -ljemalloc, prof_accum too
profile dyn prof:true,lg_prof_sample:12,prof_accum:true dyn
got=$(value site_freed 2 <"$TMP/dyn.sum")
note "dyn: site_freed allocated $got bytes, $FREED allocated"
within "$got" $FREED 10 || check_failed "dyn: site_freed allocated $got, want $FREED within 10% (prof_accum)"

# --- linked with libjemalloc.a: mallctl only in .symtab
profile st prof:true,lg_prof_sample:12 static
st_pid=$pid

# --- prefixed: je_mallctl exported by a library, _rjem_mallctl in .symtab
objcopy --redefine-sym mallctl=je_mallctl /usr/lib/x86_64-linux-gnu/libjemalloc_pic.a \
	"$TMP/libjep.a" || fail "cannot rename mallctl in libjemalloc_pic.a"
cc -shared -o "$TMP/libjep.so" -Wl,--whole-archive "$TMP/libjep.a" \
	-Wl,--no-whole-archive -lpthread -lm -ldl -lstdc++ ||
	fail "cannot make a jemalloc library exporting je_mallctl"
cc -O1 -g -fno-omit-frame-pointer -o "$TMP/prefixed" "$TMP/sites.c" \
	-L"$TMP" -ljep -Wl,-rpath,"$TMP" || fail "cannot link with libjep.so"
nm -D "$TMP/libjep.so" | grep -qw je_mallctl && ! nm -D "$TMP/libjep.so" | grep -qw mallctl ||
	fail "libjep.so does not export je_mallctl alone"
profile je prof:true,lg_prof_sample:12 prefixed
cp "$TMP/static" "$TMP/rjem" && objcopy --redefine-sym mallctl=_rjem_mallctl "$TMP/rjem" ||
	fail "cannot rename mallctl in the static program"
nm "$TMP/rjem" | grep -qw _rjem_mallctl || fail "no _rjem_mallctl in the renamed program"
profile rjem prof:true,lg_prof_sample:12 rjem

# --- refusals: one line, exit 1, no profile
# refused NAME MALLOC_CONF PROGRAM MESSAGE
refused() {
	start "$1" "$2" "$3"
	"$TRACER" --pid $pid --jemalloc-prof -o "$TMP/$1.pb.gz" 2>"$TMP/$1.err"
	rc=$?
	sed 's/^/    stderr: /' "$TMP/$1.err"
	[ $rc = 1 ] || check_failed "$1: exit $rc, want 1"
	grep -q "$4" "$TMP/$1.err" || check_failed "$1: not said: $4"
	[ "$(grep -c . "$TMP/$1.err")" = 1 ] || check_failed "$1: more than one line on stderr"
	[ ! -e "$TMP/$1.pb.gz" ] || check_failed "$1: a profile was written"
	running $pid || check_failed "$1: the program did not survive"
	kill $pid
}
refused noprof "" dyn "jemalloc in process [0-9]* runs without prof:true: start it with MALLOC_CONF=prof:true"
refused inactive prof:true,prof_active:false dyn "has profiling turned off (prof.active false)"
refused noje "" glibc "process [0-9]* has no jemalloc to ask"

# ask URL OUT: GET URL into OUT once serve has attached (not a 503); $code
ask() {
	i=0
	while code=$(curl -s -o "$2" -w '%{http_code}' "$1") && [ "$code" = 503 ] &&
		[ $i -lt 200 ]; do
		sleep 0.05; i=$((i + 1))
	done
}

# serve_on NAME PID: serve attached to PID on a free port, at $URL
serve_on() {
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	URL="http://127.0.0.1:$port"
	spawn "$TMP/$1.out" "$TRACER" serve --pid "$2" --listen "127.0.0.1:$port"
	i=0
	until [ "$(curl -s "$URL/healthz" 2>/dev/null)" = ok ]; do
		[ $i -lt 200 ] || { cat "$TMP/$1.out.err" >&2; fail "$1: serve did not start"; }
		sleep 0.05; i=$((i + 1))
	done
}

# --- serve: ?jemalloc=1
serve_on srv $st_pid
ask "$URL/debug/pprof/heap?jemalloc=1" "$TMP/srv.pb.gz"
[ "$code" = 200 ] || check_failed "serve: ?jemalloc=1 answered $code"
[ "$code" = 200 ] && check_sites srv "$TMP/srv.pb.gz"
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/debug/pprof/heap?jemalloc=1&seconds=2")
[ "$code" = 400 ] || check_failed "serve: ?jemalloc=1&seconds=2 answered $code, want 400"
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/debug/pprof/heap?jemalloc=yes")
[ "$code" = 400 ] || check_failed "serve: ?jemalloc=yes answered $code, want 400"
kill -TERM $spawned_pid

start srvnoprof "" dyn
serve_on srv2 $pid
ask "$URL/debug/pprof/heap?jemalloc=1" "$TMP/srv2.body"
note "serve without prof:true: $code $(cat "$TMP/srv2.body")"
[ "$code" = 409 ] || check_failed "serve without prof:true: answered $code, want 409"
grep -q "runs without prof:true" "$TMP/srv2.body" ||
	check_failed "serve without prof:true: the answer does not say why"
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/debug/pprof/heap")
[ "$code" = 200 ] || check_failed "serve: its own profile answered $code after a refused ?jemalloc=1"
finish
