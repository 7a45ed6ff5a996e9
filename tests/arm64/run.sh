#!/bin/sh
# tests/arm64/run.sh - `make check-arm64`: the suite's aarch64 part, in an
# emulated 64-bit Arm machine made here from Debian's packages alone.
#
#   sh tests/arm64/run.sh            build what is missing, boot, run
#   PA_TESTS=FILE sh tests/arm64/run.sh     the tests FILE names (a file
#                                    under tests/arm64/), not tests.list
#   PA_TESTS=bench sh tests/arm64/run.sh    tests/arm64/bench.sh instead
#                                    (make bench-arm64)
#
# 1. The guest's root, build/arm64/root: mmdebstrap --variant=extract of
#    Debian 12's arm64 packages (GUEST_PKGS), which needs no binfmt and no
#    emulation (nothing is configured, only unpacked; the few links and
#    files a configured system would have are made here).  It is both the
#    sysroot of the cross-build (its -dev packages) and the machine's root
#    (the programs of the tests, Debian's arm64 kernel and busybox).  It is
#    made once and again only when GUEST_PKGS changes (build/arm64/root.pkgs).
# 2. The cross-build, build/arm64/out: the tracer, the agent and the test
#    programs with aarch64-linux-gnu-gcc --sysroot, pkg-config reading the
#    root's .pc files; the sources tests/arm64/skip names are not built.
# 3. An initramfs: busybox, the kernel's 9p and virtio-mmio modules and
#    tests/arm64/init, which mounts this source tree (shared by 9p), makes
#    the root a chroot with the tree at /src and runs tests/arm64/guest.sh.
# 4. qemu-system-aarch64 -M virt with TCG: -cpu max with pauth-impdef=on
#    (pointer authentication is real, and cheap to emulate) and two CPUs,
#    the console on stdio, no network, no disk but the share.  qemu-user is
#    no substitute: it cannot ptrace its guest.
#
# The guest prints the suite's lines (tests/run.sh); its last line, "N
# passed, N failed", and the status come back in build/arm64/result, and
# this script ends with that line and exits non-zero on any failure, or
# when the machine gave no result (it did not boot, or timed out after
# GUEST_TIMEOUT seconds, 2400 by default: a guard against a hung machine,
# well past the ~14 minutes the list takes on an idle 2-core host).
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
A=$TOP/build/arm64
ROOT=$A/root
OUT=$A/out
MIRROR=${MIRROR:-http://deb.debian.org/debian}
GUEST_TIMEOUT=${GUEST_TIMEOUT:-2400}
# build: the sysroot's libraries; run: what the tests call in the guest
GUEST_PKGS="libc6-dev libstdc++-12-dev libelf-dev libdw-dev libdebuginfod-dev
libprotobuf-c-dev zlib1g-dev libdeflate-dev libmicrohttpd-dev libzydis-dev
libiberty-dev
linux-image-arm64 busybox-static base-files base-passwd bash dash coreutils
grep sed mawk findutils diffutils procps util-linux gzip tar libc-bin
python3 sqlite3 binutils golang-go curl libc6-dbg gcc make man-db
strace nginx prometheus memcached redis-server redis-tools
binutils-arm-linux-gnueabihf libjemalloc-dev mount"

die() { echo "check-arm64: $*" >&2; exit 1; }

for tool in mmdebstrap qemu-system-aarch64 aarch64-linux-gnu-gcc \
	aarch64-linux-gnu-g++ cpio gzip; do
	command -v $tool >/dev/null 2>&1 ||
		die "$tool is missing: run contrib/install-deps.sh --arm64"
done
mkdir -p "$A"

# --- 1. the root
pkgs=$(echo $GUEST_PKGS)
if [ "$(cat "$A/root.pkgs" 2>/dev/null)" != "$pkgs" ] || [ ! -d "$ROOT/usr" ]; then
	echo "check-arm64: making the guest's root from Debian's arm64 packages"
	rm -rf "$ROOT" "$A/root.pkgs"
	mmdebstrap --quiet --arch=arm64 --variant=extract \
		--aptopt='Acquire::Check-Valid-Until "false"' \
		--include="$(echo $pkgs | tr ' ' ',')" \
		bookworm "$ROOT" "$MIRROR" >"$A/mmdebstrap.log" 2>&1 ||
		{ tail -n 20 "$A/mmdebstrap.log" >&2; die "mmdebstrap failed ($A/mmdebstrap.log)"; }
	# what the maintainer scripts would have made
	[ -e "$ROOT/bin/sh" ] || ln -s dash "$ROOT/bin/sh"
	[ -e "$ROOT/usr/bin/awk" ] || ln -s mawk "$ROOT/usr/bin/awk"
	[ -e "$ROOT/usr/bin/cc" ] || ln -s gcc "$ROOT/usr/bin/cc"
	[ -e "$ROOT/usr/bin/go" ] || ln -s ../lib/go-1.19/bin/go "$ROOT/usr/bin/go"
	for f in passwd group shadow; do
		[ -e "$ROOT/etc/$f" ] || [ ! -e "$ROOT/usr/share/base-passwd/$f.master" ] ||
			cp "$ROOT/usr/share/base-passwd/$f.master" "$ROOT/etc/$f"
	done
	[ -e "$ROOT/etc/hosts" ] || printf '127.0.0.1 localhost\n::1 localhost\n' >"$ROOT/etc/hosts"
	echo "$pkgs" >"$A/root.pkgs"
fi
KERNEL=$(ls "$ROOT"/boot/vmlinuz-*-arm64 2>/dev/null | tail -n 1)
[ -n "$KERNEL" ] || die "no arm64 kernel in $ROOT/boot"
KVER=${KERNEL##*/vmlinuz-}
MODS=$ROOT/lib/modules/$KVER/kernel

# --- 2. the cross-build
echo "check-arm64: cross-building into build/arm64/out"
PKG_CONFIG_SYSROOT_DIR=$ROOT \
PKG_CONFIG_LIBDIR=$ROOT/usr/lib/aarch64-linux-gnu/pkgconfig:$ROOT/usr/share/pkgconfig \
	make -C "$TOP" --no-print-directory B=build/arm64/out NOMAN=1 \
	CC="aarch64-linux-gnu-gcc --sysroot=$ROOT" \
	CXX="aarch64-linux-gnu-g++ --sysroot=$ROOT" all test-bins >"$A/build.log" 2>&1 ||
	{ tail -n 30 "$A/build.log" >&2; die "the cross-build failed ($A/build.log)"; }

# --- 3. the initramfs
rm -rf "$A/initrd" && mkdir -p "$A/initrd/bin" "$A/initrd/mods"
cp "$ROOT/bin/busybox" "$A/initrd/bin/"
for m in drivers/virtio/virtio_mmio fs/netfs/netfs fs/fscache/fscache \
	net/9p/9pnet net/9p/9pnet_virtio fs/9p/9p; do
	cp "$MODS/$m.ko" "$A/initrd/mods/" || die "no $m.ko in $KVER's modules"
done
cp "$TOP/tests/arm64/init" "$A/initrd/init"
chmod 755 "$A/initrd/init"
(cd "$A/initrd" && find . | cpio -o -H newc --quiet | gzip -1) >"$A/initrd.gz"

# --- 4. the machine
rm -f "$A/result"
echo "check-arm64: booting $KVER under qemu-system-aarch64 (TCG)"
timeout "$GUEST_TIMEOUT" qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on \
	-smp 2 -m 3072 -nographic -no-reboot -nic none \
	-kernel "$KERNEL" -initrd "$A/initrd.gz" \
	-append "console=ttyAMA0 rdinit=/init quiet pa.tests=${PA_TESTS:-tests.list}" \
	-fsdev local,id=top,path="$TOP",security_model=none \
	-device virtio-9p-device,fsdev=top,mount_tag=top </dev/null || true
[ -s "$A/result" ] || die "the guest gave no result (it did not boot, or ran past ${GUEST_TIMEOUT}s)"
line=$(sed -n 1p "$A/result")
status=$(sed -n 's/^status //p' "$A/result")
if [ "${PA_TESTS:-}" = bench ]; then
	echo "check-arm64: the benchmark's table again, from the guest's log:"
	sed -n '/^bench-arm64: EMULATED/,$p' "$A/log"
else
	echo "$line"
fi
[ "$status" = 0 ]
