#!/bin/sh
# run-agent-glibc.sh - the agent loads on glibc as old as 2.17 (CentOS 7):
# no symbol version it needs is newer than GLIBC_2.17, every version it
# needs is glibc's (no GLIBC_PRIVATE, no other library's), and it names
# libpthread.so.0 and libdl.so.2, where glibc < 2.34 keeps the dl* and
# pthread_* functions it binds to their old versions (agent/glibc_compat.h,
# docs/design.md "The agent: paths and rules").  Read from the built
# library with readelf and objdump; then the agent must still load here,
# bound now, where those old versions are glibc's compatibility symbols.
# plain build only: it reads the agent's library, and runs no tracer
. "$TOP/tests/e2e/lib.sh"

BASELINE=2.17
# the files glibc is made of, as an x86-64 agent may need them
GLIBC_FILES="libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 ld-linux-x86-64.so.2"
MUST_NEED="libc.so.6 libdl.so.2 libpthread.so.0"

[ -f "$AGENT" ] || fail "no agent at $AGENT"
readelf -h "$AGENT" >"$TMP/hdr.txt" 2>&1 || { cat "$TMP/hdr.txt"; fail "readelf -h $AGENT failed"; }
grep -q 'Machine:.*X86-64' "$TMP/hdr.txt" || check_failed "the agent is not x86-64"
readelf -V --wide "$AGENT" >"$TMP/ver.txt" 2>&1 || { cat "$TMP/ver.txt"; fail "readelf -V $AGENT failed"; }
objdump -T "$AGENT" >"$TMP/dyn.txt" 2>&1 || { cat "$TMP/dyn.txt"; fail "objdump -T $AGENT failed"; }
readelf -d --wide "$AGENT" >"$TMP/dynamic.txt" 2>&1 || { cat "$TMP/dynamic.txt"; fail "readelf -d $AGENT failed"; }

# newer VERSION: exit 0 if GLIBC_VERSION is newer than the baseline
newer() {
	awk -v v="${1#GLIBC_}" -v b="$BASELINE" 'BEGIN {
		n = split(v, x, "."); m = split(b, y, ".")
		for (i = 1; i <= (n > m ? n : m); i++) {
			if (x[i] + 0 != y[i] + 0)
				exit !(x[i] + 0 > y[i] + 0)
		}
		exit 1
	}'
}

# The version needs, one "FILE VERSION" a line.
sed -n '/^Version needs section/,/^$/p' "$TMP/ver.txt" |
	awk '/File:/ { for (i = 1; i < NF; i++) if ($i == "File:") f = $(i + 1) }
	     /Name:/ { for (i = 1; i < NF; i++) if ($i == "Name:") print f, $(i + 1) }' \
	>"$TMP/needs.txt"
[ -s "$TMP/needs.txt" ] || fail "no version needs read from readelf -V $AGENT"
note "version needs: $(sort -u "$TMP/needs.txt" | tr '\n' ' ')"

# The undefined symbols, one "VERSION SYMBOL" a line.
awk '$0 ~ /\*UND\*/ && $(NF - 1) ~ /^\(?GLIBC_/ {
	v = $(NF - 1); gsub(/[()]/, "", v); print v, $NF }' "$TMP/dyn.txt" >"$TMP/syms.txt"
[ -s "$TMP/syms.txt" ] || fail "no versioned symbols read from objdump -T $AGENT"

while read -r file ver; do
	case " $GLIBC_FILES " in
	*" $file "*) ;;
	*) check_failed "a version need on $file ($ver), not a file of glibc's" ;;
	esac
	case "$ver" in
	GLIBC_[0-9]*) ;;
	*) check_failed "$file: version $ver is not a GLIBC_x.y version (needed by: $(awk -v v="$ver" '$1 == v { printf "%s ", $2 }' "$TMP/syms.txt"))"
	   continue ;;
	esac
	if newer "$ver"; then
		syms=$(awk -v v="$ver" '$1 == v { printf "%s ", $2 }' "$TMP/syms.txt")
		check_failed "$file: $ver is newer than GLIBC_$BASELINE, needed by: ${syms:-?}"
	fi
done <"$TMP/needs.txt"

# DT_NEEDED: glibc's files only, libdl and libpthread among them.
sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' "$TMP/dynamic.txt" >"$TMP/needed.txt"
note "DT_NEEDED: $(tr '\n' ' ' <"$TMP/needed.txt")"
while read -r lib; do
	case " $GLIBC_FILES " in
	*" $lib "*) ;;
	*) check_failed "DT_NEEDED $lib is not a file of glibc's" ;;
	esac
done <"$TMP/needed.txt"
for lib in $MUST_NEED; do
	grep -qxF "$lib" "$TMP/needed.txt" ||
		check_failed "DT_NEEDED lacks $lib (glibc < 2.34 keeps dl*/pthread_* there)"
done

# Still loads here, every symbol bound at once, and the workload sees it.
LD_BIND_NOW=1 LD_PRELOAD="$AGENT" "$WORKLOADS/behave" agent >"$TMP/agent.out" 2>"$TMP/agent.err"
rc=$?
[ $rc = 0 ] || { cat "$TMP/agent.err"; check_failed "behave under LD_PRELOAD of the agent exited $rc"; }
case "$(cat "$TMP/agent.out")" in
*libpprof-alloc*) ;;
*) check_failed "behave did not see the agent: '$(cat "$TMP/agent.out")'" ;;
esac
finish
