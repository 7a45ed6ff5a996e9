# run-exec.sh - a launched command that exec()s the program doing the work
# is followed to it by default: a pyenv-style shim chain (#!/usr/bin/env
# bash scripts that exec one another, run children of their own, then
# exec through nice, taskset and env), and sh -c 'exec ...'.  The profile
# is the last image's, the same counts at --rate 1 as the program run
# directly, and its comments name the chain; with --follow-children too,
# where the launched process gets no second profile.  A program exec'd
# without the agent is said, and what ran before kept.
. "$(dirname "$0")/lib.sh"
need go python3 bash env nice taskset

DEMO_FUNCS="build_cache build_report_index handle_request leaky_worker make_value"

# leaf sums of the demo's own functions, one line each
demo_sums() {
	pprof_sum "$1" leaf | awk -v f="$DEMO_FUNCS" '
		BEGIN { n = split(f, a, " "); for (i = 1; i <= n; i++) w[a[i]] = 1 }
		$1 in w' | sort
}

"$TRACER" -q --rate 1 -o "$TMP/direct.pb.gz" -- "$WORKLOADS/demo" >/dev/null ||
	fail "the demo run directly failed"
demo_sums "$TMP/direct.pb.gz" >"$TMP/direct.txt"
[ "$(wc -l <"$TMP/direct.txt")" = 5 ] ||
	{ cat "$TMP/direct.txt"; fail "the direct profile lacks the demo's functions"; }

# --- a pyenv-style chain: shim -> libexec/tool -> tool-exec -> nice ->
# taskset -> env -> the program; the scripts run commands of their own
mkdir -p "$TMP/root/shims" "$TMP/root/libexec"
cat >"$TMP/root/shims/demo" <<EOF
#!/usr/bin/env bash
set -e
program="\${0##*/}"
export TOOL_ROOT="$TMP/root"
exec "$TMP/root/libexec/tool" exec "\$program" "\$@"
EOF
cat >"$TMP/root/libexec/tool" <<EOF
#!/usr/bin/env bash
set -e
command="\$1"; shift
version="\$(basename "\$(readlink -f "\$0")")"
[ -n "\$version" ]
exec "$TMP/root/libexec/tool-\$command" "\$@"
EOF
cat >"$TMP/root/libexec/tool-exec" <<EOF
#!/bin/sh
set -e
program=\$(command -v "$WORKLOADS/\$1"); shift
exec nice -n 1 taskset -c 0 env TOOL_VERSION=1 "\$program" "\$@"
EOF
chmod +x "$TMP/root/shims/demo" "$TMP/root/libexec/tool" \
	"$TMP/root/libexec/tool-exec"

"$TRACER" --rate 1 -o "$TMP/shim.pb.gz" -- "$TMP/root/shims/demo" \
	>/dev/null 2>"$TMP/shim.err" || { cat "$TMP/shim.err"; fail "the shim run failed: $?"; }
cat "$TMP/shim.err"
demo_sums "$TMP/shim.pb.gz" >"$TMP/shim.txt"
cmp -s "$TMP/direct.txt" "$TMP/shim.txt" ||
	{ diff "$TMP/direct.txt" "$TMP/shim.txt"; check_failed "through the shim chain the demo's counts differ from a direct run"; }
go tool pprof -comments "$TMP/shim.pb.gz" >"$TMP/shim.comments" 2>&1
chain=$(grep "the command exec'd" "$TMP/shim.comments")
[ -n "$chain" ] || { cat "$TMP/shim.comments"; check_failed "the comments do not name the exec chain"; }
for step in "demo (/usr/bin/env)" "tool (/usr/bin/env)" "tool-exec (" \
	"nice (" "taskset (" "env (" "demo ($WORKLOADS/demo)"; do
	case "$chain" in
	*"$step"*) ;;
	*) check_failed "the chain lacks '$step': $chain" ;;
	esac
done
case "$chain" in
*"demo ($WORKLOADS/demo); profiled: the last") ;;
*) check_failed "the chain does not end in the demo: $chain" ;;
esac
grep -q "child process.*not profiled" "$TMP/shim.err" ||
	check_failed "the scripts' own children were not counted"
if grep -q "without the agent\|overlaps" "$TMP/shim.err"; then
	check_failed "a false warning on the shim chain"
fi

# --- sh -c 'exec ...', with --follow-children: one profile, the demo's
mkdir -p "$TMP/fol"
"$TRACER" --follow-children --rate 1 -o "$TMP/fol/sh.pb.gz" -- \
	sh -c "exec '$WORKLOADS/demo'" >/dev/null 2>"$TMP/fol.err" ||
	{ cat "$TMP/fol.err"; fail "the followed run failed: $?"; }
demo_sums "$TMP/fol/sh.pb.gz" >"$TMP/fol.txt"
cmp -s "$TMP/direct.txt" "$TMP/fol.txt" ||
	{ diff "$TMP/direct.txt" "$TMP/fol.txt"; check_failed "sh -c exec, followed: the demo's counts differ"; }
extra=$(ls "$TMP/fol" | grep -v '^sh\.pb\.gz$\|^sh\.json$\|^sh\.timeline\.jsonl$' || true)
[ -z "$extra" ] || check_failed "sh -c exec, followed: other files: $extra"

# --- exec'd without the agent: said; the first image is what is profiled
"$TRACER" -o "$TMP/noag.pb.gz" -- sh -c "exec env -u LD_PRELOAD '$WORKLOADS/demo'" \
	>/dev/null 2>"$TMP/noag.err" || { cat "$TMP/noag.err"; fail "the run without the agent failed: $?"; }
grep -q "env exec'd demo, which runs without the agent" "$TMP/noag.err" ||
	{ cat "$TMP/noag.err"; check_failed "no warning for a program exec'd without the agent"; }
pprof_sum "$TMP/noag.pb.gz" leaf >"$TMP/noag.sums"	# fails the test if unreadable
grep -Eq "^($(echo "$DEMO_FUNCS" | tr ' ' '|')) " "$TMP/noag.sums" &&
	check_failed "the demo's functions in a profile it was not recorded for"
finish
