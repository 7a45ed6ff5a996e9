#!/bin/sh
# run-unwind.sh - whole stacks through code without frame pointers.
#
# nofp-calls (C) and nofp-cxx (C++ through libstdc++), built -O2
# -fomit-frame-pointer, profiled with --unwind fp, dwarf and auto: fp loses
# the callers (so the difference is real), dwarf and auto give each stack
# from the allocation site to _start, the outermost frame - dwarf from stack
# copies the tracer unwinds, auto from the agent's own unwind tables,
# without a copy.  A small
# --stack-bytes cuts the stacks, marked [truncated].  auto copies nothing
# for a program built with frame pointers.  Then stock Debian programs
# built without frame pointers: python3 building lists, sqlite3 filling a
# table (the default mode, auto) - their stacks reach the interpreter's
# and the shell's entry points through the distribution's libraries.  An
# attached tracer unwinds too.  python3 is also the case of a program
# without PIE that takes malloc's address (a "canonical PLT entry"): the
# agent, preloaded or attached, must forward to the real malloc.  Bad
# option values are refused.
. "$(dirname "$0")/lib.sh"
need python3

PY=/usr/bin/python3.11
SQLITE=/usr/bin/sqlite3
need go objdump objcopy readelf gcc "$PY" "$SQLITE"

# stacks FILE: one line per sample, "ALLOC INUSE F1;F2;..." (leaf first)
stacks() {
	go tool pprof -raw "$1" >"$TMP/raw.txt" 2>"$TMP/raw.err" ||
		{ cat "$TMP/raw.err" >&2; fail "go tool pprof -raw $1 failed"; }
	python3 "$TOP/tests/e2e/pprof_sum.py" stacks <"$TMP/raw.txt"
}
# bytes_where STACKS REGEX: alloc_space of the samples whose stack matches
bytes_where() {
	awk -v re="$2" '!/^#/ && $3 ~ re { s += $1 } END { print s + 0 }' "$1"
}
# unwind_line STACKS: the "unwind MODE: ..." comment
unwind_line() { sed -n 's/^# \(unwind .*\)/\1/p' "$1"; }
# copies STACKS: how many samples had a stack copy
copies() { unwind_line "$1" | sed -n 's/^unwind [a-z]*: \([0-9]*\) samples with a stack copy.*/\1/p'; }
profile() {	# NAME ARGS...: run the tracer, keep stderr, fail on error
	_n=$1; shift
	"$TRACER" -q -o "$TMP/$_n.pb.gz" "$@" >"$TMP/$_n.out" 2>"$TMP/$_n.err" ||
		{ cat "$TMP/$_n.err" >&2; fail "$_n: pprof-alloc $* failed"; }
	stacks "$TMP/$_n.pb.gz" >"$TMP/$_n.stacks"
	note "$_n: $(unwind_line "$TMP/$_n.stacks")"
}

# --- the test programs really have no frame records
NOFP="$WORKLOADS/nofp-calls"
NOFPXX="$WORKLOADS/nofp-cxx"
for f in leaf_alloc level3 level2 level1; do
	objdump -d --no-show-raw-insn "$NOFP" |
		awk -v f="<$f>:" '$2 == f { on = 1; next } on && /^$/ { exit } on' >"$TMP/$f.s"
	[ -s "$TMP/$f.s" ] || fail "no function $f in $NOFP"
	grep -q 'mov *%rsp,%rbp' "$TMP/$f.s" && fail "$f in $NOFP sets up a frame pointer"
done

# --- C: fp loses the callers, dwarf and auto do not
CHAIN='^leaf_alloc;level3;level2;level1;main;'
profile c-fp --unwind fp -- "$NOFP"
profile c-dwarf --unwind dwarf -- "$NOFP"
profile c-auto --unwind auto -- "$NOFP"
for m in fp dwarf auto; do
	total=$(bytes_where "$TMP/c-$m.stacks" '^leaf_alloc')
	full=$(bytes_where "$TMP/c-$m.stacks" "$CHAIN.*_start\$")
	note "c-$m: $full of $total sampled bytes at leaf_alloc have the whole stack"
	[ "$total" -gt 10000000 ] || check_failed "c-$m: only $total bytes sampled at leaf_alloc (400 x 64 KiB allocated)"
	case $m in
	fp)  [ "$full" = 0 ] || check_failed "c-fp: a frame-pointer walk found the whole stack: the test program has frame pointers after all" ;;
	*)   [ "$full" = "$total" ] || check_failed "c-$m: $full of $total bytes have the whole stack up to _start" ;;
	esac
done
n=$(copies "$TMP/c-dwarf.stacks")
[ -n "$n" ] && [ "$n" -gt 0 ] || check_failed "c-dwarf: no stack copies ($(unwind_line "$TMP/c-dwarf.stacks"))"
unwind_line "$TMP/c-dwarf.stacks" | grep -q ": $n samples with a stack copy: $n unwound to the outermost frame" ||
	check_failed "c-dwarf: not every copy was unwound to the outermost frame"
# auto: the agent's unwind tables took each stack to _start by themselves
n=$(copies "$TMP/c-auto.stacks")
[ "${n:-0}" = 0 ] || check_failed "c-auto: $n stack copies: the agent's tables should have unwound every sample ($(unwind_line "$TMP/c-auto.stacks"))"

# --- a copy too small for the stack: cut, and marked
profile c-small --unwind dwarf --stack-bytes 512 -- "$NOFP"
total=$(bytes_where "$TMP/c-small.stacks" '^leaf_alloc')
cut=$(bytes_where "$TMP/c-small.stacks" '^leaf_alloc;level3;level2;\[truncated\]$')
note "c-small: $cut of $total bytes end leaf_alloc;level3;level2;[truncated]"
[ "$total" -gt 0 ] && [ "$cut" = "$total" ] ||
	check_failed "c-small: a 512-byte copy (level2 keeps 4 KiB) should end every stack after level2 with [truncated]"
grep -v '^#' "$TMP/c-dwarf.stacks" | grep -q '\[truncated\]' &&
	check_failed "c-dwarf: [truncated] with the default --stack-bytes"

# --- .debug_frame: the same program built without .eh_frame for its
# functions (gcc then writes .debug_frame), and a copy without it too
gcc -std=gnu11 -O2 -g -fomit-frame-pointer -fno-asynchronous-unwind-tables \
	-fno-unwind-tables -o "$TMP/dbgframe" "$TOP/tests/workloads/nofp-calls.c" ||
	fail "cannot build nofp-calls without unwind tables"
readelf -SW "$TMP/dbgframe" | grep -q ' \.debug_frame ' || fail "no .debug_frame in $TMP/dbgframe"
objcopy --remove-section .debug_frame "$TMP/dbgframe" "$TMP/dbgframe-none"
profile c-debug-frame --unwind dwarf -- "$TMP/dbgframe"
profile c-no-frame --unwind dwarf -- "$TMP/dbgframe-none"
total=$(bytes_where "$TMP/c-debug-frame.stacks" '^leaf_alloc')
full=$(bytes_where "$TMP/c-debug-frame.stacks" "$CHAIN.*_start\$")
[ "$total" -gt 0 ] && [ "$full" = "$total" ] ||
	check_failed "c-debug-frame: $full of $total bytes unwound through .debug_frame to _start"
full=$(bytes_where "$TMP/c-no-frame.stacks" "$CHAIN")
cut=$(bytes_where "$TMP/c-no-frame.stacks" '^leaf_alloc.*\[truncated\]$')
total=$(bytes_where "$TMP/c-no-frame.stacks" '^leaf_alloc')
[ "$full" = 0 ] && [ "$cut" = "$total" ] && [ "$total" -gt 0 ] ||
	check_failed "c-no-frame: without any CFI the stacks should end [truncated] ($cut of $total), with no whole stack ($full)"
# ... and with auto, the agent's tables give out at once: it counts every
# sample of leaf_alloc as fallen back to frame pointers; also when the
# program has no .eh_frame_hdr at all, so that no table is ever built
gcc -std=gnu11 -O2 -g -fomit-frame-pointer -fno-asynchronous-unwind-tables \
	-fno-unwind-tables -Wl,--no-eh-frame-hdr -o "$TMP/no-hdr" \
	"$TOP/tests/workloads/nofp-calls.c" || fail "cannot build nofp-calls without .eh_frame_hdr"
readelf -lW "$TMP/no-hdr" | grep -q GNU_EH_FRAME && fail "$TMP/no-hdr has a PT_GNU_EH_FRAME"
for p in dbgframe-none no-hdr; do
	profile "c-$p-auto" --unwind auto -- "$TMP/$p"
	fell=$(sed -n 's/^# unwind auto: .* \([0-9]*\) of \([0-9]*\) samples fell back to frame pointers$/\1 \2/p' \
		"$TMP/c-$p-auto.stacks")
	note "c-$p-auto: fell back, of the samples: ${fell:-no count}"
	set -- $fell
	[ $# = 2 ] && [ "$2" -gt 0 ] && [ $(($1 * 100)) -ge $(($2 * 90)) ] ||
		check_failed "c-$p-auto: '${fell:-no count}': want (nearly) every sample counted as fallen back"
done

# --- C++ through libstdc++ (operator new, std::string, std::vector)
profile cxx-fp --unwind fp -- "$NOFPXX"
profile cxx-dwarf --unwind dwarf -- "$NOFPXX"
# (operator new[] tail-calls operator new: its frame is gone, rightly)
STR='^_Znwm;.*_ZNSt7__cxx1112basic_string.*;_Z12make_stringsB5cxx11i;_Z11grow_vectori;main;'
ARR='^_Znwm;_Z9new_arrayi;main;'
WHOLE=';main;__libc_start_call_main;__libc_start_main_impl;_start$'
for m in fp dwarf; do
	s=$(bytes_where "$TMP/cxx-$m.stacks" "$STR")
	a=$(bytes_where "$TMP/cxx-$m.stacks" "$ARR")
	w=$(bytes_where "$TMP/cxx-$m.stacks" "$WHOLE")
	all=$(bytes_where "$TMP/cxx-$m.stacks" '.')
	note "cxx-$m: of $all bytes, $w with the whole stack; std::string in make_strings $s, new_array $a"
	if [ $m = fp ]; then
		[ $((s + a + w)) = 0 ] || check_failed "cxx-fp: whole stacks without DWARF"
	else
		[ "$s" -gt 0 ] || check_failed "cxx-dwarf: no std::string allocation in make_strings <- grow_vector <- main"
		[ "$a" -gt 0 ] || check_failed "cxx-dwarf: no operator new in new_array <- main"
		[ $((w * 100)) -ge $((all * 95)) ] ||
			check_failed "cxx-dwarf: only $w of $all bytes have whole stacks"
	fi
done

# --- auto on a program with frame pointers: no copies at all
profile fp-auto --unwind auto -- "$WORKLOADS/sites" 2 800 4
n=$(copies "$TMP/fp-auto.stacks")
[ "$n" = 0 ] || check_failed "fp-auto: $n stack copies for a program built with frame pointers"

# ... nor for threads with a lot of static TLS (glibc puts it between the
# thread's TCB and its first frame, where the walk looks for the top)
cat >"$TMP/tls.c" <<'EOF'
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
static __thread char big[65536];
static void *volatile sink;
__attribute__((noinline)) static void work(void)
{
	for (int i = 0; i < 20000; i++) {
		void *p = malloc(1000);
		big[i % sizeof(big)] = 1;
		sink = p;
		free(p);
	}
}
static void *fn(void *a) { (void)a; work(); return NULL; }
int main(void)
{
	pthread_t t[2];
	for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, fn, NULL);
	for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
	work();
	return write(1, "ok\n", 3) != 3;
}
EOF
gcc -O2 -fno-omit-frame-pointer -pthread -o "$TMP/tls" "$TMP/tls.c" || fail "cannot build the TLS test program"
profile fp-tls --rate 4096 -- "$TMP/tls"
n=$(copies "$TMP/fp-tls.stacks")
samples=$(sed -n 's/^# sampling rate .* \([0-9]*\) samples taken by the agent.*/\1/p' "$TMP/fp-tls.stacks")
note "fp-tls: $n stack copies of $samples samples"
# (glibc's own allocations, as pthread_create's, are copied, rightly: a
# few of them are sampled at this rate; the program's are not)
[ "$samples" -gt 1000 ] && [ $((n * 100)) -lt "$samples" ] ||
	check_failed "fp-tls: $n stack copies of $samples samples for threads with frame pointers and 64 KiB of TLS"

# --- the tracer keeps up at the default rate on a busy program (both
# cores), with a copy in every sample
profile busy --unwind dwarf -- "$WORKLOADS/bench-mixed" 2
lost=$(sed -n 's/^# lost records \([0-9]*\) .*/\1/p' "$TMP/busy.stacks")
n=$(copies "$TMP/busy.stacks")
note "busy, default rate: $n samples unwound, $lost records lost"
[ "$lost" = 0 ] && [ "$n" -gt 50 ] ||
	check_failed "busy: $lost records lost with $n stack copies (the tracer should keep up)"

# --- stock python3: Debian builds it without frame pointers
cat >"$TMP/lists.py" <<'EOF'
def build(n):
    return [str(i) * 10 for i in range(n)]
def outer():
    keep = []
    for _ in range(20):
        keep.append(build(20000))
    return keep
print(len(outer()))
EOF
profile py-fp --unwind fp -- "$PY" "$TMP/lists.py"
profile py-dwarf --unwind dwarf -- "$PY" "$TMP/lists.py"
grep -qx 20 "$TMP/py-dwarf.out" || check_failed "python3 under the tracer printed '$(cat "$TMP/py-dwarf.out")', want 20"
for m in fp dwarf; do
	all=$(bytes_where "$TMP/py-$m.stacks" '.')
	main=$(bytes_where "$TMP/py-$m.stacks" ';Py_BytesMain;__libc_start_call_main;__libc_start_main_impl;_start$')
	note "py-$m: $main of $all bytes reach Py_BytesMain and _start"
	eval "py_${m}_all=$all py_${m}_main=$main"
done
[ "$py_dwarf_all" -gt 0 ] && [ $((py_dwarf_main * 100)) -ge $((py_dwarf_all * 95)) ] ||
	check_failed "py-dwarf: only $py_dwarf_main of $py_dwarf_all bytes reach Py_BytesMain"
[ $((py_fp_main * 100)) -lt $((py_fp_all * 50)) ] ||
	check_failed "py-fp: $py_fp_main of $py_fp_all bytes reach Py_BytesMain without DWARF: is python3 built with frame pointers?"

# --- stock sqlite3, default mode (auto): through libsqlite3 to main's caller
rm -f "$TMP/t.db"
profile sqlite --  "$SQLITE" "$TMP/t.db" \
	"create table t(a text, b int); with recursive c(x) as (select 1 union all select x + 1 from c where x < 100000) insert into t select hex(randomblob(40)), x from c; create index i on t(a); select count(*) from t;"
grep -qx 100000 "$TMP/sqlite.out" || check_failed "sqlite3 printed '$(cat "$TMP/sqlite.out")', want 100000"
all=$(bytes_where "$TMP/sqlite.stacks" '.')
deep=$(bytes_where "$TMP/sqlite.stacks" '^[^;]*;sqlite3Malloc;.*;__libc_start_call_main;__libc_start_main_impl;')
note "sqlite: $deep of $all bytes from sqlite3Malloc up to __libc_start_main"
[ "$all" -gt 0 ] && [ $((deep * 100)) -ge $((all * 90)) ] ||
	check_failed "sqlite: only $deep of $all bytes have stacks from sqlite3Malloc to __libc_start_main"
n=$(copies "$TMP/sqlite.stacks")
[ "${n:-0}" = 0 ] || check_failed "sqlite (auto): $n stack copies: the agent's tables should have unwound every sample"

# --- python3 preloaded with the agent alone, and attached to
out=$(PPROF_ALLOC_UNWIND=dwarf LD_PRELOAD="$AGENT" "$PY" -c 'print(6 * 7)' 2>&1)
[ "$out" = 42 ] || check_failed "python3 with the agent preloaded printed '$out', want 42"

"$NOFP" 100 8 >"$TMP/attach.out" 2>&1 &
tpid=$!
i=0
until grep -q ready "$TMP/attach.out" || [ $i -ge 100 ]; do sleep 0.05; i=$((i + 1)); done
profile attach --unwind dwarf --pid "$tpid" --duration 1.5
kill "$tpid" 2>/dev/null
wait "$tpid" 2>/dev/null
attached=$(bytes_where "$TMP/attach.stacks" "$CHAIN.*_start\$")
note "attach: $attached bytes with the whole stack"
[ "$attached" -gt 0 ] || check_failed "attached --unwind dwarf: no whole stack"

cat >"$TMP/loop.py" <<'EOF'
import sys, time
print("ready", flush=True)
keep = []
end = time.time() + 8
while time.time() < end:
    keep.append([str(i) for i in range(2000)])
    if len(keep) > 50:
        keep.pop(0)
    time.sleep(0.02)
print("done", flush=True)
EOF
"$PY" "$TMP/loop.py" >"$TMP/pyloop.out" 2>&1 &
ppid=$!
i=0
until grep -q ready "$TMP/pyloop.out" || [ $i -ge 100 ]; do sleep 0.05; i=$((i + 1)); done
# (an attach needs a thread waiting in a system call: python3 sleeps 90%
# of the time, and the attach is tried again if it came at a busy moment)
for i in 1 2 3; do
	"$TRACER" -q -o "$TMP/py-attach.pb.gz" --pid "$ppid" --duration 1.5 \
		>"$TMP/py-attach.out" 2>"$TMP/py-attach.err" && break
	grep -q 'waiting in a system call' "$TMP/py-attach.err" ||
		{ cat "$TMP/py-attach.err" >&2; fail "py-attach: pprof-alloc --pid $ppid failed"; }
	sleep 0.1
done
[ -s "$TMP/py-attach.pb.gz" ] || fail "py-attach: no profile: $(cat "$TMP/py-attach.err")"
stacks "$TMP/py-attach.pb.gz" >"$TMP/py-attach.stacks"
note "py-attach: $(unwind_line "$TMP/py-attach.stacks")"
wait "$ppid"
rc=$?
[ $rc = 0 ] && grep -q done "$TMP/pyloop.out" ||
	check_failed "python3 after an attach: exit $rc, output '$(cat "$TMP/pyloop.out")'"
main=$(bytes_where "$TMP/py-attach.stacks" ';Py_BytesMain;')
[ "$main" -gt 0 ] || check_failed "attached to python3 (auto): no stack reaches Py_BytesMain"

# --- bad values
expect_usage() {	# WHAT ARGS...: exit 2 and a message naming the option
	_w=$1; shift
	"$TRACER" "$@" -- true >"$TMP/u.out" 2>"$TMP/u.err"
	_rc=$?
	[ $_rc = 2 ] && grep -q -- "$_w" "$TMP/u.err" ||
		check_failed "pprof-alloc $*: exit $_rc, stderr '$(cat "$TMP/u.err")'"
}
expect_usage "--unwind" --unwind sideways
expect_usage "--stack-bytes" --stack-bytes 100
expect_usage "--stack-bytes" --stack-bytes 1001
expect_usage "does not fit" --stack-bytes 64K --ring-size 64K
"$TRACER" -q --unwind fp --stack-bytes 64K --ring-size 64K -o "$TMP/ok.pb.gz" -- true ||
	check_failed "--stack-bytes is not used with --unwind fp: it should not be refused"

finish
