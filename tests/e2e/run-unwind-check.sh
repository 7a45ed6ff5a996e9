#!/bin/sh
# run-unwind-check.sh - the differential test of the agent's unwinding:
# each stack its tables unwind whole must be the stack libdwfl finds in a
# copy of the same stack.
#
# PPROF_ALLOC_UNWIND_CHECK=1 makes the launched agent (--unwind auto) copy
# the stack of every sample its tables unwound too, and the tracer unwind
# each copy with libdwfl and compare the frames (tracer/record/stackwalk.c): a
# disagreement is printed frame by frame and counted in the profile's
# "checked against libdwfl" comment.  The corpus: stock Debian python3,
# sqlite3, perl and bash; our nofp-calls and nofp-cxx (-O2, no frame
# pointers, C++ through libstdc++); and signals, whose handlers allocate on
# the thread's stack and on an alternate one (stacks through __restore_rt
# to the code they interrupted, to main).  Every program must have stacks
# checked, and none may disagree.
. "$(dirname "$0")/lib.sh"
need python3

need go /usr/bin/python3.11 /usr/bin/sqlite3 /usr/bin/perl /bin/bash
cat >"$TMP/lists.py" <<'EOF'
keep = []
for i in range(30):
    keep.append([str(j) * 10 for j in range(5000)])
    keep.append(bytearray(100000))
print(len(keep))
EOF

# checked NAME MIN RATE RING CMD...: launched with the check (a ring of
# RING bytes and 64 KiB stack copies, or the defaults: -); at least MIN
# stacks checked, none disagreeing
checked() {
	_n=$1 _min=$2 _rate=$3 _ring=$4; shift 4
	[ "$_ring" = - ] && _ring= || _ring="--ring-size $_ring --stack-bytes 65536"
	# shellcheck disable=SC2086
	PPROF_ALLOC_UNWIND_CHECK=1 "$TRACER" -q --rate "$_rate" $_ring \
		-o "$TMP/$_n.pb.gz" -- "$@" >"$TMP/$_n.out" 2>"$TMP/$_n.err" ||
		{ cat "$TMP/$_n.err" >&2; check_failed "$_n: the tracer failed"; return; }
	go tool pprof -comments "$TMP/$_n.pb.gz" 2>/dev/null |
		sed -n 's/.*checked against libdwfl: \([0-9]*\) whole stacks, \([0-9]*\) disagreed, \([0-9]*\) where the copy ended first.*/\1 \2 \3/p' \
		>"$TMP/$_n.check"
	read -r _all _differ _short <"$TMP/$_n.check" ||
		{ check_failed "$_n: no 'checked against libdwfl' comment in the profile"; return; }
	note "$_n: $_all whole stacks checked, $_differ disagreed, $_short where the copy ended first"
	if [ "$_differ" != 0 ]; then
		grep -A 40 'unwind check' "$TMP/$_n.err" | head -n 60 | sed 's/^/    /'
		check_failed "$_n: $_differ stacks of the agent's tables disagree with libdwfl's"
	fi
	# stacks that go on past their copy are not counted: few, and (for
	# signals) those of the handler on an alternate stack, whose copy
	# holds none of the thread's own stack: checked below
	[ $((_all - _short)) -ge "$_min" ] ||
		check_failed "$_n: only $((_all - _short)) stacks checked whole, want at least $_min"
	[ "$_n" = signals ] || [ $((_short * 100)) -le "$_all" ] ||
		check_failed "$_n: $_short of $_all stacks went on past their copy, want at most 1%"
}

checked python3 50 65536 - /usr/bin/python3.11 "$TMP/lists.py"
checked sqlite3 200 8192 - /usr/bin/sqlite3 :memory: \
	"create table t(a text); with recursive c(x) as (select 1 union all select x + 1 from c where x < 20000) insert into t select hex(randomblob(30)) from c; create index i on t(a);"
checked perl 200 8192 - /usr/bin/perl -e 'my @a = map { "x" x $_ } 1 .. 20000; print scalar(@a), "\n"'
checked bash 50 1024 - /bin/bash -c 'x=; for i in $(seq 1 300); do x="$x$i"; done; echo ${#x}'
checked nofp-calls 100 8192 - "$WORKLOADS/nofp-calls"
checked nofp-cxx 100 65536 - "$WORKLOADS/nofp-cxx" 50
# (every allocation, each with a copy: a 128 MiB ring loses fewer; the
# copies at 64 KiB hold the whole of the thread's own stack, even under a
# signal frame that interrupted the agent, so that only the stacks taken on
# the alternate stack can go on past theirs)
checked signals 1000 1 134217728 "$WORKLOADS/signals" 30000

# the handlers' stacks went through the signal frames to main, on both
# stacks (SIGUSR1's handler runs on an alternate one)
go tool pprof -raw "$TMP/signals.pb.gz" >"$TMP/raw.txt" 2>/dev/null ||
	fail "go tool pprof cannot read the signals profile"
python3 "$TOP/tests/e2e/pprof_sum.py" stacks <"$TMP/raw.txt" >"$TMP/signals.stacks"
for h in alrm usr1; do
	n=$(grep -c "^[0-9]* [0-9]* ${h}_site;on_${h};__restore_rt;.*;main;" "$TMP/signals.stacks")
	note "signals: $n stacks from ${h}_site through the signal frame to main"
	[ "$n" -gt 0 ] || check_failed "signals: no stack from ${h}_site through __restore_rt to main"
done
# the stacks that went on past their copy are at most the samples taken on
# the alternate stack: in SIGUSR1's handler (200 bytes each), or in
# SIGALRM's (96 bytes) when it interrupted that one
usr1=$(awk '$3 ~ /;on_usr1;/ { n += $1 / ($3 ~ /^alrm_site;/ ? 96 : 200) }
	END { print int(n + 0.5) }' "$TMP/signals.stacks")
note "signals: $_short stacks went on past their copy; $usr1 samples in the handler on the alternate stack"
[ "$_short" -le "$usr1" ] ||
	check_failed "signals: $_short stacks went on past their copy, more than the $usr1 samples taken on the alternate stack"
finish
