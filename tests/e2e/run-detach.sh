#!/bin/sh
# run-detach.sh - a detach leaves the process as it was (issue 33, 3).
#
# Each case takes /proc/PID/maps (permissions and file of each line), the
# threads (their names) and the descriptors (their targets) before an
# attach, after its detach, and after a second attach and detach:
#
#   service   tests/workloads/service, four threads allocating all along:
#             the agent injected is unloaded each time ("unloaded the
#             agent"), and all three are the same - nothing of the agent,
#             its memfd, its thread or the tracer's code page is left.
#   nginx     nginx's master as it runs (root, one worker dropping to
#             www-data): the same; then a reload (SIGHUP) makes it fork a
#             new worker - glibc calls every atfork handler there, and the
#             agent's are gone with it - and it still answers.
#   preload   the service started with LD_PRELOAD of the agent and no
#             tracer: the library and its memfd are there before and stay,
#             as docs/attach.md says; the attach adds nothing that
#             outlives its detach (no stats thread, no code page), and says
#             nothing of unloading.
#   copy      tests/workloads/attach-idle keeps malloc's address, read from
#             its GOT while attached (the agent's hook): unloading is not
#             safe, and one line says the agent stays loaded and why.  It
#             is off all the same: no memfd, no thread, no descriptor, no
#             code page; only the library's own mappings stay.  Calls
#             through the address kept pass through; a second attach
#             records (a fresh memfd) and leaves the same; the program's
#             blocks are intact at the end.
#   green     the same program waits as a green thread, on a coroutine's
#             stack in a mapping whose first page is the green thread's
#             record, where it keeps malloc's address: below a thread's
#             stack pointer, in its mapping, but no stack of its own (no
#             guard below it): a copy, and the agent stays.
#   inside    tests/workloads/hook-stuck parks a thread in a signal handler
#             that interrupted it inside the agent's code: every check
#             finds it there, the agent stays loaded, one line says which
#             thread; released, the thread returns through the agent's
#             code and runs on.  The next attach and detach unload it, and
#             the process is as it was before the first.
. "$(dirname "$0")/lib.sh"
need nginx python3 curl go
attach_init

na=
trap '[ -n "$na" ] && [ -s "$na/nginx.pid" ] && kill -9 "$(cat "$na/nginx.pid" 2>/dev/null)" 2>/dev/null; attach_cleanup' EXIT

# snap PID NAME: the process's maps, threads and descriptors into $TMP/NAME.*
# The maps leave glibc's arena heaps out (anonymous mappings that cover
# exactly one 64 MiB-aligned 64 MiB window), counted in NAME.heaps: a
# thread that never allocated gets one at its first malloc - which may be
# the dlopen a tracer made on it, if it was the one borrowed.
snap() {
	python3 - "/proc/$1/maps" "$TMP/$2" <<'PY'
import sys
H = 64 << 20
ents = []
for line in open(sys.argv[1]):
    f = line.split()
    lo, hi = (int(x, 16) for x in f[0].split("-"))
    ents.append((lo, hi, f[1], f[5] if len(f) > 5 else "[anon]"))
heap, i = set(), 0
while i < len(ents):
    lo = ents[i][0]
    j, end = i, lo
    while (lo % H == 0 and j < len(ents) and ents[j][3] == "[anon]" and
           ents[j][0] == end and ents[j][1] <= lo + H):
        end = ents[j][1]
        j += 1
    if j > i and end == lo + H:
        heap.update(range(i, j))
        i = j
    else:
        i += 1
with open(sys.argv[2] + ".maps", "w") as out:
    out.writelines(sorted("%s %s\n" % (e[2], e[3]) for k, e in enumerate(ents)
                          if k not in heap))
with open(sys.argv[2] + ".heaps", "w") as out:
    out.write("%d\n" % sum(1 for k in heap if ents[k][2] == "rw-p"))
PY
	cat /proc/"$1"/task/*/comm | sort >"$TMP/$2.threads"
	for f in /proc/"$1"/fd/*; do readlink "$f"; done | sed 's/[0-9][0-9]*/N/g' | sort >"$TMP/$2.fds"
}

# threads PID N: the service says ready, then starts its workers; wait for
# all N threads before the first look
threads() {
	_n=0
	until [ "$(ls /proc/$1/task | wc -l)" -ge $2 ] || [ $_n -ge 200 ]; do
		sleep 0.05
		_n=$((_n + 1))
	done
	[ "$(ls /proc/$1/task | wc -l)" -ge $2 ] || fail "process $1 did not start its $2 threads"
}

# settle PID: wait until the program's own mappings stop changing (a
# service's threads make their malloc arenas at their first allocations,
# after it says ready): two looks 200 ms apart agree, for at most 10 s
settle() {
	_n=0
	snap "$1" settle.a
	while [ $_n -lt 50 ]; do
		sleep 0.2
		snap "$1" settle.b
		cmp -s "$TMP/settle.a.maps" "$TMP/settle.b.maps" && return 0
		mv "$TMP/settle.b.maps" "$TMP/settle.a.maps"
		_n=$((_n + 1))
	done
	fail "process $1's mappings did not settle in 10 s"
}

# diff_of A B KIND: "+line" for each line of B's KIND not in A's, "-line"
# for each of A's not in B's (multisets)
diff_of() {
	python3 -c '
import collections, sys
a = collections.Counter(open(sys.argv[1]).read().splitlines())
b = collections.Counter(open(sys.argv[2]).read().splitlines())
for sign, d in (("+", b - a), ("-", a - b)):
    for line in sorted(d.elements()):
        print(sign + line)' "$TMP/$1.$3" "$TMP/$2.$3"
}

# check_same WHO A B: maps, threads and descriptors are the same
check_same() {
	[ "$(cat "$TMP/$2.heaps")" = "$(cat "$TMP/$3.heaps")" ] ||
		note "$1: glibc's arena heaps went from $(cat "$TMP/$2.heaps") to $(cat "$TMP/$3.heaps") (a borrowed thread's first malloc)"
	for k in maps threads fds; do
		d=$(diff_of "$2" "$3" $k)
		[ -z "$d" ] || check_failed "$1: the $k changed from $2 to $3: $(echo "$d" | tr '\n' ';')"
	done
}

# attach_detach PID OUT: one --pid run of half a second, its profile written
attach_detach() {
	timeout 60 "$TRACER" --pid "$1" --duration 0.5 -o "$TMP/$2.pb.gz" 2>"$TMP/$2.err" ||
		check_failed "$2: the tracer failed: $(cat "$TMP/$2.err")"
	sed "s/^/    $2: /" "$TMP/$2.err" | grep -v 'ELF symbols only'
	[ -s "$TMP/$2.pb.gz" ] || check_failed "$2: no profile"
}

# unloaded OUT PID: the tracer said it unloaded the agent, and it is gone
unloaded() {
	grep -q "unloaded the agent from process $2 " "$TMP/$1.err" ||
		check_failed "$1: the agent was not unloaded: $(grep 'stays loaded' "$TMP/$1.err")"
	agent_mapped "$2" && check_failed "$1: the agent is still mapped: $(grep -E 'libpprof-alloc|memfd:pprof-alloc' "/proc/$2/maps" | tr '\n' ';')"
	# (the agent's name, not the tree's: a checkout may be called pprof-alloc)
	grep -Eq 'r-xp.*(libpprof-alloc|memfd:pprof-alloc)' "/proc/$2/maps" && check_failed "$1: agent code left mapped"
	return 0
}

# --- service: a multi-threaded program allocating all along
# (it lives 60 s, longer on a slower machine, where the test takes longer)
spawn "$TMP/svc.out" "$WORKLOADS/service" $((60 * TIME_SCALE)) 4
svc=$spawned_pid
wait_for "$TMP/svc.out" ready 10 || fail "the service did not start"
threads $svc 5
settle $svc
snap $svc before
attach_detach $svc svc1
unloaded svc1 $svc
snap $svc once
attach_detach $svc svc2
grep -q "^pprof-alloc: attached to process $svc" "$TMP/svc2.err" ||
	check_failed "svc2: the agent was not injected afresh"
unloaded svc2 $svc
snap $svc twice
check_same service before once
check_same service before twice
running $svc || fail "the service died"
pprof_sum "$TMP/svc2.pb.gz" leaf >"$TMP/svc2.txt"
[ "$(value site_cache 1 <"$TMP/svc2.txt")" -gt 0 ] ||
	check_failed "svc2: the service's allocations were not recorded"

# --- preload: the same service, with the agent preloaded (no tracer)
spawn "$TMP/pre.out" env LD_PRELOAD="$AGENT" "$WORKLOADS/service" $((60 * TIME_SCALE)) 2
pre=$spawned_pid
wait_for "$TMP/pre.out" ready 10 || fail "the preloaded service did not start"
agent_mapped $pre || fail "the preloaded service has no agent mapped"
threads $pre 3
settle $pre
snap $pre before
attach_detach $pre pre1
snap $pre once
attach_detach $pre pre2
snap $pre twice
grep -E 'unloaded the agent|stays loaded' "$TMP/pre1.err" "$TMP/pre2.err" &&
	check_failed "preload: a preloaded agent is no tracer's to unload"
check_same preload before once
check_same preload before twice
running $pre || fail "the preloaded service died"

# --- nginx's master, as it runs
na="$TMP/na"
mkdir -p "$na/logs"
chmod 755 "$TMP" "$na"
port=$(free_port)
cat >"$na/nginx.conf" <<EOF
user www-data;
worker_processes 1;
error_log $na/logs/error.log;
pid $na/nginx.pid;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path $na/body;
	proxy_temp_path $na/proxy;
	fastcgi_temp_path $na/fcgi;
	uwsgi_temp_path $na/uwsgi;
	scgi_temp_path $na/scgi;
	server { listen 127.0.0.1:$port; location / { return 200 "hi\n"; } }
}
EOF
nginx -p "$na" -c "$na/nginx.conf" -g 'daemon off;' >"$na/out" 2>&1 &
wait_port "$port" || { cat "$na/out"; fail "nginx did not listen on $port"; }
i=0
until [ -s "$na/nginx.pid" ] || [ $i -ge 100 ]; do sleep 0.05; i=$((i + 1)); done
master=$(cat "$na/nginx.pid")
[ -n "$master" ] || fail "no nginx master pid"
snap "$master" before
attach_detach "$master" ng1
unloaded ng1 "$master"
snap "$master" once
attach_detach "$master" ng2
unloaded ng2 "$master"
snap "$master" twice
check_same nginx before once
check_same nginx before twice
[ "$(curl -s "http://127.0.0.1:$port/")" = hi ] || check_failed "nginx does not answer after the detaches"
# a reload forks a new worker from the master the agent left
old=$(pgrep -P "$master" | sort | tr '\n' ' ')
kill -HUP "$master"
i=0
until new=$(pgrep -P "$master" | sort | tr '\n' ' ') && [ -n "$new" ] && [ "$new" != "$old" ] ||
	[ $i -ge 200 ]; do sleep 0.05; i=$((i + 1)); done
[ "$new" != "$old" ] || check_failed "nginx's master forked no new worker on reload ($old)"
running "$master" || fail "nginx's master died on reload, after the agent was unloaded"
[ "$(curl -s "http://127.0.0.1:$port/")" = hi ] || check_failed "nginx does not answer after the reload"
kill -QUIT "$master"

# --- copy: the program keeps a hook's address
mkfifo "$TMP/c.cmd" || fail "mkfifo"
spawn "$TMP/c.out" "$WORKLOADS/attach-idle" poll "$TMP/c.cmd"
c=$spawned_pid
wait_for "$TMP/c.out" '^attach-idle poll: ready' 10 || fail "attach-idle did not start"
# cmd STRING DONE: have attach-idle carry STRING out
cmd() {
	printf "$1" >"$TMP/c.cmd"
	wait_for "$TMP/c.out" "^done $2\$" 10 || fail "attach-idle did not carry out '$1'"
}
snap $c before
for round in 1 2; do
	attach_bg $c "$TMP/c$round.pb.gz" "$TMP/c$round.err" --rate 1
	if [ $round = 1 ]; then
		cmd p 1		# malloc's address, the hook's now
		cmd a 2
	else
		cmd a 4
	fi
	stop_tracer
	sed "s/^/    c$round: /" "$TMP/c$round.err" | grep -v 'ELF symbols only'
	[ "$tracer_rc" = 0 ] || check_failed "copy $round: the tracer exited $tracer_rc"
	grep -q "the agent stays loaded in process $c, turned off (no thread, no memfd; its hooks pass every call through): the program keeps the address of one of the agent's functions" "$TMP/c$round.err" ||
		check_failed "copy $round: no line says the agent stays loaded, and why"
	snap $c after$round
	d=$(diff_of before after$round maps | grep -v '^+.* .*/libpprof-alloc\.so$' | grep -v '^+rw-p \[anon\]$')
	[ -z "$d" ] || check_failed "copy $round: mapped besides the library: $(echo "$d" | tr '\n' ';')"
	[ "$(diff_of before after$round maps | grep -c '^+rw-p \[anon\]$')" -le 1 ] ||
		check_failed "copy $round: more than the library's .bss anonymous"
	grep -q 'libpprof-alloc' "$TMP/after$round.maps" || check_failed "copy $round: the agent was unloaded"
	for k in threads fds; do
		d=$(diff_of before after$round $k)
		[ -z "$d" ] || check_failed "copy $round: the $k changed: $(echo "$d" | tr '\n' ';')"
	done
	pprof_sum "$TMP/c$round.pb.gz" leaf >"$TMP/c$round.txt"
	[ "$(value tick_keep 1 <"$TMP/c$round.txt")" = 1 ] ||
		check_failed "copy $round: tick_keep not recorded once: $(cat "$TMP/c$round.txt")"
	cmd c $((round * 2 + 1))	# through the hook kept: passed through
done
check_same copy after1 after2
printf q >"$TMP/c.cmd"
reap $c 10
[ "$reaped_rc" = 0 ] && grep -q 'check ok' "$TMP/c.out" ||
	check_failed "attach-idle failed: $(tail -n 1 "$TMP/c.out")"

# --- green: the copy is in the heap, below a thread's stack pointer (it
# runs on a coroutine's stack cut out of the heap): no dead stack
mkfifo "$TMP/g.cmd" || fail "mkfifo"
spawn "$TMP/g.out" "$WORKLOADS/attach-idle" poll "$TMP/g.cmd"
g=$spawned_pid
wait_for "$TMP/g.out" '^attach-idle poll: ready' 10 || fail "attach-idle did not start"
printf G >"$TMP/g.cmd"
wait_for "$TMP/g.out" '^done 1$' 10 || fail "attach-idle did not carry out 'G'"
attach_bg $g "$TMP/g.pb.gz" "$TMP/g.err" --rate 1
printf P >"$TMP/g.cmd"
wait_for "$TMP/g.out" '^done 2$' 10 || fail "attach-idle did not carry out 'P'"
stop_tracer
sed "s/^/    green: /" "$TMP/g.err" | grep -v 'ELF symbols only'
[ "$tracer_rc" = 0 ] || check_failed "green: the tracer exited $tracer_rc"
rec=$(sed -n 's/^record 0x//p' "$TMP/g.out")
grep -q "the agent stays loaded in process $g, turned off (no thread, no memfd; its hooks pass every call through): the program keeps the address of one of the agent's functions (at 0x$rec)" "$TMP/g.err" ||
	check_failed "green: no line says the agent stays loaded for the copy in the green thread's record"
printf c >"$TMP/g.cmd"		# through the hook kept: passed through
wait_for "$TMP/g.out" '^done 3$' 10 || check_failed "green: the call through the address kept did not return"
printf q >"$TMP/g.cmd"
reap $g 10
[ "$reaped_rc" = 0 ] && grep -q 'check ok' "$TMP/g.out" ||
	check_failed "green: attach-idle failed (status $reaped_rc): $(tail -n 1 "$TMP/g.out")"

# --- inside: a thread stays inside the agent's code
mkfifo "$TMP/h.cmd" || fail "mkfifo"
spawn "$TMP/h.out" "$WORKLOADS/hook-stuck" "$TMP/h.cmd"
h=$spawned_pid
wait_for "$TMP/h.out" '^hook-stuck: ready' 10 || fail "hook-stuck did not start"
settle $h
snap $h before
attach_bg $h "$TMP/h1.pb.gz" "$TMP/h1.err" --rate 1
printf k >"$TMP/h.cmd"
wait_for "$TMP/h.out" '^parked$' 20 || fail "hook-stuck's thread was never interrupted inside the agent"
stop_tracer
sed "s/^/    h1: /" "$TMP/h1.err" | grep -v 'ELF symbols only'
[ "$tracer_rc" = 0 ] || check_failed "inside: the tracer exited $tracer_rc"
grep -Eq "the agent stays loaded in process $h, turned off \(no thread, no memfd; its hooks pass every call through\): thread [0-9]+'s (stack holds|[a-z0-9]+ holds) 0x[0-9a-f]+.*, in the agent's code" "$TMP/h1.err" ||
	check_failed "inside: no line says the agent stays loaded because a thread is inside it"
grep -q 'r-xp.*libpprof-alloc' "/proc/$h/maps" || fail "inside: the agent was unloaded under a thread inside it"
grep -q 'memfd:pprof-alloc' "/proc/$h/maps" "/proc/$h/fd" 2>/dev/null &&
	check_failed "inside: the agent kept its memfd"
printf r >"$TMP/h.cmd"
wait_for "$TMP/h.out" '^released$' 10 || fail "hook-stuck's thread did not come back"
running $h || fail "hook-stuck died when its thread came back out of the agent"
attach_detach $h h2
unloaded h2 $h
snap $h after
check_same inside before after
printf q >"$TMP/h.cmd"
reap $h 10
[ "$reaped_rc" = 0 ] && grep -q '^hook-stuck: ok' "$TMP/h.out" ||
	check_failed "hook-stuck failed: $(tail -n 1 "$TMP/h.out")"
finish
