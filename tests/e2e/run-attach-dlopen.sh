#!/bin/sh
# run-attach-dlopen.sh - libraries loaded with dlopen AFTER the tracer
# attached (tests/workloads/attach-dlopen.c) are hooked too, and their
# allocations are in the profile, symbolized in the library's mapping.
#
# What the agent can promise: it notices a dlopen at its next sampled
# allocation (in a module already hooked) and hooks the new library then.
# At --rate 1 that is the next allocation of such a module, so:
#   A  the program allocates once right after the dlopen: every call into
#      library A is recorded, exactly;
#   B  the program does not allocate until after its 50th call into
#      library B: the calls from the 51st on are recorded, all of them, and
#      at most 50 are missed;
#   C  like A, but another thread allocates without a pause all through
#      the dlopen, and library C is linked with -z now and has enough
#      relocations (80000) that the loader takes milliseconds over them:
#      the agent must not hook it before the loader is done with it (the
#      loader still has to write the GOT, which the agent would make
#      read-only, RELRO, or overwrite with its hooks); four copies of C
#      are loaded in turn; the program survives and every call into them
#      after each dlopen is recorded, exactly.
. "$(dirname "$0")/lib.sh"
need python3 go
attach_init

MS=500	# how long the program calls into each library
W="$WORKLOADS/attach-dlopen"
CC=${CC:-cc}
cat >"$TMP/dllib.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
#ifdef RELOCS
extern int *reloc_table[];
#endif

__attribute__((noinline)) static void *KEEP_SITE(void)
{
	void *p = malloc(1500);

	if (p)
		memset(p, 0x11, 1500);
	return p;
}

__attribute__((noinline)) static unsigned long CHURN_SITE(void)
{
	unsigned char *volatile p = malloc(300);
	unsigned long sum;

	if (!p)
		return 0;
	memset(p, 3, 300);
	sum = p[0] + p[299];
	free(p);
	return sum;
}

__attribute__((visibility("default"))) unsigned long dl_work(void **slot)
{
	*slot = KEEP_SITE();
#ifdef RELOCS
	return CHURN_SITE() + (*slot != NULL) + (unsigned long)*reloc_table[7];
#else
	return CHURN_SITE() + (*slot != NULL);
#endif
}
EOF
# 80000 pointers to exported variables: as many symbol relocations, which
# keep the loader busy relocating library C for a few milliseconds (in
# assembly: it builds in a fraction of the time C would take).
awk 'BEGIN { n = 80000
	print "\t.data\n\t.globl reloc_table\n\t.p2align 3\nreloc_table:"
	for (i = 0; i < n; i++) printf "\t.quad reloc_v%d\n", i
	print "\t.bss"
	for (i = 0; i < n; i++) printf "\t.globl reloc_v%d\nreloc_v%d:\t.zero 4\n", i, i
	print "\t.section .note.GNU-stack,\"\",@progbits" }' >"$TMP/relocs.s"
LIBCFLAGS="-shared -fPIC -O1 -g -fno-omit-frame-pointer -Wall -Wextra -Werror"
for l in a b; do
	$CC $LIBCFLAGS -DKEEP_SITE=dl${l}_keep_site -DCHURN_SITE=dl${l}_churn_site \
		-o "$TMP/libdl$l.so" "$TMP/dllib.c" || fail "cannot build libdl$l.so"
done
$CC $LIBCFLAGS -Wl,-z,now -Wl,-z,relro -DRELOCS \
	-DKEEP_SITE=dlc_keep_site -DCHURN_SITE=dlc_churn_site \
	-o "$TMP/libdlc.so" "$TMP/dllib.c" "$TMP/relocs.s" || fail "cannot build libdlc.so"
# Four copies, loaded one after the other: four chances for the race.
libs_c=""
for i in 1 2 3 4; do
	cp "$TMP/libdlc.so" "$TMP/libdlc$i.so" || fail "cp"
	libs_c="$libs_c${libs_c:+:}$TMP/libdlc$i.so"
done

mkfifo "$TMP/cmd" || fail "mkfifo"
spawn "$TMP/target.out" "$W" "$TMP/cmd" "$TMP/libdla.so" "$TMP/libdlb.so" "$libs_c" $MS
target=$spawned_pid
wait_for "$TMP/target.out" '^attach-dlopen: ready' 10 ||
	fail "attach-dlopen did not start: $(cat "$TMP/target.out.err")"
agent_mapped "$target" && fail "the agent is in the target before the attach"
grep -q libdl "/proc/$target/maps" && fail "a library is loaded before the attach"

attach_bg "$target" "$TMP/dl.pb.gz" "$TMP/tracer.err" --rate 1
grep -q "attached to process $target" "$TMP/tracer.err" ||
	fail "the tracer did not inject the agent: $(cat "$TMP/tracer.err")"

printf a >"$TMP/cmd"
wait_for "$TMP/target.out" '^A calls ' 10 || fail "the program did not run library A"
printf b >"$TMP/cmd"
wait_for "$TMP/target.out" '^B calls ' 10 || fail "the program did not run library B"
printf c >"$TMP/cmd"
c_ok=1
if ! wait_for "$TMP/target.out" '^C calls ' 10; then
	c_ok=0
	running "$target" || reap "$target" 1
	check_failed "C: the program did not get through loading and running library C$(
		running "$target" || echo " - it died (exit status $reaped_rc; 139 is SIGSEGV), with the agent hooking the library while the loader was still relocating it?")"
fi
if running "$tracer_pid"; then
	stop_tracer
else
	reap "$tracer_pid" 10
	tracer_rc=$reaped_rc
fi
sed 's/^/    tracer: /' "$TMP/tracer.err"
[ "$tracer_rc" = 0 ] || check_failed "the tracer exited $tracer_rc, want 0"
cat "$TMP/target.out"

if [ $c_ok = 1 ]; then
	running "$target" || fail "the target died after the detach"
	printf q >"$TMP/cmd"
	reap "$target" 10
	[ "$reaped_rc" = 0 ] || check_failed "attach-dlopen exited $reaped_rc, want 0"
	grep -q '^attach-dlopen: A calls [0-9]*, B calls [0-9]*, C calls [0-9]*, checksum' "$TMP/target.out" ||
		check_failed "attach-dlopen did not finish normally"
fi
na=$(sed -n 's/^A calls \([0-9]*\)$/\1/p' "$TMP/target.out")
nb=$(sed -n 's/^B calls \([0-9]*\)$/\1/p' "$TMP/target.out")
nc=$(sed -n 's/^C calls \([0-9]*\)$/\1/p' "$TMP/target.out")
[ "${na:-0}" -ge 100 ] && [ "${nb:-0}" -ge 100 ] ||
	fail "too few calls into the libraries (A $na, B $nb): is the machine overloaded?"

pprof_sum "$TMP/dl.pb.gz" leaf >"$TMP/leaf.txt"
python3 "$TOP/tests/e2e/pprof_sum.py" frames <"$TMP/raw.txt" >"$TMP/frames.txt"
cat "$TMP/leaf.txt"
# (a thread that died with the program may have left a record unfinished)
[ $c_ok = 1 ] && check_no_loss "$TMP/leaf.txt"
check_no_negative "$TMP/raw.txt"

# A: exact.
check_site "$TMP/leaf.txt" dla_keep_site $na $((na * 1500)) $na $((na * 1500))
check_site "$TMP/leaf.txt" dla_churn_site $na $((na * 300)) 0 0
# B: all but the calls before the first heartbeat (at most 50).
b_keep=$(value dlb_keep_site 1 <"$TMP/leaf.txt")
b_churn=$(value dlb_churn_site 1 <"$TMP/leaf.txt")
note "B: $b_keep of $nb calls recorded (the first 50 may be missed)"
[ "$b_keep" -ge $((nb - 50)) ] && [ "$b_keep" -le "$nb" ] ||
	check_failed "dlb_keep_site: $b_keep allocations recorded, want $((nb - 50)) to $nb ($nb calls, the first 50 before any hooked allocation)"
[ "$b_churn" = "$b_keep" ] ||
	check_failed "dlb_churn_site: $b_churn allocations recorded, want as many as dlb_keep_site ($b_keep)"
check_site "$TMP/leaf.txt" dlb_keep_site $b_keep $((b_keep * 1500)) $b_keep $((b_keep * 1500))
# C: exact, and the busy thread was recorded all along.
if [ $c_ok = 1 ]; then
	check_site "$TMP/leaf.txt" dlc_keep_site $nc $((nc * 1500)) $nc $((nc * 1500))
	check_site "$TMP/leaf.txt" dlc_churn_site $nc $((nc * 300)) 0 0
fi
[ "$(value busy_site 1 <"$TMP/leaf.txt")" -gt 0 ] ||
	check_failed "busy_site: no allocation recorded from the busy thread"

# The library functions are symbolized, in the libraries' own mappings.
for l in a b; do
	for f in dl${l}_keep_site dl${l}_churn_site dl_work; do
		grep -q -x "$f $TMP/libdl$l.so" "$TMP/frames.txt" ||
			check_failed "$f is not in the stacks as a function of $TMP/libdl$l.so"
	done
done
grep -q '^?? ' "$TMP/leaf.txt" &&
	check_failed "samples with an unsymbolized leaf: $(grep '^?? ' "$TMP/leaf.txt")"
finish
