#!/bin/sh
# Install the Debian packages pprof-alloc needs, only those that are missing.
#
#   contrib/install-deps.sh            build dependencies
#   contrib/install-deps.sh --test     build + test dependencies (go tool pprof,
#                                      compilers and tools the tests split debug
#                                      info with, a debuginfod server,
#                                      promtool, jemalloc, mimalloc and
#                                      tcmalloc (gperftools), chromium for the
#                                      report, musl-gcc for the musl refusal,
#                                      Debian's rustc, cargo and jemalloc-sys
#                                      crate for the Rust program)
#   contrib/install-deps.sh --bench    build + benchmark dependencies (peers)
#   contrib/install-deps.sh --fuzz     build + clang with libFuzzer (make fuzz)
#
# It is called by `make deps` (and the other *-deps), which `make demo`,
# `make test`, `make bench` and `make check-long` run first, so a fresh Debian 12
# machine needs nothing else.  It is quiet and fast when everything is there
# (one dpkg-query), and it never upgrades a package that is installed.
set -eu

build_pkgs="gcc make pkg-config libelf-dev libdw-dev libdebuginfod-dev libprotobuf-c-dev protobuf-c-compiler zlib1g-dev libdeflate-dev libmicrohttpd-dev libstdc++6 libzydis-dev"
test_pkgs="golang-go python3 g++ clang binutils dwz elfutils debuginfod prometheus libjemalloc2 sqlite3 libclang-rt-14-dev chromium musl-tools libjemalloc-dev libmimalloc-dev libgoogle-perftools4 rustc cargo librust-jemalloc-sys-dev curl"
fuzz_pkgs="clang libclang-rt-14-dev"
bench_pkgs="$test_pkgs heaptrack libstdc++6-12-dbg librados2-dbg"

pkgs=$build_pkgs
for arg in "$@"; do
	case "$arg" in
	--test) pkgs="$pkgs $test_pkgs" ;;
	--bench) pkgs="$pkgs $bench_pkgs" ;;
	--fuzz) pkgs="$pkgs $fuzz_pkgs" ;;
	-h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "install-deps.sh: unknown option '$arg'" >&2; exit 2 ;;
	esac
done

missing=""
for p in $pkgs; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$status" in
	*" installed") ;;
	*) missing="$missing $p" ;;
	esac
done
[ -z "$missing" ] && exit 0

echo "install-deps.sh: installing missing packages:$missing" >&2
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=sudo
	else
		echo "install-deps.sh: not root and no sudo; install these packages:$missing" >&2
		exit 1
	fi
else
	SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
# apt's lists may be absent on a fresh machine: update once, then install.
$SUDO apt-get update -qq >&2
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >&2
