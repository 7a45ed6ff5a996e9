#!/bin/sh
# run-readings-allocators.sh - the readings of mimalloc and tcmalloc, read
# inside the target as glibc's and jemalloc's are.
#
# tests/workloads/telemetry.c holds 64 MiB (64 blocks of 1 MiB, every page
# touched) and sleeps:
#
# 1. linked with Debian's libmimalloc (-lmimalloc): `stats --pid` names
#    mimalloc and its file; mi_process_info's committed bytes are the common
#    "mapped" and hold the 64 MiB (mimalloc commits whole 32 MiB segments
#    for blocks this size: 64..128 MiB); the table's committed row agrees
#    with them to its 3 figures, reserved is at least committed; peak_rss is
#    the kernel's VmHWM; in_use is null (mimalloc counts it per thread).
# 2. run with the user's own LD_PRELOAD=libtcmalloc.so.4 (google-perftools;
#    linked in under a sanitized tracer, which cannot run with it): the
#    agent comes first and tcmalloc after it, so tcmalloc serves malloc
#    and is asked: in_use (generic.current_allocated_bytes) 64..80 MiB,
#    mapped at least in_use, each property beside them.
# Both: text, JSON and Prometheus text (promtool check metrics); the
# PROFILE.json of the launched run has them at exit; and at --rate 1 the
# profile counts hold_block's 64 allocations exactly.
. "$(dirname "$0")/lib.sh"
need python3 pgrep cc go

MiB=1048576
TC=/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4
need promtool
need /usr/include/mimalloc.h /usr/lib/x86_64-linux-gnu/libmimalloc.so "$TC" \
	/usr/lib/x86_64-linux-gnu/libtcmalloc.so
cc -O1 -g -fno-omit-frame-pointer -o "$TMP/telemetry-mi" \
	"$TOP/tests/workloads/telemetry.c" -lmimalloc ||
	fail "cannot build the workload against mimalloc"
W="$WORKLOADS/telemetry"
# The user's LD_PRELOAD reaches the tracer too, which a sanitized tracer
# cannot run with (ASan's allocator and tcmalloc both want its malloc):
# there the program links tcmalloc instead, and the plain build runs the
# LD_PRELOAD case.
if ldd "$TRACER" | grep -q libasan; then
	note "sanitized tracer: tcmalloc linked into the program, not preloaded"
	cc -O1 -g -fno-omit-frame-pointer -o "$TMP/telemetry-tc" \
		"$TOP/tests/workloads/telemetry.c" -ltcmalloc ||
		fail "cannot build the workload against tcmalloc"
	TCW="$TMP/telemetry-tc" TC_ENV= TC_PRELOAD="$AGENT"
else
	TCW="$W" TC_ENV="LD_PRELOAD=$TC" TC_PRELOAD="$AGENT:$TC"
fi

json() {	# FILE EXPR: python3 expression over d (the parsed file)
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}
between() {	# WHAT VALUE MIN MAX
	if python3 -c "import sys; v=float(sys.argv[1]); sys.exit(not (float(sys.argv[2]) <= v <= float(sys.argv[3])))" "$2" "$3" "$4" 2>/dev/null; then
		note "$1: $2 (in $3..$4)"
	else
		check_failed "$1 is $2, want $3..$4"
	fi
}
is_true() {	# WHAT FILE EXPR
	_v=$(json "$2" "$3" 2>&1)
	[ "$_v" = True ] && note "$1" || check_failed "$1: not so ($3 is $_v)"
}
# prom FILE WHAT: promtool accepts FILE
prom() {
	promtool check metrics <"$1" >"$1.check" 2>&1 ||
		{ cat "$1.check"; check_failed "$2: promtool check metrics refuses it"; }
}
# the pid of the workload named $2 whose parent is $1
child_of() {
	pgrep -P "$1" -x "$2" | head -n 1
}
# read_all PID NAME: stats --pid as s-NAME.txt, .json and .prom, the
# Prometheus text checked by promtool
read_all() {
	"$TRACER" stats --pid "$1" >"$TMP/s-$2.txt" 2>&1 || check_failed "stats ($2) exited $?"
	"$TRACER" stats --pid "$1" --json >"$TMP/s-$2.json" || check_failed "stats --json ($2) failed"
	"$TRACER" stats --pid "$1" --prometheus >"$TMP/s-$2.prom" || check_failed "stats --prometheus ($2) failed"
	prom "$TMP/s-$2.prom" "stats --prometheus ($2)"
	sed -n '/allocator/,/agent/p' "$TMP/s-$2.txt"
}

# ---- 1. mimalloc, linked in
spawn "$TMP/mi.out" "$TRACER" -q -o "$TMP/mi.pb.gz" -- "$TMP/telemetry-mi" hold 64 4
mi_run=$spawned_pid
wait_for "$TMP/mi.out" '^ready$' 20 || fail "the mimalloc workload did not get ready"
mi=$(child_of "$mi_run" telemetry-mi)
[ -n "$mi" ] || fail "cannot find the mimalloc workload's pid"
read_all "$mi" mi
grep -q "^  allocator: mimalloc (.*libmimalloc.so" "$TMP/s-mi.txt" ||
	check_failed "stats text: no mimalloc allocator line"
grep -Eq "^    mi_process_info: committed [0-9.]+ MiB" "$TMP/s-mi.txt" ||
	check_failed "stats text: no mi_process_info line"
grep -Eq "^    common: in_use -, .* mapped [0-9.]+ MiB" "$TMP/s-mi.txt" ||
	check_failed "stats text: no common line with mapped"

# check_mimalloc FILE WHAT: a reading of the workload holding its 64 MiB
check_mimalloc() {
	[ "$(json "$1" "d['allocator']['name']")" = mimalloc ] ||
		{ check_failed "$2: allocator $(json "$1" "d['allocator']")"; return; }
	commit=$(json "$1" "d['allocator']['mimalloc']['current_commit']")
	between "$2: mimalloc current_commit (64 MiB held)" "$commit" $((64 * MiB)) $((128 * MiB))
	is_true "$2: common.mapped is mi_process_info's committed bytes" "$1" \
		"d['allocator']['common']['mapped'] == $commit"
	is_true "$2: common.in_use is null" "$1" "d['allocator']['common']['in_use'] is None"
	is_true "$2: the table's committed row is mi_process_info's, to 3 figures" "$1" \
		"0.9 * $commit <= d['allocator']['mimalloc_table']['committed']['current'] <= $commit"
	is_true "$2: the table's reserved is at least its committed" "$1" \
		"d['allocator']['mimalloc_table']['reserved']['current'] >= d['allocator']['mimalloc_table']['committed']['current'] > 0"
	is_true "$2: peak_rss is the kernel's VmHWM (within 10%)" "$1" \
		"abs(d['allocator']['mimalloc']['peak_rss'] - d['process']['status']['VmHWM']) <= 0.1 * d['process']['status']['VmHWM']"
	is_true "$2: elapsed_ms, peak_commit" "$1" \
		"d['allocator']['mimalloc']['elapsed_ms'] > 0 and d['allocator']['mimalloc']['peak_commit'] >= $commit"
	is_true "$2: no glibc or jemalloc figures" "$1" \
		"'mallinfo2' not in d['allocator'] and 'jemalloc' not in d['allocator']"
}
check_mimalloc "$TMP/s-mi.json" "stats --json"
grep -q "^pprof_alloc_allocator_info{allocator=\"mimalloc\"" "$TMP/s-mi.prom" ||
	check_failed "no mimalloc allocator info in the Prometheus output"
grep -q "^pprof_alloc_mimalloc_bytes{stat=\"current_commit\"} $commit\$" "$TMP/s-mi.prom" ||
	check_failed "no pprof_alloc_mimalloc_bytes current_commit $commit"
grep -q "^pprof_alloc_allocator_bytes{stat=\"mapped\"} $commit\$" "$TMP/s-mi.prom" ||
	check_failed "no pprof_alloc_allocator_bytes mapped $commit"
grep -q '^pprof_alloc_mimalloc_table_bytes{row="reserved",column="current"} [1-9]' "$TMP/s-mi.prom" ||
	check_failed "no mimalloc table row in the Prometheus output"
wait "$mi_run" || check_failed "the mimalloc run exited $?"
[ "$(json "$TMP/mi.json" "d['end']['reading']['taken']")" = "at exit" ] ||
	check_failed "mi.json: not read at exit: $(json "$TMP/mi.json" "d['end']")"
check_mimalloc "$TMP/mi.json" "PROFILE.json"
pprof_sum "$TMP/mi.pb.gz" leaf >"$TMP/mi.sum"
grep -q '^# allocator mimalloc: in use -, free -, mapped [0-9.]* MiB' "$TMP/mi.sum" ||
	check_failed "the profile's comments have no mimalloc line"

# ---- 2. tcmalloc, preloaded by the user
spawn "$TMP/tc.out" env $TC_ENV "$TRACER" -q -o "$TMP/tc.pb.gz" -- "$TCW" hold 64 4
tc_run=$spawned_pid
wait_for "$TMP/tc.out" '^ready$' 20 || fail "the tcmalloc workload did not get ready"
tc=$(child_of "$tc_run" "$(basename "$TCW")")
[ -n "$tc" ] || fail "cannot find the tcmalloc workload's pid"
preload=$(tr '\0' '\n' </proc/"$tc"/environ | sed -n 's/^LD_PRELOAD=//p')
[ "$preload" = "$TC_PRELOAD" ] ||
	check_failed "the workload's LD_PRELOAD is '$preload', want '$TC_PRELOAD' (the agent first)"
grep -q "libtcmalloc.so.4" /proc/"$tc"/maps || check_failed "tcmalloc is not loaded in the workload"
read_all "$tc" tc
grep -q "^  allocator: tcmalloc (.*/libtcmalloc.so.4)" "$TMP/s-tc.txt" ||
	check_failed "stats text: no tcmalloc allocator line"
grep -Eq "^    generic.current_allocated_bytes +6[4-9]\.[0-9] MiB" "$TMP/s-tc.txt" ||
	check_failed "stats text: no current_allocated_bytes of 64..70 MiB"
grep -Eq "^    common: in_use 6[4-9]\.[0-9] MiB, free [0-9.]+ [KM]iB" "$TMP/s-tc.txt" ||
	check_failed "stats text: no common line with in_use and free"

# check_tcmalloc FILE WHAT
check_tcmalloc() {
	[ "$(json "$1" "d['allocator']['name']")" = tcmalloc ] ||
		{ check_failed "$2: allocator $(json "$1" "d['allocator']")"; return; }
	inuse=$(json "$1" "d['allocator']['common']['in_use']")
	between "$2: tcmalloc in_use (64 MiB held)" "$inuse" $((64 * MiB)) $((80 * MiB))
	is_true "$2: in_use is generic.current_allocated_bytes" "$1" \
		"d['allocator']['tcmalloc']['generic.current_allocated_bytes'] == $inuse"
	is_true "$2: mapped (heap_size less unmapped) holds in_use and free" "$1" \
		"d['allocator']['common']['mapped'] >= $inuse + d['allocator']['common']['free'] - 1048576"
	is_true "$2: retained is pageheap_unmapped_bytes" "$1" \
		"d['allocator']['common']['retained'] == d['allocator']['tcmalloc']['tcmalloc.pageheap_unmapped_bytes']"
	is_true "$2: metadata, and every property asked answered" "$1" \
		"d['allocator']['common']['metadata'] > 0 and None not in d['allocator']['tcmalloc'].values() and len(d['allocator']['tcmalloc']) == 10"
	is_true "$2: RSS holds in_use" "$1" "d['process']['status']['VmRSS'] >= $inuse"
}
check_tcmalloc "$TMP/s-tc.json" "stats --json"
grep -q "^pprof_alloc_allocator_bytes{stat=\"in_use\"} $inuse\$" "$TMP/s-tc.prom" ||
	check_failed "no pprof_alloc_allocator_bytes in_use $inuse"
grep -q "^pprof_alloc_tcmalloc_bytes{property=\"generic.heap_size\"} [1-9]" "$TMP/s-tc.prom" ||
	check_failed "no tcmalloc generic.heap_size in the Prometheus output"
wait "$tc_run" || check_failed "the tcmalloc run exited $?"
[ "$(json "$TMP/tc.json" "d['end']['reading']['taken']")" = "at exit" ] ||
	check_failed "tc.json: not read at exit: $(json "$TMP/tc.json" "d['end']")"
check_tcmalloc "$TMP/tc.json" "PROFILE.json"
pprof_sum "$TMP/tc.pb.gz" leaf >"$TMP/tc.sum"
grep -q '^# allocator tcmalloc: in use 6[4-9]\.[0-9] MiB' "$TMP/tc.sum" ||
	check_failed "the profile's comments have no tcmalloc line"
# which allocator serves malloc, and which calls are seen: one line
grep -q '^# allocator: tcmalloc (.*libtcmalloc[^,]*, a shared library) serves malloc; the agent sees every call to the malloc family' "$TMP/tc.sum" ||
	check_failed "the profile's comments do not say tcmalloc serves malloc: $(grep '^# allocator:' "$TMP/tc.sum")"
[ "$(json "$TMP/tc.json" "d['allocator']['in_program']")" = False ] ||
	check_failed "tc.json: tcmalloc said to be linked into the program"
pprof_sum "$TMP/mi.pb.gz" leaf >"$TMP/mi.sum"
grep -q '^# allocator: mimalloc (.*libmimalloc[^,]*, a shared library) serves malloc' "$TMP/mi.sum" ||
	check_failed "the profile's comments do not say mimalloc serves malloc: $(grep '^# allocator:' "$TMP/mi.sum")"

# ---- exact (--rate 1): every allocation tcmalloc and mimalloc serve is seen
env $TC_ENV "$TRACER" -q --rate 1 -o "$TMP/tc1.pb.gz" -- "$TCW" hold 64 0 >/dev/null ||
	check_failed "the tcmalloc --rate 1 run failed"
pprof_sum "$TMP/tc1.pb.gz" leaf >"$TMP/tc1.sum"
check_site "$TMP/tc1.sum" hold_block 64 $((64 * MiB)) 64 $((64 * MiB))
"$TRACER" -q --rate 1 -o "$TMP/mi1.pb.gz" -- "$TMP/telemetry-mi" hold 64 0 >/dev/null ||
	check_failed "the mimalloc --rate 1 run failed"
pprof_sum "$TMP/mi1.pb.gz" leaf >"$TMP/mi1.sum"
check_site "$TMP/mi1.sum" hold_block 64 $((64 * MiB)) 64 $((64 * MiB))
finish
