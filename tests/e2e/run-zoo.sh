#!/bin/sh
# run-zoo.sh - daemons as they really run, stock Debian binaries, measured
# as the zoo asks (zoo_check in lib.sh: >= 95% of the bytes on whole
# stacks, the allocating function named where the file has symbols, no
# unnamed frame in a file with symbols):
# - nginx, as root, with two workers that drop to www-data: a worker
#   attached to by root; then nginx launched with --follow-children: a
#   profile per worker, unwound by the agent's tables (none falls back to
#   a stack copy), its readings not blaming a signal for a worker that
#   exited normally;
# - redis-server started through chroot --userspec, which drops to the
#   redis user and execs it: the launch follows the exec.  (Not setpriv
#   --reuid: it changes ids and capabilities thread by thread, and glibc
#   aborts it over the agent's stats thread; docs/design.md.)
# The whole zoo (node, the JVM, PostgreSQL...) is tests/long/run-zoo.sh.
. "$(dirname "$0")/lib.sh"
need nginx redis-server redis-cli chroot python3 go readelf
attach_init
# a launched nginx is the tracer's child: a tracer killed by the cleanup
# leaves it
trap 'for d in ng na; do [ -s "$TMP/$d/nginx.pid" ] && kill -9 "$(cat "$TMP/$d/nginx.pid")" 2>/dev/null; done; attach_cleanup' EXIT
readable_build	# workers and redis run as other users

# http_load PORT N: N requests on one keep-alive connection
http_load() {
	python3 -c '
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
for i in range(int(sys.argv[2])):
    c.request("GET", "/x%d?%s" % (i, "q" * (i % 2000)))
    r = c.getresponse(); r.read()
    if r.status != 200:
        sys.exit("status %d" % r.status)' "$1" "$2"
}

# nginx_conf DIR PORT WORKERS: a configuration for an nginx kept in DIR
nginx_conf() {
	mkdir -p "$1/logs"
	chmod 755 "$1"
	cat >"$1/nginx.conf" <<EOF
user www-data;
worker_processes $3;
error_log $1/logs/error.log;
pid $1/nginx.pid;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path $1/body;
	proxy_temp_path $1/proxy;
	fastcgi_temp_path $1/fcgi;
	uwsgi_temp_path $1/uwsgi;
	scgi_temp_path $1/scgi;
	server { listen 127.0.0.1:$2; location / { return 200 "hi\n"; } }
}
EOF
}

# --- nginx as it runs: a worker (www-data) attached to by root
na=$TMP/na
port=$(free_port)
nginx_conf "$na" "$port" 1	# the load on one connection: one worker
nginx -p "$na" -c "$na/nginx.conf" -g 'daemon off;' >"$na/out" 2>&1 &
spawned="$spawned $!"
wait_port "$port" || { cat "$na/out"; fail "nginx did not listen on $port"; }
# nginx listens before it forks its worker, which then drops to www-data
n=0
worker=
while [ -z "$worker" ] && [ $n -lt 200 ]; do
	[ -s "$na/nginx.pid" ] &&
		worker=$(pgrep -u www-data -P "$(cat "$na/nginx.pid")" | head -1)
	[ -n "$worker" ] || sleep 0.05
	n=$((n + 1))
done
[ -n "$worker" ] || fail "no nginx worker running as www-data"
http_load "$port" 100000 >/dev/null 2>&1 &
load=$!
timeout 60 "$TRACER" --pid "$worker" --rate 4096 --duration 2 -o "$TMP/worker.pb.gz" \
	2>"$TMP/worker.err"
rc=$?
kill "$load" 2>/dev/null
wait "$load" 2>/dev/null
sed 's/^/    stderr: /' "$TMP/worker.err"
[ $rc = 0 ] || check_failed "attach to an nginx worker: exit $rc"
[ -s "$TMP/worker.pb.gz" ] && zoo_check "$TMP/worker.pb.gz" nginx-worker attach
kill -QUIT "$(cat "$na/nginx.pid")"

# --- nginx launched, its workers followed
ng=$TMP/ng
port=$(free_port)
nginx_conf "$ng" "$port" 2
mkdir -p "$ng/out"
chmod 755 "$ng/out"
"$TRACER" --follow-children --rate 4096 -o "$ng/out/ng.pb.gz" -- \
	nginx -p "$ng" -c "$ng/nginx.conf" -g 'daemon off;' \
	>"$ng/tracer.out" 2>"$ng/tracer.err" &
tracer=$!
spawned="$spawned $tracer"
wait_port "$port" || { cat "$ng/tracer.err"; fail "nginx did not listen on $port"; }
http_load "$port" 1000 || check_failed "nginx's answers"
kill -TERM "$tracer"
wait "$tracer" || check_failed "the nginx run's status: $?"
sed 's/^/    stderr: /' "$ng/tracer.err"
n=0
for f in "$ng"/out/ng.*.nginx.pb.gz; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	zoo_check "$f" "nginx-worker-$n" launch-follow
	go tool pprof -comments "$f" 2>/dev/null | grep "^unwind auto" >"$TMP/unwind.txt"
	grep -q " 0 samples with a stack copy" "$TMP/unwind.txt" &&
		! grep -q "unwind tables: 0 modules" "$TMP/unwind.txt" ||
		{ cat "$TMP/unwind.txt"; check_failed "$f: a worker's samples were not unwound by the agent's tables"; }
	json=${f%.pb.gz}.json
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["end"]["reading"]
sys.exit(0 if r and r.get("held_at_exit") is False else 1)' "$json" ||
		check_failed "$json: a followed worker's reading does not say it was not held at exit"
done
[ "$n" -ge 1 ] || { ls "$ng/out"; check_failed "no worker profile"; }

# --- redis-server, started through chroot --userspec (root -> redis),
# then exec'd
rport=$(free_port)
mkdir -p "$TMP/redis"
chmod 777 "$TMP/redis"
"$TRACER" --rate 65536 -o "$TMP/redis/redis.pb.gz" -- \
	chroot --userspec=redis:redis / \
	redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
	--dir "$TMP/redis" >"$TMP/redis.out" 2>"$TMP/redis.err" &
tracer=$!
spawned="$spawned $tracer"
wait_port "$rport" || { cat "$TMP/redis.err"; fail "redis did not listen on $rport"; }
python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
f = s.makefile("rb")
for i in range(5000):
    v = b"v" * (100 + i % 4000)
    s.sendall(b"*3\r\n$3\r\nSET\r\n$%d\r\nk%d\r\n$%d\r\n%s\r\n" %
              (len(b"k%d" % i), i, len(v), v))
    if f.readline() != b"+OK\r\n":
        sys.exit("not stored")' "$rport" || check_failed "redis SETs"
redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1
wait "$tracer" || check_failed "the redis run's status: $?"
sed 's/^/    stderr: /' "$TMP/redis.err"
grep -q "exec'd 1 time: chroot (/usr/sbin/chroot) -> redis-server" "$TMP/redis.err" ||
	check_failed "the redis run does not name chroot's exec"
zoo_check "$TMP/redis/redis.pb.gz" redis-server launch-exec
finish
