# Everything is freed before exit, but the ring is far too small: frees are
# lost (sampled at --rate 16, nearly every allocation, each with a stack
# copy: --rate 1 would wait for room, not lose).  The agent's live table knows what is really live; the profile must
# show churn_site with nothing in use, and say how many it reconciled.
. "$(dirname "$0")/lib.sh"
need go python3

"$TRACER" -q --rate 16 --unwind dwarf --ring-size 64K -o "$TMP/r.pb.gz" -- \
	"$WORKLOADS/all-freed" >/dev/null || fail "all-freed exited with $?"
pprof_sum "$TMP/r.pb.gz" leaf >"$TMP/sum.txt"
cat "$TMP/sum.txt"
grep -q "lost records [1-9]" "$TMP/sum.txt" ||
	fail "the ring did not overflow: the test proves nothing"
[ "$(value churn_site 1 <"$TMP/sum.txt")" -gt 0 ] ||
	fail "churn_site is missing"
[ "$(value churn_site 3 <"$TMP/sum.txt")" = 0 ] ||
	fail "churn_site has objects in use; all were freed"
[ "$(value churn_site 4 <"$TMP/sum.txt")" = 0 ] ||
	fail "churn_site has bytes in use; all were freed"
grep -q "found freed in the live table [1-9]" "$TMP/sum.txt" ||
	fail "the profile does not say it reconciled anything"
