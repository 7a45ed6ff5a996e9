# Shared helpers for the end-to-end tests (sourced; POSIX sh).
# Environment from tests/run.sh: TOP, BUILD, TRACER, AGENT, WORKLOADS,
# TIME_SCALE.  A test run by itself (sh tests/e2e/run-foo.sh, from
# anywhere; TRACER unset) gets what run.sh would give it: TOP the tree the
# script is in, BUILD its build/ (or BUILD=DIR), the tracer, agent and
# workloads there, TIME_SCALE 2 for a sanitized build, else 1; and it
# runs, as under run.sh, in BUILD/test-logs.
set -u
if [ -z "${TRACER:-}" ]; then
	# (a test outside tests/e2e/ sets TOP before it sources this)
	TOP=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)} || exit 2
	BUILD=${BUILD:-$TOP/build}
	_b=$(cd "$BUILD" 2>/dev/null && pwd) ||
		{ echo "FAIL: no build at $BUILD: make test-bins" >&2; exit 2; }
	BUILD=$_b
	TRACER=$BUILD/pprof-alloc
	AGENT=$BUILD/libpprof-alloc.so
	WORKLOADS=$BUILD/tests/workloads
	[ -x "$TRACER" ] && [ -f "$AGENT" ] && [ -d "$WORKLOADS" ] ||
		{ echo "FAIL: $BUILD lacks the tracer, the agent or the workloads: make B=$BUILD test-bins" >&2; exit 2; }
	if [ -z "${TIME_SCALE:-}" ]; then
		TIME_SCALE=1
		grep -qaE 'lib(a|ub|t)san\.so' "$TRACER" && TIME_SCALE=2
	fi
	# run.sh's PATH: Debian's tools first
	PATH="/usr/bin:/bin:/usr/sbin:/sbin:$PATH"
	export TOP BUILD TRACER AGENT WORKLOADS TIME_SCALE PATH
	mkdir -p "$BUILD/test-logs" && cd "$BUILD/test-logs" || exit 2
fi
# Debian's multiarch directory of this machine's libraries
MULTIARCH=$(uname -m)-linux-gnu
TMP=$(mktemp -d "${TMPDIR:-/tmp}/pprof-alloc-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "--- $*"; }

# need PROBE...: each PROBE, a command or an absolute path, is here, else
# the test fails naming the package that brings it.  A PROBE must be one
# that contrib/packages lists: a tool a test uses is installed by the
# install step, never by hand (the test fails on one the list lacks, even
# when it is present).
need() {
	_lib=/usr/lib/$MULTIARCH
	for _probe; do
		_pkg=$(awk -v p="$_probe" -v lib="$_lib" '
			/^[ \t]*(#|$)/ { next }
			{ for (i = 3; i <= NF; i++) { f = $i; sub(/@LIB@/, lib, f)
				if (f == p) { print $2; exit } } }' "$TOP/contrib/packages")
		[ -n "$_pkg" ] ||
			fail "$_probe is not in contrib/packages: name the package that brings it there"
		case "$_probe" in
		/*) [ -e "$_probe" ] && continue ;;
		*) command -v "$_probe" >/dev/null 2>&1 && continue ;;
		esac
		fail "$_probe is missing (package $_pkg: run contrib/install-deps.sh --test)"
	done
}

# readable_build: copies of the tracer, the agent, the workloads and
# ctr-run in $TMP/build, which every user may read, and TRACER, AGENT,
# WORKLOADS and CTR pointed there; for tests that run them as another user
# (nobody), whatever the directories above the checkout allow (a clone in
# /root is closed to everyone else).
readable_build() {
	chmod 755 "$TMP" && mkdir -p "$TMP/build/workloads" &&
		cp "$TRACER" "$AGENT" "$BUILD/tests/tools/ctr-run" "$TMP/build/" &&
		find "$WORKLOADS" -maxdepth 1 -type f -perm -u+x \
			-exec cp {} "$TMP/build/workloads/" \; &&
		chmod -R a+rX "$TMP/build" ||
		fail "cannot copy the build into $TMP/build"
	TRACER=$TMP/build/$(basename "$TRACER")
	AGENT=$TMP/build/$(basename "$AGENT")
	WORKLOADS=$TMP/build/workloads
	CTR=$TMP/build/ctr-run
}

# mostly_lined PROFILE N: go tool pprof reads PROFILE, and at least 90% of
# its N locations have a function and a file:line (not "??").
mostly_lined() {
	go tool pprof -symbolize=none -raw "$1" >"$TMP/lined.raw" 2>"$TMP/lined.err" ||
		{ cat "$TMP/lined.err" >&2; fail "go tool pprof -raw cannot read $1"; }
	lined=$(awk '/^Locations/ { s = 1; next } /^Mappings/ { s = 0 }
		s && $1 ~ /^[0-9]+:$/ && NF > 4 && $4 != "??" && $5 ~ /:[1-9][0-9]*$/' \
		"$TMP/lined.raw" | wc -l)
	note "$lined of $2 locations have a function and a line"
	[ $((lined * 10)) -ge $(($2 * 9)) ] || fail "only $lined of $2 locations have a function and a line"
}

# text_addrs ELF N SEED [dwarf]: N unique addresses drawn from ELF's .text
# (awk's rand, seeded), or with dwarf from its compile units' ranges, as
# hex, one a line: what tests/tools/pprof-synth reads.
text_addrs() {
	if [ "${4:-}" = dwarf ]; then
		# only where a compile unit with DWARF is (.debug_aranges):
		# code linked in from a library built without -g (libiberty's
		# demangler in the tracer) has no lines to find
		readelf --debug-dump=aranges "$1" 2>/dev/null | python3 -c '
import random, sys
want, seed = int(sys.argv[1]), int(sys.argv[2])
r = []
for l in sys.stdin:
    f = l.split()
    if len(f) == 2 and len(f[0]) >= 8:
        try:
            a, n = int(f[0], 16), int(f[1], 16)
        except ValueError:
            continue
        if n:
            r.append((a, n))
tot = sum(n for _, n in r)
if not tot:
    sys.exit(1)
rng, seen = random.Random(seed), set()
while len(seen) < want:
    o = rng.randrange(tot)
    for a, n in r:
        if o < n:
            break
        o -= n
    if a + o not in seen:
        seen.add(a + o)
        print(hex(a + o))
' "$2" "$3" || fail "no .debug_aranges in $1"
		return
	fi
	set -- "$1" "$2" "$3" $(readelf -SW "$1" | sed -n 's/^ *\[ *[0-9]*\] //p' |
		awk '$1 == ".text" { print $3, $5 }')
	[ $# = 5 ] || fail "no .text in $1"
	awk -v s="$((0x$4))" -v n="$((0x$5))" -v want="$2" -v seed="$3" 'BEGIN {
		srand(seed)
		while (c < want) {
			a = s + int(rand() * n)
			if (!(a in seen)) { seen[a]; c++; printf "0x%x\n", a }
		}
	}'
}

# pprof_sum FILE [leaf|cum [PPROF-FLAGS...]]: per function, the four sample
# values summed, read through the real `go tool pprof -raw`.  Output lines:
#   FUNCTION alloc_objects alloc_space inuse_objects inuse_space
pprof_sum() {
	_f=$1 _mode=${2:-leaf}
	shift; [ $# -gt 0 ] && shift
	go tool pprof -raw "$@" "$_f" >"$TMP/raw.txt" 2>"$TMP/raw.err" ||
		{ cat "$TMP/raw.err" >&2; fail "go tool pprof -raw $_f failed"; }
	if [ -s "$TMP/raw.err" ]; then
		cat "$TMP/raw.err" >&2
		fail "go tool pprof printed warnings for $_f"
	fi
	python3 "$TOP/tests/e2e/pprof_sum.py" "$_mode" <"$TMP/raw.txt"
}

# free_port: a TCP port on 127.0.0.1 free now (python3).
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# wait_port PORT: until something listens there (20 s at most)
wait_port() {
	python3 -c '
import socket, sys, time
for _ in range(400):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.05)
sys.exit(1)' "$1"
}

# zoo_check FILE LABEL PATH [LEAF...]: the zoo's measure of a profile of a
# program no one here wrote (tests/e2e/zoo_check.py): >= 95% of the bytes
# on whole stacks, the biggest leaf named (one of LEAF... among the top
# five), no unnamed frame in a file with symbols.  Prints its table row;
# a failure is noted (check_failed), not fatal.
zoo_check() {
	_zf=$1; shift
	go tool pprof -raw "$_zf" >"$TMP/zoo.raw" 2>"$TMP/zoo.err" ||
		{ cat "$TMP/zoo.err" >&2; check_failed "go tool pprof -raw $_zf failed"; return; }
	python3 "$TOP/tests/e2e/zoo_check.py" "$@" <"$TMP/zoo.raw" ||
		check_failed "$1: the zoo's measure (see above)"
}

# value FUNC FIELD < pprof_sum output: FIELD 1..4, 0 if FUNC is absent.
value() {
	awk -v f="$1" -v i="$2" '$1 == f { v = $(i + 1) } END { print v + 0 }'
}

# within A B PCT: |A - B| <= PCT% of B
within() {
	awk -v a="$1" -v b="$2" -v p="$3" \
		'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= b * p / 100) }'
}

# ---- added for the run-*.sh tests ------------------------------------------

# check_failed MESSAGE: note a failure but go on checking, so one run shows
# every wrong number; finish then fails the test if there was any.
failures=0
check_failed() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
finish() {
	[ "$failures" = 0 ] || fail "$failures check(s) failed (see FAIL lines above)"
	echo "PASS"
}

# check_site SUMS FUNC AO AS IO IS: in SUMS (a file of pprof_sum output) the
# four values of FUNC are exactly alloc_objects AO, alloc_space AS,
# inuse_objects IO and inuse_space IS.
check_site() {
	_got=$(awk -v f="$2" '$1 == f { print $2, $3, $4, $5; n++ }
		END { if (!n) print "absent" }' "$1")
	_want="$3 $4 $5 $6"
	if [ "$_got" = "$_want" ]; then
		note "$2: $_got"
	else
		check_failed "$2: got (alloc_objects alloc_space inuse_objects inuse_space) = ($_got), want ($_want)"
	fi
}

# check_absent SUMS FUNC: FUNC has no samples in SUMS.
check_absent() {
	if awk -v f="$2" '$1 == f { found = 1 } END { exit !found }' "$1"; then
		check_failed "$2 should not be in the profile, but is: $(grep "^$2 " "$1")"
	fi
}

# comment_number SUMS WORDS: the number right after WORDS in the profile's
# comments ("# ..." lines of pprof_sum), or nothing if WORDS is absent.
comment_number() {
	grep '^# ' "$1" | sed -n "s/.*$2 \([0-9][0-9]*\).*/\1/p" | head -n 1
}

# check_no_loss SUMS: the profile says no record was lost or skipped.
check_no_loss() {
	_lost=$(comment_number "$1" "lost records")
	_skip=$(comment_number "$1" "unfinished records skipped")
	[ -n "$_lost" ] || fail "no 'lost records N' comment in the profile"
	[ "$_lost" = 0 ] || fail "the profile reports $_lost lost records"
	[ "${_skip:-0}" = 0 ] || fail "the profile reports $_skip skipped records"
}

# run_bare OUT CMD...: run CMD without the tracer, stdout to OUT; the exit
# status is kept in $bare_rc.
run_bare() {
	_out=$1; shift
	"$@" >"$_out" 2>"$_out.err"
	bare_rc=$?
}

# trace OUT PROFILE [TRACER OPTIONS] -- CMD...: run CMD under the tracer
# writing PROFILE; the command's stdout goes to OUT, the tracer's (and the
# command's) stderr to OUT.err; the tracer's exit status is in $trace_rc.
trace() {
	_out=$1 _prof=$2; shift 2
	"$TRACER" -o "$_prof" "$@" >"$_out" 2>"$_out.err"
	trace_rc=$?
	sed 's/^/    stderr: /' "$_out.err"
}

# same_output A B: two runs printed the same thing.
same_output() {
	cmp -s "$1" "$2" || {
		diff "$1" "$2" >&2
		fail "output differs between a bare and a traced run ($1, $2)"
	}
}

# ---- added for the attach tests (run-attach-*.sh) --------------------------
#
# attach_init: call once at the top of an attach test.  Every process
# started with spawn (targets, background tracers) is killed with SIGKILL
# when the test exits, however it exits.
spawned=""
attach_init() {
	trap 'attach_cleanup' EXIT
	trap 'exit 129' HUP
	trap 'exit 130' INT
	trap 'exit 143' TERM
}
attach_cleanup() {
	for _p in $spawned; do
		ours "$_p" || continue
		kill -CONT "$_p" 2>/dev/null
		kill -KILL "$_p" 2>/dev/null
	done
	rm -rf "$TMP"
}

# memory_cgroup NAME LIMIT: a memory cgroup of the test's own, LIMIT
# bytes and no swap: in cgroup v1's memory hierarchy when the machine has
# it, else in cgroup v2 where its root delegates the memory controller.
# $CG is its directory, $CG_VERSION 1 or 2; /proc/PID/cgroup names it
# /NAME.  in_cg CMD... runs CMD in it; memory_cgroup_remove (for the EXIT
# trap) kills what is left in it and removes it.
memory_cgroup() {
	if [ -d /sys/fs/cgroup/memory ] && grep -q ':memory:' /proc/self/cgroup; then
		CG="/sys/fs/cgroup/memory/$1" CG_VERSION=1
	else
		_v2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
		[ -n "$_v2" ] && grep -qw memory "$_v2/cgroup.subtree_control" 2>/dev/null ||
			fail "no memory cgroup controller to test with (neither v1 nor v2 delegating memory)"
		CG="$_v2/$1" CG_VERSION=2
	fi
	mkdir "$CG" || fail "cannot make the test cgroup $CG (root needed)"
	if [ $CG_VERSION = 1 ]; then
		echo "$2" >"$CG/memory.limit_in_bytes" || fail "cannot set the v1 limit"
		[ ! -f "$CG/memory.memsw.limit_in_bytes" ] ||
			echo "$2" >"$CG/memory.memsw.limit_in_bytes" || fail "cannot set memsw"
	else
		echo "$2" >"$CG/memory.max" || fail "cannot set memory.max"
		[ ! -f "$CG/memory.swap.max" ] || echo 0 >"$CG/memory.swap.max"
	fi
}
in_cg() {
	sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "$@"
}
memory_cgroup_remove() {
	[ -n "${CG:-}" ] || return 0
	for _p in $(cat "$CG/cgroup.procs" 2>/dev/null); do
		kill -KILL "$_p" 2>/dev/null
	done
	_i=0
	while [ -d "$CG" ] && [ $_i -lt 100 ]; do
		rmdir "$CG" 2>/dev/null || sleep 0.05
		_i=$((_i + 1))
	done
	[ ! -d "$CG" ] || echo "WARNING: could not remove $CG" >&2
}

# container_root DIR: a root for tests/tools/ctr-run holding what a glibc
# distribution's base image holds - glibc's shared libraries (Debian's
# libc6 package: libc, libm, libdl, libpthread, ld.so) - and empty /proc,
# /tmp and /app; no agent.  copy_in DIR FILE [AS]: FILE and the libraries
# it needs (ldd) into the root, FILE at AS (default: its own path).
container_root() {
	mkdir -p "$1/lib/$MULTIARCH" "$1/lib64" "$1/proc" "$1/tmp" "$1/app" ||
		fail "cannot make the container root $1"
	chmod 1777 "$1/tmp"
	# libc6's libraries; by their names where dpkg keeps no file lists
	# (the aarch64 test machine's root is unpacked, not installed)
	_libs=$(dpkg -L libc6 2>/dev/null |
		grep -E "^(/usr)?/lib/$MULTIARCH/[^/]*\.so[.0-9]*\$")
	[ -n "$_libs" ] || _libs=$(ls /lib/$MULTIARCH/ld-linux*.so.* \
		/lib/$MULTIARCH/lib[cm].so.6 /lib/$MULTIARCH/libdl.so.2 \
		/lib/$MULTIARCH/libpthread.so.0 /lib/$MULTIARCH/librt.so.1 \
		/lib/$MULTIARCH/libresolv.so.2 /lib/$MULTIARCH/libutil.so.1 \
		/lib/$MULTIARCH/libnss_*.so.2 2>/dev/null)
	# shellcheck disable=SC2086
	cp -L $_libs "$1/lib/$MULTIARCH/" || fail "cannot copy glibc into $1"
	case $MULTIARCH in
	x86_64-*) ln -s /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$1/lib64/" ;;
	aarch64-*) ln -s "$MULTIARCH/ld-linux-aarch64.so.1" "$1/lib/" ;;
	esac
}
copy_in() {
	_to="$1${3:-$2}"
	mkdir -p "$(dirname "$_to")" && cp -L "$2" "$_to" || fail "cannot copy $2 into $1"
	for _lib in $(ldd "$2" | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p'); do
		[ -e "$1$_lib" ] || { mkdir -p "$1$(dirname "$_lib")" && cp -L "$_lib" "$1$_lib"; } ||
			fail "cannot copy $_lib into $1"
	done
}

# send FIFO TEXT: write TEXT to a command FIFO; fail, rather than hang the
# suite, if nothing reads it within 10 s (its reader died).
send() {
	timeout 10 sh -c 'printf "%s" "$1" >"$0"' "$1" "$2" ||
		fail "cannot write '$2' to $1: its reader is gone?"
}

# ours PID: PID is a child of this shell.  A child that ended may have
# been reaped by the shell already, and its pid given to another process:
# nothing of ours to wait for or kill then.
ours() {
	[ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f2)" = "$$" ]
}

# spawn OUT CMD...: start CMD in the background, stdout to OUT and stderr
# to OUT.err; its pid is in $spawned_pid (CMD is exec'd: the pid is CMD's).
spawn() {
	_out=$1; shift
	"$@" >"$_out" 2>"$_out.err" &
	spawned_pid=$!
	spawned="$spawned $spawned_pid"
}

# running PID: the process exists and has not exited (a zombie child of
# this shell, not yet waited for, does not count).
running() {
	_st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
	[ -n "$_st" ] && [ "$_st" != Z ] && [ "$_st" != X ]
}

# wait_for FILE REGEX SECONDS: wait until a line of FILE matches REGEX
# (grep -E); 1 if it did not within SECONDS.
wait_for() {
	_n=$(($3 * 100))
	while [ "$_n" -gt 0 ]; do
		grep -Eq -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.01
		_n=$((_n - 1))
	done
	grep -Eq -- "$2" "$1" 2>/dev/null
}

# wait_gone PID SECONDS: wait until PID has exited; 1 if it has not.
wait_gone() {
	_n=$(($2 * 100))
	while running "$1"; do
		[ "$_n" -gt 0 ] || return 1
		sleep 0.01
		_n=$((_n - 1))
	done
}

# reap PID SECONDS: wait (bounded) for our child PID to exit and put its
# exit status in $reaped_rc; kill it and fail if it does not exit in time.
reap() {
	_n=$(($2 * 100))
	while running "$1" && ours "$1"; do
		if [ "$_n" -le 0 ]; then
			kill -KILL "$1" 2>/dev/null
			wait "$1" 2>/dev/null
			fail "process $1 ($(tr '\0' ' ' </proc/$1/cmdline 2>/dev/null)) did not exit within $2 s"
		fi
		sleep 0.01
		_n=$((_n - 1))
	done
	wait "$1"
	reaped_rc=$?
	forget "$1"
}

# forget PID: a reaped process, whose pid may be reused: attach_cleanup
# must not kill it any more.
forget() {
	spawned=$(echo " $spawned " | sed "s/ $1 / /g")
}

# attach_bg PID PROFILE ERR [TRACER OPTIONS]: start the tracer attached to
# PID in the background (its pid in $tracer_pid, stderr in ERR) and wait
# until it says it attached or connected; fail, showing its stderr, if it
# does not within 20 s.
attach_bg() {
	_pid=$1 _prof=$2 _err=$3; shift 3
	"$TRACER" --pid "$_pid" -o "$_prof" "$@" >"$_err.out" 2>"$_err" &
	tracer_pid=$!
	spawned="$spawned $tracer_pid"
	_n=2000
	until grep -Eq 'pprof-alloc: (attached to|re-attached to|connected to the agent in) process' "$_err" 2>/dev/null; do
		if ! running "$tracer_pid" || [ "$_n" -le 0 ]; then
			sed 's/^/    tracer: /' "$_err" >&2
			fail "the tracer did not attach to process $_pid"
		fi
		sleep 0.01
		_n=$((_n - 1))
	done
}

# stop_tracer: SIGTERM the background tracer (it detaches and writes its
# profile); wait for it, at most 30 s; its exit status is in $tracer_rc.
stop_tracer() {
	kill -TERM "$tracer_pid" 2>/dev/null
	reap "$tracer_pid" 30
	tracer_rc=$reaped_rc
}

# agent_mapped PID: the target has a pprof-alloc agent (or its memfd)
# mapped.
agent_mapped() {
	grep -Eq 'libpprof-alloc|memfd:pprof-alloc' "/proc/$1/maps" 2>/dev/null
}

# check_no_negative RAW: no sample of a `go tool pprof -raw` output has a
# negative value.
check_no_negative() {
	_neg=$(awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
		s && /^ *-?[0-9].*:/ { split($0, part, ":"); n = split(part[1], v, " ")
			for (i = 1; i <= n; i++) if (v[i] + 0 < 0) { print; break } }' "$1" | head -n 5)
	[ -z "$_neg" ] || check_failed "samples with negative values: $_neg"
}

# ---- the machine's core pattern ------------------------------------------

# core_pattern_take: hold the core pattern for this test (one test at a
# time changes it: the plain and sanitized suites run side by side) and
# make it "core" (cores in the current directory) if it is not - a pipe to
# a crash handler, or a path elsewhere.  core_pattern_give puts it back
# and lets go; a test's EXIT trap calls it too (it does nothing if the
# pattern was not taken).
core_pattern_saved=
core_pattern_take() {
	exec 9>/tmp/pprof-alloc-test-core_pattern.lock
	flock 9 || fail "cannot take the core pattern's lock"
	core_pattern_saved=$(cat /proc/sys/kernel/core_pattern)
	case "$core_pattern_saved" in
	core*) ;;
	*)	echo core >/proc/sys/kernel/core_pattern ||
			fail "core_pattern is '$core_pattern_saved' and cannot be set (root needed)" ;;
	esac
}
core_pattern_give() {
	case "$core_pattern_saved" in
	''|core*) ;;
	*)	echo "$core_pattern_saved" >/proc/sys/kernel/core_pattern ;;
	esac
	core_pattern_saved=
	exec 9>&-
}

# code_bytes PID PROG: the first 16 bytes of each allocator function of
# PROG (plain, je_ or _rjem_: what entry patching hooks) as mapped in PID,
# one "NAME HEX" line each, read from /proc/PID/mem.
code_bytes() {
	python3 - "$1" "$2" <<'PY'
import subprocess, sys
pid, prog = sys.argv[1], sys.argv[2]
names = set()
for f in ("", "je_", "_rjem_"):
    for n in ("malloc free calloc realloc posix_memalign aligned_alloc "
              "memalign valloc pvalloc mallocx rallocx sdallocx dallocx").split():
        names.add(f + n)
syms = {}
for line in subprocess.run(["nm", prog], capture_output=True, text=True).stdout.splitlines():
    p = line.split()
    if len(p) == 3 and p[1] in "Tt" and p[2] in names:
        syms[p[2]] = int(p[0], 16)
import os
ino = os.stat(f"/proc/{pid}/exe").st_ino
base = None
for line in open(f"/proc/{pid}/maps"):
    p = line.split()
    if len(p) >= 6 and int(p[4]) == ino and int(p[2], 16) == 0:
        base = int(p[0].split("-")[0], 16)
        break
# PIE: symbols are offsets from the first mapping; not PIE: absolute
etype = open(prog, "rb").read(18)[16]
mem = open(f"/proc/{pid}/mem", "rb")
for n in sorted(syms):
    a = syms[n] + (base if etype == 3 else 0)
    mem.seek(a)
    print(n, mem.read(16).hex())
PY
}

# check_attach_round SUMS T N R: one round of tests/workloads/attach-sites.c
# on T threads (its header comment's formulas), exact in SUMS
check_attach_round() {
	_s=$1 _t=$2 _n=$3 _r=$4
	check_site "$_s" work_keep $((_t * _n)) $((_t * _n / 4 * 960)) $((_t * _n)) $((_t * _n / 4 * 960))
	check_site "$_s" work_churn $((_t * _n)) $((_t * _n / 4 * 208)) 0 0
	check_site "$_s" work_calloc $((_t * _n)) $((_t * _n * 100)) $((_t * _n / 2)) $((_t * _n * 50))
	check_site "$_s" work_realloc $((_t * _r * 4)) $((_t * _r * 3310)) $((_t * _r)) $((_t * _r * 100))
	check_site "$_s" work_handoff $((_t * _n)) $((_t * _n * 72)) 0 0
}

# ---- core dumps (run-core*.sh) ---------------------------------------------

# check_core_named PROFILE NAME: the profile (--core) of a core of
# tests/workloads/die, preloaded at PPROF_ALLOC_RATE=1, names its
# allocating functions with their exact counts, has no frame without a
# function ("??", or go tool pprof's "[JIT]" for an address in no
# mapping), and at least 95% of its bytes were allocated through main.
# NAME tells the cores apart in the messages.
check_core_named() {
	pprof_sum "$1" leaf >"$TMP/$2.sum"
	check_site "$TMP/$2.sum" die_keep 8 8388608 8 8388608
	check_site "$TMP/$2.sum" die_keep_small 4 262144 4 262144
	check_site "$TMP/$2.sum" die_freed 2 524288 0 0
	pprof_sum "$1" stacks >"$TMP/$2.stacks"
	set -- "$2" $(awk '!/^#/ { t += $1; if (";" $3 ";" ~ /;main;/) m += $1
		n = split($3, f, ";")
		for (i = 1; i <= n; i++) if (f[i] == "??" || f[i] == "[JIT]") u++ }
		END { print t + 0, m + 0, u + 0 }' "$TMP/$2.stacks")
	note "$1: $2 bytes allocated, $3 through main, $4 frames without a function"
	[ "$4" = 0 ] ||
		check_failed "$1: $4 frames without a function: $(grep -v '^#' "$TMP/$1.stacks" | grep -E '\?\?|\[JIT\]' | head -n 3)"
	[ "$2" -gt 0 ] && [ $(($3 * 100)) -ge $(($2 * 95)) ] ||
		check_failed "$1: $3 of $2 bytes allocated through main, want >= 95%"
}
