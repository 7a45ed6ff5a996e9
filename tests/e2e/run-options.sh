#!/bin/sh
# run-options.sh - each command's options are written once (its table,
# tracer/options/options.h), and its parser, its --help and its man page agree.
#
# For every man page `pprof-alloc man --list` names (the build writes them
# into BUILD/man/, and the list must be the Makefile's):
#   - the file is what `pprof-alloc man PAGE` writes now (not stale);
#   - `man -l` renders it with no warning;
#   - the options it lists are exactly those --help lists;
#   - the parser knows each of them: given with a dummy value, no
#     "unrecognized option"; and it refuses one that no table has.
# `pprof-alloc man --check` (run by the build too) passes: every option
# has its help; tests/unit/test-options shows it fails when one has not.
. "$(dirname "$0")/lib.sh"
need man python3
PY=/usr/bin/python3

pages=$("$TRACER" man --list) || fail "pprof-alloc man --list failed"
[ -n "$pages" ] || fail "no man pages listed"
"$TRACER" man --check || check_failed "pprof-alloc man --check failed"
want=$(ls "$BUILD/man" | sed 's/\.1$//' | sort | tr '\n' ' ')
got=$(echo "$pages" | sort | tr '\n' ' ')
[ "$want" = "$got" ] ||
	check_failed "$BUILD/man holds $want; pprof-alloc man --list says $got"

# options FILE: the options a --help or a rendered man page lists, one a
# line (the short one first when there is one), sorted
options() {
	"$PY" - "$1" <<'PY'
import re, sys
opts, inside = set(), False
for line in open(sys.argv[1], errors="replace"):
    # the options section: "Options:" in --help, OPTIONS in man's text
    if re.match(r"^(Options:|OPTIONS)$", line.rstrip()):
        inside = True
        continue
    if re.match(r"^([A-Z][a-z ]*:|[A-Z][A-Z ]+)$", line.rstrip()):
        inside = False
    m = re.match(r"^\s{2,7}(-[A-Za-z0-9], )?--([a-z][a-z0-9-]*)", line)
    if inside and m:
        opts.add(((m.group(1) or "")[:2] + " --" + m.group(2)).strip())
print("\n".join(sorted(opts)))
PY
}

for page in $pages; do
	case "$page" in
	pprof-alloc) cmd= ;;
	pprof-alloc-*) cmd=${page#pprof-alloc-} ;;
	*) check_failed "a man page named $page"; continue ;;
	esac
	f="$BUILD/man/$page.1"
	"$TRACER" man "$page" >"$TMP/$page.now" || check_failed "pprof-alloc man $page failed"
	cmp -s "$f" "$TMP/$page.now" || check_failed "$f is stale: pprof-alloc man $page differs"
	MANWIDTH=100 man --warnings -l "$f" >"$TMP/$page.txt" 2>"$TMP/$page.err" ||
		check_failed "man -l $f failed: $(cat "$TMP/$page.err")"
	[ -s "$TMP/$page.err" ] && check_failed "man -l $f warns: $(cat "$TMP/$page.err")"
	grep -q '^OPTIONS' "$TMP/$page.txt" || check_failed "$page: no OPTIONS section rendered"
	"$TRACER" $cmd --help >"$TMP/$page.help" 2>&1 || check_failed "pprof-alloc $cmd --help failed"
	options "$TMP/$page.txt" >"$TMP/$page.man.opts"
	options "$TMP/$page.help" >"$TMP/$page.help.opts"
	n=$(wc -l <"$TMP/$page.help.opts")
	[ "$n" -ge 3 ] || check_failed "$page: only $n options in --help?"
	cmp -s "$TMP/$page.man.opts" "$TMP/$page.help.opts" ||
		check_failed "$page: the man page and --help list different options: $(diff "$TMP/$page.man.opts" "$TMP/$page.help.opts" | grep '^[<>]' | tr '\n' ' ')"
	# the parser knows every option listed (a dummy value: refused as a
	# value, or the command lacks what it needs, but never unknown)
	sed 's/^-[A-Za-z0-9] //' "$TMP/$page.help.opts" | while read -r o; do
		case "$o" in --help|--list|--check) continue ;; esac
		timeout 10 "$TRACER" $cmd "$o=@" </dev/null >/dev/null 2>"$TMP/o.err"
		if grep -q "doesn't allow an argument" "$TMP/o.err"; then
			timeout 10 "$TRACER" $cmd "$o" </dev/null >/dev/null 2>"$TMP/o.err"
		fi
		grep -Eq "unrecognized option|invalid option|not handled" "$TMP/o.err" &&
			echo "$page: the parser does not know $o: $(head -1 "$TMP/o.err")"
	done >"$TMP/unknown"
	[ -s "$TMP/unknown" ] && check_failed "$(cat "$TMP/unknown")"
	timeout 10 "$TRACER" $cmd --no-such-option </dev/null >/dev/null 2>"$TMP/o.err"
	grep -q "unrecognized option" "$TMP/o.err" ||
		check_failed "$page: an unknown option was not refused: $(head -1 "$TMP/o.err")"
	note "$page: $n options, the same in --help, the man page and the parser"
done
finish
