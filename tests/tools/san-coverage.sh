#!/bin/bash
# tests/tools/san-coverage.sh [TEST...] - which lines of the tracer's code
# (tracer/, elf/) the end-to-end tests reach and the sanitized pass of
# `make test` does not: the evidence for tests/e2e/sanitized.list
# (docs/testing.md).
#
# The sanitized pass runs every unit test, and the e2e tests the list
# names, under ASan and UBSan; `make check-long` runs every e2e test there.  This
# builds the tracer, the unit tests, the fuzz replays and the test tools
# with gcov (build-cov/; the agent, the workloads and everything else come
# from build/, which must be built: make test-bins), runs each unit test
# and each e2e test (or those named) with its own GCOV_PREFIX, JOBS at a
# time (default: one per CPU), and prints:
#   - for each e2e test, the lines it reaches and how many of them no
#     unit test and no listed test (but itself) reaches ("beyond");
#   - the lines some e2e test reaches and the sanitized pass does not, by
#     file and function, each with the cheapest test that reaches it.
# Times are the last run's (build/test-times).  A test that fails under
# gcov still counts for what it reached; what runs as another user or in
# a container of its own may write no counts (they are not counted).
# Results stay in build-cov/coverage/ (one file of FILE:LINE:FUNCTION per
# run); REPORT_ONLY=1 prints the report again from them, after an edit of
# the list.  About 6 minutes on 2 idle cores.  Needs gcc's gcov and python3.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
cd "$TOP" || exit 2
JOBS=${JOBS:-$(nproc)}
C=build-cov
OUT=$TOP/$C/coverage
[ -x build/pprof-alloc ] && [ -x build/libpprof-alloc.so ] ||
	{ echo "san-coverage: build/ is not built (make test-bins)" >&2; exit 2; }
if [ "${REPORT_ONLY:-0}" != 1 ]; then

units=() reps=() tools=()
for t in tests/unit/test-*.c; do units+=("$C/tests/unit/$(basename "$t" .c)"); done
for t in tests/fuzz/fuzz-*.c; do n=$(basename "$t" .c); reps+=("$C/tests/fuzz/replay-${n#fuzz-}"); done
for t in tests/tools/*.c; do tools+=("$C/tests/tools/$(basename "$t" .c)"); done
make -s -j"$JOBS" B=$C CFLAGS=--coverage LDFLAGS=--coverage "$C/pprof-alloc" \
	"${units[@]}" "${reps[@]}" "${tools[@]}" || exit 1
# the agent and the workloads are never built with gcov: build/'s
cp build/libpprof-alloc.so "$C/" || exit 1

rm -rf "$OUT" && mkdir -p "$OUT/runs" "$OUT/logs"
runs=()
for u in "${units[@]}"; do
	n=unit/$(basename "$u")
	[ $# = 0 ] || [[ " $* " == *" $n "* ]] || continue
	runs+=("$n")
done
for t in tests/e2e/run-*.sh; do
	n=e2e/$(basename "$t" .sh)
	[ $# = 0 ] || [[ " $* " == *" $n "* ]] || [[ " $* " == *" $(basename "$t" .sh) "* ]] || continue
	runs+=("$n")
done

# run NAME: one unit or e2e test, its counts under $OUT/runs/NAME
run() {
	local n=$1 pre="$OUT/runs/$1" log="$OUT/logs/$1.log"
	mkdir -p "$pre" "$(dirname "$log")"
	(
		export GCOV_PREFIX="$pre" TOP BUILD="$TOP/$C" TRACER="$TOP/$C/pprof-alloc"
		export AGENT="$TOP/$C/libpprof-alloc.so" WORKLOADS="$TOP/build/tests/workloads"
		export TIME_SCALE=2 PATH="/usr/bin:/bin:/usr/sbin:/sbin:$PATH"
		cd "$OUT/logs" || exit 1
		case $n in
		unit/*) "$TOP/$C/tests/unit/${n#unit/}" ;;
		e2e/*) sh "$TOP/tests/e2e/${n#e2e/}.sh" ;;
		esac
	) >"$log" 2>&1
	echo "$n: exit $?"
}
export -f run
export OUT TOP C
printf '%s\n' "${runs[@]}" | xargs -P "$JOBS" -I{} bash -c 'run {}'

# the counts of each run: gcov on every data file, with the notes files
# beside it; lines with a count, as FILE:LINE
for n in "${runs[@]}"; do
	pre="$OUT/runs/$n"
	: >"$OUT/runs/$n.lines"
	for d in tracer elf; do
		dd="$pre$TOP/$C/$d"
		ls "$dd"/*.gcda >/dev/null 2>&1 || continue
		cp "$C/$d"/*.gcno "$dd/" 2>/dev/null
		(cd "$dd" && gcov -j -o "$dd" "$dd"/*.gcda >/dev/null 2>&1)
		python3 -c '
import glob, gzip, json, sys
for f in glob.glob(sys.argv[1] + "/*.gcov.json.gz"):
    for src in json.load(gzip.open(f))["files"]:
        if src["file"].startswith(("tracer/", "elf/")):
            for l in src["lines"]:
                if l["count"]:
                    print("%s:%d:%s" % (src["file"], l["line_number"], l.get("function_name", "?")))
' "$dd" >>"$OUT/runs/$n.lines"
	done
	sort -u -o "$OUT/runs/$n.lines" "$OUT/runs/$n.lines"
done
fi

# the report
marked=$(sed -n 's/^\(run-[^ ]*\).*/\1/p' tests/e2e/sanitized.list)
python3 - "$OUT/runs" "$marked" build/test-times <<'PY'
import os, sys
runs, marked, times_file = sys.argv[1], set(sys.argv[2].split()), sys.argv[3]
times = {}
if os.path.exists(times_file):
    for l in open(times_file):
        p = l.split()
        if len(p) == 2:
            times[p[0]] = int(p[1])
lines = {}
for kind in ("unit", "e2e"):
    d = os.path.join(runs, kind)
    if not os.path.isdir(d):
        continue
    for f in os.listdir(d):
        if f.endswith(".lines"):
            with open(os.path.join(d, f)) as fh:
                lines[kind + "/" + f[:-6]] = set(fh.read().split())
san = set()
for n, s in lines.items():
    if n.startswith("unit/") or n[4:] in marked:
        san |= s
e2e = {n: s for n, s in lines.items() if n.startswith("e2e/")}
every = set().union(*e2e.values()) if e2e else set()
print("%-32s %6s %6s %6s %s" % ("e2e test", "lines", "beyond", "time", "listed"))
for n in sorted(e2e, key=lambda n: -len(e2e[n] - (san - (e2e[n] if n[4:] in marked else set())))):
    others = set()
    for m, s in lines.items():
        if m != n and (m.startswith("unit/") or m[4:] in marked):
            others |= s
    print("%-32s %6d %6d %6s %s" % (n, len(e2e[n]), len(e2e[n] - others),
          times.get(n, "?"), "yes" if n[4:] in marked else ""))
missing = every - san
print()
print("lines the e2e tests reach: %d; the sanitized pass (%d unit tests, %d listed e2e tests): %d of them, %d not"
      % (len(every), sum(n.startswith("unit/") for n in lines), len(marked),
         len(every & san), len(missing)))
byfn = {}
for l in missing:
    f, line, fn = l.split(":", 2)
    byfn.setdefault((f, fn), []).append(int(line))
for (f, fn), ls in sorted(byfn.items(), key=lambda kv: -len(kv[1])):
    cands = [n for n, s in e2e.items() if any(("%s:%d:%s" % (f, x, fn)) in s for x in ls)]
    cands.sort(key=lambda n: times.get(n, 10**6))
    print("  %4d lines  %s %s  (%s)" % (len(ls), f, fn, ", ".join(cands[:3])))
PY
