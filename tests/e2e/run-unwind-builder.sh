#!/bin/sh
# run-unwind-builder.sh - launched, the unwind tables of the program's
# modules are built on the agent's own thread, before the program's walks
# need them, not on the program's threads (--unwind auto, issue 35).
#
# Stock python3 (no frame pointers) launched at the default unwind mode
# builds lists and waits: `stats --json` must say that the agent has the
# tables of the modules it walked (python3 and libc at least) and built
# none on the program's threads (unwind_inline_builds 0).  Then it imports
# _decimal (a module dlopened after the start, with libmpdec inside), makes
# Decimals and waits again: the builder is woken by the dlopen and builds
# its table, unless a walk gets there first - so at most one table (that
# one) was built on a program's thread.  The profile must have whole
# stacks through _decimal (to _start).  The control: the same program with
# the agent preloaded alone has no stats thread, so no builder, and its
# walks build the tables themselves (unwind_inline_builds > 0): the
# counter counts.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3.11
need go "$PY"

json() {	# FILE EXPR: python3 expression over d (the parsed file)
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

cat >"$TMP/work.py" <<'EOF'
import sys
keep = [str(i) * 8 for i in range(300000)]
print("started", flush=True)
sys.stdin.readline()
import decimal
dec = [decimal.Decimal(i) / 7 for i in range(600000)]
print("ready", flush=True)
sys.stdin.readline()
EOF

# run NAME CMD...: CMD runs work.py; its stats while it waits, as JSON
run() {
	_name=$1; shift
	mkfifo "$TMP/$_name.in" || fail "mkfifo"
	exec 7<>"$TMP/$_name.in"	# (opened both ways: no wait for a reader)
	# (the fifo inside: an asynchronous list's stdin is /dev/null)
	spawn "$TMP/$_name.out" sh -c 'exec "$@" <"$0"' "$TMP/$_name.in" \
		"$@" "$TMP/work.py"
	wait_for "$TMP/$_name.out" '^started$' 60 ||
		fail "$_name: python3 did not start ($(tail -3 "$TMP/$_name.out.err"))"
	_pid=$(pgrep -n -f "$PY $TMP/work.py") || fail "$_name: no python3 process"
	"$TRACER" stats --pid "$_pid" --json >"$TMP/$_name.start.json" 2>"$TMP/$_name.stats.err" ||
		check_failed "$_name: stats --pid failed: $(cat "$TMP/$_name.stats.err")"
	echo >&7
	wait_for "$TMP/$_name.out" '^ready$' 60 ||
		fail "$_name: python3 did not get ready ($(tail -3 "$TMP/$_name.out.err"))"
	"$TRACER" stats --pid "$_pid" --json >"$TMP/$_name.json" 2>"$TMP/$_name.stats.err" ||
		check_failed "$_name: stats --pid failed: $(cat "$TMP/$_name.stats.err")"
	echo >&7
	exec 7>&-
	wait "$spawned_pid" || check_failed "$_name: exited $?: $(tail -3 "$TMP/$_name.out.err")"
}

# ---- launched: the stats thread builds
run launched "$TRACER" --rate 65536 -o "$TMP/l.pb.gz" -- "$PY"
sed 's/^/    launched: /' "$TMP/launched.out.err" | grep -v 'ELF symbols only'
inline=$(json "$TMP/launched.start.json" "d['agent'].get('unwind_inline_builds', 'absent')")
modules=$(json "$TMP/launched.start.json" "d['agent'].get('unwind_table_modules', 0)")
note "launched, started: $modules tables, $inline built on the program's threads"
[ "$inline" = 0 ] ||
	check_failed "launched, started: $inline tables built on the program's threads, want 0"
[ "$modules" -ge 2 ] 2>/dev/null ||
	check_failed "launched, started: $modules unwind tables, want at least 2 (python3, libc)"
inline=$(json "$TMP/launched.json" "d['agent'].get('unwind_inline_builds', 'absent')")
modules2=$(json "$TMP/launched.json" "d['agent'].get('unwind_table_modules', 0)")
note "launched, _decimal loaded: $modules2 tables, $inline built on the program's threads"
[ "$inline" -le 1 ] 2>/dev/null ||
	check_failed "launched, _decimal loaded: $inline tables built on the program's threads, want at most 1 (_decimal's)"
[ "$modules2" -gt "$modules" ] 2>/dev/null ||
	check_failed "launched: no table more after _decimal was loaded ($modules, then $modules2)"

# whole stacks through the dlopened module
go tool pprof -raw "$TMP/l.pb.gz" >"$TMP/raw.txt" 2>"$TMP/raw.err" ||
	fail "go tool pprof -raw failed: $(cat "$TMP/raw.err")"
python3 "$TOP/tests/e2e/pprof_sum.py" stacks <"$TMP/raw.txt" >"$TMP/stacks.txt"
through=$(awk '!/^#/ && $3 ~ /_decimal|mpd_|dec_/ { s += $1 } END { print s + 0 }' "$TMP/stacks.txt")
whole=$(awk '!/^#/ && $3 ~ /_decimal|mpd_|dec_/ && $3 ~ /_start/ { s += $1 } END { print s + 0 }' "$TMP/stacks.txt")
note "launched: $through bytes allocated through _decimal, $whole of them on stacks to _start"
[ "$through" -gt 0 ] ||
	check_failed "launched: no allocation through _decimal in the profile"
python3 -c "import sys; sys.exit(not (int(sys.argv[2]) >= 0.95 * int(sys.argv[1])))" "$through" "$whole" ||
	check_failed "launched: only $whole of $through bytes through _decimal are on whole stacks"

# ---- control: preloaded alone, no builder
run alone env LD_PRELOAD="$AGENT" "$PY"
inline=$(json "$TMP/alone.json" "d['agent'].get('unwind_inline_builds', 'absent')")
note "alone: $inline tables built on the program's threads"
[ "$inline" -ge 2 ] 2>/dev/null ||
	check_failed "alone (no builder): $inline tables built on the program's threads, want at least 2"

# ---- a program that allocates inside its own dl_iterate_phdr callback
# (it holds the loader's lock the builder needs: no walk may wait for a
# builder that waits for it), from a module it dlopened after its start
# (so that module's table is not made ahead): 2000 allocations end at
# once; a walk that waited 200 ms each took minutes
need gcc
cat >"$TMP/cb.c" <<'EOF'
#define _GNU_SOURCE
#include <link.h>
#include <stdlib.h>
static void *keep[64];
static int cb(struct dl_phdr_info *info, size_t size, void *data)
{
	int *left = data;

	(void)info;
	(void)size;
	if (*left <= 0)
		return 1;
	(*left)--;
	free(keep[*left & 63]);
	keep[*left & 63] = malloc(32);
	return 0;
}
void run(int n)
{
	while (n > 0) {
		int left = n;

		dl_iterate_phdr(cb, &left);
		n = left;
	}
}
EOF
cat >"$TMP/cbmain.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
	void *h = dlopen(argv[1], RTLD_NOW);
	void (*run)(int) = h ? (void (*)(int))dlsym(h, "run") : NULL;

	if (!run)
		return 1;
	run(atoi(argv[2]));
	puts("done");
	return 0;
}
EOF
gcc -O1 -fomit-frame-pointer -shared -fPIC -o "$TMP/libcb.so" "$TMP/cb.c" &&
	gcc -O1 -o "$TMP/cbmain" "$TMP/cbmain.c" -ldl || fail "cannot build the callback program"
timeout 60 "$TRACER" -q --rate 1 -o "$TMP/cb.pb.gz" -- "$TMP/cbmain" "$TMP/libcb.so" 2000 \
	>"$TMP/cb.out" 2>"$TMP/cb.err"
rc=$?
[ $rc = 0 ] && grep -qx done "$TMP/cb.out" ||
	check_failed "allocating in a dl_iterate_phdr callback: exit $rc (124: not done in 60 s): $(tail -2 "$TMP/cb.err")"

# ---- more modules than the agent keeps tables for (512): a program that
# dlopens 600 copies of a library and allocates in each; then, idle, the
# agent's thread must be idle too (the builder once went round for ever
# when no entry was left to make) - its CPU ticks over a second, read by
# the program itself from /proc/self/task
cat >"$TMP/plug.c" <<'EOF'
#include <stdlib.h>
void *plug(void) { return malloc(24); }
EOF
cat >"$TMP/many.c" <<'EOF'
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* CPU ticks of the thread named pprof-alloc, or -1 */
static long agent_ticks(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	long best = -1;

	while (d && (e = readdir(d))) {
		char p[300], b[1024], *q;
		unsigned long ut, st;
		FILE *f;
		int i;

		snprintf(p, sizeof(p), "/proc/self/task/%s/stat", e->d_name);
		f = fopen(p, "r");
		if (!f)
			continue;
		if (fgets(b, sizeof(b), f) && strstr(b, "(pprof-alloc)") &&
		    (q = strrchr(b, ')'))) {
			for (i = 0; i < 12 && q; i++)
				q = strchr(q + 1, ' ');
			if (q && sscanf(q, "%lu %lu", &ut, &st) == 2)
				best = (long)(ut + st);
		}
		fclose(f);
	}
	if (d)
		closedir(d);
	return best;
}
int main(int argc, char **argv)
{
	int i, n = atoi(argv[2]);
	long t0, t1;

	for (i = 0; i < n; i++) {
		char path[4096];
		void *h, *(*f)(void);

		snprintf(path, sizeof(path), "%s/libp%d.so", argv[1], i);
		h = dlopen(path, RTLD_NOW);
		f = h ? (void *(*)(void))dlsym(h, "plug") : NULL;
		if (!f)
			return 1;
		free(f());
	}
	t0 = agent_ticks();
	sleep(1);
	t1 = agent_ticks();
	printf("ticks %ld %ld\n", t0, t1);
	return 0;
}
EOF
mkdir -p "$TMP/libs"
gcc -O1 -fomit-frame-pointer -shared -fPIC -o "$TMP/libs/libp0.so" "$TMP/plug.c" &&
	gcc -O1 -o "$TMP/many" "$TMP/many.c" -ldl || fail "cannot build the many-modules program"
i=1
while [ $i -lt 600 ]; do cp "$TMP/libs/libp0.so" "$TMP/libs/libp$i.so"; i=$((i + 1)); done
timeout 120 "$TRACER" -q --rate 1 -o "$TMP/many.pb.gz" -- "$TMP/many" "$TMP/libs" 600 \
	>"$TMP/many.out" 2>"$TMP/many.err"
rc=$?
set -- $(sed -n 's/^ticks //p' "$TMP/many.out")
note "600 modules: exit $rc; the agent's thread used $((${2:-0} - ${1:-0})) ticks in the idle second"
[ $rc = 0 ] && [ "${1:--1}" -ge 0 ] ||
	check_failed "600 modules: exit $rc (124: not done in 120 s), ticks '$*': $(tail -2 "$TMP/many.err")"
[ $rc = 0 ] && [ $((${2:-0} - ${1:-0})) -le 10 ] ||
	check_failed "600 modules: the agent's thread kept busy while the program was idle ($* ticks)"

finish
