#!/bin/bash
# tests/run.sh BUILD_DIR [BUILD_DIR...] - run the whole suite for each build:
# every unit test binary (BUILD/tests/unit/test-*) and every end-to-end
# script (tests/e2e/run-*.sh) against that build's tracer and agent.
#
# `make test` passes two: build (plain) and build-san (the tracer, the
# parsers and the unit tests under ASan and UBSan; the agent, which runs
# inside other processes, is never sanitized - see the Makefile).  Tests of
# a build other than the first, or of a sanitized one, are named after it:
# "san/e2e/run-exact".  A sanitized build (its tracer links a sanitizer's
# runtime) runs every unit test and the e2e tests tests/e2e/sanitized.list
# names; SAN_ALL=1 runs every e2e test there too (make check-long).
#
# Tests run in parallel, JOBS at a time (default: one more than the CPUs,
# as a third of the suite's time is tests waiting on servers and clocks): each
# works in a temporary directory of its own and takes what it needs (a free
# port, a cgroup named after its pid); a test that must change something
# global for a while (run-core: the core pattern) takes a lock for it.  The
# longest tests of the last run (BUILD/test-times) start first.  Tests of
# a sanitized build (slower) get TIME_SCALE=2, by which tests with time
# thresholds scale them.
#
# Each test is one program: exit 0 is a pass, anything else a failure (a test
# that cannot run here fails; nothing is skipped silently).  Output of a
# failing test is shown; passing tests print one line, as they finish.  The
# last line is "N passed, N failed" over every build, and the exit status
# is non-zero if anything failed.  TESTS="pattern..." runs only the tests whose
# name contains one of the patterns; TEST_LIST=FILE only those FILE names,
# one a line ("unit/test-cfi", "e2e/run-exact"), each of which must exist
# (tests/arm64/tests.list: `make check-arm64`).  PA_TIME_SCALE multiplies
# TIME_SCALE (an emulated machine is slower still).  SUITE=long runs
# tests/long/run-*.sh instead of the unit and e2e tests: the soaks `make
# check-long` runs.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
export TOP
# the tools contrib/install-deps.sh installs (Debian's python3, go,
# prometheus) come before whatever a user's PATH puts first: a pyenv shim
# for python3 costs 0.15 s a call and may lack what the tests import
PATH="/usr/bin:/bin:/usr/sbin:/sbin:$PATH"
export PATH
[ $# -gt 0 ] || set -- build
JOBS=${JOBS:-$(($(nproc) + 1))}
case "$JOBS" in ''|*[!0-9]*|0) echo "run.sh: JOBS must be a positive number" >&2; exit 2 ;; esac

# sanitized BUILD: its tracer is built with a sanitizer (ASan, UBSan, TSan)
sanitized() { grep -qaE 'lib(a|ub|t)san\.so' "$1/pprof-alloc" 2>/dev/null; }
# the e2e tests a sanitized build runs (tests/e2e/sanitized.list), each
# of which must exist
declare -A san_list
SAN_LIST="$TOP/tests/e2e/sanitized.list"
while read -r t _; do
	case "$t" in ''|'#'*) continue ;; esac
	[ -f "$TOP/tests/e2e/$t.sh" ] ||
		{ echo "run.sh: $SAN_LIST names $t, which is not a test" >&2; exit 2; }
	san_list[$t]=1
done <"$SAN_LIST"

# TEST_LIST: the names to run, exactly
declare -A only
if [ -n "${TEST_LIST:-}" ]; then
	[ -r "$TEST_LIST" ] || { echo "run.sh: cannot read TEST_LIST $TEST_LIST" >&2; exit 2; }
	while read -r t _; do
		case "$t" in ''|'#'*) continue ;; esac
		only[$t]=1
	done <"$TEST_LIST"
fi
SCALE=${PA_TIME_SCALE:-1}
case "$SCALE" in ''|*[!0-9]*|0) echo "run.sh: PA_TIME_SCALE must be a positive number" >&2; exit 2 ;; esac

names=() paths=() kinds=() bidx=() bdirs=() bsan=()
first=1
for dir in "$@"; do
	B=$(cd "$dir" && pwd) || exit 2
	bdirs+=("$B")
	b=$((${#bdirs[@]} - 1))
	san=0
	sanitized "$B" && san=1
	bsan+=("$san")
	rm -rf "$B/test-logs"
	mkdir -p "$B/test-logs"
	prefix=
	[ $first = 1 ] && [ $san = 0 ] ||
		{ prefix=$(basename "$B"); prefix="${prefix#build-}/"; }
	for t in "$B"/tests/unit/test-*; do
		[ "${SUITE:-}" != long ] && [ -x "$t" ] || continue
		names+=("${prefix}unit/$(basename "$t")"); paths+=("$t")
		kinds+=(unit); bidx+=("$b")
	done
	suite=e2e
	[ "${SUITE:-}" = long ] && suite=long
	# an aarch64 build's own tests too (ELF e_machine 183 at byte 18 of
	# its tracer): tests/arm64/e2e/, named arm64/run-*
	arch_tests=
	[ "$suite" = e2e ] &&
		[ "$(od -An -tu2 -j18 -N2 "$B/pprof-alloc" 2>/dev/null | tr -d ' ')" = 183 ] &&
		arch_tests=$(ls "$TOP"/tests/arm64/e2e/run-*.sh 2>/dev/null)
	for t in "$TOP/tests/$suite"/run-*.sh $arch_tests; do
		[ -f "$t" ] || continue
		# a test of the agent (never sanitized) whose tracer side other
		# tests run sanitized says so in a line of its own, and runs in
		# the first (plain) build only: it is not a test of the others
		[ $first = 0 ] && grep -q '^# plain build only: ' "$t" && continue
		# a sanitized build runs the e2e tests of its list (those that
		# reach tracer code no other sanitized test reaches, and those
		# that feed the tracer hostile input); with SAN_ALL=1 (make
		# check-long) all of them
		[ $san = 1 ] && [ "${SAN_ALL:-0}" != 1 ] && [ $suite = e2e ] &&
			[ -z "${san_list[$(basename "$t" .sh)]:-}" ] && continue
		case "$t" in
		"$TOP"/tests/arm64/*) tname=arm64/$(basename "$t" .sh) ;;
		*) tname=$suite/$(basename "$t" .sh) ;;
		esac
		names+=("${prefix}$tname"); paths+=("$t")
		kinds+=(e2e); bidx+=("$b")
	done
	first=0
done

# the tests to run, longest first: by the last run's times (BUILD/
# test-times, written below; never committed); a test without one (all of
# them in a fresh clone) first, the e2e tests before the unit tests and a
# later (sanitized, slower) build's before the first's
declare -A last
for B in "${bdirs[@]}"; do
	[ -f "$B/test-times" ] || continue
	while read -r n s; do last[$n]=$s; done <"$B/test-times"
done
# every name TEST_LIST gives is a test of the first build
declare -A known
for n in "${names[@]}"; do known[$n]=1; done
for t in "${!only[@]}"; do
	[ -n "${known[$t]:-}" ] ||
		{ echo "run.sh: $TEST_LIST names $t, which is not a test here" >&2; exit 2; }
done
order=()
while read -r _ i; do order+=("$i"); done < <(
	for i in "${!names[@]}"; do
		want=1
		[ -z "${TESTS:-}" ] || want=0
		if [ -n "${TEST_LIST:-}" ]; then
			[ -n "${only[${names[$i]}]:-}" ] || continue
		fi
		set -f
		for pat in ${TESTS:-}; do
			case "${names[$i]}" in *"$pat"*) want=1 ;; esac
		done
		set +f
		[ $want = 1 ] || continue
		unknown=100000
		[ "${kinds[$i]}" = e2e ] && unknown=$((unknown + 2))
		[ "${bidx[$i]}" -gt 0 ] && unknown=$((unknown + 1))
		echo "${last[${names[$i]}]:-$unknown} $i"
	done | sort -k1,1nr -k2,2n)

log_of() { echo "${bdirs[${bidx[$1]}]}/test-logs/${names[$1]}.log"; }

launch() {
	local i=$1 B=${bdirs[${bidx[$1]}]} log
	log=$(log_of "$i")
	mkdir -p "$(dirname "$log")"
	(
		export BUILD="$B" TRACER="$B/pprof-alloc"
		# a sanitized build is slower: tests whose thresholds are
		# times scale them by TIME_SCALE
		[ "${bsan[${bidx[$i]}]}" = 0 ] && export TIME_SCALE=$SCALE ||
			export TIME_SCALE=$((2 * SCALE))
		export AGENT="$B/libpprof-alloc.so" WORKLOADS="$B/tests/workloads"
		start=$(date +%s)
		cd "$B/test-logs" || exit 1
		if [ "${kinds[$i]}" = unit ]; then
			"${paths[$i]}" >"$log" 2>&1
		else
			sh "${paths[$i]}" >"$log" 2>&1
		fi
		rc=$?
		# the test's CPU time (user + system of its processes)
		times >"$log.times"
		cpu=$(awk 'NR == 2 {
			split($1, u, "m"); split($2, s, "m")
			printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2] + 0.5 }' \
			"$log.times")
		rm -f "$log.times"
		echo "$rc $(($(date +%s) - start)) ${cpu:-0}" >"$log.result"
	) &
}

pass=0 fail=0 failed="" running=() times=()
# report i: the test has finished (its .result is there)
report() {
	local i=$1 log rc secs cpu
	log=$(log_of "$i")
	read -r rc secs cpu <"$log.result"
	rm -f "$log.result"
	times+=("${bidx[$i]} ${names[$i]} $secs")
	if [ "$rc" = 0 ]; then
		pass=$((pass + 1))
		echo "PASS ${names[$i]} (${secs}s, ${cpu}s CPU)"
		return
	fi
	fail=$((fail + 1)); failed="$failed ${names[$i]}"
	echo "FAIL ${names[$i]} (exit $rc); its FAIL lines, then the last lines of $log:"
	grep '^FAIL' "$log" | head -n 20 | sed 's/^/    /'
	echo "    ..."
	tail -n 25 "$log" | sed 's/^/    /'
}

next=0
while [ $next -lt ${#order[@]} ] || [ ${#running[@]} -gt 0 ]; do
	while [ $next -lt ${#order[@]} ] && [ ${#running[@]} -lt "$JOBS" ]; do
		launch "${order[$next]}"
		running+=("${order[$next]}")
		next=$((next + 1))
	done
	wait -n 2>/dev/null
	still=()
	for i in "${running[@]}"; do
		if [ -f "$(log_of "$i").result" ]; then
			report "$i"
		else
			still+=("$i")
		fi
	done
	running=("${still[@]+"${still[@]}"}")
done

# this run's times, for the next run's order (a filtered run adds to them)
for b in "${!bdirs[@]}"; do
	f="${bdirs[$b]}/test-times"
	{
		for t in "${times[@]+"${times[@]}"}"; do
			set -- $t
			[ "$1" = "$b" ] && echo "$2 $3"
		done
		[ -f "$f" ] && cat "$f"
	} | awk '!seen[$1]++' >"$f.new" && mv "$f.new" "$f"
done

[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
