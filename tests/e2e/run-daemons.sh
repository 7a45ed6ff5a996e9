#!/bin/sh
# A daemon that starts as root and drops to another user, as daemons
# really run, can be attached to by root: stock memcached -u nobody
# (after its setuid it is not dumpable, so /proc/PID/root is closed to
# its own user; the agent's readability is asked from a descriptor of
# that root opened before the check drops to the daemon's credentials).
# While a client stores values of 10-20 KB, the attached profile has
# samples, >= 95% of their bytes on stacks that reach a thread's entry
# or _start, and memcached's allocating functions named where memcached
# has a symbol table (Debian's has none).  The refusal
# itself stays for what really fails: run-attach-refuse.
. "$(dirname "$0")/lib.sh"
need memcached readelf python3 go
attach_init
readable_build	# (the agent must be readable by nobody, as installed)

port=$(free_port)
cd "$TMP" || fail "cannot cd $TMP"
spawn "$TMP/mc.out" memcached -u nobody -l 127.0.0.1 -p "$port" -U 0 -m 2048 -t 2
mc=$spawned_pid
wait_port "$port" || fail "memcached did not answer on port $port"
grep -q '^Uid:[[:space:]]*65534' /proc/$mc/status || fail "memcached does not run as nobody"

# the client: a steady stream of sets of new keys until told to stop
# (memcached mallocs only while it fills its slabs: keys that repeat
# would stop that once they all fit)
python3 -c '
import os, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
f = s.makefile("rb")
i = 0
while not os.path.exists(sys.argv[2]) and i < 100000:
    v = b"x" * (10000 + (i % 10) * 1000)
    s.sendall(b"set k%d 0 0 %d\r\n%s\r\n" % (i, len(v), v))
    if f.readline() != b"STORED\r\n":
        sys.exit("not stored")
    if i == 0:
        print("setting", flush=True)
    i += 1
print("sets", i)' "$port" "$TMP/stop" >"$TMP/client.out" 2>&1 &
client=$!
# attached once the sets flow, for 2 s (more on a slower machine)
wait_for "$TMP/client.out" '^setting' $((10 * TIME_SCALE)) ||
	fail "the client made no set: $(cat "$TMP/client.out")"
timeout $((60 * TIME_SCALE)) "$TRACER" --pid "$mc" --duration $((2 * TIME_SCALE)) \
	-o "$TMP/mc.pb.gz" 2>"$TMP/attach.err"
rc=$?
touch "$TMP/stop"
wait $client || check_failed "the client failed: $(cat "$TMP/client.out")"
note "client: $(cat "$TMP/client.out")"
sed 's/^/    stderr: /' "$TMP/attach.err"
[ $rc = 0 ] || fail "attach to memcached -u nobody: exit $rc"
grep -q 'not readable' "$TMP/attach.err" && check_failed "refused as unreadable"
# Debian strips memcached of its symbol table (its debug symbols are not
# in the archive): its own functions can only be "??" then
syms=yes
readelf -SW "$(command -v memcached)" | grep -q ' \.symtab ' ||
	{ syms=no; note "memcached has no symbol table: its frames are unnamed"; }
go tool pprof -raw "$TMP/mc.pb.gz" 2>/dev/null |
	python3 "$TOP/tests/e2e/pprof_sum.py" stacks | grep -v '^#' >"$TMP/mc.stacks"
python3 -c '
import sys
sys.path.insert(0, sys.argv[3])
from zoo_check import whole_stack
total = whole = 0
leaf = {}
for line in open(sys.argv[1]):
    a, _, fs = line.rstrip("\n").split(" ", 2)
    frames = fs.split(";")
    total += int(a)
    if whole_stack(frames):
        whole += int(a)
    leaf[frames[0]] = leaf.get(frames[0], 0) + int(a)
top = sorted(leaf, key=leaf.get, reverse=True)[:3]
print(f"--- memcached -u nobody: {whole} of {total} allocated bytes on whole stacks; top leaves {top}")
ok = total > 0 and whole * 100 >= total * 95
if not ok:
    print("FAIL: no samples, or under 95% of the bytes on whole stacks")
if sys.argv[2] == "yes" and (not top or top[0] == "??"):
    print("FAIL: the top allocating function is not named"); ok = False
sys.exit(0 if ok else 1)' "$TMP/mc.stacks" "$syms" "$TOP/tests/e2e" ||
	check_failed "memcached's profile: see above"
kill "$mc"
wait_gone "$mc" 10 || kill -9 "$mc"
finish
