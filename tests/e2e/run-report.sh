#!/bin/sh
# run-report.sh - the HTML report, opened in a real browser.
#
# A --rate 1 run of tests/workloads/peak.c (2 MiB kept, 64 MiB at peak_site held
# and freed, 1 MiB kept after) recorded with --interval and --report makes
# PROFILE.html; headless Chromium (driven over the DevTools protocol by
# cdp.py) opens it and the test reads the DOM: the chart draws RSS, anon
# RSS, the sampled heap and the allocator's bytes, and marks the peak; the
# flame graph's frames and top functions name the sites - before_site and
# end_site at the end, peak_site at the peak (#view=peak_inuse_space) - and
# the page logs nothing, throws nothing and asks for nothing over the
# network.  Screenshots stay in the log directory (run-report*.png), for a
# person to look at.  Then: `pprof-alloc report` refuses what is not a
# profile and bad usage; a profile of 131072 stacks makes a page under
# 20 MB that is ready in a few seconds, its smallest frames folded and
# said so; names from the target that are markup (a program named
# "<img src=x onerror=...>") stay text; a profile without its readings
# still makes a page, saying so; a run without --interval removes the
# timeline an earlier run left beside the profile it replaces; the demo's
# readings are at its exit and its page is written.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
need chromium
CDP="$TOP/tests/e2e/cdp.py"
W="$WORKLOADS/peak"
SHOTS=$PWD

# check_page NAME: the checks every page must pass (cdp.py's JSON for all
# pages is in $TMP/pages.json): rendered, silent, offline
check_page() {
	note "$1: $(field "$1" "json.dumps(d)[:600]")"
	[ "$(field "$1" "d['ready']")" = 1 ] ||
		check_failed "$1: the page did not render (ready: $(field "$1" "d['ready']"))"
	[ "$(field "$1" "len(d['console'])")" = 0 ] ||
		check_failed "$1: the page said something on the console: $(field "$1" "d['console']")"
	[ "$(field "$1" "len(d['requests'])")" = 0 ] ||
		check_failed "$1: the page asked the network for $(field "$1" "d['requests']")"
}
# field NAME EXPR: a python3 expression over cdp.py's JSON (d) and its eval (e)
field() {
	$PY -c "import json,sys; d = json.load(open(sys.argv[1]))[sys.argv[2]]; e = json.loads(d['eval']) if d['eval'] else None; print($2)" "$TMP/pages.json" "$1"
}
has() {		# NAME LIST WHAT: the eval's LIST holds WHAT
	[ "$(field "$1" "'$3' in e['$2']")" = True ] ||
		check_failed "$1: no '$3' in the page's $2: $(field "$1" "e['$2']")"
}
hasnt() {
	[ "$(field "$1" "'$3' in e['$2']")" = False ] ||
		check_failed "$1: '$3' should not be in the page's $2"
}
DOM="JSON.stringify({
 series: [...document.querySelectorAll('#pa-chart .pa-series')].map(x => x.dataset.name),
 legend: [...document.querySelectorAll('#pa-chart .pa-legend-item')].map(x => x.dataset.name),
 peaks: document.querySelectorAll('#pa-chart .pa-peak').length,
 frames: [...document.querySelectorAll('#pa-flame .pa-frame')].map(x => x.dataset.name),
 top: [...document.querySelectorAll('#pa-top tbody tr')].map(r => r.cells[0].textContent),
 view: (document.querySelector('input[name=pa-view]:checked') || {}).value,
 folded: document.getElementById('pa-folded') && !document.getElementById('pa-folded').hidden,
 summary: document.getElementById('pa-summary').textContent,
 imgs: document.getElementsByTagName('img').length,
 other: JSON.parse(document.getElementById('pa-data').textContent).flame.names.indexOf('[other]') >= 0,
 title: document.title})"

# --- a recorded run, --report
"$TRACER" --rate 1 --interval 0.05 --report -o "$TMP/p.pb.gz" -- "$W" 16384 4096 400 exit \
	>"$TMP/p.out" 2>"$TMP/p.err" || fail "the traced peak run failed: $(cat "$TMP/p.err")"
grep -q "wrote $TMP/p.html" "$TMP/p.err" || check_failed "--report did not say it wrote p.html"
[ -s "$TMP/p.html" ] || fail "--report wrote no $TMP/p.html"

# --- the command: the same page from the profile; bad input
"$TRACER" report "$TMP/p.pb.gz" -o "$TMP/again.html" 2>"$TMP/again.err" ||
	check_failed "pprof-alloc report failed: $(cat "$TMP/again.err")"
grep -q "wrote $TMP/again.html" "$TMP/again.err" || check_failed "report did not say what it wrote"
"$TRACER" report 2>"$TMP/usage.err"; rc=$?
[ $rc = 2 ] || check_failed "report without a profile exited $rc, want 2"
"$TRACER" report "$TMP/nothing.pb.gz" 2>"$TMP/none.err"; rc=$?
[ $rc = 1 ] && grep -q "nothing.pb.gz" "$TMP/none.err" ||
	check_failed "report of a missing file exited $rc: $(cat "$TMP/none.err")"
echo "not a profile" >"$TMP/junk.pb.gz"
"$TRACER" report "$TMP/junk.pb.gz" 2>"$TMP/junk.err"; rc=$?
[ $rc = 1 ] && [ ! -e "$TMP/junk.html" ] ||
	check_failed "report of junk exited $rc, or wrote a page: $(cat "$TMP/junk.err")"
"$TRACER" report "$TMP/p.pb.gz" -o "$TMP/no/such/dir/x.html" 2>"$TMP/nodir.err"; rc=$?
[ $rc = 1 ] || check_failed "report into a missing directory exited $rc"

# --- a large profile: 2^17 stacks
"$TRACER" -q --rate 1 --max-stacks 200000 -o "$TMP/big.pb.gz" -- "$WORKLOADS/manystacks" 17 \
	>/dev/null 2>"$TMP/big.err" || fail "the manystacks run failed: $(cat "$TMP/big.err")"
"$TRACER" report "$TMP/big.pb.gz" 2>"$TMP/bigrep.err" || fail "report of the large profile failed"
cat "$TMP/bigrep.err"
size=$(stat -c %s "$TMP/big.html")
[ "$size" -lt $((20 * 1048576)) ] || check_failed "the large profile's page is $size bytes, want under 20 MB"

# --- names that are markup stay text
evil="$TMP/<img src=x onerror=alert(1)>"
cp "$W" "$evil"
"$TRACER" --no-symbolize --no-readings --report -o "$TMP/evil.pb.gz" -- "$evil" 64 4096 0 exit \
	>/dev/null 2>"$TMP/evil.err" || fail "the evil run failed: $(cat "$TMP/evil.err")"
! grep -q "<img" "$TMP/evil.html" || check_failed "the page holds a raw <img from the target's names"
# --- a run without --interval removes the timeline an earlier run left
"$TRACER" -q --interval 0.05 -o "$TMP/again.pb.gz" -- "$W" 64 4096 100 exit >/dev/null 2>&1
[ -s "$TMP/again.timeline.jsonl" ] || check_failed "--interval wrote no timeline"
"$TRACER" -q -o "$TMP/again.pb.gz" -- "$W" 64 4096 0 exit >/dev/null 2>&1
[ ! -e "$TMP/again.timeline.jsonl" ] ||
	check_failed "a run without --interval left the earlier run's timeline beside its profile"

# --- the demo, as make demo runs it
make -s -C "$TOP" -n demo B="$BUILD" 2>/dev/null | grep -q -- "--report" ||
	check_failed "make demo does not write a report"
"$TRACER" --top 5 --interval 0.01 --report -o "$TMP/demo.pb.gz" -- "$WORKLOADS/demo" \
	>/dev/null 2>"$TMP/demo.err" || fail "the demo run failed"
anon=$($PY -c "import json; print(json.load(open('$TMP/demo.json'))['process']['status']['RssAnon'])")
[ "$anon" -ge $((60 * 1048576)) ] || check_failed "the demo's RssAnon at exit is $anon, want at least 60 MB"
[ -s "$TMP/demo.html" ] || check_failed "the demo's report was not written"
# --- every page in one browser, then what each shows
$PY "$CDP" --size 1400x1000 --shots "$SHOTS" --timeout 20 --eval "$DOM" \
	run-report="file://$TMP/p.html" \
	run-report-peak="file://$TMP/p.html#view=peak_inuse_space" \
	run-report-big="file://$TMP/big.html" \
	run-report-evil="file://$TMP/evil.html" \
	>"$TMP/pages.json" 2>"$TMP/pages.err" || fail "cdp.py failed: $(cat "$TMP/pages.err")"
check_page run-report
for s in "RSS" "Anon RSS" "Heap in use (sampled)" "Allocator in use"; do
	has run-report series "$s"
	has run-report legend "$s"
done
# the cgroup's lines start hidden when it holds much more than the process
big_cg=$($PY -c "
import json, sys
u = r = 0
for l in open(sys.argv[1]):
    d = json.loads(l)
    u = max(u, ((d.get('cgroup') or {}).get('common') or {}).get('usage') or 0)
    r = max(r, ((d.get('process') or {}).get('smaps_rollup') or {}).get('Rss') or 0)
print(1 if r and u > 4 * r else 0)" "$TMP/p.timeline.jsonl")
if [ "$big_cg" = 1 ]; then
	hasnt run-report series "cgroup usage"
	has run-report legend "cgroup usage"
else
	has run-report series "cgroup usage"
fi
[ "$(field run-report "e['peaks']")" -ge 1 ] || check_failed "the chart does not mark the peak"
[ "$(field run-report "e['view']")" = inuse_space ] || check_failed "the flame graph does not open on inuse_space"
has run-report frames before_site
has run-report frames end_site
has run-report frames main
hasnt run-report frames peak_site
has run-report top before_site
field run-report "e['summary']" | grep "Peak heap" >/dev/null || check_failed "the summary has no peak heap"
field run-report "e['summary']" | grep "Final RSS.*(at exit)" >/dev/null || check_failed "the summary's final RSS is not said to be at exit"

check_page run-report-peak
[ "$(field run-report-peak "e['view']")" = peak_inuse_space ] || check_failed "#view=peak_inuse_space did not switch the view"
has run-report-peak frames peak_site
has run-report-peak frames before_site
hasnt run-report-peak frames end_site
[ "$(field run-report-peak "e['top'][0]")" = peak_site ] ||
	check_failed "at the peak the top function is $(field run-report-peak "e['top'][:3]"), want peak_site first"

check_page run-report-big
ms=$(field run-report-big "d['ms']")
[ "$ms" != None ] && [ "$ms" -lt $((5000 * TIME_SCALE)) ] ||
	check_failed "the large profile's page took $ms ms to render, want a few seconds"
[ "$(field run-report-big "e['folded']")" = True ] || check_failed "the large page does not say it folded frames"
[ "$(field run-report-big "e['other']")" = True ] || check_failed "the large page has no [other] frame"
note "large profile: $size bytes, ready in $ms ms"
check_page run-report-evil
[ "$(field run-report-evil "e['imgs']")" = 0 ] || check_failed "a name from the target became an <img>"
[ "$(field run-report-evil "any(f.startswith('<img src=x onerror=alert(1)>+0x') for f in e['frames'])")" = True ] ||
	check_failed "the markup name is not shown as text: $(field run-report-evil "e['frames'][:8]")"
field run-report-evil "e['title']" | grep "<img src=x" >/dev/null || check_failed "the title lost the program's name"
field run-report-evil "e['summary']" | grep "No readings" >/dev/null || check_failed "a page without readings does not say so"

finish
