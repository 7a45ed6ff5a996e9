#!/bin/sh
# run-cli.sh - the pprof-alloc command line: help, usage errors (exit 2,
# naming the option), a command that cannot run (127/126), the command's
# exit status passed on (128+N when it dies of signal N), an output that
# cannot be written refused before the command runs, the default output
# name, SIGTERM forwarded to the command with the profile still written,
# --top, and --no-symbolize.  Workload: tests/workloads/behave.c.
. "$(dirname "$0")/lib.sh"
need go python3

W="$WORKLOADS/behave"

# --- help
"$TRACER" --help >"$TMP/help.out" 2>"$TMP/help.err"
rc=$?
[ $rc = 0 ] || check_failed "--help exited $rc, want 0"
grep -q -- '--rate' "$TMP/help.out" || check_failed "--help does not mention --rate on stdout"

# --- usage errors: exit 2, a message on stderr that names the option
# usage_error WORD ARGS...: WORD must appear in the message
usage_error() {
	_word=$1; shift
	"$TRACER" "$@" >"$TMP/usage.out" 2>"$TMP/usage.err"
	_rc=$?
	note "pprof-alloc $*: exit $_rc: $(head -n 1 "$TMP/usage.err")"
	[ $_rc = 2 ] || check_failed "pprof-alloc $*: exit $_rc, want 2"
	grep -q -e "$_word" "$TMP/usage.err" ||
		check_failed "pprof-alloc $*: stderr does not name '$_word': $(cat "$TMP/usage.err")"
	[ ! -e "$TMP/usage.pb.gz" ] || check_failed "pprof-alloc $*: wrote a profile anyway"
}
usage_error --rate --rate 0 -o "$TMP/usage.pb.gz" -- "$W" exit 0
usage_error --rate --rate abc -o "$TMP/usage.pb.gz" -- "$W" exit 0
usage_error --rate --rate=-5 -o "$TMP/usage.pb.gz" -- "$W" exit 0
usage_error --ring-size --ring-size 1000 -o "$TMP/usage.pb.gz" -- "$W" exit 0
usage_error --ring-size --ring-size 96K -o "$TMP/usage.pb.gz" -- "$W" exit 0
usage_error --max-frames --max-frames 999 -o "$TMP/usage.pb.gz" -- "$W" exit 0
usage_error --max-frames --max-frames 0 -o "$TMP/usage.pb.gz" -- "$W" exit 0
usage_error --live-size --live-size 1000 -o "$TMP/usage.pb.gz" -- "$W" exit 0
usage_error command -o "$TMP/usage.pb.gz"
usage_error command
usage_error bogus --bogus-option -- "$W" exit 0

# --- a command that cannot run
"$TRACER" -o "$TMP/none.pb.gz" -- "$TMP/no-such-command" >"$TMP/none.out" 2>"$TMP/none.err"
rc=$?
note "nonexistent command: exit $rc: $(cat "$TMP/none.err")"
[ $rc = 127 ] || check_failed "a nonexistent command: exit $rc, want 127"
grep -q "no-such-command" "$TMP/none.err" || check_failed "the message does not name the missing command"
"$TRACER" -o "$TMP/none.pb.gz" -- no-such-command-in-path-$$ >"$TMP/none.out" 2>"$TMP/none.err"
rc=$?
[ $rc = 127 ] || check_failed "a command not in PATH: exit $rc, want 127"
printf 'not a program\n' >"$TMP/not-exec"
chmod 644 "$TMP/not-exec"
"$TRACER" -o "$TMP/none.pb.gz" -- "$TMP/not-exec" >"$TMP/none.out" 2>"$TMP/none.err"
rc=$?
[ $rc = 126 ] || check_failed "a command that is not executable: exit $rc, want 126"
grep -q "not-exec" "$TMP/none.err" || check_failed "the message does not name the command that cannot run"

# --- the command's exit status is the tracer's
"$TRACER" -q -o "$TMP/sh.pb.gz" -- /bin/sh -c 'exit 7' 2>"$TMP/sh.err"
rc=$?
[ $rc = 7 ] || check_failed "sh -c 'exit 7' under the tracer: exit $rc, want 7"
"$TRACER" -o "$TMP/exit.pb.gz" -- "$W" exit 3 2>"$TMP/exit.err"
rc=$?
[ $rc = 3 ] || check_failed "behave exit 3 under the tracer: exit $rc, want 3"
[ -s "$TMP/exit.pb.gz" ] || check_failed "no profile written for a command that exited 3"
"$TRACER" -o "$TMP/sig.pb.gz" -- "$W" signal 12 2>"$TMP/sig.err"
rc=$?
[ $rc = $((128 + 12)) ] || check_failed "a command killed by SIGUSR2: exit $rc, want $((128 + 12))"
grep -q "signal 12" "$TMP/sig.err" || check_failed "stderr does not say the command was killed by signal 12: $(cat "$TMP/sig.err")"
[ -s "$TMP/sig.pb.gz" ] || check_failed "no profile written for a command killed by a signal"
"$TRACER" -q -o "$TMP/kill.pb.gz" -- "$W" signal 9 2>/dev/null
rc=$?
[ $rc = 137 ] || check_failed "a command killed by SIGKILL: exit $rc, want 137"

# --- an unwritable output: refused before the command runs, exit 2 with
# one line naming the file (run-output.sh has the other cases)
"$TRACER" -o "$TMP/no-such-dir/x.pb.gz" -- /bin/sh -c ": >'$TMP/ran'; exit 3" 2>"$TMP/unwritable.err"
rc=$?
[ $rc = 2 ] || check_failed "an unwritable -o: exit $rc, want 2"
grep -q "no-such-dir/x.pb.gz" "$TMP/unwritable.err" || check_failed "an unwritable -o: the message does not name the file"
[ "$(wc -l <"$TMP/unwritable.err")" = 1 ] || check_failed "an unwritable -o: more than one line: $(cat "$TMP/unwritable.err")"
[ ! -e "$TMP/ran" ] || check_failed "an unwritable -o: the command ran anyway"

# --- default output name: pprof-alloc.<pid of the command>.pb.gz in the cwd
mkdir "$TMP/cwd"
(cd "$TMP/cwd" && "$TRACER" -- "$W" pid >"$TMP/pid.out" 2>"$TMP/pid.err")
rc=$?
[ $rc = 0 ] || check_failed "behave pid under the tracer: exit $rc"
pid=$(sed -n 's/^pid \([0-9]*\)$/\1/p' "$TMP/pid.out")
[ -n "$pid" ] || fail "behave pid printed no pid"
ls "$TMP/cwd"
[ -s "$TMP/cwd/pprof-alloc.$pid.pb.gz" ] ||
	check_failed "without -o, no pprof-alloc.$pid.pb.gz in the working directory (found: $(ls "$TMP/cwd"))"
# the profile and its readings (PROFILE.json), nothing else
[ "$(ls "$TMP/cwd" | tr '\n' ' ')" = "pprof-alloc.$pid.json pprof-alloc.$pid.pb.gz " ] ||
	check_failed "without -o, want pprof-alloc.$pid.pb.gz and pprof-alloc.$pid.json, found: $(ls "$TMP/cwd" | tr '\n' ' ')"
python3 -m json.tool "$TMP/cwd/pprof-alloc.$pid.json" >/dev/null ||
	check_failed "pprof-alloc.$pid.json is not JSON"
[ ! -s "$TMP/cwd/pprof-alloc.$pid.pb.gz" ] || pprof_sum "$TMP/cwd/pprof-alloc.$pid.pb.gz" >/dev/null

# --- SIGTERM to the tracer reaches the command; the profile is written
rm -f "$TMP/ready"
"$TRACER" --rate 1 -o "$TMP/term.pb.gz" -- "$W" wait "$TMP/ready" >"$TMP/term.out" 2>"$TMP/term.err" &
tracer_pid=$!
i=0
while [ ! -s "$TMP/ready" ] && [ $i -lt 200 ]; do
	sleep 0.1
	i=$((i + 1))
done
[ -s "$TMP/ready" ] || { kill -KILL $tracer_pid; fail "behave wait never got ready under the tracer"; }
sleep 0.1
child_pid=$(cat "$TMP/ready")
sleep 0.2			# let the loop allocate a little
kill -TERM $tracer_pid
i=0
while kill -0 $tracer_pid 2>/dev/null && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
if kill -0 $tracer_pid 2>/dev/null; then
	kill -KILL $tracer_pid
	kill -KILL "$child_pid"
	fail "the tracer did not end within 10 s of SIGTERM: not forwarded to the command?"
fi
wait $tracer_pid
rc=$?
cat "$TMP/term.err"
[ $rc = 143 ] || check_failed "SIGTERM to the tracer: exit $rc, want 143 (the command killed by SIGTERM)"
grep -q "signal 15" "$TMP/term.err" || check_failed "stderr does not say the command was killed by signal 15"
if [ -s "$TMP/term.pb.gz" ]; then
	pprof_sum "$TMP/term.pb.gz" leaf >"$TMP/term.txt"
	cat "$TMP/term.txt"
	check_site "$TMP/term.txt" wait_keep_site 10 10000 10 10000
	loops=$(value wait_loop_site 1 <"$TMP/term.txt")
	[ "$loops" -gt 0 ] || check_failed "no allocation recorded at wait_loop_site"
	[ "$(value wait_loop_site 3 <"$TMP/term.txt")" -le 1 ] ||
		check_failed "wait_loop_site: more than one block in use, but it frees each before the next"
else
	check_failed "no profile written after SIGTERM"
fi

# --- --top 3: the three largest sites by in-use and by allocated bytes
"$TRACER" --rate 1 --top 3 -o "$TMP/top.pb.gz" -- "$W" top >"$TMP/top.out" 2>"$TMP/top.err"
rc=$?
cat "$TMP/top.out"
[ $rc = 0 ] || check_failed "behave top under the tracer: exit $rc"
names=$(grep -o -E 'top_[a-z]+' "$TMP/top.out" | tr '\n' ' ')
case "$names" in
"top_a top_b top_c top_churn top_a top_b "|"top_churn top_a top_b top_a top_b top_c ") ;;
*) check_failed "--top 3 listed '$names', want top_a top_b top_c (in use) and top_churn top_a top_b (allocated)" ;;
esac
grep -q "behave: top sites allocated" "$TMP/top.out" || check_failed "the command's own output is missing with --top"

# --- --no-symbolize: addresses and mappings with build IDs, no names; the
# mappings are right, so pprof can symbolize the file later by itself
"$TRACER" --rate 1 --no-symbolize -o "$TMP/nosym.pb.gz" -- "$W" top >/dev/null 2>&1
rc=$?
[ $rc = 0 ] || check_failed "--no-symbolize: exit $rc"
go tool pprof -symbolize=none -raw "$TMP/nosym.pb.gz" >"$TMP/nosym.txt" 2>"$TMP/nosym.err" ||
	fail "go tool pprof cannot read the --no-symbolize profile: $(cat "$TMP/nosym.err")"
sed -n '/^Locations/,$p' "$TMP/nosym.txt"
nloc=$(sed -n '/^Locations/,/^Mappings/p' "$TMP/nosym.txt" | grep -c -E '^ *[0-9]+: 0x[0-9a-f]+ M=[0-9]+ *$')
named=$(sed -n '/^Locations/,/^Mappings/p' "$TMP/nosym.txt" | grep -c -E '^ *[0-9]+: 0x[0-9a-f]+ M=[0-9]+ +[^ ]')
inline=$(sed -n '/^Locations/,/^Mappings/p' "$TMP/nosym.txt" | grep -c -E '^ +[^ 0-9]')
[ "$nloc" -ge 5 ] || check_failed "--no-symbolize: only $nloc bare address locations"
[ "$named" = 0 ] && [ "$inline" = 0 ] || check_failed "--no-symbolize: the profile has function names"
exe_map=$(sed -n '/^Mappings/,$p' "$TMP/nosym.txt" | grep " $W ")
build_id=$(readelf -n "$W" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
[ -n "$build_id" ] || fail "the workload has no build ID (readelf -n $W)"
echo "$exe_map" | grep -q " $build_id" ||
	check_failed "--no-symbolize: the executable's mapping lacks its build ID $build_id: '$exe_map'"
sed -n '/^Mappings/,$p' "$TMP/nosym.txt" | grep -q '\[FN\]' &&
	check_failed "--no-symbolize: a mapping claims to have function names"
go tool pprof -raw "$TMP/nosym.pb.gz" >"$TMP/later.txt" 2>"$TMP/later.err"
grep -q ' top_a ' "$TMP/later.txt" ||
	check_failed "pprof could not symbolize the --no-symbolize profile from its mappings: $(cat "$TMP/later.err")"
finish
