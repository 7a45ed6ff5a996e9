#!/bin/sh
# run-zoo.sh - the slower half of the zoo: stock programs no one here
# wrote, as people run them, each measured by zoo_check (lib.sh: >= 95% of
# the bytes on stacks that reach main or a thread's entry, the allocating
# function named where the file has symbols, no unnamed frame in a file
# with symbols).  The quick half runs in `make test`: node (run-start),
# memcached -u nobody (run-daemons), nginx's workers and redis through
# setpriv (run-zoo), a pyenv-style shim chain (run-exec), Rust in both
# manglings (run-demangle), a -no-pie C++ program taking &malloc
# (run-start), gcore's cores (run-core-gcore) and a container of what ldd
# lists (run-container-ldd).  Here:
# - the JVM (Debian's openjdk 17), launched, compressing with
#   java.util.zip (native zlib allocations below JIT-compiled Java);
# - a PostgreSQL 15 backend, attached to by root while it sorts (it runs
#   as postgres, forked by the postmaster);
# - Debian's python3 behind a two-level pyenv-style shim chain.
# Each prints its row of the table: program, path, whole-stack share,
# biggest leaf, unnamed frames.
. "$(dirname "$0")/../e2e/lib.sh"
need java javac psql readelf python3 go runuser
attach_init
readable_build

PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$PGBIN/postgres" ] || fail "no PostgreSQL server under /usr/lib/postgresql (package postgresql)"

# --- the JVM
mkdir -p "$TMP/jvm"
cat >"$TMP/jvm/Z.java" <<'EOF'
import java.util.zip.Deflater;
public class Z {
    public static void main(String[] a) throws Exception {
        int n = Integer.parseInt(a[0]);
        byte[] in = new byte[65536], out = new byte[131072];
        for (int i = 0; i < in.length; i++) in[i] = (byte) (i * 31 % 251);
        long total = 0;
        for (int i = 0; i < n; i++) {
            Deflater d = new Deflater(Deflater.BEST_SPEED);
            d.setInput(in);
            d.finish();
            total += d.deflate(out);
            d.end();
        }
        System.out.println("deflated " + total);
    }
}
EOF
javac -d "$TMP/jvm" "$TMP/jvm/Z.java" || fail "javac failed"
"$TRACER" -o "$TMP/jvm/java.pb.gz" -- java -cp "$TMP/jvm" Z 3000 \
	>"$TMP/jvm/out" 2>"$TMP/jvm/err" || { cat "$TMP/jvm/err"; check_failed "java: exit $?"; }
grep -q '^deflated ' "$TMP/jvm/out" || check_failed "the Java program did not finish"
zoo_check "$TMP/jvm/java.pb.gz" "jvm java.util.zip" launch deflateInit2_

# --- a PostgreSQL backend
pg=$TMP/pg
mkdir -p "$pg"
chown postgres: "$pg"
runuser -u postgres -- "$PGBIN/initdb" -A trust -D "$pg/data" >"$TMP/initdb.out" 2>&1 ||
	{ cat "$TMP/initdb.out"; fail "initdb failed"; }
runuser -u postgres -- "$PGBIN/postgres" -D "$pg/data" -k "$pg" -c listen_addresses= \
	-c shared_buffers=16MB >"$TMP/pg.out" 2>&1 &
spawned="$spawned $!"
n=0
until psql -h "$pg" -U postgres -d postgres -Atc 'select 1' >/dev/null 2>&1; do
	n=$((n + 1))
	[ $n -lt 300 ] || { cat "$TMP/pg.out"; fail "PostgreSQL did not start"; }
	sleep 0.1
done
# one session: says its backend's pid, then sorts, again and again, until
# told to stop (a file), in memory that work_mem lets it take from malloc
mkfifo "$TMP/pg.in"
psql -h "$pg" -U postgres -d postgres -Atq <"$TMP/pg.in" >"$TMP/pg.session" 2>&1 &
client=$!
spawned="$spawned $client"
exec 7>"$TMP/pg.in"
echo "set work_mem = '64MB'; select pg_backend_pid();" >&7
n=0
until [ -s "$TMP/pg.session" ]; do
	n=$((n + 1)); [ $n -lt 300 ] || fail "no backend pid from psql"; sleep 0.1
done
backend=$(head -1 "$TMP/pg.session")
[ "$(stat -c %U /proc/"$backend")" = postgres ] || fail "backend $backend does not run as postgres"
# queries until the attach is over (the pipe's room paces the writer)
(
	i=0
	while [ ! -e "$TMP/pg.stop" ]; do
		echo "select count(distinct md5(g::text || '$i')) from generate_series(1, 20000) g;"
		i=$((i + 1))
	done
) >&7 &
writer=$!
timeout 60 "$TRACER" --pid "$backend" --rate 65536 --duration 3 -o "$TMP/pg.pb.gz" \
	2>"$TMP/pg.err" || { cat "$TMP/pg.err"; check_failed "attach to a PostgreSQL backend: exit $?"; }
touch "$TMP/pg.stop"
kill "$client" 2>/dev/null	# what it has queued is not wanted
wait "$writer" 2>/dev/null
exec 7>&-
wait "$client" 2>/dev/null
zoo_check "$TMP/pg.pb.gz" "postgres backend" attach
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$pg/data" stop -m fast >/dev/null 2>&1

# --- python3 behind a pyenv-style shim chain (#!/usr/bin/env bash, exec)
mkdir -p "$TMP/py/shims" "$TMP/py/libexec"
cat >"$TMP/py/shims/python3" <<EOF
#!/usr/bin/env bash
set -e
program="\${0##*/}"
exec "$TMP/py/libexec/pyenv" exec "\$program" "\$@"
EOF
cat >"$TMP/py/libexec/pyenv" <<'EOF'
#!/usr/bin/env bash
set -e
shift
program="$1"; shift
exec "/usr/bin/$program" "$@"
EOF
chmod +x "$TMP/py/shims/python3" "$TMP/py/libexec/pyenv"
cat >"$TMP/py/alloc.py" <<'EOF'
import zlib
keep = [bytearray(50000) for _ in range(2000)]
print(len(keep), len(zlib.compress(b"x" * 10000000)))
EOF
# python's import machinery is deeper than 64 C frames: 128 keep it whole
"$TRACER" --max-frames 128 -o "$TMP/py/py.pb.gz" -- "$TMP/py/shims/python3" "$TMP/py/alloc.py" \
	>/dev/null 2>"$TMP/py/err" || { cat "$TMP/py/err"; check_failed "python3 through the shims: exit $?"; }
grep -q "exec'd .*-> python3 (/usr/bin/python3" "$TMP/py/err" ||
	{ cat "$TMP/py/err"; check_failed "the shim chain was not followed to python3"; }
zoo_check "$TMP/py/py.pb.gz" "python3 (pyenv-style shims)" launch-exec
finish
