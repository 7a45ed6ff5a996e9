#!/bin/sh
# run-follow.sh - --follow-children: every descendant of the command is
# profiled too, one profile per process image, beside the main one.
#   - a program that daemonizes (fork, setsid, fork, no exec; ours): the
#     tracer waits for the daemon, whose profile holds exactly its own
#     sites (--rate 1) and nothing of its parent's, whose blocks it frees;
#   - the same daemon, the tracer stopped (SIGTERM) while it runs: its
#     profile so far is written, it runs on and finishes unharmed;
#   - stock programs: make -j2 building a C program (gcc's driver, cc1,
#     as, ld: profiles go tool pprof reads), a shell whose forks exec ls
#     (the forked image, empty, gets no profile; each ls gets one), perl
#     forking without exec;
#   - forks the agent must not hurt (beside dl_iterate_phdr in another
#     thread; after closing every descriptor), unshare -U in a descendant,
#     a burst of 100 processes (each followed or counted), SIGTERM during
#     the run (the descendants are then not waited for);
#   - --follow-children with --pid or --core is a usage error.
. "$(dirname "$0")/lib.sh"
need pgrep
attach_init

need make gcc perl go python3

# daemon N MB: the daemonizing workload under the tracer (--rate 1), its
# files in $TMP/dN, profiles in $TMP/outN, stderr in $TMP/tN.err; once
# the daemon runs and the started process's profile is written: $tracer,
# $dpid
daemon() {
	mkdir -p "$TMP/d$1" "$TMP/out$1"
	"$TRACER" --follow-children --rate 1 -o "$TMP/out$1/heap.pb.gz" -- \
		"$WORKLOADS/daemonize" "$TMP/d$1" "$2" >"$TMP/t$1.out" 2>"$TMP/t$1.err" &
	tracer=$!
	spawned="$spawned $tracer"
	wait_for "$TMP/d$1/daemon.pid" '^[0-9]' 20 ||
		{ cat "$TMP/t$1.err"; fail "daemon $1 did not start"; }
	dpid=$(cat "$TMP/d$1/daemon.pid")
	wait_for "$TMP/t$1.err" "wrote $TMP/out$1/heap.pb.gz" 20 ||
		{ cat "$TMP/t$1.err"; fail "daemon $1: the main profile was not written when the program exited"; }
}

# --- a daemon, followed to its end: the started process has exited, its
# profile is written, the tracer waits
daemon 1 8
sleep 0.3
kill -0 "$tracer" 2>/dev/null || { cat "$TMP/t1.err"; fail "the tracer did not wait for the daemon"; }
: >"$TMP/d1/stop"
wait_for "$TMP/d1/daemon.done" ok 20 || fail "the daemon did not finish"
rc=0
wait "$tracer" || rc=$?
[ "$rc" = 0 ] || { cat "$TMP/t1.err"; fail "the tracer: exit $rc, want the command's 0"; }
grep -q "followed 2 child process images: wrote 1 profile" "$TMP/t1.err" ||
	{ cat "$TMP/t1.err"; fail "no summary of the followed processes"; }
DP="$TMP/out1/heap.$dpid.daemonize.pb.gz"
[ -s "$DP" ] || { ls "$TMP/out1"; fail "no profile for the daemon ($DP)"; }
pprof_sum "$TMP/out1/heap.pb.gz" >"$TMP/main.sums" || fail "cannot read the main profile"
check_site "$TMP/main.sums" parent_site 64 4194304 64 4194304
check_absent "$TMP/main.sums" daemon_site
pprof_sum "$DP" >"$TMP/daemon.sums" || fail "cannot read the daemon's profile"
check_site "$TMP/daemon.sums" daemon_site 128 8388608 128 8388608
check_site "$TMP/daemon.sums" daemon_freed_site 32 2097152 0 0
check_site "$TMP/daemon.sums" daemon_late_site 8 524288 8 524288
check_absent "$TMP/daemon.sums" parent_site
check_no_loss "$TMP/daemon.sums"
go tool pprof -comments "$DP" >"$TMP/dp.comments" 2>&1
grep -q "exited with status 0" "$TMP/dp.comments" ||
	{ head -3 "$TMP/dp.comments"; cat "$TMP/t1.err"; check_failed "the daemon's profile does not say how it ended"; }

# --- the tracer stopped while the daemon runs: what it has is written, the
# daemon runs on unharmed (its agent off)
daemon 2 4
kill -TERM "$tracer"
rc=0
timeout 20 sh -c "while kill -0 $tracer 2>/dev/null; do sleep 0.05; done" || rc=$?
[ "$rc" = 0 ] || fail "the tracer did not stop following after SIGTERM"
wait "$tracer" 2>/dev/null
running "$dpid" || fail "the daemon died when the tracer stopped following it"
DP="$TMP/out2/heap.$dpid.daemonize.pb.gz"
[ -s "$DP" ] || { cat "$TMP/t2.err"; ls "$TMP/out2"; fail "no profile for the daemon left running"; }
pprof_sum "$DP" >"$TMP/daemon2.sums" || fail "cannot read the second daemon's profile"
check_site "$TMP/daemon2.sums" daemon_site 64 4194304 64 4194304
check_absent "$TMP/daemon2.sums" daemon_late_site
go tool pprof -comments "$DP" 2>&1 | grep -q "was left running" ||
	check_failed "the profile of a daemon left running does not say so"
: >"$TMP/d2/stop"
wait_for "$TMP/d2/daemon.done" ok 20 || fail "the daemon left running did not finish its work"

# --- make -j2 (stock): gcc drivers, cc1, as, collect2, ld
mkdir -p "$TMP/mk" "$TMP/out3"
printf 'int f(void) { return 1; }\n' >"$TMP/mk/a.c"
printf '#include <stdio.h>\nint f(void); int main(void) { printf("built %%d\\n", f()); return 0; }\n' >"$TMP/mk/b.c"
printf 'prog: a.o b.o\n\tgcc -o $@ a.o b.o\n%%.o: %%.c\n\tgcc -O2 -c -o $@ $<\n' >"$TMP/mk/Makefile"
(cd "$TMP/mk" && timeout 120 "$TRACER" --follow-children --rate 65536 -o "$TMP/out3/make.pb.gz" -- make -j2 -s) \
	>"$TMP/make.out" 2>"$TMP/make.err" || { cat "$TMP/make.err"; fail "make under the tracer failed"; }
"$TMP/mk/prog" | grep -q "built 1" || fail "what make built does not run"
ncc1=$(ls "$TMP/out3" | grep -c '^make\.[0-9]*\.cc1\.pb\.gz$')
[ "$ncc1" = 2 ] || { ls "$TMP/out3"; fail "want a profile for each of the 2 cc1, got $ncc1"; }
ls "$TMP/out3" | grep -q '^make\.[0-9]*\.ld\.pb\.gz$' || { ls "$TMP/out3"; fail "no profile of ld"; }
nprof=$(ls "$TMP/out3" | grep -c '^make\.[0-9]*\..*\.pb\.gz$')
grep -q "wrote $nprof profiles" "$TMP/make.err" ||
	{ cat "$TMP/make.err"; fail "the summary does not count the $nprof profiles written"; }
for f in "$TMP/out3"/make.*.*.pb.gz; do
	go tool pprof -top "$f" >"$TMP/top.txt" 2>&1 || { cat "$TMP/top.txt"; fail "go tool pprof cannot read $f"; }
done
go tool pprof -sample_index=alloc_space -top "$(ls "$TMP/out3"/make.*.cc1.pb.gz | head -n 1)" >"$TMP/cc1.top" 2>&1
grep -q "xmalloc\|ggc_\|obstack\|_obstack" "$TMP/cc1.top" ||
	{ head -20 "$TMP/cc1.top"; check_failed "cc1's profile names none of its allocators' callers"; }

# --- shells that start ls (stock): dash with vfork (ls alone is followed),
# bash with fork then exec (the forked image is followed until it execs,
# then ls in a profile of its own)
mkdir -p "$TMP/out4" "$TMP/out4b"
timeout 60 "$TRACER" --follow-children --rate 1 -o "$TMP/out4/sh.pb.gz" -- sh -c 'ls / >/dev/null; ls /usr >/dev/null' \
	2>"$TMP/sh.err" || { cat "$TMP/sh.err"; fail "sh under the tracer failed"; }
nls=$(ls "$TMP/out4" | grep -c '^sh\.[0-9]*\.ls\.pb\.gz$')
[ "$nls" = 2 ] || { cat "$TMP/sh.err"; ls "$TMP/out4"; fail "dash: want 2 profiles of ls, got $nls"; }
timeout 60 "$TRACER" --follow-children --rate 1 -o "$TMP/out4b/sh.pb.gz" -- bash -c 'ls / >/dev/null; ls /usr >/dev/null' \
	2>"$TMP/bash.err" || { cat "$TMP/bash.err"; fail "bash under the tracer failed"; }
nls=$(ls "$TMP/out4b" | grep -c '^sh\.[0-9]*\.ls\.pb\.gz$')
[ "$nls" = 2 ] || { cat "$TMP/bash.err"; ls "$TMP/out4b"; fail "bash: want 2 profiles of ls, got $nls"; }
grep -q "followed 4 child process images: wrote 4 profiles" "$TMP/bash.err" ||
	{ cat "$TMP/bash.err"; check_failed "bash: the summary does not say 4 images, 4 profiles"; }
for f in "$TMP/out4b"/sh.*.bash.pb.gz; do
	go tool pprof -comments "$f" 2>&1 | grep -q "exec'd another program" ||
		{ go tool pprof -comments "$f" 2>&1 | head -3; check_failed "$f: the forked shell's profile does not say it exec'd"; }
done

# --- perl forking without exec (stock)
mkdir -p "$TMP/out5"
timeout 60 "$TRACER" --follow-children --rate 65536 -o "$TMP/out5/perl.pb.gz" -- \
	perl -e 'if (my $p = fork) { waitpid($p, 0); exit($? >> 8) } my @a = map { "x" x 4000 } 1..5000; print scalar(@a), "\n"; exit 3' \
	>"$TMP/perl.out" 2>"$TMP/perl.err"
rc=$?
[ "$rc" = 3 ] || { cat "$TMP/perl.err"; fail "perl: exit $rc, want the command's 3"; }
grep -q 5000 "$TMP/perl.out" || fail "perl's child did not do its work"
pc=$(ls "$TMP/out5" | grep '^perl\.[0-9]*\.perl\.pb\.gz$' | head -n 1)
[ -n "$pc" ] || { cat "$TMP/perl.err"; ls "$TMP/out5"; fail "no profile of perl's forked child"; }
pprof_sum "$TMP/out5/$pc" >"$TMP/perl.sums" || fail "cannot read the perl child's profile"
space=$(awk '{ s += $3 } END { print s + 0 }' "$TMP/perl.sums")
[ "$space" -gt 10000000 ] || check_failed "perl's child: $space bytes allocated, want its 5000 strings of 4000 (20 MB)"

# --- forks the agent must not hurt: a child forked while another thread
# held the loader's lock goes on (the agent makes no module scan there); a
# child that closed every descriptor and opened its own where the agent's
# memfd was keeps its file (the agent closes only its own)
mkdir -p "$TMP/out6"
timeout 120 "$TRACER" --follow-children -q -o "$TMP/out6/dl.pb.gz" -- "$WORKLOADS/forkfds" dlfork 30 \
	>"$TMP/dl.out" 2>"$TMP/dl.err" ||
	{ cat "$TMP/dl.out" "$TMP/dl.err"; fail "forks beside dl_iterate_phdr: children hung"; }
grep -q "^hung 0$" "$TMP/dl.out" || fail "forks beside dl_iterate_phdr: $(cat "$TMP/dl.out")"
timeout 60 "$TRACER" --follow-children -q -o "$TMP/out6/fd.pb.gz" -- "$WORKLOADS/forkfds" fdreuse "$TMP/fd.log" \
	2>"$TMP/fd.err" || { cat "$TMP/fd.err"; fail "fdreuse under the tracer failed"; }
[ "$(cat "$TMP/fd.log")" = hello ] ||
	fail "the program's own file, at the number the memfd had, lost its write: '$(cat "$TMP/fd.log")'"
[ -s "$TMP/fd.err" ] && { cat "$TMP/fd.err"; check_failed "fdreuse: the tracer complained"; }

# --- descendants run no thread of the agent's: unshare -U (stock), which
# needs a single-threaded process, works as without the tracer
timeout 60 "$TRACER" --follow-children -q -o "$TMP/out6/un.pb.gz" -- sh -c 'unshare -U true && echo unshare-ok' \
	>"$TMP/un.out" 2>"$TMP/un.err"
grep -q unshare-ok "$TMP/un.out" || { cat "$TMP/un.err"; check_failed "unshare -U fails in a followed descendant"; }

# --- a burst of 100 background processes from bash: every one is either
# followed or counted, none is lost without a word
timeout 120 "$TRACER" --follow-children -o "$TMP/out6/burst.pb.gz" -- bash -c 'for i in $(seq 100); do /bin/true & done; wait' \
	2>"$TMP/burst.err" || { cat "$TMP/burst.err"; fail "the burst under the tracer failed"; }
f=$(sed -n 's/.*followed \([0-9]*\) child process image.*/\1/p' "$TMP/burst.err")
u=$(sed -n 's/.*: \([0-9]*\) child process.* ran with the agent and w.* not profiled.*/\1/p' "$TMP/burst.err")
g=$(sed -n 's/.*; \([0-9]*\) gone before they could be followed.*/\1/p' "$TMP/burst.err")
[ $((${f:-0} + ${u:-0} + ${g:-0})) -ge 200 ] ||
	{ cat "$TMP/burst.err"; check_failed "the burst: ${f:-0} followed, ${u:-0} counted and ${g:-0} gone, want 200 (100 bash forks, 100 true)"; }

# --- SIGTERM to the tracer while the command runs: forwarded to it, and
# its descendants are not waited for after (the signal said stop)
mkdir -p "$TMP/out7"
"$TRACER" --follow-children --rate 4096 -o "$TMP/out7/s.pb.gz" -- /usr/bin/python3 -c '
import os, sys, time
if os.fork() == 0:
    kept = [bytes(1000) for _ in range(1000)]
    open(sys.argv[1], "w").write("%d\n" % os.getpid())
    time.sleep(30)
    os._exit(0)
sys.stdout.write("started\n"); sys.stdout.flush()
time.sleep(30)' "$TMP/pychild.pid" >"$TMP/sig.out" 2>"$TMP/sig.err" &
tracer=$!
spawned="$spawned $tracer"
wait_for "$TMP/sig.out" started 20 || { cat "$TMP/sig.err"; fail "the python program did not start"; }
wait_for "$TMP/pychild.pid" '^[0-9]' 20 || fail "the python child did not start"
kill -TERM "$tracer"
for i in $(seq 100); do kill -0 "$tracer" 2>/dev/null || break; sleep 0.1; done
kill -0 "$tracer" 2>/dev/null && { cat "$TMP/sig.err"; fail "10 s after SIGTERM the tracer still waits for the descendants"; }
wait "$tracer" 2>/dev/null
pc=$(ls "$TMP/out7" | grep '^s\.[0-9]*\.python3\.pb\.gz$' | head -n 1)
[ -n "$pc" ] || { cat "$TMP/sig.err"; ls "$TMP/out7"; check_failed "no profile of the python child left running"; }
[ -z "$pc" ] || go tool pprof -comments "$TMP/out7/$pc" 2>&1 | grep -q "was left running" ||
	{ go tool pprof -comments "$TMP/out7/$pc" 2>&1 | head -3; check_failed "the python child's profile does not say it was left running"; }
kill "$(cat "$TMP/pychild.pid")" 2>/dev/null

# --- a hand-over from a process that is no descendant (any local process
# can write to the session's socket) is ignored, with a word
mkdir -p "$TMP/out8"
"$TRACER" --follow-children -o "$TMP/out8/f.pb.gz" -- sleep $((3 * ${TIME_SCALE:-1})) \
	2>"$TMP/forge.err" &
tracer=$!
spawned="$spawned $tracer"
sp=""
for i in $(seq 100); do
	sp=$(pgrep -P "$tracer" -x sleep) && break
	sleep 0.05
done
[ -n "$sp" ] || fail "the sleep under the tracer did not start"
wait_for "/proc/$sp/environ" PPROF_ALLOC_SESSION 10 || fail "no session in the program's environment"
session=$(tr '\0' '\n' <"/proc/$sp/environ" | sed -n 's/^PPROF_ALLOC_SESSION=@//p')
python3 - "$session" <<'PY' || fail "cannot send a forged hand-over"
import os, socket, struct, sys
fd = os.memfd_create("pprof-alloc")
note = struct.pack("<Q16s", 0x776c6f6663617070, b"forged")
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendmsg([note], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", fd))],
           0, "\0" + sys.argv[1])
# alive while the tracer looks at it (a sender gone by then is counted as
# gone: nothing tells whose it was)
import time
time.sleep(1)
PY
wait "$tracer"
grep -q "handed over a memfd but is no descendant of the program; ignored" "$TMP/forge.err" ||
	{ cat "$TMP/forge.err"; check_failed "a forged hand-over was not refused with a word"; }
ls "$TMP/out8" | grep -q forged && check_failed "a forged hand-over got a profile"

# --- usage errors
for args in "--pid $$" "--core /nonexistent"; do
	"$TRACER" --follow-children $args >"$TMP/u.out" 2>"$TMP/u.err"
	rc=$?
	[ "$rc" = 2 ] || fail "--follow-children $args: exit $rc, want 2"
	grep -q "follow-children" "$TMP/u.err" || fail "--follow-children $args: the message does not name the option"
done
"$TRACER" --help | grep -q -e "--follow-children" || fail "--help does not mention --follow-children"
finish
