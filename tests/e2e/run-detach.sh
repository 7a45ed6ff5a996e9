#!/bin/sh
# run-detach.sh - what an attach and detach leave in a process: exactly
# what the README says, and nothing more on a second attach.
#
# On a multi-threaded service (tests/workloads/service) and on nginx's
# master as it runs (root, one worker dropping to www-data), the test
# takes /proc/PID/maps (permissions and file of each line), the threads
# (their names) and the descriptors (their targets) before an attach, after
# a detach, and after a second attach and detach.  After the first: every
# line of before is still there; the only new file mapped is the agent;
# one new shared mapping, the agent's memfd; at most two new anonymous
# executable pages (the call stub, the entry page); one new thread, named
# pprof-alloc; one new descriptor, the memfd.  After the second: the same
# as after the first (everything reused, nothing added).  The process then
# still serves (nginx answers) and the profile was written each time.
. "$TOP/tests/e2e/lib.sh"
need nginx python3 curl

na=
trap '[ -n "$na" ] && [ -s "$na/nginx.pid" ] && kill -9 "$(cat "$na/nginx.pid" 2>/dev/null)" 2>/dev/null; kill -9 $svc 2>/dev/null; rm -rf "$TMP"' EXIT

# snap PID NAME: the process's maps, threads and descriptors into $TMP/NAME.*
snap() {
	awk '{ print $2, ($6 == "" ? "[anon]" : $6) }' "/proc/$1/maps" | sort >"$TMP/$2.maps"
	cat /proc/"$1"/task/*/comm | sort >"$TMP/$2.threads"
	for f in /proc/"$1"/fd/*; do readlink "$f"; done | sed 's/[0-9][0-9]*/N/g' | sort >"$TMP/$2.fds"
}

# added A B KIND: the lines of B's KIND not in A's (a multiset difference)
added() {
	python3 -c '
import collections, sys
a = collections.Counter(open(sys.argv[1]).read().splitlines())
b = collections.Counter(open(sys.argv[2]).read().splitlines())
for line, n in sorted((b - a).items()):
    for _ in range(n):
        print(line)
if a - b:
    print("REMOVED: %r" % sorted((a - b).elements()))' "$TMP/$1.$3" "$TMP/$2.$3"
}

# check_footprint WHO: before -> once -> twice, as the header says
check_footprint() {
	extra=$(added before once maps)
	note "$1: maps +$(echo "$extra" | grep -c .): $(echo "$extra" | tr '\n' ';')"
	echo "$extra" | grep -q REMOVED && check_failed "$1: a mapping went: $extra"
	other=$(echo "$extra" | grep -v "libpprof-alloc\.so$" | grep -v "^rw-s /memfd:pprof-alloc" |
		grep -v "\[anon\]$" | grep .)
	[ -z "$other" ] || check_failed "$1: mapped besides the agent: $other"
	[ "$(echo "$extra" | grep -c "^rw-s /memfd:pprof-alloc")" = 1 ] ||
		check_failed "$1: not one memfd mapping: $extra"
	[ "$(echo "$extra" | grep -c "^r-xp \[anon\]")" -le 2 ] ||
		check_failed "$1: more than two anonymous code pages: $extra"
	t=$(added before once threads)
	[ "$t" = pprof-alloc ] || check_failed "$1: threads added: '$t', want one pprof-alloc"
	d=$(added before once fds)
	[ "$d" = "/memfd:pprof-alloc (deleted)" ] || check_failed "$1: descriptors added: '$d', want the memfd"
	for k in maps threads fds; do
		cmp -s "$TMP/once.$k" "$TMP/twice.$k" ||
			check_failed "$1: a second attach changed the $k: $(added once twice $k | tr '\n' ';')"
	done
}

# attach_detach PID OUT: one --pid run of half a second, its profile written
attach_detach() {
	"$TRACER" --pid "$1" --duration 0.5 -o "$TMP/$2.pb.gz" 2>"$TMP/$2.err" ||
		check_failed "$2: the tracer failed: $(cat "$TMP/$2.err")"
	[ -s "$TMP/$2.pb.gz" ] || check_failed "$2: no profile"
}

# --- a multi-threaded service
"$WORKLOADS/service" 60 2 >"$TMP/svc.out" 2>&1 &
svc=$!
wait_for "$TMP/svc.out" ready 10 || fail "the service did not start"
# it says ready, then starts its two workers: all three before the first look
i=0
until [ "$(ls /proc/$svc/task | wc -l)" = 3 ] || [ $i -ge 200 ]; do sleep 0.05; i=$((i + 1)); done
[ "$(ls /proc/$svc/task | wc -l)" = 3 ] || fail "the service did not start its two workers"
snap $svc before
attach_detach $svc svc1
snap $svc once
attach_detach $svc svc2
snap $svc twice
check_footprint service
kill -0 $svc || check_failed "the service died"

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
snap "$master" once
attach_detach "$master" ng2
snap "$master" twice
check_footprint nginx
[ "$(curl -s "http://127.0.0.1:$port/")" = hi ] || check_failed "nginx does not answer after the detaches"
kill -QUIT "$master"
finish
