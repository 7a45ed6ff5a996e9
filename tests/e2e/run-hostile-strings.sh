#!/bin/sh
# run-hostile-strings.sh - nothing a target names reaches a terminal, a
# profile, a JSON file, the report, /metrics or a browser raw.
#
# A real program, built here, carries ESC and OSC sequences (a window
# title, clear screen), CR, LF, a quote, a backslash, invalid UTF-8 and
# markup in every string of its the tracer reads:
#   - its executable's name, so its comm and its exec name (launched
#     through env, so the exec chain names it);
#   - the directory its library and its allocator (jemalloc, found through
#     its rpath) live in, so module paths, mapping names and the
#     allocator's path;
#   - the symbol of its allocation site (objcopy renames it);
#   - for the attached run, its memory cgroup's name (no LF: the kernel
#     refuses one).
# (A NUL cannot be in any of them: each is read as a C string, or, in the
# memfd, cut at its first NUL.)
#
# Launched with --report and --interval, then attached by serve and by
# stats, the test checks (tests/e2e/untrusted_check.py) that stderr holds
# only the tracer's own lines, with no control byte but their ends; that
# every string in the profiles' string tables, PROFILE.json, the timeline,
# the report's data and serve's /metrics is clean (no control byte,
# invalid UTF-8, C1 control or bidi override); that promtool accepts
# /metrics; that the names are there, escaped (\x1b), and not lost; and
# that Chromium shows the report with no element from the target's markup.
. "$(dirname "$0")/lib.sh"
need cc objcopy python3 go promtool chromium curl

PY=/usr/bin/python3
CHK="$PY $TOP/tests/e2e/untrusted_check.py"
srv=
trap 'kill -9 $srv 2>/dev/null; memory_cgroup_remove; rm -rf "$TMP"' EXIT

# the bytes: no '/' (a path's separator), no '=' (env's assignment)
EVIL=$(printf 'x\033]0;PWNED\007\033[2J\r\n"\\\377\376<u>pwned')
# the site's symbol also forges a line of ours after its LF (a path may
# not hold the ':': rpath's separator)
FORGED=$(printf 'site\r\npprof-alloc: forged\033[0m')
FORGED_ESCAPED='site\x0d\x0approf-alloc: forged\x1b[0m'

ESCAPED='x\x1b]0;PWNED\x07\x1b[2J\x0d\x0a"\\xff\xfe<u>pwned'
D="$TMP/d$EVIL"
EXE="$D/e$EVIL"
mkdir -p "$D" || fail "cannot make a directory with control bytes in its name"

# ---- the program and its library ------------------------------------------
cat >"$TMP/lib.c" <<'EOF'
#include <stdlib.h>
__attribute__((noinline)) static void *evil_site(size_t n)
{
	void *p = malloc(n);

	__asm__ volatile("" ::: "memory");
	return p;
}
__attribute__((noinline)) void *evil_entry(size_t n)
{
	void *p = evil_site(n);

	__asm__ volatile("" ::: "memory");
	return p;
}
EOF
cat >"$TMP/prog.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
/* prog LIB N: N blocks of 1000 bytes from LIB's site, kept; "ready";
 * then wait for stdin's end */
int main(int argc, char **argv)
{
	void *(*entry)(size_t);
	void *h;
	char line[8];
	int i;

	if (argc < 3)
		return 2;
	h = dlopen(argv[1], RTLD_NOW);
	if (!h || !(entry = (void *(*)(size_t))dlsym(h, "evil_entry"))) {
		fprintf(stderr, "prog: %s\n", dlerror());
		return 1;
	}
	for (i = 0; i < atoi(argv[2]); i++)
		if (!entry(1000))
			return 1;
	puts("ready");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	return 0;
}
EOF
JE=$(ls /usr/lib/*/libjemalloc.so.2 2>/dev/null | head -1)
[ -n "$JE" ] || fail "no libjemalloc.so.2 (contrib/packages: libjemalloc2)"
cp "$JE" "$D/libjemalloc.so.2" || fail "cannot copy jemalloc"
cc -O1 -fno-omit-frame-pointer -fPIC -shared -o "$TMP/lib.so" "$TMP/lib.c" &&
	objcopy --redefine-sym "evil_site=$FORGED$EVIL" "$TMP/lib.so" "$D/lib.so" ||
	fail "cannot build the library"
cc -O1 -fno-omit-frame-pointer -o "$EXE" "$TMP/prog.c" -ldl -Wl,--no-as-needed "$D/libjemalloc.so.2" \
	-Wl,-rpath,"$D" || fail "cannot build the program"
"$EXE" "$D/lib.so" 1 </dev/null | grep -q ready || fail "the program does not run"
ldd "$EXE" | grep -qF "$D/libjemalloc.so.2" || fail "the program's jemalloc is not the copy: $(ldd "$EXE")"

# has FILE TEXT: FILE holds TEXT (fixed)
has() {
	grep -qF -- "$2" "$1" || check_failed "$1 does not hold '$2'"
}

# ---- launched, through env --------------------------------------------------
"$TRACER" --rate 1 --interval 0.05 --report --top 5 -o "$TMP/run.pb.gz" -- \
	env "$EXE" "$D/lib.so" 50 </dev/null >"$TMP/run.out" 2>"$TMP/run.err" ||
	fail "the launched run failed: $(cat -v "$TMP/run.err")"
note "stderr: $(cat "$TMP/run.err")"
$CHK text:pprof-alloc "$TMP/run.err" text "$TMP/run.out" pprof "$TMP/run.pb.gz" \
	json "$TMP/run.json" jsonl "$TMP/run.timeline.jsonl" html "$TMP/run.html" \
	>"$TMP/run.chk" || check_failed "the launched run: $(cat "$TMP/run.chk")"
$CHK -s pprof "$TMP/run.pb.gz" >"$TMP/run.strings" || check_failed "the profile's strings"
# the names are there, escaped, not lost
has "$TMP/run.err" '-> ex\x1b]0;PWNED\x07\x1b[2 ('

has "$TMP/run.err" "$ESCAPED/libjemalloc.so.2"
has "$TMP/run.strings" "$FORGED_ESCAPED$ESCAPED"
has "$TMP/run.out" "$FORGED_ESCAPED$ESCAPED"
! grep -q "^pprof-alloc: forged" "$TMP/run.err" "$TMP/run.out" ||
	check_failed "a line of ours was forged"
has "$TMP/run.strings" "$ESCAPED/lib.so"
has "$TMP/run.json" "$(printf '%s' "$ESCAPED" | sed 's/\\/\\\\/g; s/"/\\"/g')/libjemalloc.so.2"
# the allocations themselves: 50 of 1000 bytes at the site
n=$(go tool pprof -raw -sample_index=alloc_objects "$TMP/run.pb.gz" 2>/dev/null |
	$PY -c '
import sys
text = sys.stdin.read()
samples, _, locs = text.partition("Locations")
site = [l.split(":")[0].strip() for l in locs.splitlines() if "PWNED" in l]
total = 0
for line in samples.splitlines():
    f = line.split(":")
    if len(f) == 2 and site and f[1].split() and f[1].split()[0] == site[0]:
        total += int(f[0].split()[0])
print(total)')
[ "$n" = 50 ] || check_failed "the site's allocations: $n, want 50"

# ---- symbolize: a profile recorded without names, named afterwards; the
# module is found by the path it was recorded at (cleaned in the profile,
# its bytes read back), and the names go in cleaned
"$TRACER" --rate 1 --no-symbolize --no-readings -o "$TMP/nosym.pb.gz" -- \
	"$EXE" "$D/lib.so" 50 </dev/null >/dev/null 2>"$TMP/nosym.err" ||
	fail "the run without names failed: $(cat -v "$TMP/nosym.err")"
"$TRACER" symbolize --no-debuginfod "$TMP/nosym.pb.gz" -o "$TMP/sym.pb.gz" \
	>"$TMP/sym.out" 2>"$TMP/sym.err" || check_failed "symbolize failed: $(cat -v "$TMP/sym.err")"
$CHK text:pprof-alloc "$TMP/sym.err" pprof "$TMP/sym.pb.gz" >"$TMP/sym.chk" ||
	check_failed "symbolize: $(cat "$TMP/sym.chk")"
$CHK -s pprof "$TMP/sym.pb.gz" >"$TMP/sym.strings" || check_failed "symbolize's strings"
has "$TMP/sym.strings" "$FORGED_ESCAPED$ESCAPED"
! grep -q "No such file" "$TMP/sym.err" || check_failed "symbolize did not find the module: $(cat "$TMP/sym.err")"

# ---- the report in a browser: no element from the target's markup ---------
$PY "$TOP/tests/e2e/cdp.py" --timeout 20 --eval "JSON.stringify({
 u: document.querySelectorAll('u').length,
 title: document.title,
 frames: [...document.querySelectorAll('#pa-flame .pa-frame')].map(x => x.dataset.name)})" \
	page="file://$TMP/run.html" >"$TMP/page.json" 2>"$TMP/page.err" ||
	fail "cdp.py failed: $(cat "$TMP/page.err")"
$PY - "$TMP/page.json" "$FORGED_ESCAPED$ESCAPED" <<'EOF' || check_failed "the report: $(cat "$TMP/page.json")"
import json, sys
d = json.load(open(sys.argv[1]))["page"]
e = json.loads(d["eval"])
ok = d["ready"] == "1" and not d["console"] and e["u"] == 0
ok = ok and "\x1b" not in e["title"] and "\\x1b" in e["title"]
ok = ok and any(f.startswith(sys.argv[2]) for f in e["frames"])
sys.exit(0 if ok else 1)
EOF

# ---- attached: serve's /metrics and profile, stats --------------------------
CGNAME="pa-strings-$$$(printf '\033]0;PWNED\007\r"\\\377<u>')"
memory_cgroup "$CGNAME" 1073741824
mkfifo "$TMP/stdin"
in_cg "$EXE" "$D/lib.so" 50 <"$TMP/stdin" >"$TMP/prog.out" 2>&1 &
exec 3>"$TMP/stdin"	# the program waits for its end
i=0
until grep -qs ready "$TMP/prog.out" || [ $i -ge 200 ]; do sleep 0.05; i=$((i + 1)); done
pid=$(cat "$CG/cgroup.procs" | head -1)
[ -n "$pid" ] || fail "the program did not start in its cgroup: $(cat "$TMP/prog.out")"
port=$(free_port)
"$TRACER" serve --pid "$pid" --listen "127.0.0.1:$port" >"$TMP/serve.out" 2>"$TMP/serve.err" &
srv=$!
wait_port "$port" || fail "serve did not listen: $(cat -v "$TMP/serve.err")"
# the readings are in /metrics once serve has taken its first
i=0
until curl -sf "http://127.0.0.1:$port/metrics" >"$TMP/metrics.txt" &&
	grep -q '^pprof_alloc_cgroup_info' "$TMP/metrics.txt"; do
	[ $i -lt 300 ] && kill -0 $srv 2>/dev/null || break
	sleep 0.1; i=$((i + 1))
done
grep -q '^pprof_alloc_cgroup_info' "$TMP/metrics.txt" ||
	check_failed "/metrics had no readings after $i tries: $(cat -v "$TMP/serve.err")"
curl -sf "http://127.0.0.1:$port/debug/pprof/heap" >"$TMP/heap.pb.gz" || check_failed "no heap profile"
"$TRACER" stats --pid "$pid" >"$TMP/stats.out" 2>"$TMP/stats.err" ||
	check_failed "stats failed: $(cat -v "$TMP/stats.err")"
kill -TERM $srv
wait $srv
exec 3>&-
$CHK metrics "$TMP/metrics.txt" pprof "$TMP/heap.pb.gz" text "$TMP/stats.out" \
	text:pprof-alloc "$TMP/stats.err" text:"pprof-alloc serve" "$TMP/serve.err" \
	>"$TMP/attach.chk" || check_failed "the attached run: $(cat "$TMP/attach.chk")"
promtool check metrics <"$TMP/metrics.txt" >"$TMP/promtool.out" 2>&1 ||
	check_failed "promtool refuses /metrics: $(cat "$TMP/promtool.out")"
grep 'pprof_alloc_cgroup_info' "$TMP/metrics.txt" | grep -qF 'pa-strings-' ||
	check_failed "/metrics has no cgroup info"
grep 'pprof_alloc_cgroup_info' "$TMP/metrics.txt" | grep -qF '\\x1b]0;PWNED\\x07\\x0d\"\\\\xff<u>' ||
	check_failed "/metrics does not show the cgroup's name escaped: $(grep cgroup_info "$TMP/metrics.txt")"
grep 'pprof_alloc_allocator_info' "$TMP/metrics.txt" | grep -qF 'libjemalloc.so.2' ||
	check_failed "/metrics has no allocator path"
has "$TMP/stats.out" 'pa-strings-'
has "$TMP/stats.out" "$ESCAPED/libjemalloc.so.2"
finish
