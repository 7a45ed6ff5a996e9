#!/bin/sh
# run-old-glibc.sh - the agent on glibc 2.31 (Debian 11), where libdl.so.2,
# libpthread.so.0 and libm.so.6 still hold dlsym, pthread_create and log,
# none of which the agent may need there (docs/design.md "The glibc
# baseline").  A Debian 11 root (mmdebstrap minbase with libc6-dev, cached
# as a tarball in $FRESH_CACHE, build/fresh, for a week, as
# tests/check-fresh.sh caches its Debian 12 root) runs
# tests/workloads/glibc-sites.c built here against its glibc twice: as is
# (no libpthread.so.0 in the process) and with threads (libpthread.so.0
# needed).  Each in a container of its own (tests/tools/ctr-run), four
# ways:
#   - `--pid --rate 1` injects the agent (the tracer's dlopen is then
#     libc's __libc_dlopen_mode: neither program loads libdl);
#   - the agent preloaded inside (LD_PRELOAD, PPROF_ALLOC_RATE=1), `--pid`
#     connects;
# and in each a round of work is recorded exactly (work_keep, work_churn),
# the program checks what it kept and exits 0.  Without libpthread the
# attach says the agent made no stats thread, and why; with it, glibc's
# statistics are read by a thread made with libpthread's pthread_create.
# Slow the first time (mmdebstrap: about 2 minutes), a few seconds after.
# plain build only: it tests the agent on another glibc; the tracer's side is the suite's
. "$(dirname "$0")/../e2e/lib.sh"
need mmdebstrap tar gcc readelf go
attach_init
readable_build

CACHE=${FRESH_CACHE:-$TOP/build/fresh}
MIRROR=${FRESH_MIRROR:-http://deb.debian.org/debian}
TARBALL=$CACHE/debian11-minbase-libc6-dev.tar
N=2000

mkdir -p "$CACHE" || fail "cannot make $CACHE"
if [ -z "$(find "$TARBALL" -mtime -7 2>/dev/null)" ]; then
	note "mmdebstrap bullseye (minbase, libc6-dev) into $TARBALL"
	rm -f "$TARBALL.new"
	mmdebstrap --variant=minbase --include=libc6-dev --format=tar bullseye \
		"$TARBALL.new" "deb $MIRROR bullseye main" >"$TMP/mmdebstrap.log" 2>&1 ||
		{ tail -20 "$TMP/mmdebstrap.log"; rm -f "$TARBALL.new"; fail "mmdebstrap bullseye failed"; }
	mv "$TARBALL.new" "$TARBALL" || fail "cannot keep $TARBALL"
fi
chmod 755 "$TMP"	# the container's root, host uid 100000, goes through it
R="$TMP/root"
mkdir "$R" && tar -C "$R" -xf "$TARBALL" || fail "cannot unpack $TARBALL"
LIBC=$(ls "$R"/lib/x86_64-linux-gnu/libc-2.*.so 2>/dev/null)
[ "$(basename "$LIBC")" = libc-2.31.so ] || fail "the root's glibc is '$LIBC', not 2.31"
# the loader's link is absolute (/lib/...), which the host's linker would
# follow out of the root: relative, the same inside
ld=$(readlink "$R/lib64/ld-linux-x86-64.so.2") && ln -sfn "..$ld" "$R/lib64/ld-linux-x86-64.so.2" ||
	fail "no loader link in the root"

# build against the root's glibc: its start files and libraries first
cc_old() {
	gcc --sysroot="$R" -B"$R/usr/lib/x86_64-linux-gnu" -L"$R/usr/lib/x86_64-linux-gnu" \
		-L"$R/lib/x86_64-linux-gnu" -std=gnu11 -O1 -g -fno-omit-frame-pointer \
		-Wall -Wextra -Werror "$@" || fail "cannot build against the root's glibc: gcc $*"
}
mkdir -p "$R/app" "$R/opt/pprof" && cp "$AGENT" "$R/opt/pprof/libpprof-alloc.so" ||
	fail "cannot put the agent into the root"
cc_old "$TOP/tests/workloads/glibc-sites.c" -o "$R/app/single"
cc_old -DWITH_THREADS -D_REENTRANT "$TOP/tests/workloads/glibc-sites.c" \
	"$R/lib/x86_64-linux-gnu/libpthread.so.0" -o "$R/app/threads"
readelf -d "$R/app/single" | grep -q 'NEEDED.*libpthread' && fail "single needs libpthread"
readelf -d "$R/app/threads" | grep -q 'NEEDED.*libpthread' || fail "threads does not need libpthread"
readelf -V "$R/app/threads" | grep -q 'GLIBC_2\.3[2-9]' && fail "threads needs a glibc newer than the root's"

# run PROG HOW: PROG in a container, the agent injected (attach) or
# preloaded (preload), one round recorded exactly, then its own check
run() {
	_p=$1 _how=$2 _name=$1-$2
	note "$_name"
	rm -f "$R/cmd" && mkfifo "$R/cmd" && chmod 666 "$R/cmd" || fail "mkfifo"
	set -- /app/"$_p" /cmd $N
	[ "$_how" = attach ] ||
		set -- /usr/bin/env LD_PRELOAD=/opt/pprof/libpprof-alloc.so PPROF_ALLOC_RATE=1 "$@"
	spawn "$TMP/$_name.out" "$CTR" --uid 100000 "$R" "$@"
	_ctr=$spawned_pid
	wait_for "$TMP/$_name.out" '^glibc-sites: ready' 20 ||
		fail "$_name did not start: $(cat "$TMP/$_name.out.err")"
	_pid=$(sed -n 's/^hostpid //p' "$TMP/$_name.out")
	if [ "$_how" = preload ]; then
		grep -q /opt/pprof/libpprof-alloc.so "/proc/$_pid/maps" ||
			fail "$_name: the agent is not loaded: $(cat "$TMP/$_name.out.err")"
		attach_bg "$_pid" "$TMP/$_name.pb.gz" "$TMP/$_name.err"
	else
		attach_bg "$_pid" "$TMP/$_name.pb.gz" "$TMP/$_name.err" --rate 1
	fi
	send "$R/cmd" w
	wait_for "$TMP/$_name.out" '^work done 1$' 30 || fail "$_name: the round did not finish"
	stop_tracer
	sed 's/^/    tracer: /' "$TMP/$_name.err"
	[ "$tracer_rc" = 0 ] || check_failed "$_name: the tracer exited $tracer_rc"
	if grep -q 'libpthread-2.31.so' "/proc/$_pid/maps"; then _lp=1; else _lp=0; fi
	[ "$_lp" = "$([ "$_p" = threads ] && echo 1 || echo 0)" ] ||
		check_failed "$_name: libpthread mapped: $_lp (the agent must not bring it)"
	grep -q 'libdl-2.31.so\|libm-2.31.so' "/proc/$_pid/maps" &&
		check_failed "$_name: libdl or libm is mapped: the agent brought them"
	pprof_sum "$TMP/$_name.pb.gz" leaf >"$TMP/$_name.sum"
	check_no_loss "$TMP/$_name.sum"
	check_site "$TMP/$_name.sum" work_keep $N $((N * 256)) $N $((N * 256))
	check_site "$TMP/$_name.sum" work_churn $N $((N * 48)) 0 0
	if [ "$_how" = attach ]; then
		if [ "$_p" = threads ]; then
			grep -q "allocator: glibc" "$TMP/$_name.err" ||
				check_failed "$_name: the stats thread did not name the allocator"
		else
			grep -q "no pthread_create" "$TMP/$_name.err" ||
				check_failed "$_name: the tracer does not say why the agent has no stats thread"
		fi
	fi
	send "$R/cmd" q
	reap "$_ctr" 30
	cat "$TMP/$_name.out"
	[ "$reaped_rc" = 0 ] && grep -qx 'glibc-sites: 1 rounds, check ok' "$TMP/$_name.out" ||
		check_failed "$_name: the program did not end well ($reaped_rc)"
}

for prog in single threads; do
	for how in attach preload; do
		run $prog $how
	done
done
finish
