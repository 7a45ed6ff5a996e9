# A launched program that exec()s another (env, a wrapper script...): the
# tracer warns that only the first image is profiled, and does not mix the
# two images' mappings (libdw once complained of overlapping modules).
. "$TOP/tests/e2e/lib.sh"
need go python3

"$TRACER" --rate 1 -o "$TMP/e.pb.gz" -- env FOO=1 "$WORKLOADS/demo" \
	>/dev/null 2>"$TMP/err" || fail "exit status $?"
cat "$TMP/err"
grep -q "exec'd another program (demo)" "$TMP/err" || fail "no exec warning"
if grep -q "overlaps" "$TMP/err"; then fail "mappings of two images mixed"; fi
pprof_sum "$TMP/e.pb.gz" leaf >/dev/null
