#!/bin/sh
# run-families.sh - every allocator entry point (tests/workloads/families.c)
# counted exactly at --rate 1, at the workload function that called it:
# requested sizes, realloc(NULL, n) an allocation, realloc(p, 0) a free,
# failed calls (bad alignment, overflow, huge sizes) nothing at all.  No
# frame of the agent may appear anywhere in a stack.
. "$(dirname "$0")/lib.sh"
need python3 go

K=3
W="$WORKLOADS/families"

run_bare "$TMP/bare.out" "$W" $K
[ "$bare_rc" = 0 ] || { cat "$TMP/bare.out.err" >&2; fail "bare run of families failed (exit $bare_rc)"; }
trace "$TMP/traced.out" "$TMP/fam.pb.gz" --rate 1 -- "$W" $K
[ "$trace_rc" = 0 ] || fail "traced run exited $trace_rc, want 0 (a check in the workload failed?)"
same_output "$TMP/bare.out" "$TMP/traced.out"

pprof_sum "$TMP/fam.pb.gz" leaf >"$TMP/leaf.txt"
python3 "$TOP/tests/e2e/pprof_sum.py" frames <"$TMP/raw.txt" >"$TMP/frames.txt"
cat "$TMP/leaf.txt"
check_no_loss "$TMP/leaf.txt"

# site ao as io is, per round (families.c's header comment)
want_objs=0 want_bytes=0
while read -r site ao as io is; do
	check_site "$TMP/leaf.txt" "$site" $((K * ao)) $((K * as)) $((K * io)) $((K * is))
	want_objs=$((want_objs + K * ao)) want_bytes=$((want_bytes + K * as))
done <<TABLE
fam_malloc 1 1001 1 1001
fam_malloc_zero 1 0 1 0
fam_calloc 1 903 1 903
fam_realloc_src 1 300 0 0
fam_realloc 1 5000 1 5000
fam_realloc_null 1 2222 1 2222
fam_realloc_zero_src 1 777 0 0
fam_realloc_fail_src 1 444 1 444
fam_reallocarray 2 990 1 660
fam_reallocarray_src 1 555 1 555
fam_posix_memalign 1 3000 1 3000
fam_aligned_alloc 1 2048 1 2048
fam_memalign 1 1500 1 1500
fam_valloc 1 3000 1 3000
fam_pvalloc 1 5000 1 5000
TABLE
for site in fam_realloc_zero fam_realloc_fail fam_reallocarray_overflow \
	    fam_posix_memalign_bad fam_malloc_fail fam_calloc_overflow \
	    fam_free_null; do
	check_absent "$TMP/leaf.txt" $site
done

# Nothing is counted twice or elsewhere: the samples whose leaf is not in
# libc or the dynamic loader (stdio buffers, thread and TLS set-up) add up
# to what the workload allocated.
awk '$1 == "LEAF" && $3 ~ /\/(libc\.so|ld-linux)[^\/]*$/ { print $2 }' "$TMP/frames.txt" >"$TMP/libc-leaves.txt"
got=$(awk 'NR == FNR { libc[$1] = 1; next }
	!/^#/ && !($1 in libc) { o += $2; b += $3 } END { print o + 0, b + 0 }' \
	"$TMP/libc-leaves.txt" "$TMP/leaf.txt")
[ "$got" = "$want_objs $want_bytes" ] ||
	check_failed "all samples outside libc: (alloc_objects alloc_space) = ($got), want ($want_objs $want_bytes)"

# The agent's own frames never show.  Its allocator entry points share
# their names with libc's and ld.so's internals, so those are recognised
# by their mapping; every other function defined in agent/ by its name.
agent_so=$(basename "$AGENT")
if grep " /.*/$agent_so\$" "$TMP/frames.txt" >"$TMP/agent-frames.txt"; then
	sed 's/^/    /' "$TMP/agent-frames.txt" >&2
	check_failed "frames of the agent ($agent_so) appear in the profile's stacks (above)"
fi
grep -h -o -E '^[A-Za-z_][A-Za-z0-9_ *]*[ *]\(?\*?[A-Za-z_][A-Za-z0-9_]*\(' \
	"$TOP"/agent/*.c |
	sed -E 's/.*[ *]([A-Za-z_][A-Za-z0-9_]*)\($/\1/' | sort -u |
	grep -v -x -E '__libc_.*|malloc|free|calloc|realloc|reallocarray|posix_memalign|aligned_alloc|memalign|valloc|pvalloc|malloc_usable_size' \
	>"$TMP/agent-names.txt"
[ "$(wc -l <"$TMP/agent-names.txt")" -ge 10 ] ||
	fail "could not list the agent's functions from $TOP/agent/*.c"
awk '{ print ($1 == "LEAF") ? $2 : $1 }' "$TMP/frames.txt" | sort -u >"$TMP/stack-names.txt"
if grep -x -F -f "$TMP/agent-names.txt" "$TMP/stack-names.txt" >"$TMP/found.txt"; then
	sed 's/^/    /' "$TMP/found.txt" >&2
	check_failed "functions of the agent (above) appear in the profile's stacks"
fi
# Every sample of the workload's mapping has a fam_ function as its leaf.
awk -v exe="$W" '$1 == "LEAF" && $3 == exe && $2 !~ /^fam_/' "$TMP/frames.txt" >"$TMP/bad-leaves.txt"
[ ! -s "$TMP/bad-leaves.txt" ] || { sed 's/^/    /' "$TMP/bad-leaves.txt" >&2; check_failed "samples whose leaf is not a fam_ function"; }
finish
