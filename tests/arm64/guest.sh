#!/bin/bash
# tests/arm64/guest.sh [LIST|bench] - inside the emulated aarch64 machine:
# the suite's aarch64 part (tests/arm64/tests.list, or LIST, a file under
# tests/arm64/), run by tests/run.sh against the cross-built
# build/arm64/out, the source tree at /src as on the host; or, with
# "bench", tests/arm64/bench.sh (make bench-arm64).
#
# Its output goes to the console; its last line ("N passed, N failed")
# and status go to build/arm64/result too, for the host to read after the
# machine is off.  Everything runs about ten times slower than on the host
# (qemu's TCG), so tests that wait for times scale them by TIME_SCALE.
cd /src || exit 1
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TMPDIR=/tmp
export PA_TIME_SCALE=${PA_TIME_SCALE:-10}
# the root was unpacked, never configured: the loader's cache, as an
# installed system has it (tests ask ldconfig -p)
ldconfig
list=tests/arm64/${1:-tests.list}
out=build/arm64/result
rm -f "$out"
if [ "${1:-}" = bench ]; then
	echo "guest: $(uname -m), $(nproc) CPUs, kernel $(uname -r); the benchmark"
	sh tests/arm64/bench.sh build/arm64/out 2>&1 | tee build/arm64/log
else
	echo "guest: $(uname -m), $(nproc) CPUs, kernel $(uname -r); tests from $list"
	TEST_LIST=$list bash tests/run.sh build/arm64/out 2>&1 | tee build/arm64/log
fi
rc=${PIPESTATUS[0]}
# what the kernel said of processes that died of a fault: a test's target
# that died there leaves its reason here (the console is the only log)
dmesg | grep -E 'unhandled|segfault|Unhandled' | tail -n 20 | sed 's/^/guest: kernel: /'
{ tail -n 1 build/arm64/log; echo "status $rc"; } >"$out"
sync
# the first process (tests/arm64/init): the machine ends with it
echo "guest: the suite exited with $rc"
[ $$ != 1 ] || exec /bin/busybox poweroff -f
exit "$rc"
