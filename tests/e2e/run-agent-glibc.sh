#!/bin/sh
# run-agent-glibc.sh - the agent loads on glibc as old as 2.17 (CentOS 7),
# with nothing in the target but libc.so.6 and the dynamic loader: no
# symbol version it needs is newer than GLIBC_2.17, every version it needs
# is glibc's (no GLIBC_PRIVATE, no other library's), its DT_NEEDED are
# libc.so.6 and ld-linux-x86-64.so.2 only - not libpthread.so.0, libdl.so.2
# or libm.so.6, which a container image made of what `ldd` lists for its
# program may lack - and it binds to none of the functions glibc < 2.34
# keeps there (dl*, pthread_*, libm's): those are found at run time
# (agent/dynsym.c) or replaced (agent/glibc_compat.h, docs/design.md "The
# glibc baseline").  Read from the built library with readelf and
# objdump; then the agent must still load here, bound now.
# plain build only: it reads the agent's library, and runs no tracer
. "$(dirname "$0")/lib.sh"

BASELINE=2.17
# the files glibc is made of, as an x86-64 agent may need them
GLIBC_FILES="libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 ld-linux-x86-64.so.2"
MUST_NEED="libc.so.6 ld-linux-x86-64.so.2"
MUST_NOT_NEED="libpthread.so.0 libdl.so.2 libm.so.6"

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

# DT_NEEDED: libc.so.6 and ld.so, nothing else.
sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' "$TMP/dynamic.txt" >"$TMP/needed.txt"
note "DT_NEEDED: $(tr '\n' ' ' <"$TMP/needed.txt")"
while read -r lib; do
	case " $GLIBC_FILES " in
	*" $lib "*) ;;
	*) check_failed "DT_NEEDED $lib is not a file of glibc's" ;;
	esac
done <"$TMP/needed.txt"
for lib in $MUST_NEED; do
	grep -qxF "$lib" "$TMP/needed.txt" || check_failed "DT_NEEDED lacks $lib"
done
for lib in $MUST_NOT_NEED; do
	grep -qxF "$lib" "$TMP/needed.txt" &&
		check_failed "DT_NEEDED names $lib, which a container image with what ldd lists for its program may not have"
done

# No binding to what glibc < 2.34 keeps outside libc.so.6: libdl's dl*
# (dl_iterate_phdr is libc's), libpthread's pthread_* beyond libc's
# forwarders (which do nothing without libpthread: none is allowed), nor
# anything versioned from libm, libdl or libpthread.
awk '$0 ~ /\*UND\*/ { print $NF }' "$TMP/dyn.txt" >"$TMP/und.txt"
bad=$(grep -E '^(dl[a-z0-9]*|pthread_[a-z_]*|sem_[a-z_]*|log|exp|sqrt|pow)$' "$TMP/und.txt" |
	grep -vx dl_iterate_phdr | tr '\n' ' ')
[ -z "$bad" ] || check_failed "binds to functions glibc < 2.34 keeps outside libc.so.6: $bad"
grep -Eq '^(libm|libdl|libpthread)' "$TMP/needs.txt" &&
	check_failed "version needs on libm, libdl or libpthread: $(grep -E '^(libm|libdl|libpthread)' "$TMP/needs.txt" | tr '\n' ' ')"

# Still loads here, every symbol bound at once, and the workload sees it.
LD_BIND_NOW=1 LD_PRELOAD="$AGENT" "$WORKLOADS/behave" agent >"$TMP/agent.out" 2>"$TMP/agent.err"
rc=$?
[ $rc = 0 ] || { cat "$TMP/agent.err"; check_failed "behave under LD_PRELOAD of the agent exited $rc"; }
case "$(cat "$TMP/agent.out")" in
*libpprof-alloc*) ;;
*) check_failed "behave did not see the agent: '$(cat "$TMP/agent.out")'" ;;
esac
finish
