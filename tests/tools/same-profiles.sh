#!/bin/bash
# same-profiles.sh OLD NEW - do two trees' tracers write the same profiles?
#
# For a refactoring that must not change behaviour: OLD and NEW are roots
# of built trees (`make` and `make test-bins` done in each; build an old
# revision with `git archive REV | tar -x -C /tmp/old`).  Both tracers
# profile the same programs - our workloads with known sites and stock
# Debian programs - at --rate 1 (every allocation: no sampling chance),
# with ASLR off (setarch -R), and read two cores written once by NEW's
# agent.  The profiles are compared as `go tool pprof -raw` prints them,
# without Time and Duration and with the numbers in comments masked (they
# hold times and measurements).  Prints SAME or DIFF per profile and a
# closing line; exits 1 on any difference or failure.
set -u
[ $# = 2 ] || { echo "usage: $0 OLD-TREE NEW-TREE" >&2; exit 2; }
OLD=$(cd "$1" && pwd) NEW=$(cd "$2" && pwd)
for t in "$OLD" "$NEW"; do
	[ -x "$t/build/pprof-alloc" ] || { echo "$t/build/pprof-alloc: not built" >&2; exit 2; }
done
command -v go >/dev/null || { echo "go is missing (go tool pprof)" >&2; exit 2; }
W=$NEW/build/tests/workloads
TMP=$(mktemp -d /tmp/same-profiles.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export PYTHONHASHSEED=0

# run TREE NAME ARGS...: NAME.pb.gz in TMP/TREE's directory
run() {
	_d=$TMP/$1 _n=$2; shift 2
	mkdir -p "$_d"
	(cd "$_d" && setarch -R "$T" -q --no-readings -o "$_n.pb.gz" "$@" \
		>"$_n.out" 2>"$_n.err") || echo "$_n: exit $? ($(head -c 300 "$_d/$_n.err"))"
}
for side in old new; do
	[ $side = old ] && T=$OLD/build/pprof-alloc || T=$NEW/build/pprof-alloc
	run $side demo --rate 1 -- "$W/demo"
	run $side sites --rate 1 -- "$W/sites" 2 200 3
	run $side families --rate 1 -- "$W/families"
	run $side nofp-cxx --rate 1 -- "$W/nofp-cxx"
	run $side nofp-calls --rate 1 --unwind dwarf -- "$W/nofp-calls"
	run $side python3 --rate 1 -- /usr/bin/python3 -c 'x = [bytearray(1000) for i in range(2000)]'
	run $side sqlite3 --rate 1 -- /usr/bin/sqlite3 :memory: 'create table t(a); insert into t values (1),(2); select * from t;'
	run $side sort --rate 1 -- /usr/bin/sort /etc/passwd
	run $side top --rate 1 --top 5 -- "$W/sites" 1 200 3
	run $side nosym --rate 1 --no-symbolize -- "$W/sites" 1 200 3
	(cd "$TMP/$side" && "$T" symbolize -q nosym.pb.gz -o resym.pb.gz 2>resym.err) ||
		echo "resym: exit $?"
done

# two cores, written once, read by both
mkdir -p "$TMP/dump"
(
	cd "$TMP/dump" || exit 1
	ulimit -c unlimited
	pattern=$(cat /proc/sys/kernel/core_pattern)
	case "$pattern" in core*) ;; *) echo "core_pattern is '$pattern': no cores here" >&2; exit 1 ;; esac
	env LD_PRELOAD="$NEW/build/libpprof-alloc.so" PPROF_ALLOC_RATE=1 "$W/die" segv >/dev/null 2>&1
	mv core* die.core 2>/dev/null
	env LD_PRELOAD="$NEW/build/libpprof-alloc.so" PPROF_ALLOC_RATE=1 /usr/bin/python3 -c \
		'import os; x = [bytearray(1000) for i in range(3000)]; os.abort()' >/dev/null 2>&1
	mv core* py.core 2>/dev/null
) 2>/dev/null
for c in die py; do
	[ -s "$TMP/dump/$c.core" ] || { echo "core-$c: no core was dumped"; continue; }
	for side in old new; do
		[ $side = old ] && T=$OLD/build/pprof-alloc || T=$NEW/build/pprof-alloc
		"$T" -q --core "$TMP/dump/$c.core" --no-debuginfod -o "$TMP/$side/core-$c.pb.gz" ||
			echo "core-$c ($side): exit $?"
	done
done

norm() {
	go tool pprof -raw "$1" 2>/dev/null | grep -v '^Time:\|^Duration:' |
		sed '/^Comment:/s/[0-9][0-9.]*/N/g'
}
same=0 diff=0
for f in "$TMP"/new/*.pb.gz; do
	b=$(basename "$f")
	norm "$TMP/old/$b" >"$TMP/old.raw"
	norm "$f" >"$TMP/new.raw"
	if [ -s "$TMP/new.raw" ] && cmp -s "$TMP/old.raw" "$TMP/new.raw"; then
		echo "SAME $b ($(grep -c . "$TMP/new.raw") lines)"
		same=$((same + 1))
	else
		echo "DIFF $b"
		diff "$TMP/old.raw" "$TMP/new.raw" | head -n 10 | sed 's/^/    /'
		diff=$((diff + 1))
	fi
done
echo "$same same, $diff different"
[ $diff = 0 ] && [ $same -ge 13 ]
