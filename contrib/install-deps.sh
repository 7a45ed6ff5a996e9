#!/bin/sh
# Install the Debian packages pprof-alloc needs, only those that are missing.
#
#   contrib/install-deps.sh            build dependencies
#   contrib/install-deps.sh --test     build + test dependencies
#   contrib/install-deps.sh --bench    build + test + benchmark dependencies
#   contrib/install-deps.sh --long     build + test + benchmark + the
#                                      programs of make check-long's tests
#   contrib/install-deps.sh --fuzz     build + clang with libFuzzer (make fuzz)
#   contrib/install-deps.sh --fresh    build + mmdebstrap (make check-fresh)
#   contrib/install-deps.sh --arm64    build + the aarch64 cross-compiler and
#                                      emulator (make check-arm64)
#   ... --check                        install nothing: check that every
#                                      package and what it is used for is
#                                      there, name what is not, exit 1
#   ... --list                         print the packages, one a line
#
# The packages, and what of each the build and the tests use, are listed
# in contrib/packages: that file is the only list.  `make deps` (and the
# other *-deps targets), which `make demo`, `make test`, `make bench` and
# `make check-long` run first, call this, so a fresh Debian 12 machine needs
# nothing else; `make test` then runs --check --test, so that a package
# missing from the list fails there, by name, before any test.  It is quiet
# and fast when everything is there (one dpkg-query), and it never upgrades
# a package that is installed.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
list="$here/packages"
groups="build"
mode=install
for arg in "$@"; do
	case "$arg" in
	--test) groups="$groups test" ;;
	--bench) groups="$groups test bench" ;;
	--long) groups="$groups test bench long" ;;
	--fuzz) groups="$groups fuzz" ;;
	--fresh) groups="$groups fresh" ;;
	--arm64) groups="$groups arm64" ;;
	--check) mode=check ;;
	--list) mode=list ;;
	-h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "install-deps.sh: unknown option '$arg' (see --help)" >&2; exit 2 ;;
	esac
done
[ -r "$list" ] || { echo "install-deps.sh: cannot read $list" >&2; exit 2; }

multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null ||
	gcc -print-multiarch 2>/dev/null || echo "$(uname -m)-linux-gnu")

# the lines of the chosen groups, "PACKAGE PROBE..." each
lines=$(awk -v groups=" $groups " '
	/^[ \t]*(#|$)/ { next }
	index(groups, " " $1 " ") { $1 = ""; sub(/^ /, ""); print }' "$list")
pkgs=$(printf '%s\n' "$lines" | awk '{ print $1 }' | awk '!seen[$0]++')

if [ $mode = list ]; then
	printf '%s\n' "$pkgs"
	exit 0
fi

missing=""
for p in $pkgs; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$status" in
	*" installed") ;;
	*) missing="$missing $p" ;;
	esac
done

if [ $mode = check ]; then
	bad=0
	for p in $missing; do
		echo "install-deps.sh: package $p is not installed" >&2
		bad=1
	done
	# each probe: a command on PATH, or a path that exists
	printf '%s\n' "$lines" | {
		while read -r p probes; do
			for probe in $probes; do
				path=$(printf '%s' "$probe" | sed "s|@LIB@|/usr/lib/$multiarch|")
				case "$path" in
				debug:*)
					path=${path#debug:}
					if ! command -v readelf >/dev/null 2>&1; then
						echo "install-deps.sh: readelf (binutils) is missing to check the debug information of $path" >&2
						bad=1
						continue
					fi
					id=$(readelf -n "$path" 2>/dev/null |
						awk '/Build ID:/ { print $3 }')
					[ -n "$id" ] && [ -e "/usr/lib/debug/.build-id/$(echo "$id" |
						cut -c1-2)/$(echo "$id" | cut -c3-).debug" ] && continue
					path="the debug information of $path" ;;
				/*) [ -e "$path" ] && continue ;;
				*) command -v "$path" >/dev/null 2>&1 && continue ;;
				esac
				echo "install-deps.sh: $path is missing (package $p)" >&2
				bad=1
			done
		done
		exit $bad
	} || bad=1
	if [ $bad = 1 ]; then
		echo "install-deps.sh: the set-up is incomplete: run contrib/install-deps.sh$(printf ' %s' "$@" | sed 's/ --check//')" >&2
		exit 1
	fi
	exit 0
fi

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
# Some packages are daemons the tests start themselves (nginx, redis,
# memcached, postgresql): their install must not start them as services
# here (a developer's port 80, a second postgres).  policy-rc.d's 101
# says so to invoke-rc.d and deb-systemd-invoke, for this install only
# (one already there is the machine's, and left alone).
policy=/usr/sbin/policy-rc.d
ours_policy=
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\n# install-deps.sh, while it installs\nexit 101\n' |
		$SUDO tee "$policy" >/dev/null && $SUDO chmod 755 "$policy" &&
		ours_policy=yes
	trap '[ -n "$ours_policy" ] && $SUDO rm -f "$policy"' EXIT
fi
# apt's lists may be absent on a fresh machine: update once, then install.
$SUDO apt-get update -qq >&2
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >&2
