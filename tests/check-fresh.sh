#!/bin/bash
# tests/check-fresh.sh - `make check-fresh`: the README's two commands on a
# Debian 12 machine that never had a package of ours.
#
# A machine that has been used keeps what was installed on it by hand, and
# a suite that passes there can hide a missing install step: that is how
# libgoogle-perftools-dev went missing for every new user.  This check
# makes the machine afresh each time:
#
#   1. a minimal Debian 12 root (mmdebstrap --variant=minbase, plus make,
#      which the README's commands are typed into) from Debian's archive,
#      cached as a tarball in $FRESH_CACHE (build/fresh) for a week;
#   2. unpacked anew, with the work tree's files copied in: what git
#      tracks and what it does not ignore, as a clone has them plus the
#      uncommitted changes;
#   3. the commands of the README's first code block (make demo, make
#      test), each run there in turn, as root with a clean environment,
#      in a mount namespace of its own whose root it is (pivot_root, as a
#      container's: under chroot, user namespaces are refused).  /proc,
#      /sys and /dev are the host's (the suite needs ptrace, cgroups and
#      namespaces); /tmp is the root's own.
#
# Every command's result is printed, with the tail of its log when it
# fails; the logs are in $FRESH_CACHE/log.  The .deb files apt downloads
# are shared with the host's cache (/var/cache/apt/archives), which changes
# where a package comes from, never which are installed; FRESH_APT_CACHE=
# turns that off.  Processes left in the root when a command ends are
# killed.  Exit status 0 when every command passed.
set -u -o pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd -P)
CACHE=${FRESH_CACHE:-$TOP/build/fresh}
APT_CACHE=${FRESH_APT_CACHE-/var/cache/apt/archives}
MIRROR=${FRESH_MIRROR:-http://deb.debian.org/debian}
SECURITY=${FRESH_SECURITY:-http://deb.debian.org/debian-security}
TARBALL=$CACHE/debian12-minbase.tar
ROOT=$CACHE/root
LOGS=$CACHE/log
HOME_DIR=/root/pprof-alloc

die() { echo "check-fresh: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (mount namespaces, pivot_root)"
for t in mmdebstrap unshare pivot_root git tar; do
	command -v $t >/dev/null 2>&1 ||
		die "$t is missing (contrib/install-deps.sh --fresh)"
done
mkdir -p "$CACHE" "$LOGS" || die "cannot make $CACHE"
CACHE=$(cd "$CACHE" && pwd -P)
TARBALL=$CACHE/debian12-minbase.tar ROOT=$CACHE/root LOGS=$CACHE/log
rm -f "$LOGS"/*.log

# the README's commands: its first code block after "fresh Debian 12",
# without the comments
mapfile -t cmds < <(awk '
	/fresh Debian 12/ { seen = 1 }
	seen && /^```/ { if (inside) exit; inside = 1; next }
	inside { sub(/[ \t]*#.*/, ""); if ($0 != "") print }' "$TOP/README.md")
[ ${#cmds[@]} -gt 0 ] || die "found no commands in README.md's first code block"

passed=0 failed=0
result() {	# OK|FAIL WHAT SECONDS [LOG]
	if [ "$1" = ok ]; then
		passed=$((passed + 1))
		printf 'check-fresh: ok    %-40s %4ds\n' "$2" "$3"
	else
		failed=$((failed + 1))
		printf 'check-fresh: FAIL  %-40s %4ds\n' "$2" "$3"
		if [ -n "${4:-}" ]; then
			echo "check-fresh: the last lines of $4:"
			tail -n 40 "$4" | sed 's/^/    | /'
		fi
	fi
}

# 1. the cached root, or a new one
t0=$SECONDS
if [ -z "$(find "$TARBALL" -mtime -7 2>/dev/null)" ]; then
	log=$LOGS/0-mmdebstrap.log
	rm -rf "$TARBALL.new"
	if mmdebstrap --variant=minbase --include=make --format=tar bookworm "$TARBALL.new" \
		"deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
		"deb $SECURITY bookworm-security main" >"$log" 2>&1; then
		rm -rf "$TARBALL" && mv "$TARBALL.new" "$TARBALL"
		result ok "mmdebstrap (minbase, make)" $((SECONDS - t0))
	else
		rm -rf "$TARBALL.new"
		result FAIL "mmdebstrap (minbase, make)" $((SECONDS - t0)) "$log"
		echo "check-fresh: $passed passed, $failed failed"
		exit 1
	fi
else
	echo "check-fresh: the Debian 12 root from $TARBALL (made $(date -r "$TARBALL" +%F))"
fi

# processes whose root is ours, this run's or an earlier one's (it holds
# the token kept in the cache): what a command left running
[ -s "$CACHE/token" ] || echo "$$.$(date +%s%N)" >"$CACHE/token"
TOKEN=$(cat "$CACHE/token")
leftovers() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/root/.check-fresh" 2>/dev/null)" = "$TOKEN" ] &&
			echo "${p#/proc/}"
	done
}
kill_leftovers() {
	local left
	left=$(leftovers)
	[ -z "$left" ] || kill -9 $left 2>/dev/null
}
trap 'kill_leftovers; exit 130' INT TERM

# 2. unpacked anew, the tree copied in
t0=$SECONDS
kill_leftovers
rm -rf "$ROOT" && mkdir -p "$ROOT" || die "cannot make $ROOT"
tar -C "$ROOT" -xf "$TARBALL" || die "cannot unpack $TARBALL"
mkdir -p "$ROOT$HOME_DIR" || die "cannot make $ROOT$HOME_DIR"
git -C "$TOP" rev-parse --git-dir >/dev/null 2>&1 ||
	die "$TOP is not a git checkout: what to copy is what git tracks"
(cd "$TOP" && git ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	tar --null -T - -cf -) | tar -C "$ROOT$HOME_DIR" -xf - ||
	die "cannot copy the tree into $ROOT$HOME_DIR"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null
echo "$TOKEN" >"$ROOT/.check-fresh"
result ok "unpack the root, copy the tree in" $((SECONDS - t0))

# 3. each command of the README, in the root
i=1
for cmd in "${cmds[@]}"; do
	log=$LOGS/$i-$(echo "$cmd" | tr -c 'A-Za-z0-9\n' '-').log
	t0=$SECONDS
	unshare --mount --propagation private -- /bin/bash -c '
		set -e
		R=$1 APT=$2 DIR=$3 CMD=$4
		# the root a mount of its own, made the mount namespace'"'"'s
		# root by pivot_root, as a machine'"'"'s or a container'"'"'s is
		# (under chroot, unshare -U fails and unshare -m cannot change
		# the propagation of /)
		mount --bind "$R" "$R"
		mount --rbind /dev "$R/dev"
		mount -t proc proc "$R/proc"
		mount --rbind /sys "$R/sys"
		mount -t tmpfs tmpfs "$R/tmp"
		if [ -n "$APT" ] && [ -d "$APT" ]; then
			mount --bind "$APT" "$R/var/cache/apt/archives"
		fi
		mkdir -p "$R/.old-root"
		cd "$R"
		pivot_root . .old-root
		umount -l /.old-root
		rmdir /.old-root
		exec /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			/bin/bash -c "cd \"\$0\" && $CMD" "$DIR"
	' check-fresh "$ROOT" "$APT_CACHE" "$HOME_DIR" "$cmd" </dev/null >"$log" 2>&1
	rc=$?
	kill_leftovers
	if [ $rc = 0 ]; then
		result ok "$cmd" $((SECONDS - t0))
		# the suite's closing line, as it said it
		grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1 | sed 's/^/    | /'
	else
		result FAIL "$cmd (exit $rc)" $((SECONDS - t0)) "$log"
	fi
	i=$((i + 1))
done

echo "check-fresh: the logs are in $LOGS"
echo "check-fresh: $passed passed, $failed failed"
[ $failed = 0 ]
