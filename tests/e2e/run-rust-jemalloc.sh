#!/bin/sh
# run-rust-jemalloc.sh - a Rust program whose global allocator is jemalloc
# linked into the executable (tests/workloads/rust-jemalloc, built offline
# from Debian's crates by tests/tools/build-rust-jemalloc.sh: static, its
# entry points prefixed _rjem_; glibc's malloc untouched) is profiled
# exactly at --rate 1 at its known sites: run under the tracer from its
# start, and attached to with --pid while it waits (then what it allocated
# before the attach never shows).  The same program on Rust's default
# allocator (glibc's malloc) is profiled first, the same way from its
# start: it checks the checks, so that a failure of the jemalloc runs is
# the linked-in allocator's.
#
# The jemalloc is Debian's prebuilt one, its symbols renamed to the _rjem_
# names; with RUST_JEMALLOC_FROM_SOURCE=1 (tests/long/, `make check-long`)
# it is jemalloc-sys's bundled copy compiled from C, as jemallocator and
# tikv-jemallocator build it.  The program is built once for the plain and
# the sanitized suites (it does not depend on how the tracer was built), in
# build/rust-jemalloc or build/rust-jemalloc-from-source, under a lock; a
# build that changes nothing leaves the programs (which the other suite
# may be running) in place.
# plain build only: the entry hooks are the agent's; the tracer's entry patching runs sanitized in run-linked-alloc
. "$(dirname "$0")/lib.sh"
need go python3
attach_init

OUT=$TOP/build/rust-jemalloc FROM=
[ "${RUST_JEMALLOC_FROM_SOURCE:-0}" = 1 ] && OUT=$OUT-from-source FROM=--from-source
mkdir -p "$TOP/build" || fail "cannot make $TOP/build"
exec 8>"$OUT.lock"
flock -w 900 8 || fail "cannot take the lock of $OUT in 900 s"
start=$(date +%s)
sh "$TOP/tests/tools/build-rust-jemalloc.sh" $FROM "$OUT" || fail "cannot build the Rust program"
note "built the Rust programs${FROM:+ ($FROM)} in $(($(date +%s) - start)) s"
exec 8>&-
JE=$OUT/rust-jemalloc SYS=$OUT/rust-system

# The jemalloc is linked in, prefixed, and is no shared library: what the
# allocator calls is the executable's own.
nm "$JE" >"$TMP/je.nm" || fail "nm $JE"
for f in malloc calloc realloc mallocx rallocx sdallocx; do
	grep -q " T _rjem_$f\$" "$TMP/je.nm" || fail "$JE does not define _rjem_$f"
done
grep -q ' T malloc$' "$TMP/je.nm" && fail "$JE defines malloc: its jemalloc is not prefixed"
ldd "$JE" | grep -q jemalloc && fail "$JE loads a shared jemalloc: $(ldd "$JE" | grep jemalloc)"

# sums RAW-PROFILE OUT: pprof_sum cum, the functions named without their
# crate (rust_jemalloc::site_vec: site_vec; a hash after it, which
# demanglers other than libiberty's leave, dropped too)
sums() {
	pprof_sum "$1" cum |
		sed 's/^rust_jemalloc::\([a-z_]*\)\(::h[0-9a-f]\{16\}\)\{0,1\} /\1 /' >"$2"
	grep -v '^#' "$2" | grep -E '^(site_|free_|work )' | sed 's/^/    /'
}

# check_sites SUMS: the formulas of the workload's header comment, but
# site_pre's
check_sites() {
	check_site "$1" site_vec 1000 $((1000 * 65536)) 1000 $((1000 * 65536))
	check_site "$1" site_box 5000 $((5000 * 1024)) 0 0
	check_site "$1" site_zeroed 200 $((200 * 10000)) 100 $((100 * 10000))
	check_site "$1" site_grow $((50 * 6)) $((50 * (16 + 100 + 1000 + 10000 + 40000 + 20000))) \
		50 $((50 * 20000))
	check_site "$1" site_aligned 64 $((64 * 4096)) 64 $((64 * 4096))
	check_site "$1" site_aligned_zeroed 64 $((64 * 8192)) 0 0
	check_site "$1" site_aligned_grow $((16 * 2)) $((16 * (2 + 8) * 4096)) 16 $((16 * 8 * 4096))
	check_absent "$1" free_pre
	check_absent "$1" free_boxes
}

# from_start NAME PROGRAM: profiled from its start at --rate 1; the same
# output as a bare run, and every site exact, site_pre's blocks freed
from_start() {
	note "$1: from its start"
	run_bare "$TMP/$1.bare" "$2"
	[ "$bare_rc" = 0 ] || fail "$1: the bare run exited $bare_rc: $(cat "$TMP/$1.bare.err")"
	grep -qx 'rust-jemalloc: check ok' "$TMP/$1.bare" || fail "$1: the bare run's check failed"
	trace "$TMP/$1.out" "$TMP/$1.pb.gz" --rate 1 -- "$2"
	[ "$trace_rc" = 0 ] || fail "$1: the traced run exited $trace_rc, want 0"
	same_output "$TMP/$1.bare" "$TMP/$1.out"
	sums "$TMP/$1.pb.gz" "$TMP/$1.sums"
	check_no_loss "$TMP/$1.sums"
	check_sites "$TMP/$1.sums"
	check_site "$TMP/$1.sums" site_pre 100 $((100 * 333)) 0 0
}

from_start system "$SYS"
[ "$failures" = 0 ] || fail "the program on glibc's malloc is not profiled exactly: the checks or the tracer are wrong, not the jemalloc hooks"

from_start jemalloc "$JE"
# every _rjem_ function of the malloc family the program has (6 when
# jemalloc-sys builds it, its linker dropping the unused; 12 from Debian's
# whole library), hooked at its entry, and said so
FNS= N=0
for f in malloc free calloc realloc posix_memalign aligned_alloc memalign valloc pvalloc mallocx rallocx sdallocx dallocx; do
	grep -q " T _rjem_$f\$" "$TMP/je.nm" || continue
	FNS="${FNS:+$FNS, }_rjem_$f" N=$((N + 1))
done
HOOKED="hooked at their entry: $N of $N functions ($FNS)"
grep -qF "$HOOKED" "$TMP/jemalloc.out.err" ||
	check_failed "from its start: the tracer did not say: $HOOKED"
grep -q "allocator: glibc (.*) serves malloc; the agent sees the program's own allocator through $N functions hooked at their entries" "$TMP/jemalloc.out.err" ||
	check_failed "from its start: the one-line diagnosis does not say glibc serves malloc and $N functions are hooked"

note "jemalloc: attached with --pid"
mkfifo "$TMP/cmd" || fail "mkfifo"
spawn "$TMP/target.out" "$JE" "$TMP/cmd"
target=$spawned_pid
wait_for "$TMP/target.out" '^rust-jemalloc: ready' 10 ||
	fail "the Rust program did not start: $(cat "$TMP/target.out.err")"
code_bytes "$target" "$JE" >"$TMP/code.before"
attach_bg "$target" "$TMP/attach.pb.gz" "$TMP/tracer.err" --rate 1
grep -qF "$HOOKED" "$TMP/tracer.err" ||
	check_failed "attached: the tracer did not say: $HOOKED"
code_bytes "$target" "$JE" >"$TMP/code.during"
cmp -s "$TMP/code.before" "$TMP/code.during" &&
	check_failed "attached: no _rjem_ function's code changed"
send "$TMP/cmd" w
wait_for "$TMP/target.out" '^work done$' 30 || fail "the Rust program's work did not finish"
stop_tracer
sed 's/^/    tracer: /' "$TMP/tracer.err"
[ "$tracer_rc" = 0 ] || check_failed "the tracer exited $tracer_rc after SIGTERM, want 0"
running "$target" || fail "the Rust program died with the tracer"
code_bytes "$target" "$JE" >"$TMP/code.after"
cmp -s "$TMP/code.before" "$TMP/code.after" ||
	check_failed "detached: the _rjem_ functions' bytes are not the original ones: $(diff "$TMP/code.before" "$TMP/code.after")"
send "$TMP/cmd" q
reap "$target" 30
[ "$reaped_rc" = 0 ] || check_failed "the Rust program exited $reaped_rc after the detach, want 0"
grep -qx 'rust-jemalloc: check ok' "$TMP/target.out" ||
	check_failed "the Rust program's data was not intact after the detach"
sums "$TMP/attach.pb.gz" "$TMP/attach.sums"
check_no_loss "$TMP/attach.sums"
check_no_negative "$TMP/raw.txt"
check_sites "$TMP/attach.sums"
# made before the attach, freed while attached: never shows
check_absent "$TMP/attach.sums" site_pre
finish
