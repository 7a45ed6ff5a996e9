# Shared helpers for the end-to-end tests (sourced; POSIX sh).
# Environment from tests/run.sh: TOP, BUILD, TRACER, AGENT, WORKLOADS.
set -u
: "${TOP:?run through tests/run.sh}"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/pprof-alloc-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "--- $*"; }

# pprof_sum FILE [leaf|cum]: per function, the four sample values summed,
# read through the real `go tool pprof -raw`.  Output lines:
#   FUNCTION alloc_objects alloc_space inuse_objects inuse_space
pprof_sum() {
	go tool pprof -raw "$1" >"$TMP/raw.txt" 2>"$TMP/raw.err" ||
		{ cat "$TMP/raw.err" >&2; fail "go tool pprof -raw $1 failed"; }
	if [ -s "$TMP/raw.err" ]; then
		cat "$TMP/raw.err" >&2
		fail "go tool pprof printed warnings for $1"
	fi
	python3 "$TOP/tests/e2e/pprof_sum.py" "${2:-leaf}" <"$TMP/raw.txt"
}

# value FUNC FIELD < pprof_sum output: FIELD 1..4, 0 if FUNC is absent.
value() {
	awk -v f="$1" -v i="$2" '$1 == f { v = $(i + 1) } END { print v + 0 }'
}

# within A B PCT: |A - B| <= PCT% of B
within() {
	awk -v a="$1" -v b="$2" -v p="$3" \
		'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= b * p / 100) }'
}
