#!/bin/sh
# run-core-gcore.sh - a heap profile from a core that gdb's gcore wrote.
#
# gcore (gdb 13) dumps a live process without the file mappings it can
# read again: no executable segment is in the core, so nothing in the
# core's own program headers says where code was, and its NT_FILE note
# may be missing altogether.  tests/workloads/die runs with the agent
# preloaded and no tracer (--rate 1 through PPROF_ALLOC_RATE), holds its
# known blocks and waits; gcore dumps it.  From that core, and from the
# same core without its NT_FILE note (the modules then come from the
# dynamic loader's list in the core's memory): exit 0, the allocating
# functions named with their exact counts, no frame without a function,
# and at least 95% of the bytes allocated through main.
. "$(dirname "$0")/lib.sh"
need go python3 gdb
attach_init

spawn "$TMP/die.out" env LD_PRELOAD="$AGENT" PPROF_ALLOC_RATE=1 "$WORKLOADS/die" kill
pid=$spawned_pid
wait_for "$TMP/die.out" '^ready$' 20 ||
	fail "the workload did not get ready: $(cat "$TMP/die.out.err")"
gcore -o "$TMP/gcore" "$pid" >"$TMP/gcore.out" 2>&1 ||
	{ cat "$TMP/gcore.out" >&2; fail "gcore $pid failed"; }
kill -KILL "$pid"
reap "$pid" 10
core=$TMP/gcore.$pid
[ -s "$core" ] || fail "gcore wrote no $core"
note "gcore: $(stat -c %s "$core") bytes"

python3 "$TOP/tests/e2e/core_edit.py" "$core" "$TMP/gcore-no-file.core" no-file ||
	fail "cannot make the gcore core without NT_FILE"
for name in gcore gcore-no-file; do
	in=$core
	[ $name = gcore ] || in=$TMP/$name.core
	"$TRACER" --core "$in" -o "$TMP/$name.pb.gz" --no-debuginfod 2>"$TMP/$name.err"
	rc=$?
	sed 's/^/    stderr: /' "$TMP/$name.err"
	if [ $rc != 0 ]; then
		check_failed "$name: --core exited $rc"
		continue
	fi
	[ $name = gcore ] ||
		grep -q "module.* named by the dynamic loader's list" "$TMP/$name.err" ||
		check_failed "$name: the modules did not come from the loader's list"
	check_core_named "$TMP/$name.pb.gz" "$name"
	go tool pprof -raw "$TMP/$name.pb.gz" 2>/dev/null | grep -A20 '^Mappings' |
		grep -q "die .*[0-9a-f]\{40\}" ||
		check_failed "$name: the program's mapping has no build ID"
done
finish
