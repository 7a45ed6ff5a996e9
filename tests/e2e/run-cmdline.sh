#!/bin/sh
# The profile's command line is shell-quoted, so that it can be pasted
# back: an empty argument stays (redis-server --save '' lost it), one
# with a space or a quote is quoted, and one with control bytes is
# written as $'\xNN' (no raw escape sequence reaches a terminal).  The
# quoted line, run by bash, gives the same arguments back.
. "$(dirname "$0")/lib.sh"
need go python3 bash

esc=$(printf 'x\033]0;title\007y')
"$TRACER" -q -o "$TMP/c.pb.gz" -- sh -c 'exit 0' zero '' 'a b' "it's" "$esc" ||
	fail "the traced run failed"
go tool pprof -comments "$TMP/c.pb.gz" >"$TMP/comments" 2>&1 ||
	fail "go tool pprof cannot read the profile"
line=$(sed -n 's/^pprof-alloc: //p' "$TMP/comments" | head -n 1)
note "command: $line"
want="sh -c 'exit 0' zero '' 'a b' 'it'\\''s' \$'x\\x1b]0;title\\x07y'"
[ "$line" = "$want" ] || check_failed "the command line is <$line>, want <$want>"
grep -q "$(printf '\033')" "$TMP/comments" && check_failed "a raw ESC in the comments"
# pasted back into bash, the same six arguments after sh
printf '%s\n' "$line" | sed 's/^sh -c /printf "<%s>\\n" /' >"$TMP/back.sh"
bash "$TMP/back.sh" >"$TMP/back.out" || check_failed "bash cannot run the quoted line"
printf '<%s>\n' 'exit 0' zero '' 'a b' "it's" "$esc" >"$TMP/want.out"
cmp -s "$TMP/back.out" "$TMP/want.out" ||
	check_failed "the quoted line gives other arguments back: $(cat -v "$TMP/back.out" | tr '\n' ' ')"
finish
